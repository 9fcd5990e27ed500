"""Sequential-manipulation tasks (paper domain D4, issue 50) as pure geometry: a left table of
red and blue cylinders, a right table with a 3 × 3 grid of bins, some holding a green object.

Frames and units: metres and radians, one world frame with its origin on the floor between the
tables, x to the right, y away from the viewer (top view: y up), z up. Yaw is measured from
+x towards +y. The left table's right edge lies at ``x = -left_gap`` and the right table's left
edge at ``x = right_gap``, both centred on ``y = 0``; the robot starts at the origin facing +x.
An object's pose is its axis's (x, y) and its bottom's height ``z``; objects stand upright.

Every object is a body of revolution described by its *profile*: horizontal sections
``(z0, z1, radius)`` measured up from its bottom. Skinny reds and the distractors are plain
cylinders. A fat red is a narrow stem under a wide cap (a mushroom, or a lidded jar held by its
body): 0.16 m across at the top, so a gripper coming from above meets the cap wider than it
opens, while a gripper coming from the side closes on the stem. Whether a grasp fits is decided
by the simulator from these widths and the gripper's opening
(:mod:`camp_planner.sim.tabletop_geometry`), never from an object's name or kind.

Sizes differ from issue 50's round numbers where the Panda forces it: a skinny red is 0.03 m in
radius, not 0.05 (0.10 m across would fit no Panda grasp at all, the fingers open 0.08 m, and
at 0.035 the pitched side grasp's palm grazed the cylinder), and a fat red's stem is as thin.
The tables are 0.6 m high so that targets lie about 0.35 m above the arm's mount, where the
Panda's wrist can hold a side grasp.

Everything here is plain data, shared by the simulator scene, the renderer and the features; a
task is fully described by its seed and settings.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from camp_planner.domains.manip.layout import STAGING, TABLE, bin_loc

Pose2D = tuple[float, float, float]  # x, y, yaw
Section = tuple[float, float, float]  # z0, z1 (up from the object's bottom), radius
Rgba = tuple[float, float, float, float]

RED: Rgba = (0.86, 0.15, 0.15, 1.0)
BLUE: Rgba = (0.15, 0.39, 0.92, 1.0)
GREEN: Rgba = (0.09, 0.64, 0.29, 1.0)
WOOD: Rgba = (0.62, 0.47, 0.33, 1.0)
BIN: Rgba = (0.55, 0.55, 0.6, 1.0)

# How far the Panda reaches from its mount (0.85 m from the shoulder, the target about 0.35 m
# above the mount): the refiners try work poses within it, and a world file whose targets lie
# beyond it from every work pose is refused.
ARM_REACH = 0.85

_SPLIT_OFFSET = {"train": 0, "test": 5_000}  # as NAMO's: train and test seeds never meet
# Where the reds may stand on the left table's grid (``ManipSettings.red_cells``): ``outer``,
# the border cells, which a side grasp from the table's edge reaches past no blue (the
# default, this repository's world since issue 50); ``any``, every cell, inner ones among
# the blues included, as in the paper's D4 (issue 64).
RED_CELLS = ("outer", "any")
# How many layouts of the left table ``generate_task`` draws for a task before it gives up
# (the cluttered world keeps about one draw in two of a fat task, nearly every skinny one).
MAX_TABLE_DRAWS = 100


@dataclass(frozen=True)
class ManipSettings:
    """What the generator varies and the fixed geometry of the world, objects and robot."""

    # Left table: a jittered grid of cells, the reds in outer cells (or any: ``red_cells``).
    grid: int = 5  # cells per side; grows to fit n_distractors + n_reds (see cells_per_side)
    pitch: float = 0.2
    jitter: float = 0.03  # each coordinate, uniform within ±jitter of the cell centre
    clearance: float = 0.01  # least gap between neighbours (jitter is redrawn until it holds)
    n_reds: int = 2
    n_distractors: int = 15  # the scaling row: 15, 30, 60
    red_cells: str = "outer"  # one of RED_CELLS; "any" is config/manip/cluttered.yaml's world
    table_margin: float = 0.13  # outer cells' centres to the table edge (a fat cap + jitter)
    table_height: float = 0.6
    left_gap: float = 0.5  # origin to the left table's edge
    # Objects (profiles are built from these; see ``red_profile``).
    object_height: float = 0.18
    skinny_radius: float = 0.03  # 0.06 m across: fits the 0.08 m gripper (see the docstring)
    fat_radius: float = 0.08  # the fat red's cap: 0.16 m across
    fat_stem_radius: float = 0.03
    fat_cap_height: float = 0.04
    fat_prob: float = 0.5
    distractor_radius: float = 0.03
    distractor_height: float = 0.15
    green_radius: float = 0.04
    green_height: float = 0.12
    # Right table: a grid of square bins.
    bins_per_side: int = 3
    bin_inner: float = 0.18  # inside width of a bin (a fat cap is 0.16)
    bin_wall: float = 0.01
    bin_wall_height: float = 0.03
    bin_floor: float = 0.01  # thickness of a bin's bottom
    bin_pitch: float = 0.2
    bin_margin: float = 0.05  # table edge to the outer bins' walls
    right_gap: float = 0.6  # origin to the right table's edge
    staging_depth: float = 0.2  # a strip of the right table before the bins, for regrasps
    occupied_prob: float = 0.5
    min_free_bins: int = 2
    # Robot: NAMO's holonomic base with the Panda mounted near its front.
    base_half_extent: float = 0.3
    base_height: float = 0.3
    arm_mount_x: float = 0.1  # forward of the base centre, so the arm reaches over a table
    gripper_max_opening: float = 0.08  # Panda: two fingers of 0.04 m travel
    finger_pad: float = 0.02  # height of the band a finger pad closes over
    # Gaps between a table edge and the base at work poses: near for top grasps and the bins'
    # near rows, farther back for side grasps, which need 0.55 m between the arm's mount and
    # the object (the pitched gripper comes in from behind it).
    stand_offs: tuple[float, ...] = (0.05, 0.25)
    world_half: tuple[float, float] = (3.0, 2.0)  # the floor: [-hx, hx] × [-hy, hy]

    def __post_init__(self) -> None:
        if self.n_reds < 1 or self.n_distractors < 0:
            raise ValueError("world needs at least one red object and no negative counts")
        if not 0 <= self.min_free_bins <= self.bins_per_side**2:
            raise ValueError(f"min_free_bins must be within 0..{self.bins_per_side**2}")
        if self.red_cells not in RED_CELLS:
            raise ValueError(f"red_cells must be one of {RED_CELLS}, got {self.red_cells!r}")

    @property
    def cells_per_side(self) -> int:
        """Grid cells per side: ``grid``, or more when the objects do not fit (60 distractors
        take an 8 × 8 grid at the same pitch)."""
        need = self.n_reds + self.n_distractors
        return max(self.grid, math.ceil(math.sqrt(need)))

    @property
    def left_half(self) -> float:
        """Half the left table's side."""
        return (self.cells_per_side - 1) * self.pitch / 2 + self.table_margin

    @property
    def right_half(self) -> float:
        return (self.bins_per_side * self.bin_pitch) / 2 + self.bin_margin


