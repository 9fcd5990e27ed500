"""NAMO tasks to and from perceived scenes (:class:`camp_planner.domains.interface.scene.Scene`).

A scene is what a perception stack reports: walls as static boxes, movable boxes, a goal
object and the robot's base pose. Turning it into a :class:`NamoTask` means recovering the
doorways from the gaps between wall segments and giving every box one of its room's slot
variables; the map from the scene's object ids to slot names is kept, so plans and dropped
variables can be reported in the scene's own ids.

Anything the NAMO model cannot represent faithfully is refused with a named error rather than
ignored, resized or clamped (an ignored obstacle is a collision): the scene must be in the
planner's frame, its walls must be the model's walls (the room grid, one doorway of the
model's width between two rooms), every box must have the model's size and stand
axis-aligned inside the map, at most five in a room (its slot variables) and none in the goal
room, and nothing may overlap a wall, a box, the robot's base or the goal.

A scene may show a task partway through: the robot in any room from which a chain of
doorways leads to the goal's, boxes wherever they were put down, and at most one box in the
gripper, lifted where the robot carries one (:func:`~camp_planner.sim.carry.hold_point`,
square to the base). The task it becomes starts there (``NamoTask.held``); a box off the
floor anywhere else is refused.

NAMO is planar: it reads x, y and yaw from each 3-D pose and refuses a tilted one. How far a
scene may differ from its model is set by the tolerances below (the README's "What a scene
must be" lists them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose, Pose2, Scene, SceneObject, validate_scene
from camp_planner.domains.namo.layout import HELD, N_FIXED, SLOTS_PER_ROOM, layout
from camp_planner.domains.namo.world import (
    Box,
    Door,
    NamoSettings,
    NamoTask,
    Rect,
)
from camp_planner.sim.carry import hold_point

WALL, BOX, GOAL = "wall", "box", "goal"
GOAL_ID = "goal"

# How far a perceived scene may differ from the model it becomes. Planned motions keep
# PLAN_MARGIN = 3 cm from everything the model holds (domains/namo/tamp/base.py), so a real
# obstacle that reaches at most 2.5 cm beyond its model is never touched by a planned path:
# that bounds the size and wall tolerances.
SIZE_TOLERANCE = 0.05  # metres on a box's width and depth (and the goal's): 2.5 cm a side
# Metres on a box's height: the gripper is sent 2 cm above the model's box top
# (``box_size[2] + 0.02`` in NamoMDP's pick), so a box taller by more would be struck.
HEIGHT_TOLERANCE = 0.02
# The model's boxes and walls are axis-aligned: a yaw within this of a right angle is taken
# as that right angle (a quarter turn swaps the extents). A 0.3 m box turned 5° reaches 1.2 cm
# beyond its axis-aligned self, half the size tolerance; the floor it covers is checked too.
AXIS_TOLERANCE = math.radians(5.0)
# The model is planar: an object (or the robot) may lean this far from upright and is read as
# upright. A 0.7 m box leaning 2° reaches 2.4 cm sideways at its top, within the 2.5 cm that
# planned motions keep clear beyond the size tolerance's.
TILT_TOLERANCE = math.radians(2.0)
# Metres every point of a scene wall may lie off the model's walls, and every point of the
# model's walls off the scene's: a doorway may be up to 5 cm narrower or wider than the
# model's door, a wall 2.5 cm thicker or shifted.
WALL_TOLERANCE = 0.025
# Metres two objects may interpenetrate and still count as touching, not overlapping: the
# model's states round positions to 0.1 mm (NamoMDP's ``_round_pose`` and place), so a scene
# made from a simulated state can show touching objects overlapping by about that much.
# Generated tasks keep at least 4.5 mm between boxes and 5 cm between a box and a wall.
OVERLAP_TOLERANCE = 1e-3
# Metres a held box's centre may lie off where the gripper carries one: the gripper closes
# on the box's top, so a box held askew by more would be carried where the model's is not.
# Beyond HEIGHT_TOLERANCE above the floor a box counts as held.
HOLD_TOLERANCE = 0.05
Point = tuple[float, float]
_SLIVER = 1e-9  # metres: narrower uncovered strips are rounding, not a missing wall


def scene_from_task(
    task: NamoTask, state: Sequence[Hashable] | None = None, frame_id: str = "map"
) -> Scene:
    """The scene a perfect perception stack would report for ``task`` in ``state`` (the
    initial state if None): every wall segment, every box on the floor, a held box lifted in
    the gripper (:func:`camp_planner.sim.carry.hold_point`), the goal object."""
    st = task.settings
    objects: list[SceneObject] = []
    for i, (x0, y0, x1, y1) in enumerate(task.walls()):
        objects.append(
            SceneObject(
                f"wall_{i}",
                WALL,
                Pose.planar((x0 + x1) / 2, (y0 + y1) / 2, 0.0, st.wall_height / 2),
                (x1 - x0, y1 - y0, st.wall_height),
                False,
            )
        )
    robot = task.start
    positions = {b.name: (b.x, b.y) for b in task.boxes if b.name != task.held}
    held = task.held
    if state is not None:
        pose = state[0]
        assert isinstance(pose, tuple)
        robot = (float(pose[0]), float(pose[1]), float(pose[2]))
        positions = {}
        held = ""
        for k, name in enumerate(layout(st.grid, st.goal_room).slot_names):
            value = state[N_FIXED + k]
            if isinstance(value, tuple):
                positions[name] = (float(value[0]), float(value[1]))
            elif value == HELD:
                held = name
    for name, (x, y) in sorted(positions.items()):
        objects.append(
            SceneObject(
                name,
                BOX,
                Pose.planar(x, y, 0.0, st.box_size[2] / 2),
                st.box_size,
                True,
                str(task.room_of(x, y)),
            )
        )
    if held:
        # Lifted in the gripper, turned with the base: what a camera sees of a held box.
        hx, hy, hz = hold_point(robot, st.box_size[2])
        objects.append(
            SceneObject(
                held,
                BOX,
                Pose.planar(hx, hy, robot[2], hz),
                st.box_size,
                True,
                str(task.room_of(hx, hy)),
            )
        )
    gx, gy = task.goal
    d = 2 * st.goal_radius
    goal_height = 0.3
    objects.append(
        SceneObject(
            GOAL_ID,
            GOAL,
            Pose.planar(gx, gy, 0.0, goal_height / 2),
            (d, d, goal_height),
            False,
            str(st.goal_room),
        )
    )
    return Scene(
        domain="namo",
        robot_pose=Pose.planar(*robot),
        objects=tuple(objects),
        goal_object_id=GOAL_ID,
        frame_id=frame_id,
        scene_id=f"namo-task-{task.task_id}",
    )


@dataclass(frozen=True)
class _Flat:
    """A scene object as the planar model reads it: (x, y, yaw) and its extents."""

    id: str
    object_class: str
    pose: Pose2
    size: tuple[float, float, float]
    movable: bool


def _planar(pose: Pose, what: str) -> Pose2:
    """(x, y, yaw) of ``pose``, refused when it leans more than TILT_TOLERANCE: a tilted
    box or robot is a state the planar model does not have."""
    tilt = pose.tilt()
    if not tilt <= TILT_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"{what} is tilted {math.degrees(tilt):.1f}° from upright; the NAMO model is "
            f"planar (x, y, yaw) and takes everything upright (± "
            f"{math.degrees(TILT_TOLERANCE):.0f}°)",
        )
    return pose.as_planar()


def _flat(obj: SceneObject) -> _Flat:
    pose = _planar(obj.pose, f"object '{obj.id}'")
    return _Flat(obj.id, obj.object_class, pose, obj.size, obj.movable)


def _m(value: float) -> str:
    """Metres for a message (absurd values stay short)."""
    return f"{value:.2f}" if abs(value) < 1e6 else f"{value:.3g}"


def _span(rect: Rect) -> str:
    x0, y0, x1, y1 = rect
    return f"x from {_m(x0)} to {_m(x1)}, y from {_m(y0)} to {_m(y1)}"


def _off_axis(yaw: float) -> tuple[float, bool]:
    """(how far ``yaw`` is from the nearest right angle, whether that is a quarter turn or
    three, which swap an object's x and y extents)."""
    return abs(math.remainder(yaw, math.pi / 2)), abs(math.remainder(yaw, math.pi)) > math.pi / 4


def _cover(obj: _Flat) -> Rect:
    """The axis-aligned floor rectangle holding ``obj``'s footprint at its yaw."""
    c, s = abs(math.cos(obj.pose[2])), abs(math.sin(obj.pose[2]))
    sx, sy = obj.size[0], obj.size[1]
    hx, hy = (c * sx + s * sy) / 2, (s * sx + c * sy) / 2
    x, y = obj.pose[0], obj.pose[1]
    return (x - hx, y - hy, x + hx, y + hy)


def _grow(rect: Rect, by: float) -> Rect:
    return (rect[0] - by, rect[1] - by, rect[2] + by, rect[3] + by)


def _rect_overlap(a: Rect, b: Rect) -> float:
    """How deep two axis-aligned rectangles interpenetrate (0 or less: touching or apart)."""
    return min(min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1]))


