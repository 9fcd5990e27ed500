"""camp_msgs ↔ the service's scenes: a round trip keeps the scene, and a goal pose keeps the
frame it was given in, so validation can refuse one in a frame other than the scene's."""

from __future__ import annotations

import dataclasses
import math

import pytest

from camp_planner.core.context import Context, Term
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


def _contexts() -> list[Context]:
    return [
        Context.universal(),
        Context("single", (Term("robot_room", 3),)),
        Context("disjunction", tuple(Term("robot_room", r) for r in (0, 6, 8))),
        Context("conjunction", (Term("agent_room", 0), Term("move", "up"))),
        # Issue 50: a conjunction of value sets, with a string beside numbers and a number
        # that also reads as a string ("2" and 2 must stay apart).
        Context(
            "set_conjunction",
            (
                Term("bin", "none"),
                Term("bin", 2),
                Term("bin", 5),
                Term("grasp", "none"),
                Term("grasp", "top"),
            ),
        ),
        Context("set_conjunction", (Term("label", "2"), Term("label", 2), Term("grasp", "top"))),
    ]


@pytest.mark.parametrize("index", range(6))
def test_every_kind_of_context_round_trips_through_its_message(index: int) -> None:
    from rclpy.serialization import deserialize_message, serialize_message

    from camp_msgs.msg import Context as ContextMsg
    from camp_planner.ros.convert import context_from_msg, context_to_msg

    ctx = _contexts()[index]
    msg = context_to_msg(ctx)
    assert (msg.id, msg.description, msg.kind) == (ctx.id, ctx.name, ctx.kind)
    # Over the wire, as a subscriber receives it.
    wire = deserialize_message(serialize_message(msg), ContextMsg)
    back = context_from_msg(wire)
    assert back == ctx and back.id == ctx.id and back.name == ctx.name
    assert back.to_json() == ctx.to_json()


def test_a_set_conjunction_message_lists_each_variables_set() -> None:
    from camp_planner.ros.convert import context_to_msg

    msg = context_to_msg(_contexts()[4])
    assert msg.kind == "set_conjunction"
    assert [(t.variable, list(t.allowed_values)) for t in msg.terms] == [
        ("bin", ["none", "2", "5"]),
        ("grasp", ["none", "top"]),
    ]
    assert list(msg.terms[0].allowed_values_json) == ['"none"', "2", "5"]


def test_context_messages_from_older_senders_and_bad_ones() -> None:
    from camp_msgs.msg import Context as ContextMsg
    from camp_msgs.msg import ContextTerm
    from camp_planner.core.errors import CampError
    from camp_planner.ros.convert import context_from_msg

    ctx = _contexts()[4]
    # A sender without the JSON field: whole numbers are read as numbers.
    old = ContextMsg(id=ctx.id, description=ctx.name, kind="set_conjunction")
    old.terms = [
        ContextTerm(variable="bin", allowed_values=["none", "2", "5"]),
        ContextTerm(variable="grasp", allowed_values=["none", "top"]),
    ]
    assert context_from_msg(old) == ctx
    old.id = "c00000000"
    with pytest.raises(CampError, match="does not match its terms"):
        context_from_msg(old)
    old.id, old.kind = "", "sometimes"
    with pytest.raises(CampError, match="unknown context kind"):
        context_from_msg(old)
    one = ContextMsg(kind="set_conjunction")
    one.terms = [ContextTerm(variable="bin", allowed_values=["1", "2"])]
    with pytest.raises(CampError, match="at least two variables"):
        context_from_msg(one)
    bad = ContextMsg(kind="single")
    bad.terms = [ContextTerm(variable="bin", allowed_values=["1"], allowed_values_json=["{"])]
    with pytest.raises(CampError, match="not JSON"):
        context_from_msg(bad)