@dataclass(frozen=True)
class Table:
    """An axis-aligned table: a solid block from the floor to ``height``."""

    name: str
    x0: float
    y0: float
    x1: float
    y1: float
    height: float

    @property
    def centre(self) -> tuple[float, float]:
        return ((self.x0 + self.x1) / 2, (self.y0 + self.y1) / 2)


@dataclass(frozen=True)
class Bin:
    """Bin ``index`` (row-major from the bin nearest the robot's side, lowest y first): its
    centre, the height of its inside floor, and its walls."""

    index: int
    x: float
    y: float
    floor_z: float  # where an object placed in the bin stands
    inner: float
    wall: float
    wall_height: float

    def contains(self, x: float, y: float) -> bool:
        h = self.inner / 2
        return abs(x - self.x) <= h and abs(y - self.y) <= h


@dataclass(frozen=True)
class Slab:
    """A static axis-aligned box of the scene (a table, a bin's floor or wall)."""

    name: str
    centre: tuple[float, float, float]
    half: tuple[float, float, float]
    rgba: Rgba


@dataclass(frozen=True)
class ManipObject:
    """An upright body of revolution standing with its bottom at (x, y, z)."""

    name: str
    kind: str  # "red", "blue" or "green" (for colours and features; never for geometry)
    x: float
    y: float
    z: float
    sections: tuple[Section, ...]
    rgba: Rgba

    @property
    def radius(self) -> float:
        """The widest section's radius (the selector's "red radius")."""
        return max(r for _, _, r in self.sections)

    @property
    def height(self) -> float:
        return max(z1 for _, z1, _ in self.sections)


def red_profile(st: ManipSettings, fat: bool) -> tuple[Section, ...]:
    """A skinny red is a plain cylinder; a fat one a stem under a wide cap."""
    h = st.object_height
    if not fat:
        return ((0.0, h, st.skinny_radius),)
    stem_top = h - st.fat_cap_height
    return ((0.0, stem_top, st.fat_stem_radius), (stem_top, h, st.fat_radius))