def _base_overlap(rect: Rect, pose: Pose2, half: float) -> float:
    """How deep the robot's base, a square of half-side ``half`` at ``pose``, and ``rect``
    interpenetrate: the least overlap of their projections on the four axes of the two
    squares (two convex polygons are apart if and only if one of their edge axes parts them).
    """
    x, y, yaw = pose
    c, s = math.cos(yaw), math.sin(yaw)
    rx, ry = (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2
    hw, hh = (rect[2] - rect[0]) / 2, (rect[3] - rect[1]) / 2
    depth = math.inf
    for ux, uy in ((1.0, 0.0), (0.0, 1.0), (c, s), (-s, c)):
        reach = half * (abs(ux * c + uy * s) + abs(uy * c - ux * s)) + hw * abs(ux) + hh * abs(uy)
        depth = min(depth, reach - abs(ux * (x - rx) + uy * (y - ry)))
    return depth


def _disc_overlap(rect: Rect, x: float, y: float, radius: float) -> float:
    """How deep a disc and an axis-aligned rectangle interpenetrate."""
    dx = max(rect[0] - x, 0.0, x - rect[2])
    dy = max(rect[1] - y, 0.0, y - rect[3])
    if dx > 0.0 or dy > 0.0:
        return radius - math.hypot(dx, dy)
    return radius + min(x - rect[0], rect[2] - x, y - rect[1], rect[3] - y)


def _uncovered(rect: Rect, cover: Iterable[Rect]) -> Rect | None:
    """A part of ``rect`` that no rectangle of ``cover`` covers, or None: the cells of the
    grid that every rectangle's edges cut ``rect`` into are each covered or not."""
    x0, y0, x1, y1 = rect
    clipped = [
        (max(c[0], x0), max(c[1], y0), min(c[2], x1), min(c[3], y1))
        for c in cover
        if c[2] > x0 and c[0] < x1 and c[3] > y0 and c[1] < y1
    ]
    xs = sorted({x0, x1, *(c[0] for c in clipped), *(c[2] for c in clipped)})
    ys = sorted({y0, y1, *(c[1] for c in clipped), *(c[3] for c in clipped)})
    for xa, xb in pairwise(xs):
        if xb - xa <= _SLIVER:
            continue
        mx = (xa + xb) / 2
        for ya, yb in pairwise(ys):
            if yb - ya <= _SLIVER:
                continue
            my = (ya + yb) / 2
            if not any(c[0] <= mx <= c[2] and c[1] <= my <= c[3] for c in clipped):
                return (xa, ya, xb, yb)
    return None


class _Index:
    """Rectangles binned by the cells of a grid they touch (a sixth of a room wide, so that
    a box's cells hold a wall or two), so that a query looks at the few near it: a 10×10
    world has about 400 walls."""

    def __init__(self, rects: Sequence[Rect], st: NamoSettings) -> None:
        self.rects = rects
        self.cell = st.room_size / 6
        self.last = 6 * st.grid  # cells -1 and last hold what lies on or past the outer walls
        self.bins: dict[tuple[int, int], list[int]] = {}
        for k, rect in enumerate(rects):
            for key in self._keys(rect):
                self.bins.setdefault(key, []).append(k)

    def _cells(self, lo: float, hi: float) -> range:
        first = min(max(math.floor(lo / self.cell), -1), self.last)
        return range(first, min(max(math.floor(hi / self.cell), -1), self.last) + 1)

    def _keys(self, rect: Rect) -> list[tuple[int, int]]:
        return [
            (i, j) for i in self._cells(rect[0], rect[2]) for j in self._cells(rect[1], rect[3])
        ]

    def near(self, rect: Rect) -> list[int]:
        """Indices of the rectangles in the cells ``rect`` touches (a superset of those it
        overlaps), in order."""
        found = {k for key in self._keys(rect) for k in self.bins.get(key, ())}
        return sorted(found)


def _wall_rect(obj: _Flat, st: NamoSettings) -> Rect:
    """The floor rectangle of wall ``obj``, if it could be a wall of the model."""
    sx, sy, sz = obj.size
    if min(sx, sy, sz) <= 0.0:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"wall '{obj.id}' is {_m(sx)} × {_m(sy)} × {_m(sz)} m: a wall needs a positive size",
        )
    off, _ = _off_axis(obj.pose[2])
    if off > AXIS_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"wall '{obj.id}' is turned {math.degrees(off):.1f}° off the map's axes; the "
            f"model's walls are axis-aligned (± {math.degrees(AXIS_TOLERANCE):.0f}°)",
        )
    rect = _cover(obj)
    reach = st.wall_thickness / 2 + WALL_TOLERANCE
    hi = st.world_size + reach
    if rect[0] < -reach or rect[1] < -reach or rect[2] > hi or rect[3] > hi:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"wall '{obj.id}' reaches outside the map ({_span(rect)}); the model's walls lie "
            f"within {-reach:.3f} to {hi:.3f} m in x and y",
        )
    return rect


