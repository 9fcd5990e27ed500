"""The package's action client is whole when it joins its node: an executor spinning that
node in another thread may ask it for its entities at once (rclpy's own client is not yet,
ros2/rclpy#1589, and a restarted camp_executor died of it while configuring)."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = [pytest.mark.ros]


def test_an_action_client_answers_the_executor_from_the_moment_it_joins_its_node() -> None:
    import rclpy

    from camp_msgs.action import ExecutePlan
    from camp_planner.ros.common import ActionClient

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("action_client_test", context=context)
        asked: list[Any] = []
        joined = node.add_waitable

        def add_waitable(waitable: Any) -> None:
            joined(waitable)
            # What an executor thread does with every waitable of the node it spins.
            asked.append(waitable.get_num_entities())

        node.add_waitable = add_waitable  # type: ignore[method-assign]
        client = ActionClient(node, ExecutePlan, "execute_plan")
        assert len(asked) == 1 and asked[0].num_subscriptions == 2  # feedback and status
        client.destroy()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