@dataclass(frozen=True)
class ManipTask:
    """One task: tables, bins, objects and the robot's start.

    A generated task starts at the origin with every red on the left table; a task read from
    a scene of a robot partway through (``scene_io``) starts where that robot stands, with
    reds already in bins or on the staging strip (where their objects stand: :meth:`place_of`)
    and possibly one red in the gripper: ``held`` names it and ``grasp_style`` says how
    (``top`` or ``side``), "" for none."""

    task_id: int
    seed: int
    fat: bool
    objects: tuple[ManipObject, ...]
    occupied: tuple[bool, ...]  # per bin index: holds a green
    start: Pose2D = (0.0, 0.0, 0.0)
    settings: ManipSettings = field(default_factory=ManipSettings)
    held: str = ""
    grasp_style: str = ""

    def __post_init__(self) -> None:
        if bool(self.held) != bool(self.grasp_style):
            raise ValueError("a held red needs its grasp style, and a grasp style a held red")
        if self.held and all(o.name != self.held or o.kind != "red" for o in self.objects):
            raise ValueError(f"task {self.task_id} holds '{self.held}', which is not its red")

    # --- fixed geometry -------------------------------------------------------------------
    @property
    def left_table(self) -> Table:
        st = self.settings
        x1 = -st.left_gap
        side = 2 * st.left_half
        return Table("table_left", x1 - side, -side / 2, x1, side / 2, st.table_height)

    @property
    def right_table(self) -> Table:
        st = self.settings
        x0 = st.right_gap
        side = 2 * st.right_half
        x1 = x0 + st.staging_depth + side
        return Table("table_right", x0, -side / 2, x1, side / 2, st.table_height)

    @property
    def tables(self) -> tuple[Table, Table]:
        return (self.left_table, self.right_table)

    @property
    def bins(self) -> tuple[Bin, ...]:
        st = self.settings
        t = self.right_table
        cx, cy = t.centre
        cx += st.staging_depth / 2  # the bins' square lies beyond the staging strip
        n = st.bins_per_side
        out = []
        for k in range(n * n):
            row, col = divmod(k, n)
            out.append(
                Bin(
                    k,
                    cx + (col - (n - 1) / 2) * st.bin_pitch,
                    cy + (row - (n - 1) / 2) * st.bin_pitch,
                    st.table_height + st.bin_floor,
                    st.bin_inner,
                    st.bin_wall,
                    st.bin_wall_height,
                )
            )
        return tuple(out)

    def slabs(self) -> list[Slab]:
        """Every static box of the scene: the two tables, then each bin's floor and walls."""
        st = self.settings
        out: list[Slab] = []
        for t in self.tables:
            cx, cy = t.centre
            half = ((t.x1 - t.x0) / 2, (t.y1 - t.y0) / 2, t.height / 2)
            out.append(Slab(t.name, (cx, cy, t.height / 2), half, WOOD))
        for b in self.bins:
            outer = b.inner / 2 + b.wall
            out.append(
                Slab(
                    f"bin_{b.index}",
                    (b.x, b.y, st.table_height + st.bin_floor / 2),
                    (outer, outer, st.bin_floor / 2),
                    BIN,
                )
            )
            wz = b.floor_z + b.wall_height / 2
            hw, hh = b.wall / 2, b.wall_height / 2
            off = b.inner / 2 + hw
            for dx, dy, half in (
                (off, 0.0, (hw, outer, hh)),
                (-off, 0.0, (hw, outer, hh)),
                (0.0, off, (outer, hw, hh)),
                (0.0, -off, (outer, hw, hh)),
            ):
                out.append(Slab(f"bin_{b.index}", (b.x + dx, b.y + dy, wz), half, BIN))
        return out

    # --- objects ----------------------------------------------------------------------------
    def by_kind(self, kind: str) -> list[ManipObject]:
        return [o for o in self.objects if o.kind == kind]

    @property
    def reds(self) -> list[ManipObject]:
        return self.by_kind("red")

    @property
    def distractors(self) -> list[ManipObject]:
        return self.by_kind("blue")

    def obj(self, name: str) -> ManipObject:
        for o in self.objects:
            if o.name == name:
                return o
        raise KeyError(f"task {self.task_id} has no object '{name}'")

    def bin_occupant(self, index: int) -> str | None:
        """The green object's name in bin ``index``, or None."""
        return f"green_{index}" if self.occupied[index] else None

    @property
    def free_bins(self) -> list[int]:
        return [k for k, occ in enumerate(self.occupied) if not occ]

    def staging_spots(self) -> list[tuple[float, float]]:
        """Where a red may be put down to regrasp it (standing on the table top): the right
        table's strip nearest the robot, before the bins."""
        t = self.right_table
        st = self.settings
        x = t.x0 + st.staging_depth / 2
        # 1.5 bin pitches apart, or less on a narrow table (two bins a side) to stay on it.
        off = min(1.5 * st.bin_pitch, (t.y1 - t.y0) / 2 - 0.05)
        return [(x, y) for y in (-off, 0.0, off)]

    def place_of(self, obj: ManipObject) -> str:
        """Where a red stands: ``table`` (the left table), ``staging`` (the right table's
        strip before the bins) or ``bin_j`` (on bin j's floor)."""
        if obj.z > self.settings.table_height + self.settings.bin_floor / 2:
            for b in self.bins:
                if b.contains(obj.x, obj.y):
                    return bin_loc(b.index)
        t = self.right_table
        if t.x0 <= obj.x <= t.x1 and t.y0 <= obj.y <= t.y1:
            return STAGING
        return TABLE

    def filled(self) -> tuple[bool, ...]:
        """Per bin: whether it holds something (a green, or a red put there)."""
        reds = {self.place_of(o) for o in self.reds if o.name != self.held}
        return tuple(occ or bin_loc(k) in reds for k, occ in enumerate(self.occupied))

    def features(self) -> tuple[float, ...]:
        """What the selector sees: the red radius, then whether each bin is taken (0/1): by
        a green, or by a red already put there (partway through a task a filled bin is one
        fewer to choose from, as an occupied one is at the start)."""
        return (self.reds[0].radius, *(1.0 if occ else 0.0 for occ in self.filled()))

    # --- base poses -------------------------------------------------------------------------
    def work_poses(self, table: str, per_side: int = 3) -> list[Pose2D]:
        """Base poses facing ``table`` ("table_left" / "table_right") square to each of its
        sides, ``per_side`` along each side, at each of ``settings.stand_offs``: the candidate
        poses to reach it from. Whether the arm reaches a given object from one, and whether
        the pose is free, is the simulator's question."""
        st = self.settings
        t = self.left_table if table == "table_left" else self.right_table
        out: list[Pose2D] = []
        for gap in st.stand_offs:
            out += self._side_poses(t, st.base_half_extent + gap, per_side)
        return out

    def _side_poses(self, t: Table, d: float, per_side: int) -> list[Pose2D]:
        cx, cy = t.centre
        hx, hy = (t.x1 - t.x0) / 2, (t.y1 - t.y0) / 2
        out: list[Pose2D] = []
        sides = (
            (t.x1 + d, None, math.pi),
            (t.x0 - d, None, 0.0),
            (None, t.y1 + d, -math.pi / 2),
            (None, t.y0 - d, math.pi / 2),
        )
        for sx, sy, yaw in sides:
            along = hy if sx is not None else hx
            for k in range(per_side):
                s = 0.0 if per_side == 1 else (2 * k / (per_side - 1) - 1) * along * 0.6
                x = sx if sx is not None else cx + s
                y = sy if sy is not None else cy + s
                out.append((round(x, 6), round(y, 6), yaw))
        return out

    def on_floor(self, pose: Pose2D) -> bool:
        """Whether the base at ``pose`` stays within the floor (at any yaw)."""
        hx, hy = self.settings.world_half
        r = self.settings.base_half_extent * math.sqrt(2)
        return abs(pose[0]) <= hx - r and abs(pose[1]) <= hy - r