def _box_rect(obj: _Flat, st: NamoSettings) -> Rect:
    """The floor rectangle box ``obj`` takes up (its model's, or the perceived one where
    that reaches farther), if the model's box at its place is faithful to it."""
    x, y, yaw = obj.pose
    size = st.world_size
    if not (0.0 < x < size and 0.0 < y < size):
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"object '{obj.id}' at ({_m(x)}, {_m(y)}) is outside the map (0–{size:.2f} m in x "
            "and y)",
        )
    off, swapped = _off_axis(yaw)
    if off > AXIS_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"object '{obj.id}' is turned {math.degrees(off):.1f}° off the map's axes; the "
            f"model's boxes are axis-aligned (± {math.degrees(AXIS_TOLERANCE):.0f}°)",
        )
    bx, by, bz = st.box_size
    sx, sy, sz = obj.size
    if swapped:
        sx, sy = sy, sx
    model = f"the model's boxes are {bx:.2f} × {by:.2f} m (± {SIZE_TOLERANCE:.2f} m)"
    if abs(sx - bx) > SIZE_TOLERANCE or abs(sy - by) > SIZE_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE, f"object '{obj.id}' is {_m(sx)} × {_m(sy)} m; {model}"
        )
    if abs(sz - bz) > HEIGHT_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"object '{obj.id}' is {_m(sz)} m tall; the model's boxes are {bz:.2f} m tall "
            f"(± {HEIGHT_TOLERANCE:.2f} m)",
        )
    cover = _cover(obj)
    cx, cy = cover[2] - cover[0], cover[3] - cover[1]
    if cx > bx + SIZE_TOLERANCE or cy > by + SIZE_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"object '{obj.id}', turned {math.degrees(off):.1f}°, covers {cx:.2f} × {cy:.2f} m "
            f"of floor; {model}, axis-aligned",
        )
    hx, hy = max(bx, cx) / 2, max(by, cy) / 2
    return (x - hx, y - hy, x + hx, y + hy)


