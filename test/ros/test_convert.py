"""camp_msgs ↔ the service's scenes: a round trip keeps the scene, and a goal pose keeps the
frame it was given in, so validation can refuse one in a frame other than the scene's."""

from __future__ import annotations

import dataclasses

import pytest

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
    from camp_planner.domains.namo.scene_io import scene_from_task, task_from_scene
    from camp_planner.ros.convert import scene_from_msg, scene_to_msg
    from camp_planner.service.errors import ErrorCode, ServiceError

    scene = scene_from_task(generate_task(4, 1000))
    rest = tuple(o for o in scene.objects if o.id != scene.goal_object_id)
    goal = dataclasses.replace(scene, objects=rest, goal_object_id="", goal_xy=(7.5, 7.5))
    msg = scene_to_msg(goal)
    assert scene_from_msg(msg).goal_frame_id == "map"
    task_from_scene(scene_from_msg(msg))
    msg.goal_pose.header.frame_id = "odom"
    odd = scene_from_msg(msg)
    assert odd.goal_xy == (7.5, 7.5) and odd.goal_frame_id == "odom"
    with pytest.raises(ServiceError) as err:
        task_from_scene(odd)
    assert err.value.code == ErrorCode.INVALID_SCENE and "'odom'" in err.value.message