def generate_task(
    task_id: int,
    seed: int,
    settings: ManipSettings | None = None,
    accept: Callable[[ManipTask], bool] | None = None,
) -> ManipTask:
    """A random task; the same (seed, settings, accept) always gives the same task.

    ``accept`` (if given) judges each draw of the left table's objects: one it refuses is
    drawn again from the same random stream (the red radius and the bins, what the selector
    sees, are kept), up to ``MAX_TABLE_DRAWS`` times, then a ValueError. The cluttered world
    (``red_cells = "any"``) passes the simulator's test that every red has a grasp
    (:func:`camp_planner.domains.manip.clutter.every_red_graspable`); without ``accept`` a task
    is its first draw, as it always was."""
    st = settings or ManipSettings()
    rng = random.Random(seed)
    fat = rng.random() < st.fat_prob
    # What the selector sees (the red radius and the bins) is drawn before the table's
    # objects, so that a task keeps it whatever the number of distractors (the scaling row
    # compares the same tasks at 15, 30 and 60).
    n_bins = st.bins_per_side**2
    while True:  # redraw until enough bins are free (a few draws at p = 0.5)
        occupied = tuple(rng.random() < st.occupied_prob for _ in range(n_bins))
        if n_bins - sum(occupied) >= st.min_free_bins:
            break
    skeleton = ManipTask(task_id, seed, fat, (), occupied, settings=st)
    green = ((0.0, st.green_height, st.green_radius),)
    greens = [
        ManipObject(f"green_{b.index}", "green", b.x, b.y, b.floor_z, green, GREEN)
        for b in skeleton.bins
        if occupied[b.index]
    ]
    for _ in range(MAX_TABLE_DRAWS):
        table = _draw_table(rng, skeleton)
        task = ManipTask(task_id, seed, fat, (*table, *greens), occupied, settings=st)
        if accept is None or accept(task):
            return task
    raise ValueError(
        f"task {task_id} (seed {seed}): no draw of {MAX_TABLE_DRAWS} left-table layouts "
        "was accepted"
    )