def _check_goal_object(obj: _Flat, st: NamoSettings) -> None:
    """The model's goal object is a cylinder ``2 * goal_radius`` across: a larger one would
    be an obstacle the model leaves out (a smaller one only keeps the robot farther off)."""
    most = 2 * st.goal_radius + SIZE_TOLERANCE
    if max(obj.size[0], obj.size[1]) > most:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"the goal object '{obj.id}' is {_m(obj.size[0])} × {_m(obj.size[1])} m; the "
            f"model's goal object is {2 * st.goal_radius:.2f} m across (at most {most:.2f} m)",
        )


def _openings(walls: tuple[Rect, ...], st: NamoSettings) -> tuple[tuple[Door, float], ...]:
    """Doorways, each with the width of the gap it was read from: the widest gap in the wall
    between two adjacent rooms, if at least half a door wide (a narrower one is no doorway,
    and the model's wall there is then compared with the scene's like any other)."""
    s, t = st.room_size, st.wall_thickness
    doors: list[tuple[Door, float]] = []
    g, n = st.grid, st.n_rooms
    for a in range(n):
        row, col = divmod(a, g)
        for b, vertical in ((a + 1, True), (a + g, False)):
            if (vertical and col == g - 1) or b >= n:
                continue
            at = (col + 1) * s if vertical else (row + 1) * s
            lo = row * s if vertical else col * s
            hi = lo + s
            covered: list[tuple[float, float]] = []
            for x0, y0, x1, y1 in walls:
                across = (x0, x1) if vertical else (y0, y1)
                along = (y0, y1) if vertical else (x0, x1)
                if across[0] <= at + t / 2 and across[1] >= at - t / 2:
                    covered.append((max(along[0], lo), min(along[1], hi)))
            cursor, best = lo, (0.0, 0.0)
            for c0, c1 in sorted(c for c in covered if c[1] > c[0]):
                if c0 - cursor > best[1] - best[0]:
                    best = (cursor, c0)
                cursor = max(cursor, c1)
            if hi - cursor > best[1] - best[0]:
                best = (cursor, hi)
            width = best[1] - best[0]
            if width >= st.door_width / 2:
                centre = (best[0] + best[1]) / 2
                if vertical:
                    doors.append((Door(a, b, at, centre, True), width))
                else:
                    doors.append((Door(a, b, centre, at, False), width))
    return tuple(doors)


