"""Gridworld tasks (paper domain D1): a 3×3 maze of rooms with patrolling enemies.

Rooms are 2 or 3 cells on a side (row heights and column widths vary per task), walls run
between rooms, doors join some neighbouring rooms. The agent starts in room 0 (top left) and
must reach the goal in room 8 (bottom right). Two middle rooms hold 1–3 enemies each that
patrol the room's boundary loop, advancing with probability ``move_prob`` per step.
Everything is generated from a seed, so a task is fully described by its seed and settings.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from camp_planner.domains.room_grid import random_door_graph

Cell = tuple[int, int]  # (row, col), row 0 at the top

N_ROOMS = 9
ENEMY_ROOMS = tuple(range(1, 8))  # start room 0 and goal room 8 never hold enemies
SLOTS_PER_ROOM = 3


@dataclass(frozen=True)
class Enemy:
    """An enemy patrolling ``cycle`` (global cells) in ``room``, starting at ``cycle[0]``."""

    room: int
    slot: int
    cycle: tuple[Cell, ...]
    direction: int  # +1 or -1 along the cycle

    @property
    def name(self) -> str:
        return f"enemy_r{self.room}_{self.slot}"


@dataclass(frozen=True)
class GridworldSettings:
    """What the task generator varies, and the dynamics."""

    enemy_rooms: int = 2
    min_enemies_per_room: int = 1
    max_enemies_per_room: int = 3
    extra_door_prob: float = 0.35
    move_prob: float = 0.9
    goal_reward: float = 100.0


@dataclass(frozen=True)
class GridworldTask:
    """One maze layout with its start, goal and enemies."""

    task_id: int
    seed: int
    row_heights: tuple[int, int, int]
    col_widths: tuple[int, int, int]
    doors: frozenset[tuple[Cell, Cell]]  # unordered pairs stored both ways
    start: Cell
    goal: Cell
    enemies: tuple[Enemy, ...]
    settings: GridworldSettings

    @property
    def height(self) -> int:
        return sum(self.row_heights)

    @property
    def width(self) -> int:
        return sum(self.col_widths)

    def room_origin(self, room: int) -> Cell:
        rr, rc = divmod(room, 3)
        return (sum(self.row_heights[:rr]), sum(self.col_widths[:rc]))

    def room_shape(self, room: int) -> tuple[int, int]:
        rr, rc = divmod(room, 3)
        return (self.row_heights[rr], self.col_widths[rc])

    def room_of(self, cell: Cell) -> int:
        r, c = cell
        rr = 0 if r < self.row_heights[0] else (1 if r < sum(self.row_heights[:2]) else 2)
        rc = 0 if c < self.col_widths[0] else (1 if c < sum(self.col_widths[:2]) else 2)
        return 3 * rr + rc

    def cells(self) -> list[Cell]:
        return [(r, c) for r in range(self.height) for c in range(self.width)]

    def room_cells(self, room: int) -> list[Cell]:
        (r0, c0), (h, w) = self.room_origin(room), self.room_shape(room)
        return [(r0 + r, c0 + c) for r in range(h) for c in range(w)]

    def passable(self, a: Cell, b: Cell) -> bool:
        """Whether one step leads from ``a`` to neighbouring cell ``b``."""
        if not (0 <= b[0] < self.height and 0 <= b[1] < self.width):
            return False
        return self.room_of(a) == self.room_of(b) or (a, b) in self.doors

    def to_local(self, cell: Cell) -> Cell:
        r0, c0 = self.room_origin(self.room_of(cell))
        return (cell[0] - r0, cell[1] - c0)

    def to_global(self, room: int, local: Cell) -> Cell:
        r0, c0 = self.room_origin(room)
        return (r0 + local[0], c0 + local[1])


def boundary_loop(task_shape: tuple[int, int], origin: Cell) -> tuple[Cell, ...]:
    """The room's boundary cells in clockwise order (every cell of a 2-wide room)."""
    h, w = task_shape
    r0, c0 = origin
    loop = [(r0, c0 + c) for c in range(w)]
    loop += [(r0 + r, c0 + w - 1) for r in range(1, h)]
    loop += [(r0 + h - 1, c0 + c) for c in range(w - 2, -1, -1)]
    loop += [(r0 + r, c0) for r in range(h - 2, 0, -1)]
    return tuple(loop)


def generate_task(task_id: int, seed: int, settings: GridworldSettings) -> GridworldTask:
    """A random layout; the same (seed, settings) always gives the same task."""
    rng = random.Random(seed)
    rows = (rng.choice((2, 3)), rng.choice((2, 3)), rng.choice((2, 3)))
    cols = (rng.choice((2, 3)), rng.choice((2, 3)), rng.choice((2, 3)))
    skeleton = GridworldTask(task_id, seed, rows, cols, frozenset(), (0, 0), (0, 0), (), settings)
    doors: set[tuple[Cell, Cell]] = set()
    for a, b in random_door_graph(rng, settings.extra_door_prob):
        ca, cb = _door_cells(skeleton, a, b, rng)
        doors.add((ca, cb))
        doors.add((cb, ca))
    start = rng.choice(skeleton.room_cells(0))
    goal = rng.choice(skeleton.room_cells(8))
    enemies: list[Enemy] = []
    for room in sorted(rng.sample(ENEMY_ROOMS, settings.enemy_rooms)):
        count = rng.randint(settings.min_enemies_per_room, settings.max_enemies_per_room)
        loop = boundary_loop(skeleton.room_shape(room), skeleton.room_origin(room))
        phases = rng.sample(range(len(loop)), min(count, len(loop)))
        for slot, phase in enumerate(phases):
            cycle = loop[phase:] + loop[:phase]
            enemies.append(Enemy(room, slot, cycle, rng.choice((1, -1))))
    return GridworldTask(
        task_id, seed, rows, cols, frozenset(doors), start, goal, tuple(enemies), settings
    )


def _door_cells(task: GridworldTask, a: int, b: int, rng: random.Random) -> tuple[Cell, Cell]:
    """A pair of cells facing each other across the wall between rooms a < b."""
    (ra0, ca0), (ha, wa) = task.room_origin(a), task.room_shape(a)
    if b == a + 1:  # b is to the right: shared vertical wall
        rb0 = task.room_origin(b)[0]
        hb = task.room_shape(b)[0]
        lo, hi = max(ra0, rb0), min(ra0 + ha, rb0 + hb)
        r = rng.randrange(lo, hi)
        return (r, ca0 + wa - 1), (r, ca0 + wa)
    cb0 = task.room_origin(b)[1]  # b is below: shared horizontal wall
    wb = task.room_shape(b)[1]
    lo, hi = max(ca0, cb0), min(ca0 + wa, cb0 + wb)
    c = rng.randrange(lo, hi)
    return (ra0 + ha - 1, c), (ra0 + ha, c)
