"""camp_msgs ↔ the service's scenes: a round trip keeps the scene, and a goal pose keeps the
frame it was given in, so validation can refuse one in a frame other than the scene's."""

from __future__ import annotations

import dataclasses
import math

import pytest

from camp_planner.domains.interface.scene import Pose
from camp_planner.domains.namo.world import generate_task

pytestmark = pytest.mark.ros


def test_a_scene_round_trips_through_its_message() -> None:
    from camp_planner.domains.namo.scene_io import scene_from_task
    from camp_planner.ros.convert import scene_from_msg, scene_to_msg

    scene = scene_from_task(generate_task(4, 1000))
    back = scene_from_msg(scene_to_msg(scene))
    assert back.objects == scene.objects and back.goal_object_id == scene.goal_object_id
    assert back.frame_id == scene.frame_id and back.goal_frame_id == ""


def test_a_goal_pose_keeps_its_frame() -> None:
    from camp_planner.domains.interface.errors import ErrorCode, ServiceError
    from camp_planner.domains.namo.scene_io import scene_from_task, task_from_scene
    from camp_planner.ros.convert import scene_from_msg, scene_to_msg

    scene = scene_from_task(generate_task(4, 1000))
    rest = tuple(o for o in scene.objects if o.id != scene.goal_object_id)
    goal = dataclasses.replace(
        scene, objects=rest, goal_object_id="", goal_pose=Pose.planar(7.5, 7.5, 0.0)
    )
    msg = scene_to_msg(goal)
    assert scene_from_msg(msg).goal_frame_id == "map"
    task_from_scene(scene_from_msg(msg))
    msg.goal_pose.header.frame_id = "odom"
    odd = scene_from_msg(msg)
    assert odd.goal_pose is not None and odd.goal_frame_id == "odom"
    assert (odd.goal_pose.x, odd.goal_pose.y) == (7.5, 7.5)
    with pytest.raises(ServiceError) as err:
        task_from_scene(odd)
    assert err.value.code == ErrorCode.INVALID_SCENE and "'odom'" in err.value.message


def test_a_3d_pose_round_trips_and_a_tilted_one_is_refused_by_the_planar_model() -> None:
    from camp_planner.domains.interface.errors import ErrorCode, ServiceError
    from camp_planner.domains.namo.scene_io import scene_from_task, task_from_scene
    from camp_planner.ros.convert import scene_from_msg, scene_to_msg

    scene = scene_from_task(generate_task(4, 1000))
    box = next(o for o in scene.objects if o.object_class == "box")
    msg = scene_to_msg(scene)
    obs = next(o for o in msg.objects if o.id == box.id)
    # A box of the model stands on the floor: its pose is its centre, half its height up.
    assert obs.pose.position.z == pytest.approx(box.size[2] / 2)
    turn = 0.2  # radians about x: the box lies tilted
    obs.pose.orientation.x, obs.pose.orientation.w = math.sin(turn / 2), math.cos(turn / 2)
    back = scene_from_msg(msg)
    tilted = next(o for o in back.objects if o.id == box.id)
    assert tilted.pose.orientation == (math.sin(turn / 2), 0.0, 0.0, math.cos(turn / 2))
    assert tilted.pose.tilt() == pytest.approx(turn)
    with pytest.raises(ServiceError) as err:
        task_from_scene(back)
    assert err.value.code == ErrorCode.INVALID_SCENE
    assert box.id in err.value.message and "tilted 11.5°" in err.value.message


def test_plan_steps_round_trip_through_the_plan_message() -> None:
    from camp_planner.domains.interface.errors import ErrorCode
    from camp_planner.domains.interface.plan import PlanStepData
    from camp_planner.ros.convert import plan_steps, plan_to_msg
    from camp_planner.service.types import PlanResult

    steps = [
        PlanStepData("move", [], [], "transit", Pose.planar(1.0, 2.0, 0.5), 1, 0),
        PlanStepData(
            "pick", ["red_0", "side"], ["red_0"], "manipulation", Pose((1.5, 2.0, 0.8)), 1, 1
        ),
    ]
    result = PlanResult(True, ErrorCode.NONE, "", base_path=[(0.0, 0.0, 0.0), (1.0, 2.0, 0.5)])
    result.steps = steps
    msg = plan_to_msg(result, "map")
    assert [s.action for s in msg.steps] == ["move", "pick"]
    assert list(msg.steps[1].arguments) == ["red_0", "side"]
    assert msg.steps[1].target.position.z == 0.8
    assert plan_steps(msg) == steps