def red_cells(st: ManipSettings) -> list[tuple[int, int]]:
    """The grid cells (i, j) a red may be drawn in: the border's, or every cell."""
    n = st.cells_per_side
    cells = [(i, j) for i in range(n) for j in range(n)]
    if st.red_cells == "any":
        return cells
    return [c for c in cells if min(c) == 0 or max(c) == n - 1]


def _draw_table(rng: random.Random, skeleton: ManipTask) -> list[ManipObject]:
    """The reds' and the blues' cells and jittered positions on the left table."""
    st = skeleton.settings
    n = st.cells_per_side
    cx, cy = skeleton.left_table.centre
    cells = [(i, j) for i in range(n) for j in range(n)]
    reds_at = rng.sample(red_cells(st), st.n_reds)
    rest = [c for c in cells if c not in reds_at]
    blues_at = rng.sample(rest, min(st.n_distractors, len(rest)))

    objects: list[ManipObject] = []

    def put(name: str, kind: str, cell: tuple[int, int], sections: tuple[Section, ...]) -> None:
        """Stand an object in ``cell``, jittered, at least ``clearance`` from the others (two
        fat reds in neighbouring cells would otherwise overlap; the cell centre if 50 draws
        fail, which the pitch keeps clear)."""
        i, j = cell
        x0 = cx + (i - (n - 1) / 2) * st.pitch
        y0 = cy + (j - (n - 1) / 2) * st.pitch
        r = max(rad for _, _, rad in sections)
        x, y = x0, y0
        for _ in range(50):
            x = round(x0 + rng.uniform(-st.jitter, st.jitter), 6)
            y = round(y0 + rng.uniform(-st.jitter, st.jitter), 6)
            gaps = [math.hypot(x - o.x, y - o.y) - r - o.radius for o in objects]
            if min(gaps, default=math.inf) >= st.clearance:
                break
        else:
            x, y = x0, y0
        objects.append(ManipObject(name, kind, x, y, st.table_height, sections, colour[kind]))

    colour = {"red": RED, "blue": BLUE}
    red = red_profile(st, skeleton.fat)
    for k, cell in enumerate(reds_at):
        put(f"red_{k}", "red", cell, red)
    blue = ((0.0, st.distractor_height, st.distractor_radius),)
    for k, cell in enumerate(blues_at):
        put(f"blue_{k}", "blue", cell, blue)
    return objects


def cell_of(task: ManipTask, obj: ManipObject) -> tuple[int, int]:
    """The left table's grid cell (i, j) whose centre is nearest ``obj``."""
    st = task.settings
    n = st.cells_per_side
    cx, cy = task.left_table.centre
    return (
        round((obj.x - cx) / st.pitch + (n - 1) / 2),
        round((obj.y - cy) / st.pitch + (n - 1) / 2),
    )


def make_tasks(
    split: str,
    count: int,
    seed: int = 0,
    settings: ManipSettings | None = None,
    accept: Callable[[ManipTask], bool] | None = None,
) -> list[ManipTask]:
    """``count`` tasks of ``split`` ("train" or "test"), seeded as NAMO's: task ``i`` of a
    split has seed ``seed · 10000 + offset(split) + i``, so train and test never share one;
    ``accept`` as :func:`generate_task`'s."""
    base = seed * 10_000 + _SPLIT_OFFSET[split]
    return [generate_task(i, base + i, settings, accept) for i in range(count)]
