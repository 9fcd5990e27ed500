"""Fuzzed NAMO scenes: random garbage, and valid scenes from ``scene_from_task`` with objects
moved, resized, turned, duplicated, deleted, renamed or reclassed, another frame, robot pose
or goal, and NaN, infinite or huge values. ``task_from_scene`` either refuses a scene with a
named error or returns a task faithful to it, and never raises anything else.

Faithful is checked here independently of the implementation: by clipping polygons and by
sampling points, not by the separating-axis and cell-cover tests ``scene_io`` uses."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose, Scene, SceneObject
from camp_planner.domains.namo.scene_io import (
    AXIS_TOLERANCE,
    HEIGHT_TOLERANCE,
    OVERLAP_TOLERANCE,
    SIZE_TOLERANCE,
    WALL_TOLERANCE,
    scene_from_task,
    task_from_scene,
)
from camp_planner.domains.namo.world import NamoSettings, NamoTask, generate_task

Point = tuple[float, float]
Polygon = list[Point]

# Valid scenes to mutate: tasks of the paper's world and of a 4×4 one, the second with
# four of five slots filled, so that rooms are crowded.
WORLDS = (NamoSettings(), NamoSettings(grid=4, fill_prob=0.8))
BASES = tuple(
    (scene_from_task(generate_task(seed, seed, world)), world)
    for world in WORLDS
    for seed in range(3)
)
EPS = 1e-9  # metres of float rounding the checks below allow

WEIRD = st.sampled_from([math.nan, math.inf, -math.inf, 1e300, -1e300, 0.0, -0.0, 5e-324])
NUMBERS = st.one_of(st.floats(-1.0, 10.0), WEIRD, st.floats(allow_nan=True, allow_infinity=True))
SMALL = st.one_of(st.floats(-0.5, 0.5), st.floats(-0.03, 0.03))
YAWS = st.one_of(
    st.sampled_from([math.pi / 2, -math.pi / 2, math.pi, 3 * math.pi / 2, math.pi / 4]),
    st.floats(-0.15, 0.15),
    NUMBERS,
)
CLASSES = st.sampled_from(["wall", "box", "goal", "table", ""])
IDS = st.one_of(
    st.sampled_from(["goal", "box_r0_0", "box_r1_2", "box_r4_4", "wall_3", "crate", ""]),
    st.text(max_size=5),
)
TRIPLES = st.tuples(NUMBERS, NUMBERS, NUMBERS)


def _objects() -> st.SearchStrategy[SceneObject]:
    return st.builds(
        SceneObject,
        id=IDS,
        object_class=CLASSES,
        pose=TRIPLES.map(lambda t: Pose.planar(*t)),
        size=TRIPLES,
        movable=st.booleans(),
        room=st.sampled_from(["", "0", "8"]),
    )


GARBAGE = st.builds(
    Scene,
    domain=st.sampled_from(["namo", ""]),
    robot_pose=TRIPLES.map(lambda t: Pose.planar(*t)),
    objects=st.lists(_objects(), max_size=8).map(tuple),
    goal_object_id=IDS,
    goal_pose=st.none() | st.tuples(NUMBERS, NUMBERS).map(lambda xy: Pose.planar(*xy, 0.0)),
    frame_id=st.sampled_from(["map", "odom", ""]),
)


# --- mutations of a valid scene ----------------------------------------------------------------
Data = st.DataObject


def _index(data: Data, scene: Scene) -> int:
    return data.draw(st.integers(0, len(scene.objects) - 1))


def _put(scene: Scene, i: int, obj: SceneObject | None) -> Scene:
    objects = list(scene.objects)
    if obj is None:
        del objects[i]
    else:
        objects[i] = obj
    return dataclasses.replace(scene, objects=tuple(objects))


def _move(data: Data, scene: Scene) -> Scene:
    i = _index(data, scene)
    o = scene.objects[i]
    if data.draw(st.booleans()):
        x, y = o.pose.x + data.draw(SMALL), o.pose.y + data.draw(SMALL)
    else:
        x, y = data.draw(NUMBERS), data.draw(NUMBERS)
    return _put(scene, i, dataclasses.replace(o, pose=Pose.planar(x, y, o.pose.yaw)))


def _resize(data: Data, scene: Scene) -> Scene:
    i = _index(data, scene)
    o = scene.objects[i]
    if data.draw(st.booleans()):
        f = st.one_of(st.floats(0.0, 3.0), st.floats(0.85, 1.15))
        size = (o.size[0] * data.draw(f), o.size[1] * data.draw(f), o.size[2] * data.draw(f))
    else:
        size = data.draw(TRIPLES)
    return _put(scene, i, dataclasses.replace(o, size=size))


def _turn(data: Data, scene: Scene) -> Scene:
    i = _index(data, scene)
    o = scene.objects[i]
    return _put(
        scene, i, dataclasses.replace(o, pose=Pose.planar(o.pose.x, o.pose.y, data.draw(YAWS)))
    )


def _duplicate(data: Data, scene: Scene) -> Scene:
    o = scene.objects[_index(data, scene)]
    x, y = o.pose.x + data.draw(SMALL), o.pose.y + data.draw(SMALL)
    copy = dataclasses.replace(o, id=data.draw(IDS), pose=Pose.planar(x, y, o.pose.yaw))
    return dataclasses.replace(scene, objects=(*scene.objects, copy))


def _delete(data: Data, scene: Scene) -> Scene:
    return _put(scene, _index(data, scene), None)


def _reclass(data: Data, scene: Scene) -> Scene:
    i = _index(data, scene)
    changed = dataclasses.replace(
        scene.objects[i], object_class=data.draw(CLASSES), movable=data.draw(st.booleans())
    )
    return _put(scene, i, changed)


def _rename(data: Data, scene: Scene) -> Scene:
    i = _index(data, scene)
    return _put(scene, i, dataclasses.replace(scene.objects[i], id=data.draw(IDS)))


def _reframe(data: Data, scene: Scene) -> Scene:
    frame = data.draw(st.sampled_from(["odom", "", "map ", "MAP"]))
    return dataclasses.replace(scene, frame_id=frame)


def _robot(data: Data, scene: Scene) -> Scene:
    x, y = scene.robot_pose.x, scene.robot_pose.y
    if data.draw(st.booleans()):
        pose = (x + data.draw(SMALL), y + data.draw(SMALL), data.draw(YAWS))
    else:
        pose = data.draw(TRIPLES)
    return dataclasses.replace(scene, robot_pose=Pose.planar(*pose))


def _goal(data: Data, scene: Scene) -> Scene:
    roll = data.draw(st.integers(0, 2))
    if roll == 0:
        return dataclasses.replace(scene, goal_object_id=data.draw(IDS))
    near = st.tuples(st.floats(-1.0, 13.0), st.floats(-1.0, 13.0))
    xy = data.draw(st.one_of(near, st.tuples(NUMBERS, NUMBERS)))
    if roll == 2:  # the goal object stays, as an object the model has no place for
        scene = _without(scene, scene.goal_object_id)
    return dataclasses.replace(scene, goal_object_id="", goal_pose=Pose.planar(*xy, 0.0))


def _without(scene: Scene, object_id: str) -> Scene:
    return dataclasses.replace(scene, objects=tuple(o for o in scene.objects if o.id != object_id))


def _poison(data: Data, scene: Scene) -> Scene:
    i = _index(data, scene)
    o = scene.objects[i]
    values = [*o.pose.as_planar(), *o.size]
    values[data.draw(st.integers(0, 5))] = data.draw(WEIRD)
    x, y, yaw, sx, sy, sz = values
    return _put(scene, i, dataclasses.replace(o, pose=Pose.planar(x, y, yaw), size=(sx, sy, sz)))


def _near_object(data: Data, scene: Scene, reach: float) -> tuple[float, float]:
    """A point within ``reach`` of some object's footprint: in it, touching it or just by."""
    o = data.draw(st.sampled_from(scene.objects))
    hx, hy = abs(o.size[0]) / 2 + reach, abs(o.size[1]) / 2 + reach
    return (o.pose.x + data.draw(st.floats(-hx, hx)), o.pose.y + data.draw(st.floats(-hy, hy)))


