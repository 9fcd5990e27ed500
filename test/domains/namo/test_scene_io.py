"""NAMO scenes ↔ tasks: a perceived scene round-trips, and every malformed scene is refused
with its named error code."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose, Scene, SceneObject
from camp_planner.domains.namo.domain import world_settings
from camp_planner.domains.namo.scene_io import (
    SIZE_TOLERANCE,
    WALL_TOLERANCE,
    scene_from_task,
    task_from_scene,
)
from camp_planner.domains.namo.world import NamoSettings, NamoTask, generate_task
from camp_planner.sim.carry import hold_point
from camp_planner.workflow import Pipeline

CONFIG = Path(__file__).resolve().parents[3] / "config"


def _close(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(("seed", "grid"), [*((s, 3) for s in range(12)), (0, 4), (1, 5)])
def test_scene_round_trips_to_the_same_task(seed: int, grid: int) -> None:
    settings = NamoSettings(grid=grid)
    task = generate_task(seed, seed, settings)
    back, slot_of = task_from_scene(scene_from_task(task), settings)
    assert sorted((d.a, d.b) for d in back.doors) == sorted((d.a, d.b) for d in task.doors)
    for d in task.doors:
        twin = next(e for e in back.doors if (e.a, e.b) == (d.a, d.b))
        assert math.isclose(d.x, twin.x, abs_tol=1e-6) and math.isclose(d.y, twin.y, abs_tol=1e-6)
    assert sorted(back.boxes, key=lambda b: b.name) == sorted(task.boxes, key=lambda b: b.name)
    assert all(
        _close(w, v) for w, v in zip(sorted(task.walls()), sorted(back.walls()), strict=True)
    )
    assert slot_of == {b.name: b.name for b in task.boxes}
    assert _close(back.start, task.start) and _close(back.goal, task.goal)


def test_foreign_box_ids_get_slots_of_their_room() -> None:
    task = generate_task(3, 3)
    scene = scene_from_task(task)
    renamed = tuple(
        dataclasses.replace(o, id=f"crate-{i}") if o.object_class == "box" else o
        for i, o in enumerate(scene.objects)
    )
    back, slot_of = task_from_scene(dataclasses.replace(scene, objects=renamed))
    assert len(slot_of) == len(task.boxes)
    for box in back.boxes:
        assert box.name.startswith(f"box_r{box.room}_")


def _scene() -> Scene:
    return scene_from_task(generate_task(5, 5))


def _code(scene: Scene) -> ErrorCode:
    with pytest.raises(ServiceError) as info:
        task_from_scene(scene)
    assert info.value.message
    return info.value.code


def _box(scene: Scene) -> SceneObject:
    return next(o for o in scene.objects if o.object_class == "box")


def test_malformed_scenes_get_named_errors() -> None:
    s = _scene()
    assert (
        _code(dataclasses.replace(s, robot_pose=Pose.planar(math.nan, 1.0, 0.0)))
        == ErrorCode.INVALID_SCENE
    )
    inf_box = dataclasses.replace(_box(s), pose=Pose.planar(math.inf, 1.0, 0.0))
    objs = tuple(inf_box if o.id == inf_box.id else o for o in s.objects)
    assert _code(dataclasses.replace(s, objects=objs)) == ErrorCode.INVALID_SCENE
    assert _code(dataclasses.replace(s, objects=())) == ErrorCode.EMPTY_SCENE
    assert _code(dataclasses.replace(s, goal_object_id="")) == ErrorCode.MISSING_GOAL
    assert _code(dataclasses.replace(s, goal_object_id="mug")) == ErrorCode.UNKNOWN_OBJECT
    outside = dataclasses.replace(s, goal_object_id="", goal_pose=Pose.planar(20.0, 20.0, 0.0))
    assert _code(outside) == ErrorCode.UNREACHABLE_GOAL
    wrong_room = dataclasses.replace(s, goal_object_id="", goal_pose=Pose.planar(4.5, 1.5, 0.0))
    assert _code(wrong_room) == ErrorCode.UNREACHABLE_GOAL
    twice = dataclasses.replace(s, objects=(*s.objects, _box(s)))
    assert _code(twice) == ErrorCode.INVALID_SCENE
    table = SceneObject("table", "table", Pose.planar(1.5, 1.5, 0.0), (0.8, 0.8, 0.7), False)
    assert _code(dataclasses.replace(s, objects=(*s.objects, table))) == ErrorCode.INVALID_SCENE
    no_walls = tuple(o for o in s.objects if o.object_class != "wall")
    assert _code(dataclasses.replace(s, objects=no_walls)) == ErrorCode.INVALID_SCENE


def test_a_room_with_too_many_boxes_is_refused() -> None:
    s = _scene()
    # Room 1 holds three boxes; three more along its top wall, clear of everything, make six.
    extra = tuple(
        SceneObject(f"extra{k}", "box", Pose.planar(3.5 + 0.4 * k, 2.6, 0.0), (0.3, 0.3, 0.7), True)
        for k in range(3)
    )
    with pytest.raises(ServiceError) as info:
        task_from_scene(dataclasses.replace(s, objects=(*s.objects, *extra)))
    assert info.value.code == ErrorCode.INVALID_SCENE and "slots" in info.value.message


def test_walls_that_close_every_doorway_make_the_goal_unreachable() -> None:
    s = _scene()
    walls = [o for o in s.objects if o.object_class != "wall"]
    size = 9.0
    for k in (1, 2):  # full walls across the grid: no doorway anywhere
        walls.append(
            SceneObject(
                f"v{k}", "wall", Pose.planar(3.0 * k, size / 2, 0.0), (0.1, size, 1.0), False
            )
        )
        walls.append(
            SceneObject(
                f"h{k}", "wall", Pose.planar(size / 2, 3.0 * k, 0.0), (size, 0.1, 1.0), False
            )
        )
    assert _code(dataclasses.replace(s, objects=tuple(walls))) == ErrorCode.UNREACHABLE_GOAL


# --- scenes the model cannot represent faithfully are refused by name --------------------------


def _with(scene: Scene, *objects: SceneObject, drop: tuple[str, ...] = ()) -> Scene:
    """``scene`` with ``objects`` in place of those of the same id (or added), ``drop`` gone."""
    new = {o.id: o for o in objects}
    kept = [new.pop(o.id, o) for o in scene.objects if o.id not in drop]
    return dataclasses.replace(scene, objects=(*kept, *new.values()))


def _obj(scene: Scene, object_id: str) -> SceneObject:
    return next(o for o in scene.objects if o.id == object_id)


def _refusal(
    scene: Scene, settings: NamoSettings | None = None, frame_id: str = "map"
) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        task_from_scene(scene, settings, frame_id=frame_id)
    assert info.value.message
    return info.value


# In task 5 (``_scene``) room 0 holds box_r0_3 and box_r0_4 and the robot at (1.40, 0.84);
# wall_4 is the wall between rooms 0 and 1 (x = 3, no doorway), wall_5 and wall_6 flank the
# doorway between rooms 0 and 3 (y = 3, x 0.60-1.60), wall_0 is the bottom outer wall.


@pytest.mark.parametrize(
    "size", [(0.0, 0.0, 0.0), (10.0, 10.0, 0.7), (1e300, 1e300, 1e300), (0.3, 0.3, 0.3)]
)
def test_a_box_of_another_size_is_refused_not_resized(size: tuple[float, float, float]) -> None:
    s = _scene()
    error = _refusal(_with(s, dataclasses.replace(_obj(s, "box_r0_3"), size=size)))
    assert error.code == ErrorCode.INVALID_SCENE
    assert "box_r0_3" in error.message and "the model's boxes are" in error.message


def test_the_message_says_what_the_box_is_and_what_the_model_allows() -> None:
    s = _scene()
    big = dataclasses.replace(_obj(s, "box_r0_3"), id="b3", size=(10.0, 10.0, 0.7))
    error = _refusal(_with(s, big, drop=("box_r0_3",)))
    assert (
        error.message
        == "object 'b3' is 10.00 × 10.00 m; the model's boxes are 0.30 × 0.30 m (± 0.05 m)"
    )


@pytest.mark.parametrize("xy", [(-50.0, -50.0), (1e300, 1.0), (4.5, -0.2), (9.3, 4.5)])
def test_a_box_outside_the_map_is_refused_not_clamped(xy: tuple[float, float]) -> None:
    s = _scene()
    box = dataclasses.replace(_obj(s, "box_r0_3"), pose=Pose.planar(*xy, 0.0))
    error = _refusal(_with(s, box))
    assert error.code == ErrorCode.INVALID_SCENE and "outside the map" in error.message


def test_a_box_in_the_outer_wall_is_refused() -> None:
    s = _scene()
    box = dataclasses.replace(_obj(s, "box_r0_3"), pose=Pose.planar(0.1, 2.3, 0.0))
    error = _refusal(_with(s, box))
    assert error.code == ErrorCode.INVALID_SCENE and "wall" in error.message


def test_a_box_on_the_robot_is_refused() -> None:
    s = _scene()
    box = dataclasses.replace(_obj(s, "box_r0_3"), pose=Pose.planar(1.4, 0.84, 0.0))
    error = _refusal(_with(s, box))
    assert error.code == ErrorCode.INVALID_SCENE and "robot" in error.message


def test_two_boxes_at_one_spot_are_refused() -> None:
    s = _scene()
    twin = dataclasses.replace(_obj(s, "box_r0_3"), id="crate")
    error = _refusal(_with(s, twin))
    assert error.code == ErrorCode.INVALID_SCENE
    assert "crate" in error.message and "box_r0_3" in error.message


@pytest.mark.parametrize(
    "pose", [(0.1, 1.5, 0.0), (2.8, 0.5, 0.0), (2.6, 0.5, math.pi / 4)], ids=str
)
def test_the_robot_in_a_wall_is_refused(pose: tuple[float, float, float]) -> None:
    error = _refusal(dataclasses.replace(_scene(), robot_pose=Pose.planar(*pose)))
    assert error.code == ErrorCode.INVALID_SCENE and "robot" in error.message


@pytest.mark.parametrize("frame", ["odom", "base_link", ""])
def test_a_scene_in_another_frame_is_refused(frame: str) -> None:
    error = _refusal(dataclasses.replace(_scene(), frame_id=frame))
    assert error.code == ErrorCode.INVALID_SCENE and "'map'" in error.message


def test_the_frame_is_a_parameter() -> None:
    s = dataclasses.replace(_scene(), frame_id="odom")
    task, _ = task_from_scene(s, frame_id="odom")
    assert task.boxes == task_from_scene(_scene())[0].boxes
    assert "'odom'" in _refusal(_scene(), frame_id="odom").message


def test_a_goal_pose_in_another_frame_than_the_scene_is_refused() -> None:
    s = _scene()
    rest = tuple(o for o in s.objects if o.id != s.goal_object_id)
    goal = dataclasses.replace(
        s, objects=rest, goal_object_id="", goal_pose=Pose.planar(7.5, 7.5, 0.0)
    )
    task_from_scene(dataclasses.replace(goal, goal_frame_id="map"))
    error = _refusal(dataclasses.replace(goal, goal_frame_id="odom"))
    assert error.code == ErrorCode.INVALID_SCENE and "'odom'" in error.message


def _wall(object_id: str, x: float, y: float, sx: float, sy: float) -> SceneObject:
    return SceneObject(object_id, "wall", Pose.planar(x, y, 0.0), (sx, sy, 1.0), False)


def _walls_the_model_would_not_have() -> dict[str, Scene]:
    s = _scene()
    w4, w6 = _obj(s, "wall_4"), _obj(s, "wall_6")
    return {
        "in the middle of a room": _with(s, _wall("mid", 1.5, 2.0, 1.0, 0.1)),
        "too thick": _with(s, dataclasses.replace(w4, size=(0.3, 3.0, 1.0))),
        "off the boundary by 4 cm": _with(
            s, dataclasses.replace(w4, pose=Pose.planar(3.04, 1.5, 0.0))
        ),
        "off the boundary by 50 cm": _with(
            s, dataclasses.replace(w4, pose=Pose.planar(3.5, 1.5, 0.0))
        ),
        "turned 30 degrees": _with(
            s, dataclasses.replace(w4, pose=Pose.planar(3.0, 1.5, math.pi / 6))
        ),
        "a doorway 0.8 m wide": _with(s, _wall("narrow", 0.699, 3.0, 0.2, 0.1)),
        "a doorway 1.3 m wide": _with(s, _wall("wall_6", 2.4495, 3.0, 1.101, 0.1)),
        "a second gap, 0.4 m": _with(
            s, _wall("wall_4", 3.0, 0.65, 0.1, 1.3), _wall("w4b", 3.0, 2.35, 0.1, 1.3)
        ),
        "a second gap, 0.6 m": _with(
            s, _wall("wall_4", 3.0, 0.6, 0.1, 1.2), _wall("w4b", 3.0, 2.4, 0.1, 1.2)
        ),
        "the outer wall missing": _with(s, drop=("wall_0",)),
        "zero size": _with(s, _wall("dot", 3.0, 1.5, 0.0, 0.0)),
        "outside the map": _with(s, _wall("far", 50.0, 50.0, 1.0, 0.1)),
        "absurdly long": _with(s, dataclasses.replace(w6, size=(1e300, 0.1, 1.0))),
        "movable": _with(s, dataclasses.replace(w4, movable=True)),
    }


@pytest.mark.parametrize("case", sorted(_walls_the_model_would_not_have()))
def test_walls_the_model_would_not_have_are_refused(case: str) -> None:
    error = _refusal(_walls_the_model_would_not_have()[case])
    assert error.code == ErrorCode.INVALID_SCENE, error.message


def test_doorway_messages_give_the_width_and_the_model_s() -> None:
    error = _refusal(_walls_the_model_would_not_have()["a doorway 0.8 m wide"])
    assert "rooms 0 and 3" in error.message and "0.80 m" in error.message
    assert "1.00 m" in error.message


def test_the_goal_in_a_wall_is_refused() -> None:
    s = dataclasses.replace(_scene(), goal_object_id="", goal_pose=Pose.planar(8.98, 7.5, 0.0))
    error = _refusal(_with(s, drop=("goal",)))
    assert error.code == ErrorCode.UNREACHABLE_GOAL and "wall" in error.message


def test_the_goal_in_a_box_is_refused() -> None:
    # A box of room 5 in the doorway to the goal room (door 5-8 at x 6.82, y 6), the goal
    # given as a pose just inside the goal room, under the box.
    s = dataclasses.replace(_scene(), goal_object_id="", goal_pose=Pose.planar(6.815, 6.1, 0.0))
    box = SceneObject("crate", "box", Pose.planar(6.815, 5.99, 0.0), (0.3, 0.3, 0.7), True)
    error = _refusal(_with(s, box, drop=("goal",)))
    assert error.code == ErrorCode.UNREACHABLE_GOAL and "crate" in error.message


def test_a_goal_object_larger_than_the_model_s_is_refused() -> None:
    s = _scene()
    error = _refusal(_with(s, dataclasses.replace(_obj(s, "goal"), size=(1.0, 1.0, 1.0))))
    assert error.code == ErrorCode.INVALID_SCENE and "goal" in error.message


def test_a_box_turned_off_the_axes_is_refused() -> None:
    s = _scene()
    box = _obj(s, "box_r0_3")
    turned = dataclasses.replace(box, pose=Pose.planar(box.pose.x, box.pose.y, math.pi / 4))
    error = _refusal(_with(s, turned))
    assert error.code == ErrorCode.INVALID_SCENE and "45" in error.message


def test_a_box_turned_by_a_right_angle_swaps_its_extents() -> None:
    settings = NamoSettings(box_size=(0.4, 0.2, 0.7))
    task = generate_task(5, 5, settings)
    s = scene_from_task(task)
    box = next(o for o in s.objects if o.object_class == "box")
    lying = dataclasses.replace(box, size=(0.2, 0.4, 0.7))
    upright = dataclasses.replace(lying, pose=Pose.planar(box.pose.x, box.pose.y, -math.pi / 2))
    assert task_from_scene(_with(s, upright), settings)[0].boxes == task.boxes
    assert _refusal(_with(s, lying), settings=settings).code == ErrorCode.INVALID_SCENE


def test_small_differences_within_the_tolerances_are_accepted() -> None:
    s = _scene()
    box, w4 = _obj(s, "box_r0_3"), _obj(s, "wall_4")
    near = _with(
        s,
        dataclasses.replace(
            box, size=(0.34, 0.27, 0.71), pose=Pose.planar(box.pose.x, box.pose.y, math.radians(2))
        ),
        dataclasses.replace(w4, pose=Pose.planar(3.01, 1.5, math.pi / 2), size=(3.0, 0.12, 2.5)),
        _wall("wall_5", 0.2795, 3.0, 0.559, 0.1),  # the 0-3 doorway 1.04 m wide
    )
    task, slots = task_from_scene(near)
    assert slots == task_from_scene(s)[1]
    assert {(b.name, b.x, b.y) for b in task.boxes} == {
        (b.name, b.x, b.y) for b in task_from_scene(s)[0].boxes
    }


def test_touching_boxes_are_accepted() -> None:
    s = _scene()
    box = _obj(s, "box_r0_3")
    beside = dataclasses.replace(
        box, id="crate", pose=Pose.planar(box.pose.x + 0.3, box.pose.y, 0.0)
    )
    task, _ = task_from_scene(_with(s, beside))
    assert len(task.boxes) == len(task_from_scene(s)[0].boxes) + 1


@pytest.mark.parametrize("config", [None, "namo/grid4.yaml", "namo/cluttered.yaml"])
def test_generated_tasks_round_trip_unchanged(config: str | None, artifacts: Path) -> None:
    """Every train and test task of a configuration: the same task, the same slots."""
    path = None if config is None else CONFIG / config
    pipe = Pipeline.create("namo", path, artifacts)
    settings = world_settings(pipe.config)
    for split in ("train", "test"):
        for i in range(len(pipe.tasks(split))):
            task = pipe.task(split, i)
            back, slot_of = task_from_scene(scene_from_task(task), settings, task.task_id)
            assert slot_of == {b.name: b.name for b in task.boxes}
            assert back.boxes == task.boxes and back.start == task.start
            assert back.goal == task.goal and back.settings == task.settings
            assert [(d.a, d.b, d.vertical_wall) for d in back.doors] == [
                (d.a, d.b, d.vertical_wall) for d in task.doors
            ]
            for d, e in zip(task.doors, back.doors, strict=True):
                assert math.isclose(d.x, e.x, abs_tol=1e-9)
                assert math.isclose(d.y, e.y, abs_tol=1e-9)


def test_the_tolerances_stay_inside_the_planner_s_clearance() -> None:
    """A real box or wall reaches at most half the size tolerance, or the wall tolerance,
    beyond its model: less than the clearance every planned motion keeps from the model."""
    from camp_planner.domains.namo.tamp import PLAN_MARGIN

    assert SIZE_TOLERANCE / 2 < PLAN_MARGIN and WALL_TOLERANCE < PLAN_MARGIN


def test_the_planar_model_reads_3d_poses_and_refuses_tilted_ones() -> None:
    s = _scene()
    box = _obj(s, "box_r0_3")
    # A lean within TILT_TOLERANCE is read as upright; a box standing (its centre at or
    # below half its height) is on the floor, one higher up is refused unless it is held.
    lean = math.radians(1.0)
    x, y, yaw = box.pose.x, box.pose.y, box.pose.yaw
    for z in (box.pose.z, 0.0):
        upright = Pose((x, y, z), (math.sin(lean / 2), 0.0, 0.0, math.cos(lean / 2)))
        assert task_from_scene(_with(s, dataclasses.replace(box, pose=upright)))[0].boxes == (
            task_from_scene(s)[0].boxes
        )
    aloft = _refusal(_with(s, dataclasses.replace(box, pose=Pose((x, y, 5.0)))))
    assert aloft.code == ErrorCode.INVALID_SCENE and "off the floor" in aloft.message
    assert yaw == 0.0
    fallen = Pose((x, y, 0.15), (math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4)))
    error = _refusal(_with(s, dataclasses.replace(box, pose=fallen)))
    assert error.code == ErrorCode.INVALID_SCENE
    assert "'box_r0_3' is tilted 90.0°" in error.message and "planar" in error.message
    leaning_robot = Pose((1.4, 0.84, 0.0), (0.0, math.sin(0.1), 0.0, math.cos(0.1)))
    error = _refusal(dataclasses.replace(s, robot_pose=leaning_robot))
    assert error.code == ErrorCode.INVALID_SCENE and "the robot is tilted" in error.message


# --- scenes partway through a task: the robot in any room, boxes moved, a box held ---------
def _mid_task_scene(
    seed: int,
    room: int,
    offset: tuple[float, float],
    yaw: float,
    moves: list[tuple[int, float, float]],
) -> tuple[Scene, tuple[float, float, float], dict[str, tuple[float, float]]]:
    """Task ``seed``'s scene with the robot near room ``room``'s centre (``offset``) and, for
    each (k, fx, fy) of ``moves``, the k-th remaining box moved to that fraction of a room
    (``fx`` in [0, 3) picks the room column too); boxes within reach of the robot are left
    out. Returns (scene, robot pose, box id → where the scene has it)."""
    task = generate_task(seed, seed)
    x0, y0, _, _ = task.room_rect(room)
    robot = (x0 + 1.5 + offset[0], y0 + 1.5 + offset[1], yaw)
    scene = scene_from_task(task)
    boxes = {o.id: (o.pose.x, o.pose.y) for o in scene.objects if o.object_class == "box"}
    boxes = {k: v for k, v in boxes.items() if math.dist(v, robot[:2]) > 1.0}
    names = sorted(boxes)
    for k, fx, fy in moves:
        if names:
            boxes[names[k % len(names)]] = (3.0 * fx, 3.0 * fy)
    others = tuple(o for o in scene.objects if o.object_class != "box")
    placed = tuple(
        SceneObject(i, "box", Pose.planar(x, y, 0.0, 0.35), (0.3, 0.3, 0.7), True)
        for i, (x, y) in sorted(boxes.items())
    )
    return (
        dataclasses.replace(scene, robot_pose=Pose.planar(*robot), objects=(*others, *placed)),
        robot,
        boxes,
    )


def _representable(
    task_rooms: NamoTask, robot: tuple[float, float, float], boxes: dict[str, tuple[float, float]]
) -> bool:
    """A simple sufficient test that the model has this state: every box well inside a room
    that is not the goal room, at least 0.45 m from any other and 1 m from the robot, and at
    most five boxes per room."""
    per_room: dict[int, int] = {}
    for x, y in boxes.values():
        room = task_rooms.room_of(x, y)
        inside = 0.25 < x % 3.0 < 2.75 and 0.25 < y % 3.0 < 2.75
        if room == 8 or not inside or math.dist((x, y), robot[:2]) <= 1.0:
            return False
        per_room[room] = per_room.get(room, 0) + 1
    spots = list(boxes.values())
    apart = all(math.dist(a, b) >= 0.45 for i, a in enumerate(spots) for b in spots[i + 1 :])
    return apart and max(per_room.values(), default=0) <= 5


_CASES = st.tuples(
    st.integers(0, 40),
    st.integers(0, 8),
    st.tuples(st.floats(-0.8, 0.8), st.floats(-0.8, 0.8)),
    st.floats(-math.pi, math.pi),
    st.lists(
        st.tuples(st.integers(0, 30), st.floats(0.0, 2.999), st.floats(0.0, 2.999)), max_size=4
    ),
)
Case = tuple[int, int, tuple[float, float], float, list[tuple[int, float, float]]]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=_CASES)
def test_a_mid_task_scene_starts_the_task_where_the_robot_is(case: Case) -> None:
    seed, room = case[0], case[1]
    scene, robot, boxes = _mid_task_scene(*case)
    assume(_representable(generate_task(seed, seed), robot, boxes))
    task, slot_of = task_from_scene(scene)
    assert _close(task.start, robot) and task.room_of(*robot[:2]) == room
    assert task.held == ""
    by_slot = {b.name: (b.x, b.y) for b in task.boxes}
    assert set(slot_of) == set(boxes)
    for oid, xy in boxes.items():
        slot = slot_of[oid]
        assert _close(by_slot[slot], xy)
        # A moved box takes a slot of the room it now stands in.
        assert slot.startswith(f"box_r{task.room_of(*xy)}_")
    # The task's own scene is read back as the same task.
    again, _ = task_from_scene(scene_from_task(task))
    assert sorted(again.boxes, key=lambda b: b.name) == sorted(task.boxes, key=lambda b: b.name)
    assert _close(again.start, task.start)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(case=_CASES)
def test_a_box_in_the_gripper_is_the_task_s_held_box(case: Case) -> None:
    seed, room, yaw = case[0], case[1], case[3]
    scene, robot, boxes = _mid_task_scene(*case)
    hx, hy, hz = hold_point(robot, 0.7)
    rooms = generate_task(seed, seed)
    assume(room != 8 and _representable(rooms, robot, boxes))
    assume(all(math.dist((hx, hy), xy) > 0.45 for xy in boxes.values()))
    # Rightly refused: a robot facing a wall closely holds its box through the wall, and a
    # box held in a room whose slots are all taken has no state of the model.
    assume(0.25 < hx % 3.0 < 2.75 and 0.25 < hy % 3.0 < 2.75)
    held_room = rooms.room_of(hx, hy)
    others = sum(rooms.room_of(*xy) == held_room for xy in boxes.values())
    assume(others < rooms.settings.slots_per_room)
    carried = SceneObject("crate", "box", Pose.planar(hx, hy, yaw, hz), (0.3, 0.3, 0.7), True)
    task, slot_of = task_from_scene(dataclasses.replace(scene, objects=(*scene.objects, carried)))
    assert task.held == slot_of["crate"]
    assert task.held.startswith(f"box_r{task.room_of(hx, hy)}_")
    # The scene of that task shows the box in the gripper again.
    again, _ = task_from_scene(scene_from_task(task))
    assert again.held == task.held


def _held_scene(dz: float = 0.0, ahead: float = 0.5, turn: float = 0.0) -> Scene:
    scene, robot, _ = _mid_task_scene(5, 4, (0.0, 0.0), 0.3, [])
    x, y, yaw = robot
    z = 0.38 + dz
    box = SceneObject(
        "crate",
        "box",
        Pose.planar(x + ahead * math.cos(yaw), y + ahead * math.sin(yaw), yaw + turn, z),
        (0.3, 0.3, 0.7),
        True,
    )
    return dataclasses.replace(scene, objects=(*scene.objects, box))


def test_a_box_off_the_floor_but_not_in_the_gripper_is_refused() -> None:
    assert task_from_scene(_held_scene())[0].held
    for scene in (_held_scene(dz=0.2), _held_scene(ahead=0.8), _held_scene(turn=0.5)):
        with pytest.raises(ServiceError) as info:
            task_from_scene(scene)
        assert info.value.code == ErrorCode.INVALID_SCENE
    with pytest.raises(ServiceError) as info:
        task_from_scene(_held_scene(ahead=0.8))
    assert "gripper" in info.value.message


def test_two_held_boxes_are_refused() -> None:
    scene = _held_scene()
    box = next(o for o in scene.objects if o.id == "crate")
    second = dataclasses.replace(box, id="crate2", pose=Pose.planar(1.0, 1.0, 0.0, 0.9))
    with pytest.raises(ServiceError) as info:
        task_from_scene(dataclasses.replace(scene, objects=(*scene.objects, second)))
    assert info.value.code == ErrorCode.INVALID_SCENE and "at most one box" in info.value.message
