"""The ``/select_context`` server: a lean node the camp_planner node owns and spins on an
executor of its own, in an rclpy context of its own.

Why a second node: rclpy's executor rebuilds its wait set from every entity of the nodes it
spins, in Python, on every wake-up. The camp_planner node carries parameter services, an
action client, a subscription and timers; answering the service from that node cost about
1.5 ms more per call, in a one-off A/B test of the two server shapes, than from a node
holding only this service (docs/results/history.md). The camp_planner node keeps its parameters
(``ros2 param`` works on it); this node has none.

Why a context of its own (its own DDS participant): sharing the camp_planner node's
context, the process's main thread, idle in ``rcl_wait`` on the camp_planner node, used
75-87 % of a core while this node served calls (``top -H`` during ``scripts/bench_ros.py``;
the thread never returned to Python, so the wake-ups were inside the middleware's wait
set). With separate contexts the main thread stays idle. The process's remap rules are
passed on, so remapping ``select_context`` still works; a node-name remap is not, since it
is meant for the main node.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from camp_msgs.srv import SelectContext
from camp_planner.core.errors import CampError
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.ros.bringup import spin_executor
from camp_planner.ros.common import SELECT_SERVICE, remap_rules
from camp_planner.ros.convert import scene_from_msg, selection_to_response
from camp_planner.service.planning import CampService


class SelectionNode(Node):
    """Serves ``/select_context`` with ``service``; :meth:`start` spins it in a thread."""

    def __init__(
        self, service: CampService, name: str, context: Context | None = None, namespace: str = ""
    ) -> None:
        self._own_context: Context | None = None
        if context is None:
            self._own_context = context = Context()
            rclpy.init(args=remap_rules(sys.argv), context=context)
        super().__init__(
            name, context=context, namespace=namespace or None, start_parameter_services=False
        )
        self.service = service
        self.create_service(SelectContext, SELECT_SERVICE, self._select)
        self._executor: SingleThreadedExecutor | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._executor = SingleThreadedExecutor(context=self.context)
        self._executor.add_node(self)
        self._thread = threading.Thread(
            target=spin_executor, args=(self._executor,), name=self.get_name(), daemon=True
        )
        self._thread.start()

    def _select(self, request: Any, response: Any) -> Any:
        try:
            scene = None
            if request.scene.objects or not len(request.task_features):
                scene = scene_from_msg(request.scene)
            features = request.task_features if len(request.task_features) else None
            return selection_to_response(self.service.select(scene, features), response)
        except ServiceError as exc:
            response.success, response.error_code = False, int(exc.code)
            response.error_message = exc.message
        except CampError as exc:
            response.success, response.error_code = False, int(ErrorCode.INTERNAL)
            response.error_message = str(exc)
        except Exception as exc:  # a bug must not take the service down
            response.success, response.error_code = False, int(ErrorCode.INTERNAL)
            response.error_message = f"{exc.__class__.__name__}: {exc}"
        return response

    def destroy_node(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(timeout_sec=1.0)
        if self._thread is not None:
            self._thread.join(2.0)
        super().destroy_node()
        if self._own_context is not None:
            self._own_context.try_shutdown()