def _nudge(data: Data, scene: Scene) -> Scene:
    """Move, resize or turn one object by about its tolerance; or move the robot or the goal
    across its room (they start at least 0.6 m from its walls) or next to some object."""
    kind = data.draw(st.sampled_from(["robot", "goal", "object", "object", "object"]))
    if kind == "robot":
        x, y = scene.robot_pose.x, scene.robot_pose.y
        if data.draw(st.booleans()):
            x, y = x + data.draw(st.floats(-1.5, 1.5)), y + data.draw(st.floats(-1.5, 1.5))
        else:
            x, y = _near_object(data, scene, 0.35)
        return dataclasses.replace(scene, robot_pose=Pose.planar(x, y, data.draw(YAWS)))
    if kind == "goal":
        if not scene.goal_object_id:
            return scene
        goal = scene.object(scene.goal_object_id)
        if data.draw(st.booleans()):
            xy = (
                goal.pose.x + data.draw(st.floats(-1.5, 1.5)),
                goal.pose.y + data.draw(st.floats(-1.5, 1.5)),
            )
        else:
            xy = _near_object(data, scene, 0.1)
        i = scene.objects.index(goal)
        return _put(scene, i, dataclasses.replace(goal, pose=Pose.planar(*xy, 0.0)))
    i = _index(data, scene)
    o = scene.objects[i]
    if o.object_class == "wall":  # a long wall: a tilt of 0.01 rad moves its ends 1.5 cm
        shift = grow = st.floats(-1.2 * WALL_TOLERANCE, 1.2 * WALL_TOLERANCE)
        tilt = st.floats(-0.012, 0.012)
    else:
        shift = st.floats(-0.3, 0.3)
        grow = st.floats(-1.2 * SIZE_TOLERANCE, 1.2 * SIZE_TOLERANCE)
        tilt = st.floats(-1.2 * AXIS_TOLERANCE, 1.2 * AXIS_TOLERANCE)
    turn = st.one_of(tilt, tilt.map(lambda v: v + math.pi / 2))
    pose = (o.pose.x + data.draw(shift), o.pose.y + data.draw(shift), data.draw(turn))
    size = (
        max(o.size[0] + data.draw(grow), 0.0),
        max(o.size[1] + data.draw(grow), 0.0),
        max(o.size[2] + data.draw(st.floats(-0.025, 0.025)), 0.0),
    )
    if pose[2] > math.pi / 4:  # a quarter turn: the same object, its extents swapped
        size = (size[1], size[0], size[2])
    return _put(scene, i, dataclasses.replace(o, pose=Pose.planar(*pose), size=size))


