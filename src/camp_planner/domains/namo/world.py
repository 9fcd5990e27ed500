"""NAMO tasks (paper domain D3): a grid of rooms (3×3, as in the paper, unless ``grid`` says
otherwise) with movable boxes, as pure geometry.

Metres, x to the right and y up; with ``G`` rooms per side, room ``row * G + col`` spans
``[col·S, (col+1)·S] × [row·S, (row+1)·S]`` for room size ``S``, so the robot starts in room 0
(bottom left) and the goal object stands in room ``G² − 1`` (top right); a task read from a
scene may start the robot anywhere (``NamoTask.held``). Doorways are drawn per task, unless
the settings carry a :class:`FloorPlan` (a user's building): its doorways, start and goal
rooms, the same in every task, which then differ only in their boxes and poses. Walls are
axis-aligned rectangles with doorways; boxes stand in per-room slots, one slot in front of
every doorway of the room (so boxes really block passages) and the rest spread over the floor.
Everything here is plain data, shared by the simulator scene (``domains/namo/scene.py``), the
renderer and the features; a task is fully described by its seed and settings.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from camp_planner.domains.room_grid import random_door_graph

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1
Pose2D = tuple[float, float, float]  # x, y, yaw

# The paper's 3×3 world; a larger ``NamoSettings.grid`` has its own (``settings.n_rooms``, ...).
N_ROOMS = 9
GOAL_ROOM = 8
START_ROOM = 0
MAX_GRID = 20  # 400 rooms, 2000 box slots: the largest world measured (docs/results/namo.md)
# Room sides a floor plan may give, in metres: below 2 m a room's five box slots, 0.55 m
# apart and clear of the walls, no longer fit beside a 0.6 m base; above 8 m the motion
# planner's free-space grid grows past what the 10×10 world at 3 m needs.
MIN_ROOM_SIZE, MAX_ROOM_SIZE = 2.0, 8.0
# How far a doorway's edge keeps from the corner of its wall (the generator's margin).
DOOR_MARGIN = 0.15


@dataclass(frozen=True)
class Doorway:
    """A doorway of a floor plan between neighbouring rooms ``a < b``, its centre ``at``
    metres along their shared wall from its bottom end (rooms side by side) or its left end
    (one room above the other)."""

    a: int
    b: int
    at: float


@dataclass(frozen=True)
class FloorPlan:
    """A fixed building: its doorways and the rooms every task starts and ends in."""

    doorways: tuple[Doorway, ...]
    start_room: int = 0
    goal_room: int | None = None  # None: the last room, as in a drawn world


@dataclass(frozen=True)
class NamoSettings:
    """What the generator varies, and the fixed geometry of the world and the robot."""

    room_size: float = 3.0
    wall_thickness: float = 0.1
    wall_height: float = 1.0
    door_width: float = 1.0
    extra_door_prob: float = 0.35
    slots_per_room: int = 5
    fill_prob: float = 0.5
    box_size: tuple[float, float, float] = (0.3, 0.3, 0.7)
    base_half_extent: float = 0.3  # the holonomic base is a 0.6 m square
    base_height: float = 0.3
    goal_radius: float = 0.06  # the goal object: a red cylinder
    reach: float = 0.75  # success: base centre within this distance of the goal object
    goal_reward: float = 1000.0
    grid: int = 3  # rooms per side
    plan: FloorPlan | None = None  # None: doorways drawn per task

    def __post_init__(self) -> None:
        whole = isinstance(self.grid, int) and not isinstance(self.grid, bool)
        if not whole or not 2 <= self.grid <= MAX_GRID:
            raise ValueError(
                f"world.grid must be a whole number of rooms per side from 2 to {MAX_GRID}, "
                f"got {self.grid!r}"
            )
        if not MIN_ROOM_SIZE <= self.room_size <= MAX_ROOM_SIZE:
            raise ValueError(
                f"world.room_size must be from {MIN_ROOM_SIZE:g} to {MAX_ROOM_SIZE:g} metres, "
                f"got {self.room_size!r}"
            )
        if self.plan is not None:
            _check_plan(self.plan, self)

    @property
    def world_size(self) -> float:
        return self.grid * self.room_size

    @property
    def n_rooms(self) -> int:
        return self.grid * self.grid

    @property
    def goal_room(self) -> int:
        if self.plan is not None and self.plan.goal_room is not None:
            return self.plan.goal_room
        return self.n_rooms - 1

    @property
    def start_room(self) -> int:
        return 0 if self.plan is None else self.plan.start_room

    def door_span(self) -> tuple[float, float]:
        """Where a doorway's centre may lie along its wall (metres from the wall's end)."""
        margin = self.wall_thickness / 2 + DOOR_MARGIN
        # Written as the generator always computed it, so drawn worlds stay the same tasks.
        return margin + self.door_width / 2, self.room_size - margin - self.door_width / 2

    def door(self, a: int, b: int, at: float) -> Door:
        """The doorway between neighbouring rooms ``a < b``, ``at`` metres along their wall."""
        row, col = divmod(a, self.grid)
        s = self.room_size
        if b == a + 1:
            return Door(a, b, (col + 1) * s, row * s + at, True)
        return Door(a, b, col * s + at, (row + 1) * s, False)

    def plan_doors(self) -> tuple[Door, ...] | None:
        """The floor plan's doorways (None: this world draws them per task)."""
        if self.plan is None:
            return None
        return tuple(
            self.door(d.a, d.b, d.at) for d in sorted(self.plan.doorways, key=lambda d: (d.a, d.b))
        )


