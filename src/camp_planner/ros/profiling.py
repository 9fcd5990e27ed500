"""What one ``/select_context`` call with a scene costs inside the server, step by step.

Used by ``scripts/bench_ros.py`` to explain the round-trip latency it measures: rclpy's
request (de)serialization, the scene adapter, the service's selection, the response.
"""

from __future__ import annotations

import array
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.serialization import deserialize_message, serialize_message

from camp_msgs.srv import SelectContext
from camp_planner.ros.bringup import spin_executor
from camp_planner.ros.common import bundle_path, config_path
from camp_planner.ros.convert import scene_from_msg, selection_to_response
from camp_planner.service.planning import CampService


def select_cost_breakdown(
    planner: dict[str, Any], scenes: list[Any], features: list[Any], n: int = 300
) -> dict[str, float]:
    """Median cost (ms) of each step of one ``/select_context`` call, in this process: the
    client's (de)serialization and the server's work, for a scene and for task features."""
    domain, world = planner.get("domain", "namo"), planner.get("world") or ""
    service = CampService(
        domain=domain,
        config_path=config_path(domain, world, planner.get("config_file") or ""),
        bundle_path=bundle_path(domain, world, planner.get("selector_bundle") or ""),
        artifacts=Path(planner.get("artifacts", "artifacts")),
    )
    wire = []
    for scene in scenes:
        request = SelectContext.Request()
        request.scene = scene
        wire.append(serialize_message(request))

    def median_ms(step: Any) -> float:
        times = []
        for k in range(n):
            t0 = time.perf_counter()
            step(k % len(wire))
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    requests = [deserialize_message(w, SelectContext.Request) for w in wire]
    parsed = [scene_from_msg(r.scene) for r in requests]
    result = service.select(parsed[0], None)
    answer = serialize_message(selection_to_response(result, SelectContext.Response()))
    f_requests = []
    for f in features:
        request = SelectContext.Request()
        request.task_features = array.array("d", f)
        f_requests.append(request)
    f_wire = [serialize_message(r) for r in f_requests]
    f_arrays = [r.task_features for r in f_requests]
    f_result = service.select(None, f_arrays[0])
    f_answer = serialize_message(selection_to_response(f_result, SelectContext.Response()))
    return {
        "request_serialize": median_ms(lambda k: serialize_message(requests[k])),
        "request_deserialize": median_ms(
            lambda k: deserialize_message(wire[k], SelectContext.Request)
        ),
        "scene_from_msg": median_ms(lambda k: scene_from_msg(requests[k].scene)),
        "select": median_ms(lambda k: service.select(parsed[k], None)),
        "response": median_ms(
            lambda k: serialize_message(selection_to_response(result, SelectContext.Response()))
        ),
        "response_deserialize": median_ms(
            lambda k: deserialize_message(answer, SelectContext.Response)
        ),
        "features_request_serialize": median_ms(
            lambda k: serialize_message(f_requests[k % len(f_requests)])
        ),
        "features_request_deserialize": median_ms(
            lambda k: deserialize_message(f_wire[k % len(f_wire)], SelectContext.Request)
        ),
        "features_select": median_ms(lambda k: service.select(None, f_arrays[k % len(f_arrays)])),
        "features_response": median_ms(
            lambda k: serialize_message(selection_to_response(f_result, SelectContext.Response()))
        ),
        "features_response_deserialize": median_ms(
            lambda k: deserialize_message(f_answer, SelectContext.Response)
        ),
    }


def serve_noop(service_name: str) -> None:
    """Serve ``SelectContext`` on ``service_name`` answering ``success`` without doing
    anything: the floor of a round trip through rclpy and DDS for a given request."""

    def answer(request: Any, response: Any) -> Any:
        response.success = True
        return response

    rclpy.init()
    node = Node("select_context_floor", start_parameter_services=False)
    node.create_service(SelectContext, service_name, answer)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spin_executor(executor)


if __name__ == "__main__":
    serve_noop(sys.argv[1] if len(sys.argv) > 1 else "select_context_floor")