MUTATIONS: tuple[Callable[[Data, Scene], Scene], ...] = (
    _move,
    _resize,
    _turn,
    _duplicate,
    _delete,
    _reclass,
    _rename,
    _reframe,
    _robot,
    _goal,
    _poison,
)


# --- what a faithful task is -------------------------------------------------------------------
def _rectangle(x: float, y: float, hx: float, hy: float, yaw: float = 0.0) -> Polygon:
    """Corners (counter-clockwise) of a rectangle of half-extents (hx, hy) at (x, y, yaw)."""
    c, s = math.cos(yaw), math.sin(yaw)
    local = ((hx, hy), (-hx, hy), (-hx, -hy), (hx, -hy))
    return [(x + c * u - s * v, y + s * u + c * v) for u, v in local]


def _edges(poly: Polygon) -> list[tuple[Point, Point]]:
    return list(zip(poly, poly[1:] + poly[:1], strict=True))


def _area(poly: Polygon) -> float:
    return 0.5 * sum(a[0] * b[1] - b[0] * a[1] for a, b in _edges(poly))


def _clip(subject: Polygon, clip: Polygon) -> Polygon:
    """Sutherland-Hodgman: ``subject`` cut down to the convex counter-clockwise ``clip``."""
    out = subject
    for a, b in _edges(clip):
        if not out:
            break

        def inside(p: Point, a: Point = a, b: Point = b) -> bool:
            return (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0]) >= 0.0

        def cut(p: Point, q: Point, a: Point = a, b: Point = b) -> Point:
            ex, ey = b[0] - a[0], b[1] - a[1]
            dp = ex * (p[1] - a[1]) - ey * (p[0] - a[0])
            dq = ex * (q[1] - a[1]) - ey * (q[0] - a[0])
            t = dp / (dp - dq)
            return (p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))

        points, out = out, []
        for p, q in _edges(points):
            if inside(q):
                if not inside(p):
                    out.append(cut(p, q))
                out.append(q)
            elif inside(p):
                out.append(cut(p, q))
    return out


