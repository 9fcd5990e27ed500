"""CampClient against a server that loses a response: the request is sent again, and the
first answer to any copy is returned; a server that never answers is a clear error."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytestmark = pytest.mark.ros


@pytest.fixture
def flaky_server() -> Iterator[dict[str, Any]]:
    """A /select_context double on its own executor thread. It holds the first ``hold``
    requests back until released (as a response the DDS layer dropped would never come)
    and answers the rest at once, naming how many requests it had seen."""
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    import rclpy
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    from camp_msgs.srv import SelectContext

    state: dict[str, Any] = {"seen": 0, "hold": 1, "release": threading.Event()}

    def handle(req: SelectContext.Request, res: SelectContext.Response) -> SelectContext.Response:
        state["seen"] += 1
        n = state["seen"]
        if n <= state["hold"]:
            state["release"].wait(30.0)
        res.success = True
        res.error_message = f"request {n}"
        return res

    rclpy.init()
    node = rclpy.create_node("flaky_select_server")
    node.create_service(
        SelectContext, "flaky_select", handle, callback_group=ReentrantCallbackGroup()
    )
    executor = MultiThreadedExecutor(num_threads=3)
    executor.add_node(node)
    spin = threading.Thread(target=executor.spin, daemon=True)
    spin.start()
    try:
        yield state
    finally:
        state["release"].set()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()


def test_an_unanswered_selection_is_sent_again(flaky_server: dict[str, Any]) -> None:
    from camp_planner.ros.client import CampClient

    client = CampClient("retry_client", select_service="flaky_select")
    try:
        answer = client.select_context(features=[0.0], timeout=20.0, retry_s=0.5)
        assert answer.success and answer.error_message == "request 2"
        assert flaky_server["seen"] == 2
    finally:
        client.close()


def test_a_server_that_never_answers_is_a_clear_error(flaky_server: dict[str, Any]) -> None:
    from camp_planner.ros.client import CampClient, ClientError

    flaky_server["hold"] = 100
    client = CampClient("retry_client", select_service="flaky_select")
    try:
        with pytest.raises(ClientError, match=r"did not answer within 1\.5 s \(\d+ requests"):
            client.select_context(features=[0.0], timeout=1.5, retry_s=0.5)
        assert flaky_server["seen"] >= 2
    finally:
        flaky_server["release"].set()
        client.close()