def _boundary(piece: Rect, st: NamoSettings) -> str:
    """Which wall of the room grid ``piece`` lies on, in words."""
    s, g = st.room_size, st.grid
    cx, cy = (piece[0] + piece[2]) / 2, (piece[1] + piece[3]) / 2
    near = st.wall_thickness / 2 + WALL_TOLERANCE
    for across, along, vertical in ((cx, cy, True), (cy, cx, False)):
        k = round(across / s)
        if abs(across - k * s) > near:
            continue
        if k in (0, g):
            return "its outer wall"
        row_or_col = min(max(int(along // s), 0), g - 1)
        a = row_or_col * g + k - 1 if vertical else (k - 1) * g + row_or_col
        b = a + 1 if vertical else a + g
        return (
            f"the wall between rooms {a} and {b}, which has at most one doorway, "
            f"{st.door_width:.2f} m wide (± {2 * WALL_TOLERANCE:.2f} m)"
        )
    return "off the room boundaries"


@dataclass(frozen=True, eq=False)
class _Walls:
    """What the model makes of a scene's walls."""

    doors: tuple[Door, ...]
    mismatch: str  # why the scene's walls are not the model's (within WALL_TOLERANCE), or ""
    obstacles: _Index  # the scene's walls, then the model's
    ids: tuple[str, ...]  # of the scene's walls

    def name(self, k: int) -> str:
        """Obstacle ``k`` in words."""
        if k < len(self.ids):
            return f"wall '{self.ids[k]}'"
        return f"the model's wall at {_span(self.obstacles.rects[k])}"


@functools.lru_cache(maxsize=64)
def _wall_model(objects: tuple[_Flat, ...], st: NamoSettings) -> _Walls:
    """The doorways of a scene's walls (a floor plan's own, given one), and whether the
    walls the model rebuilds from them are the scene's. Cached: a robot sees the same walls
    in scene after scene, and this is most of the cost of turning a scene into a task."""
    for obj in objects:
        if obj.movable:
            raise _no_such_object(obj)
    walls = [(obj.id, _wall_rect(obj, st)) for obj in objects]
    openings = _openings(tuple(rect for _, rect in walls), st)
    # A floor plan's doorways are the model's, and the scene's walls are compared with
    # them: a doorway the building lacks, or a closed one, is a wall mismatch.
    doors = st.plan_doors() or tuple(door for door, _ in openings)
    model = NamoTask(0, 0, doors, (), (0.0, 0.0, 0.0), (0.0, 0.0), st).walls()
    return _Walls(
        doors,
        _mismatch(walls, openings, model, st),
        _Index([*(rect for _, rect in walls), *model], st),
        tuple(wall_id for wall_id, _ in walls),
    )


def _mismatch(
    walls: Sequence[tuple[str, Rect]],
    openings: Sequence[tuple[Door, float]],
    model: Sequence[Rect],
    st: NamoSettings,
) -> str:
    """Why the scene's ``walls`` (id, rectangle) and the ``model``'s walls differ by more than
    WALL_TOLERANCE, or "". The model has only the room grid's walls with one doorway between
    two rooms: a scene wall it would not have is an obstacle it ignores, and a model wall the
    scene does not have is a passage it closes."""
    slack = 2 * WALL_TOLERANCE
    for door, width in openings:
        if abs(width - st.door_width) > slack:
            return (
                f"the doorway between rooms {door.a} and {door.b} is {width:.2f} m wide; the "
                f"model's doorways are {st.door_width:.2f} m wide (± {slack:.2f} m)"
            )
    grown_model = _Index([_grow(r, WALL_TOLERANCE) for r in model], st)
    doorways = f"one doorway {st.door_width:.2f} m wide between two rooms"
    if st.plan is not None:
        doorways = f"the floor plan's doorways (world.doors), {st.door_width:.2f} m wide"
    for wall_id, rect in walls:
        piece = _uncovered(rect, (grown_model.rects[k] for k in grown_model.near(rect)))
        if piece is not None:
            return (
                f"wall '{wall_id}' is not a wall of the model: its part at {_span(piece)} lies "
                f"off the model's walls, which run along the room boundaries every "
                f"{st.room_size:.2f} m, {st.wall_thickness:.2f} m thick (± {WALL_TOLERANCE} m), "
                f"with {doorways}"
            )
    grown_scene = _Index([_grow(r, WALL_TOLERANCE) for _, r in walls], st)
    for rect in model:
        piece = _uncovered(rect, (grown_scene.rects[k] for k in grown_scene.near(rect)))
        if piece is not None:
            return (
                f"the scene has no wall at {_span(piece)}, where the model has "
                f"{_boundary(piece, st)}"
            )
    return ""


def task_from_scene(
    scene: Scene, settings: NamoSettings | None = None, task_id: int = 0, frame_id: str = "map"
) -> tuple[NamoTask, dict[str, str]]:
    """(the NAMO task of ``scene``, scene object id → slot variable name), for a scene given
    in frame ``frame_id``; a :class:`ServiceError` naming the first thing the model cannot
    represent faithfully."""
    st = settings or NamoSettings()
    validate_scene(scene, frame_id=frame_id)
    size = st.world_size
    robot = _planar(scene.robot_pose, "the robot")
    rx, ry, ryaw = robot
    objects = tuple(_flat(o) for o in scene.objects)
    if not (0.0 < rx < size and 0.0 < ry < size):
        raise ServiceError(
            ErrorCode.INVALID_SCENE, f"the robot at ({_m(rx)}, {_m(ry)}) is outside the map"
        )
    # The walls first: the goal's checks need the doorways.
    walls = tuple(o for o in objects if o.object_class == WALL and o.id != scene.goal_object_id)
    if not walls:
        raise ServiceError(ErrorCode.INVALID_SCENE, "the scene has no walls: the map is missing")
    model = _wall_model(walls, st)
    skeleton = NamoTask(task_id, 0, model.doors, (), (rx, ry, ryaw), (0.0, 0.0), st)
    robot_room = skeleton.room_of(rx, ry)
    if scene.goal_object_id:
        goal_obj = scene.object(scene.goal_object_id)
        goal = (goal_obj.pose.x, goal_obj.pose.y)
    else:
        assert scene.goal_pose is not None  # validate_scene checked
        goal = (scene.goal_pose.x, scene.goal_pose.y)
    if not (0.0 < goal[0] < size and 0.0 < goal[1] < size):
        raise ServiceError(ErrorCode.UNREACHABLE_GOAL, "the goal is outside the map")
    if skeleton.room_of(*goal) != st.goal_room:
        raise ServiceError(
            ErrorCode.UNREACHABLE_GOAL,
            f"the NAMO model expects the goal in room {st.goal_room}, "
            f"not {skeleton.room_of(*goal)}",
        )
    if not _connected(skeleton.door_graph(), robot_room, st.goal_room):
        raise ServiceError(
            ErrorCode.UNREACHABLE_GOAL, "no chain of doorways joins the robot's room to the goal's"
        )
    if model.mismatch:
        raise ServiceError(ErrorCode.INVALID_SCENE, model.mismatch)
    boxes: list[tuple[_Flat, Rect]] = []
    held: _Flat | None = None
    for obj, seen in zip(objects, scene.objects, strict=True):
        if obj.id == scene.goal_object_id:
            _check_goal_object(obj, st)
        elif obj.object_class == BOX and obj.movable:
            if seen.pose.z - seen.size[2] / 2 <= HEIGHT_TOLERANCE:
                boxes.append((obj, _box_rect(obj, st)))
                continue
            if held is not None:
                raise ServiceError(
                    ErrorCode.INVALID_SCENE,
                    f"objects '{held.id}' and '{obj.id}' are both off the floor; the model's "
                    "robot holds at most one box",
                )
            held = _held_box(obj, seen.pose.z, robot, st)
        elif obj.object_class != WALL:
            raise _no_such_object(obj)
    _check_overlaps(model, boxes, robot, goal, st, held)
    by_room: dict[int, list[_Flat]] = {}
    for obj in [o for o, _ in boxes] + ([held] if held is not None else []):
        by_room.setdefault(skeleton.room_of(obj.pose[0], obj.pose[1]), []).append(obj)
    task_boxes: list[Box] = []
    slot_of: dict[str, str] = {}
    for room, objs in sorted(by_room.items()):
        if room == st.goal_room:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"boxes {sorted(o.id for o in objs)} stand in the goal room, which the model "
                "keeps free",
            )
        if len(objs) > SLOTS_PER_ROOM:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"room {room} holds {len(objs)} boxes; the model has {SLOTS_PER_ROOM} box slots "
                "per room (a room filled past them, by boxes moved into it, has no state of "
                "the model)",
            )
        free = [f"box_r{room}_{k}" for k in range(SLOTS_PER_ROOM)]
        # Keep an id that already is this room's slot name, so simulated scenes round-trip.
        for obj in sorted(objs, key=lambda o: (o.id not in free, o.id)):
            name = obj.id if obj.id in free else free[0]
            free.remove(name)
            slot_of[obj.id] = name
            task_boxes.append(Box(name, room, obj.pose[0], obj.pose[1]))
    task = NamoTask(
        task_id,
        0,
        model.doors,
        tuple(task_boxes),
        (rx, ry, ryaw),
        goal,
        st,
        "" if held is None else slot_of[held.id],
    )
    return task, slot_of


def held_box(scene: Scene) -> str:
    """The id of the box ``scene`` shows lifted off the floor (held), or ""."""
    for obj in scene.objects:
        lifted = obj.pose.z - obj.size[2] / 2 > HEIGHT_TOLERANCE
        if obj.object_class == BOX and obj.movable and lifted:
            return obj.id
    return ""


def _held_box(obj: _Flat, z: float, robot: Pose2, st: NamoSettings) -> _Flat:
    """Box ``obj``, its centre at height ``z`` off the floor, as the box the robot holds: it
    must be where the gripper carries one (:func:`~camp_planner.sim.carry.hold_point`, within
    HOLD_TOLERANCE), turned with the base (within AXIS_TOLERANCE of a right angle to it) and
    of the model's size. The model has no box anywhere else off the floor (on another box,
    tipped onto a ledge, in a gripper that holds it otherwise)."""
    x, y, yaw = obj.pose
    # Its size first, as for a box on the floor (the model's boxes are square, so its turn
    # does not matter here).
    _box_rect(_Flat(obj.id, obj.object_class, (x, y, 0.0), obj.size, True), st)
    hx, hy, hz = hold_point(robot, st.box_size[2])
    if math.dist((x, y, z), (hx, hy, hz)) > HOLD_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"object '{obj.id}' at ({_m(x)}, {_m(y)}), its bottom {_m(z - obj.size[2] / 2)} m "
            f"off the floor, is neither on the floor nor in the robot's gripper: the model's "
            f"robot carries a box with its centre at ({hx:.2f}, {hy:.2f}, {hz:.2f}) for this "
            f"base pose (± {HOLD_TOLERANCE:.2f} m)",
        )
    off, _ = _off_axis(yaw - robot[2])
    if off > AXIS_TOLERANCE:
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"the held box '{obj.id}' is turned {math.degrees(off):.1f}° against the robot; "
            f"the model's robot holds a box square to its base (± "
            f"{math.degrees(AXIS_TOLERANCE):.0f}°)",
        )
    return _Flat(obj.id, obj.object_class, (hx, hy, robot[2]), st.box_size, True)