def _overlapping(a: Sequence[Polygon], b: Sequence[Polygon]) -> list[tuple[int, int]]:
    """Pairs (i, j) of convex polygons ``a[i]`` and ``b[j]`` that share some area (clipped
    only where their bounding boxes meet)."""
    if not a or not b:
        return []
    ba = np.asarray([_bbox(p) for p in a])
    bb = np.asarray([_bbox(p) for p in b])
    meet = (
        (ba[:, None, 0] < bb[None, :, 2])
        & (bb[None, :, 0] < ba[:, None, 2])
        & (ba[:, None, 1] < bb[None, :, 3])
        & (bb[None, :, 1] < ba[:, None, 3])
    )
    found = []
    for i, j in zip(*np.nonzero(meet), strict=True):
        shared = _clip(a[int(i)], b[int(j)])
        if len(shared) >= 3 and abs(_area(shared)) > 0.0:
            found.append((int(i), int(j)))
    return found


def _eroded(rect: tuple[float, float, float, float]) -> Polygon:
    """An axis-aligned rectangle shrunk by half the overlap tolerance on every side: two
    shapes that interpenetrate by at most OVERLAP_TOLERANCE share no area once both are."""
    x0, y0, x1, y1 = rect
    r = OVERLAP_TOLERANCE / 2 + EPS
    hx, hy = max((x1 - x0) / 2 - r, 0.0), max((y1 - y0) / 2 - r, 0.0)
    return _rectangle((x0 + x1) / 2, (y0 + y1) / 2, hx, hy)


def _bbox(poly: Polygon) -> tuple[float, float, float, float]:
    xs, ys = [p[0] for p in poly], [p[1] for p in poly]
    return (min(xs), min(ys), max(xs), max(ys))


def _samples(poly: Polygon, step: float = 0.02) -> np.ndarray:
    """Points along the edges of ``poly`` every ``step`` metres, and its centre."""
    points = [np.mean(poly, axis=0)]
    for a, b in _edges(poly):
        n = max(1, math.ceil(math.dist(a, b) / step))
        t = np.linspace(0.0, 1.0, n + 1)[:, None]
        points.extend(np.asarray(a) + t * (np.asarray(b) - np.asarray(a)))
    return np.asarray(points)


def _distance_to_rects(
    points: np.ndarray,
    rects: Sequence[tuple[float, float, float, float]],
    norm: Callable[[np.ndarray, np.ndarray], np.ndarray] = np.maximum,
) -> np.ndarray:
    """For every point, its distance to the nearest rectangle (L∞ unless ``norm`` says)."""
    r = np.asarray(rects)
    dx = np.maximum(
        np.maximum(r[None, :, 0] - points[:, None, 0], points[:, None, 0] - r[None, :, 2]), 0.0
    )
    dy = np.maximum(
        np.maximum(r[None, :, 1] - points[:, None, 1], points[:, None, 1] - r[None, :, 3]), 0.0
    )
    nearest: np.ndarray = np.asarray(norm(dx, dy)).min(axis=1)
    return nearest


