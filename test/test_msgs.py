"""camp_msgs is built by `make setup` with rosidl and importable with the ROS runtime."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.ros


def test_interfaces_are_generated_and_usable() -> None:
    from camp_msgs.msg import Context, ContextTerm, SceneObservation
    from camp_msgs.srv import SelectContext

    ctx = Context(id="c1", description="agent_room ∈ {0,1}", kind="disjunction")
    ctx.terms = [ContextTerm(variable="agent_room", allowed_values=["0", "1"])]
    assert ctx.terms[0].allowed_values == ["0", "1"]
    req = SelectContext.Request(scene=SceneObservation(domain="gridworld"))
    assert req.scene.domain == "gridworld"
    assert SelectContext.Response.ERROR_WRONG_FEATURE_LENGTH == 2


def test_select_context_round_trip_on_loopback() -> None:
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from camp_msgs.srv import SelectContext

    def handle(req: SelectContext.Request, res: SelectContext.Response) -> SelectContext.Response:
        res.success = False
        res.error_code = SelectContext.Response.ERROR_WRONG_FEATURE_LENGTH
        res.error_message = f"got {len(req.task_features)} features"
        return res

    rclpy.init()
    try:
        node = rclpy.create_node("camp_msgs_smoke")
        node.create_service(SelectContext, "select_context", handle)
        client = node.create_client(SelectContext, "select_context")
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(SelectContext.Request(task_features=[1.0, 2.0, 3.0]))
        executor.spin_until_future_complete(future, timeout_sec=10.0)
        res = future.result()
        assert res is not None and not res.success
        assert res.error_code == SelectContext.Response.ERROR_WRONG_FEATURE_LENGTH
        assert res.error_message == "got 3 features"
        executor.shutdown()
        node.destroy_node()
    finally:
        rclpy.shutdown()


def test_error_codes_match_the_interfaces() -> None:
    from camp_msgs.action import PlanTask
    from camp_msgs.srv import SelectContext
    from camp_planner.domains.interface.errors import ErrorCode

    for code in ErrorCode:
        assert getattr(PlanTask.Result, f"ERROR_{code.name}") == code.value
        if hasattr(SelectContext.Response, f"ERROR_{code.name}"):
            assert getattr(SelectContext.Response, f"ERROR_{code.name}") == code.value
    for name in dir(SelectContext.Response):
        if name.startswith("ERROR_"):
            assert ErrorCode[name[len("ERROR_") :]].value == getattr(SelectContext.Response, name)


def test_a_plan_step_carries_an_action_its_arguments_and_3d_geometry() -> None:
    from camp_msgs.msg import PlanStep

    step = PlanStep(action="regrasp", arguments=["red_0", "side"], objects=["red_0"])
    step.mode = PlanStep.MODE_MANIPULATION
    step.target.position.z = 0.75
    step.base_path_end, step.arm_trajectory_end = 3, 2
    assert (step.action, list(step.arguments)) == ("regrasp", ["red_0", "side"])
    assert step.target.position.z == 0.75 and step.arm_trajectory_end == 2