def _no_such_object(obj: _Flat) -> ServiceError:
    kind = "movable" if obj.movable else "static"
    return ServiceError(
        ErrorCode.INVALID_SCENE,
        f"object '{obj.id}': the NAMO model has no {kind} '{obj.object_class}' objects "
        "(only static walls, movable boxes and the goal)",
    )


def _clear_of_walls(rect: Rect, st: NamoSettings) -> bool:
    """Whether ``rect`` keeps clear of every room boundary line by more than half a wall and
    WALL_TOLERANCE, and so of every wall of a scene that matches its model (most boxes do:
    this spares them the wall index)."""
    s, m = st.room_size, st.wall_thickness / 2 + WALL_TOLERANCE
    return all(
        math.floor((hi + m) / s) < math.ceil((lo - m) / s)
        for lo, hi in ((rect[0], rect[2]), (rect[1], rect[3]))
    )


def _check_overlaps(
    walls: _Walls,
    boxes: list[tuple[_Flat, Rect]],
    robot: Pose2,
    goal: tuple[float, float],
    st: NamoSettings,
    held: _Flat | None = None,
) -> None:
    """Refuse a scene in which the robot's base, the box it holds, the goal object or a box
    overlaps a wall (the scene's or the model's, which agree within WALL_TOLERANCE), or one
    another, by more than OVERLAP_TOLERANCE: the model has no such state, and a planner
    started from one is stuck or drives through. The robot's footprint is its base's square
    at its yaw (the tucked arm stays inside it: its links reach 0.28 m from the base's
    centre); a held box is a square turned with the base, part of the robot."""
    index = walls.obstacles
    half = st.base_half_extent
    rx, ry = robot[0], robot[1]
    footprint = f"its base is a {2 * half:.2f} m square"
    around = half * math.sqrt(2)
    near_robot = (rx - around, ry - around, rx + around, ry + around)
    for k in index.near(near_robot):
        if _base_overlap(index.rects[k], robot, half) > OVERLAP_TOLERANCE:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"the robot at ({rx:.2f}, {ry:.2f}) overlaps {walls.name(k)} ({footprint})",
            )
    gx, gy = goal
    r = st.goal_radius
    for k in index.near((gx - r, gy - r, gx + r, gy + r)):
        if _disc_overlap(index.rects[k], gx, gy, r) > OVERLAP_TOLERANCE:
            raise ServiceError(
                ErrorCode.UNREACHABLE_GOAL,
                f"the goal at ({gx:.2f}, {gy:.2f}) lies in {walls.name(k)} (the model's goal "
                f"object is {2 * r:.2f} m across)",
            )
    for obj, rect in boxes:
        where = f"object '{obj.id}' at ({obj.pose[0]:.2f}, {obj.pose[1]:.2f})"
        for k in () if _clear_of_walls(rect, st) else index.near(rect):
            if _rect_overlap(rect, index.rects[k]) > OVERLAP_TOLERANCE:
                raise ServiceError(ErrorCode.INVALID_SCENE, f"{where} overlaps {walls.name(k)}")
        if (
            _rect_overlap(rect, near_robot) > 0.0
            and _base_overlap(rect, robot, half) > OVERLAP_TOLERANCE
        ):
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"{where} overlaps the robot at ({rx:.2f}, {ry:.2f}) ({footprint})",
            )
        if _disc_overlap(rect, gx, gy, r) > OVERLAP_TOLERANCE:
            raise ServiceError(
                ErrorCode.UNREACHABLE_GOAL, f"the goal at ({gx:.2f}, {gy:.2f}) lies in {where}"
            )
    if held is not None:
        _check_held(held, st, walls, boxes, goal)
    # Boxes by their left edge: each is compared only with those that start before it ends.
    ordered = sorted(boxes, key=lambda b: (b[1][0], b[0].id))
    for i, (a, ra) in enumerate(ordered):
        for b, rb in ordered[i + 1 :]:
            if rb[0] >= ra[2]:
                break
            if _rect_overlap(ra, rb) > OVERLAP_TOLERANCE:
                raise ServiceError(
                    ErrorCode.INVALID_SCENE,
                    f"objects '{a.id}' at ({a.pose[0]:.2f}, {a.pose[1]:.2f}) and '{b.id}' at "
                    f"({b.pose[0]:.2f}, {b.pose[1]:.2f}) overlap",
                )