def _check_plan(plan: FloorPlan, st: NamoSettings) -> None:
    """Raise a ValueError naming the first field of ``plan`` that ``st``'s grid cannot hold:
    a room off the grid, a doorway between rooms that share no wall, one given twice or off
    its wall, or a goal room no chain of doorways joins to the start room."""
    n, g = st.n_rooms, st.grid
    for field_name, room in (("start_room", plan.start_room), ("goal_room", st.goal_room)):
        if isinstance(room, bool) or not isinstance(room, int) or not 0 <= room < n:
            raise ValueError(
                f"world.{field_name} must be a room of the {g}×{g} grid, 0 to {n - 1}, got {room!r}"
            )
    if plan.start_room == st.goal_room:
        raise ValueError(f"world.goal_room is the start room ({plan.start_room}); choose another")
    low, high = st.door_span()
    seen: set[tuple[int, int]] = set()
    graph: dict[int, set[int]] = {r: set() for r in range(n)}
    for k, d in enumerate(plan.doorways):
        where = f"world.doors[{k}] (rooms {d.a} and {d.b})"
        if not all(0 <= r < n for r in (d.a, d.b)):
            raise ValueError(f"{where}: rooms are numbered 0 to {n - 1} in a {g}×{g} grid")
        a, b = sorted((d.a, d.b))
        if not ((b == a + 1 and a % g != g - 1) or b == a + g):
            raise ValueError(
                f"{where}: the rooms share no wall (room r neighbours r + 1 in its row and "
                f"r + {g} above it)"
            )
        if (a, b) in seen:
            raise ValueError(f"{where}: a second doorway between them; a wall has one")
        seen.add((a, b))
        if not low <= d.at <= high:
            raise ValueError(
                f"{where}: at must be from {low:.2f} to {high:.2f} m along the wall "
                f"(a {st.door_width:g} m doorway clear of the corners), got {d.at!r}"
            )
        graph[a].add(b)
        graph[b].add(a)
    reached, frontier = {plan.start_room}, [plan.start_room]
    while frontier:
        for nb in graph[frontier.pop()] - reached:
            reached.add(nb)
            frontier.append(nb)
    if st.goal_room not in reached:
        raise ValueError(
            f"world.goal_room {st.goal_room} cannot be reached from world.start_room "
            f"{plan.start_room} through world.doors (reachable: "
            f"{', '.join(map(str, sorted(reached)))})"
        )


@dataclass(frozen=True)
class Door:
    """A doorway between rooms ``a < b``: its centre and whether the wall is vertical."""

    a: int
    b: int
    x: float
    y: float
    vertical_wall: bool  # True: rooms side by side (b = a + 1); False: b = a + grid


@dataclass(frozen=True)
class Box:
    """A movable box standing at (x, y), axis-aligned, in ``room``."""

    name: str
    room: int
    x: float
    y: float


