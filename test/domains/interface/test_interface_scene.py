"""Scenes as plain data: 3-D poses (a planar one gives back its exact yaw, a tilt is
measured whatever the heading) and the checks every scene needs, whatever its domain."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import (
    Pose,
    Scene,
    SceneObject,
    SceneTolerance,
    scene_change,
    validate_scene,
)


def _scene(**changes: object) -> Scene:
    table = SceneObject("table", "table", Pose((1.0, 0.0, 0.4)), (1.0, 0.6, 0.8), False)
    scene = Scene("manip", Pose.planar(0.0, 0.0, 0.0), (table,), goal_object_id="table")
    return dataclasses.replace(scene, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize("yaw", [0.0, 0.3, -2.5, math.pi, 7.0])
def test_a_planar_pose_gives_back_its_yaw_exactly(yaw: float) -> None:
    pose = Pose.planar(1.0, 2.0, yaw, z=0.35)
    assert pose.yaw == yaw and pose.as_planar() == (1.0, 2.0, yaw) and pose.z == 0.35
    assert pose.tilt() == 0.0
    # The same quaternion from a message: the heading to within rounding (in (-π, π]).
    plain = Pose(pose.position, pose.orientation)
    assert plain == pose
    assert math.isclose(math.remainder(plain.yaw - yaw, 2 * math.pi), 0.0, abs_tol=1e-12)


def test_a_tilt_is_measured_from_upright_whatever_the_heading() -> None:
    lean = 0.1  # about x, after a heading of 1 rad about z
    qz = (0.0, 0.0, math.sin(0.5), math.cos(0.5))
    qx = (math.sin(lean / 2), 0.0, 0.0, math.cos(lean / 2))
    x1, y1, z1, w1 = qz
    x2, y2, z2, w2 = qx
    product = (
        w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
        w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
        w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
    )
    pose = Pose((0.0, 0.0, 0.0), product)
    assert pose.tilt() == pytest.approx(lean)
    unnormalised = Pose((0.0, 0.0, 0.0), tuple(2.0 * q for q in product))  # type: ignore[arg-type]
    assert unnormalised.tilt() == pytest.approx(lean)


def test_a_3d_scene_passes_the_checks_every_scene_needs() -> None:
    validate_scene(_scene())


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"robot_pose": Pose((math.nan, 0.0, 0.0))}, ErrorCode.INVALID_SCENE),
        ({"robot_pose": Pose((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0))}, ErrorCode.INVALID_SCENE),
        ({"objects": ()}, ErrorCode.EMPTY_SCENE),
        ({"goal_object_id": "mug"}, ErrorCode.UNKNOWN_OBJECT),
        ({"goal_object_id": ""}, ErrorCode.MISSING_GOAL),
        ({"frame_id": "odom"}, ErrorCode.INVALID_SCENE),
    ],
)
def test_a_scene_without_what_every_scene_needs_is_refused(
    changes: dict[str, object], code: ErrorCode
) -> None:
    with pytest.raises(ServiceError) as info:
        validate_scene(_scene(**changes))
    assert info.value.code == code and info.value.message


def test_an_object_with_a_zero_quaternion_is_refused_by_name() -> None:
    bad = SceneObject("cup", "cup", Pose((0.5, 0.0, 0.9), (0.0, 0.0, 0.0, 0.0)), (0.1,) * 3, True)
    scene = _scene()
    with pytest.raises(ServiceError) as info:
        validate_scene(dataclasses.replace(scene, objects=(*scene.objects, bad)))
    assert info.value.code == ErrorCode.INVALID_SCENE and "'cup'" in info.value.message


def _with_box(x: float, y: float, yaw: float = 0.0, robot: float = 0.0) -> Scene:
    box = SceneObject("box_0", "box", Pose.planar(x, y, yaw, z=0.2), (0.4, 0.4, 0.4), True)
    table = SceneObject("table", "table", Pose((1.0, 0.0, 0.4)), (1.0, 0.6, 0.8), False)
    return Scene("namo", Pose.planar(robot, 0.0, 0.0), (table, box), goal_object_id="table")


@settings(max_examples=200, deadline=None)
@given(
    dx=st.floats(-0.05, 0.05),
    dy=st.floats(-0.05, 0.05),
    turn=st.floats(-0.1, 0.1),
    robot=st.floats(-5.0, 5.0),
)
def test_a_scene_within_the_tolerances_is_the_planned_one(
    dx: float, dy: float, turn: float, robot: float
) -> None:
    """Perception noise within the tolerances needs no new plan, nor, for a planner beside
    an executor, the robot driving anywhere."""
    tol = SceneTolerance(position_m=0.08, angle_rad=0.12, robot=False)
    planned = _with_box(2.0, 1.0)
    assert scene_change(planned, _with_box(2.0 + dx, 1.0 + dy, turn, robot), tol) == ""


def test_each_kind_of_change_is_named() -> None:
    tol = SceneTolerance()
    planned = _with_box(2.0, 1.0)
    assert scene_change(None, planned, tol) == "the first scene"
    assert scene_change(planned, _with_box(2.3, 1.0), tol) == "object 'box_0' moved 0.30 m"
    assert scene_change(planned, _with_box(2.0, 1.0, yaw=0.5), tol) == "object 'box_0' turned 29°"
    assert scene_change(planned, dataclasses.replace(planned, goal_object_id="box_0"), tol) == (
        "the goal changed"
    )
    fewer = dataclasses.replace(planned, objects=planned.objects[:1])
    assert scene_change(planned, fewer, tol) == "objects gone: box_0"
    assert scene_change(fewer, planned, tol) == "new objects: box_0"
    held = dataclasses.replace(
        planned, objects=(planned.objects[0], dataclasses.replace(planned.objects[1], room="r3"))
    )
    assert scene_change(planned, held, tol) == "object 'box_0' changed class, movability or room"
    # The robot's own motion counts, unless an executor judges it.
    drove = _with_box(2.0, 1.0, robot=1.5)
    assert scene_change(planned, drove, tol) == "the robot moved 1.50 m"
    assert scene_change(planned, drove, SceneTolerance(robot=False)) == ""
    assert scene_change(planned, _with_box(2.0, 1.0, robot=0.04), tol) == ""
    # A malformed scene is never taken for the planned one: validation then refuses it.
    assert scene_change(planned, _with_box(math.nan, 1.0), tol) == "a NaN or infinite value"
    lost = dataclasses.replace(drove, robot_pose=Pose.planar(math.inf, 0.0, 0.0))
    assert scene_change(planned, lost, tol) == "a NaN or infinite value"