def _check_held(
    held: _Flat, st: NamoSettings, walls: _Walls, boxes: list[tuple[_Flat, Rect]], goal: Point
) -> None:
    """Refuse a held box that overlaps a wall, a box on the floor or the goal object. The
    model's boxes are squares, so the held one is checked exactly as a square at the base's
    heading (its half side the larger of the box's)."""
    half = max(st.box_size[0], st.box_size[1]) / 2
    cover = _cover(held)
    where = f"the held box '{held.id}' at ({held.pose[0]:.2f}, {held.pose[1]:.2f})"
    for k in walls.obstacles.near(cover):
        if _base_overlap(walls.obstacles.rects[k], held.pose, half) > OVERLAP_TOLERANCE:
            raise ServiceError(ErrorCode.INVALID_SCENE, f"{where} overlaps {walls.name(k)}")
    for obj, rect in boxes:
        if _base_overlap(rect, held.pose, half) > OVERLAP_TOLERANCE:
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"{where} overlaps object '{obj.id}' at ({obj.pose[0]:.2f}, {obj.pose[1]:.2f})",
            )
    if _disc_overlap(cover, goal[0], goal[1], st.goal_radius) > OVERLAP_TOLERANCE:
        raise ServiceError(ErrorCode.UNREACHABLE_GOAL, f"the goal lies in {where}")


def _connected(graph: dict[int, set[int]], a: int, b: int) -> bool:
    seen, frontier = {a}, [a]
    while frontier:
        room = frontier.pop()
        for nxt in graph[room] - seen:
            seen.add(nxt)
            frontier.append(nxt)
    return b in seen