def _assert_faithful(
    scene: Scene, task: NamoTask, slot_of: dict[str, str], world: NamoSettings
) -> None:
    size = world.world_size

    def inside(x: float, y: float) -> bool:
        return 0.0 < x < size and 0.0 < y < size

    goal_id = scene.goal_object_id
    boxes = [o for o in scene.objects if o.object_class == "box" and o.id != goal_id]
    walls = [o for o in scene.objects if o.object_class == "wall" and o.id != goal_id]
    others = [o for o in scene.objects if o not in boxes and o not in walls and o.id != goal_id]
    assert not others and all(o.movable for o in boxes) and not any(o.movable for o in walls)
    assert scene.frame_id == "map"

    # Every scene box is a model box at the same place, of the model's size within tolerance.
    assert sorted(slot_of) == sorted(o.id for o in boxes)
    assert sorted(slot_of.values()) == sorted(b.name for b in task.boxes)
    bx, by, bz = world.box_size
    shapes: list[tuple[str, Polygon]] = []
    for o in boxes:
        model = task.box(slot_of[o.id])
        assert (model.x, model.y) == (o.pose.x, o.pose.y) and inside(model.x, model.y)
        turns = o.pose.yaw / (math.pi / 2)
        quarter = round(turns)
        assert abs(turns - quarter) * math.pi / 2 <= AXIS_TOLERANCE + EPS
        sx, sy = (o.size[1], o.size[0]) if quarter % 2 else (o.size[0], o.size[1])
        assert abs(sx - bx) <= SIZE_TOLERANCE + EPS and abs(sy - by) <= SIZE_TOLERANCE + EPS
        assert abs(o.size[2] - bz) <= HEIGHT_TOLERANCE + EPS
        footprint = _rectangle(o.pose.x, o.pose.y, o.size[0] / 2, o.size[1] / 2, o.pose.yaw)
        grown = task.box_rect(model.x, model.y)
        half = SIZE_TOLERANCE / 2 + EPS
        assert all(
            grown[0] - half <= x <= grown[2] + half and grown[1] - half <= y <= grown[3] + half
            for x, y in footprint
        )
        shapes.append((o.id, _eroded(_bbox(footprint))))
        shapes.append((o.id, _eroded(task.box_rect(model.x, model.y))))

    # The model's walls are the scene's, within WALL_TOLERANCE both ways (a wall turned
    # within AXIS_TOLERANCE stands for its bounding box).
    model_walls = task.walls()
    scene_walls = [
        _rectangle(o.pose.x, o.pose.y, o.size[0] / 2, o.size[1] / 2, o.pose.yaw) for o in walls
    ]
    for poly in scene_walls:
        assert _distance_to_rects(_samples(poly), model_walls).max() <= WALL_TOLERANCE + EPS
    boxes_of_walls = [_bbox(poly) for poly in scene_walls]
    for rect in model_walls:
        poly = _rectangle(
            (rect[0] + rect[2]) / 2,
            (rect[1] + rect[3]) / 2,
            (rect[2] - rect[0]) / 2,
            (rect[3] - rect[1]) / 2,
        )
        assert _distance_to_rects(_samples(poly), boxes_of_walls).max() <= WALL_TOLERANCE + EPS

    # Nothing overlaps: boxes, walls (the model's and the scene's), the robot's base.
    obstacles = [_eroded(r) for r in model_walls] + [_eroded(r) for r in boxes_of_walls]
    rx, ry, ryaw = task.start
    assert inside(rx, ry)
    r = world.base_half_extent - OVERLAP_TOLERANCE / 2 - EPS
    base = _rectangle(rx, ry, r, r, ryaw)
    polys = [shape for _, shape in shapes]
    assert not _overlapping(polys, [base]), "a box overlaps the robot"
    assert not _overlapping(polys, obstacles), "a box overlaps a wall"
    assert not _overlapping([base], obstacles), "the robot overlaps a wall"
    pairs = _overlapping(polys, polys)
    assert all(shapes[i][0] == shapes[j][0] for i, j in pairs), "two boxes overlap"

    # The goal: inside the map, in the goal room, in no wall or box.
    gx, gy = task.goal
    assert inside(gx, gy) and task.room_of(gx, gy) == world.goal_room
    rects = [*model_walls, *boxes_of_walls, *(task.box_rect(b.x, b.y) for b in task.boxes)]
    clearance = _distance_to_rects(np.asarray([[gx, gy]]), rects, np.hypot)[0]
    assert clearance >= world.goal_radius - OVERLAP_TOLERANCE - EPS


def _check(scene: Scene, world: NamoSettings) -> str:
    """What ``task_from_scene`` made of ``scene``: "accepted" (and the task is faithful) or
    "refused: CODE" (a named code, with a message)."""
    try:
        task, slot_of = task_from_scene(scene, world)
    except ServiceError as error:
        assert error.code != ErrorCode.INTERNAL and error.message.strip()
        return f"refused: {error.code.name}"
    _assert_faithful(scene, task, slot_of, world)
    return "accepted"


def test_the_bases_are_accepted() -> None:
    assert all(_check(scene, world) == "accepted" for scene, world in BASES)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(GARBAGE)
def test_garbage_scenes_are_refused_by_name(scene: Scene) -> None:
    event(_check(scene, NamoSettings()))


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_scenes_are_refused_by_name_or_planned_faithfully(data: Data) -> None:
    scene, world = data.draw(st.sampled_from(BASES))
    for _ in range(data.draw(st.integers(1, 3))):
        scene = data.draw(st.sampled_from(MUTATIONS))(data, scene)
    event(_check(scene, world))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_scenes_near_the_tolerances_are_refused_by_name_or_planned_faithfully(data: Data) -> None:
    """Small changes around every tolerance: about half of these scenes are accepted, and
    each of those must still be faithful."""
    scene, world = data.draw(st.sampled_from(BASES))
    for _ in range(data.draw(st.integers(1, 3))):
        scene = _nudge(data, scene)
    event(_check(scene, world))