@dataclass(frozen=True)
class NamoTask:
    """One NAMO task: layout, boxes, robot start and goal object.

    A generated task starts in room 0 with empty hands; a task read from a scene of a robot
    partway through (``scene_io``) starts where that robot is, in any room, with boxes
    wherever they were put and possibly one box in its hand: ``held`` names that box (one of
    ``boxes``, whose x and y are then where it is carried), "" for none."""

    task_id: int
    seed: int
    doors: tuple[Door, ...]
    boxes: tuple[Box, ...]
    start: Pose2D
    goal: tuple[float, float]
    settings: NamoSettings = field(default_factory=NamoSettings)
    held: str = ""

    def __post_init__(self) -> None:
        if self.held and all(b.name != self.held for b in self.boxes):
            raise ValueError(
                f"task {self.task_id} holds '{self.held}', which is not one of its boxes"
            )

    def room_of(self, x: float, y: float) -> int:
        """The room containing point (x, y), clamped to the grid."""
        s, g = self.settings.room_size, self.settings.grid
        col = min(max(int(x // s), 0), g - 1)
        row = min(max(int(y // s), 0), g - 1)
        return row * g + col

    def room_rect(self, room: int) -> Rect:
        s = self.settings.room_size
        row, col = divmod(room, self.settings.grid)
        return (col * s, row * s, (col + 1) * s, (row + 1) * s)

    def walls(self) -> list[Rect]:
        """Every wall as a rectangle: the outer boundary and interior walls with doorways."""
        st = self.settings
        size, half_t = st.world_size, st.wall_thickness / 2
        walls: list[Rect] = [
            (-half_t, -half_t, size + half_t, half_t),
            (-half_t, size - half_t, size + half_t, size + half_t),
            (-half_t, -half_t, half_t, size + half_t),
            (size - half_t, -half_t, size + half_t, size + half_t),
        ]
        doors = {(d.a, d.b): d for d in self.doors}
        g, n = st.grid, st.n_rooms
        for a in range(n):
            for b, vertical in ((a + 1, True), (a + g, False)):
                if (vertical and a % g == g - 1) or b >= n:
                    continue
                x0, y0, x1, y1 = self.room_rect(a)
                # The wall between a and b, from one room corner to the next.
                if vertical:
                    lo, hi, at = y0, y1, x1
                else:
                    lo, hi, at = x0, x1, y1
                door = doors.get((a, b))
                spans = [(lo, hi)]
                if door is not None:
                    centre = door.y if vertical else door.x
                    spans = [(lo, centre - st.door_width / 2), (centre + st.door_width / 2, hi)]
                for s0, s1 in spans:
                    if s1 - s0 <= 1e-9:
                        continue
                    if vertical:
                        walls.append((at - half_t, s0, at + half_t, s1))
                    else:
                        walls.append((s0, at - half_t, s1, at + half_t))
        return walls

    def box_rect(self, x: float, y: float) -> Rect:
        hx, hy = self.settings.box_size[0] / 2, self.settings.box_size[1] / 2
        return (x - hx, y - hy, x + hx, y + hy)

    def box(self, name: str) -> Box:
        for b in self.boxes:
            if b.name == name:
                return b
        raise KeyError(f"task {self.task_id} has no box '{name}'")

    def reached(self, x: float, y: float) -> bool:
        gx, gy = self.goal
        return math.hypot(x - gx, y - gy) <= self.settings.reach

    def door_graph(self) -> dict[int, set[int]]:
        graph: dict[int, set[int]] = {r: set() for r in range(self.settings.n_rooms)}
        for d in self.doors:
            graph[d.a].add(d.b)
            graph[d.b].add(d.a)
        return graph


def generate_task(task_id: int, seed: int, settings: NamoSettings | None = None) -> NamoTask:
    """A random task; the same (seed, settings) always gives the same task."""
    st = settings or NamoSettings()
    rng = random.Random(seed)
    fixed = st.plan_doors()
    doors: list[Door] = []
    if fixed is not None:
        doors = list(fixed)
    else:
        for a, b in sorted(random_door_graph(rng, st.extra_door_prob, st.grid)):
            doors.append(st.door(a, b, rng.uniform(*st.door_span())))
    skeleton = NamoTask(task_id, seed, tuple(doors), (), (0.0, 0.0, 0.0), (0.0, 0.0), st)

    # The start and the goal object first, so that no box is placed on top of them.
    start = _free_point(rng, skeleton.room_rect(st.start_room), 0.6, [])
    goal = _free_point(rng, skeleton.room_rect(st.goal_room), 0.6, [])
    start_pose: Pose2D = (start[0], start[1], rng.uniform(-math.pi, math.pi))

    boxes: list[Box] = []
    box_clearance = st.wall_thickness / 2 + max(st.box_size[:2]) / 2 + 0.05
    for room in range(st.n_rooms):
        if room == st.goal_room:
            continue
        rect = skeleton.room_rect(room)
        slots: list[tuple[float, float]] = []
        # One slot just inside every doorway of the room: boxes there block the passage.
        for d in doors:
            if room not in (d.a, d.b) or len(slots) >= st.slots_per_room:
                continue
            sign = 1.0 if room == d.b else -1.0
            depth = st.wall_thickness / 2 + st.box_size[0] / 2 + 0.2
            if d.vertical_wall:
                slots.append((d.x + sign * depth, d.y))
            else:
                slots.append((d.x, d.y + sign * depth))
        keep_clear = [start[:2]] if room == st.start_room else []
        while len(slots) < st.slots_per_room:
            p = _free_point(rng, rect, box_clearance, slots, keep_clear)
            slots.append(p)
        for k, (x, y) in enumerate(slots):
            if rng.random() < st.fill_prob:
                if room == st.start_room and math.dist((x, y), start[:2]) < 0.8:
                    continue
                boxes.append(Box(f"box_r{room}_{k}", room, x, y))
    return NamoTask(task_id, seed, tuple(doors), tuple(boxes), start_pose, goal, st)


def _free_point(
    rng: random.Random,
    rect: Rect,
    clearance: float,
    taken: list[tuple[float, float]],
    keep_clear: list[tuple[float, float]] | None = None,
) -> tuple[float, float]:
    """A point of ``rect`` at least ``clearance`` from its walls and 0.55 m from ``taken``
    (0.9 m from ``keep_clear``); after many failed draws, the best one seen."""
    x0, y0, x1, y1 = rect
    best, best_gap = (0.5 * (x0 + x1), 0.5 * (y0 + y1)), -math.inf
    for _ in range(200):
        p = (
            rng.uniform(x0 + clearance, x1 - clearance),
            rng.uniform(y0 + clearance, y1 - clearance),
        )
        gaps = [math.dist(p, q) - 0.55 for q in taken]
        gaps += [math.dist(p, q) - 0.9 for q in keep_clear or []]
        gap = min(gaps, default=math.inf)
        if gap >= 0:
            return p
        if gap > best_gap:
            best, best_gap = p, gap
    return best
