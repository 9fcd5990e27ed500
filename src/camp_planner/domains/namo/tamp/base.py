"""What every part of NAMO's TAMP interface shares: one planning call's state (the MDP
state reached, the rooms a CAMP allows, the random numbers, the counters), and the helpers
that read it, time it and show it in the simulator.

The interface is one object per planning call (:class:`~.interface.NamoTampInterface`); its
parts (symbolic model, work accounting, route search, motion planning, refiners) are the
classes of this package, each building on :class:`InterfaceBase`.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

from camp_planner.core.mdp import Action, State
from camp_planner.domains.namo.layout import layout
from camp_planner.domains.namo.world import Door, NamoTask, Pose2D
from camp_planner.planners.tamp import InterfaceSettings
from camp_planner.sim.floor_scene import FloorScene

if TYPE_CHECKING:
    from camp_planner.domains.namo.tamp.grid import GridView

# Motion plans keep this clearance, so that executing them (checked more finely, without
# clearance) never grazes what the planner's coarser checks passed.
PLAN_MARGIN = 0.03
START_SLACK = 0.1  # metres from a motion's start within which poses need not keep the margin


class Simulator(Protocol):
    """What the interface needs of NAMO's MDP: its task, its (deterministic) simulator step
    and the PyBullet scene behind it."""

    @property
    def task(self) -> NamoTask | None: ...

    def step(self, state: State, action: Action) -> State: ...

    def scene(self) -> FloorScene: ...

    def sync(self, state: State) -> FloorScene: ...

    def is_terminal(self, state: State) -> bool: ...

    def state_index(self, name: str) -> int: ...


class InterfaceBase:
    """One planning call's state, and the helpers every part of the interface uses."""

    def __init__(
        self,
        mdp: Simulator,
        state: State,
        allowed: frozenset[int] | None,
        seed: int,
        settings: InterfaceSettings,
    ) -> None:
        self.mdp = mdp
        task = mdp.task
        assert task is not None
        self.task: NamoTask = task
        self.slot_names = layout(task.settings.grid, task.settings.goal_room).slot_names
        self.slots = frozenset(self.slot_names)
        self.state = state
        self.allowed = allowed
        # The room test as a table of the grid's rooms: OMPL asks it before every validity
        # check of a CAMP's query, where ``task.room_of`` with its builtin clamping took four
        # times as long as the lookup (docs/results/history.md, "The CAMP's room test made cheap").
        self._room_ok: tuple[bool, ...] | None = (
            None if allowed is None else tuple(r in allowed for r in range(task.settings.n_rooms))
        )
        self._room_size = task.settings.room_size
        self._grid = task.settings.grid
        self.rng = random.Random(seed)
        self.seed = seed
        self.motion_timeout = settings.motion_timeout_s
        self.motion_planner = settings.motion_planner
        self.detour_timeout = settings.detour_timeout_s
        self.relaxed_mode = settings.relaxed
        self.guided_queries = 0  # base motions planned doorway to doorway
        self.guide_fallbacks = 0  # ... of which a piece failed or a doorway had no pose
        self.room_queries = 0  # motions within one room planned in its bounds first
        self.stage_times: dict[str, float] = {}
        self.checks = 0
        # The simulator's collision queries are timed where they run: their share of this
        # call is the scene's clock now against at close (stage ``collision_checks``).
        scene = mdp.scene()
        self._check_clock: tuple[FloorScene, float] = (scene, scene.check_seconds)
        # The work counters at the start of this call (see ``work``).
        self._work_from = (scene.checks, scene.ik_requests)
        self.grid_nodes = 0  # nodes of the grid graphs searched (Dijkstra)
        self.grid_cells = 0  # cells labelled in reachability tests
        self.at = "here"
        self.moved: set[str] = set()
        self.blocks: dict[str, set[str]] = {}  # location -> boxes blocking the way there
        # near_<b> -> boxes met before b on a way found blocked: an inferred order of clearing,
        # not an observed obstruction (see ``learn`` and ``forget``).
        self.after: dict[str, set[str]] = {}
        self.near: set[str] = set()  # boxes that have a near_<box> location
        self.placements: dict[str, int] = {}  # how often each box was put down this call
        self._corridor: list[Pose2D] | None = None
        self._goal_pose: Pose2D | None = None  # a pose at the goal, sampled with the corridor
        self._clear_failed = False  # this move's grid-clear OMPL query found no path
        self.keep_out: list[Pose2D] = []
        self.order: list[str] = []
        # The route grids' crop around the allowed rooms (True) and whole grid (False).
        self._grid_views: dict[bool, GridView] = {}
        self._zoned = False
        self._doors_by_room: dict[int, list[Door]] | None = None  # built on first use
        self._forbidden = [
            self.task.room_rect(r)
            for r in range(self.task.settings.n_rooms)
            if allowed is not None and r not in allowed
        ]

    def _value(self, name: str) -> Any:
        return self.state[self.mdp.state_index(name)]

    @staticmethod
    def _pose(state: State) -> Pose2D:
        pose = state[0]
        assert isinstance(pose, tuple)
        return (float(pose[0]), float(pose[1]), float(pose[2]))

    def _timed(self, stage: str, t0: float) -> None:
        self.stage_times[stage] = self.stage_times.get(stage, 0.0) + time.perf_counter() - t0

    def _rooms_near(self, x: float, y: float, reach: float) -> Iterator[int]:
        """Every room whose rectangle comes within ``reach`` of (x, y) (and maybe a few more):
        the rooms of the grid's columns and rows that [x ± reach] and [y ± reach] meet.

        A point's room and its neighbours are all a test within a metre of it needs: looping
        over every room or door of a 20×20 world was a third of a CAMP's placement checks."""
        size, grid = self._room_size, self._grid
        c0, c1 = max(int((x - reach) // size), 0), min(int((x + reach) // size), grid - 1)
        r0, r1 = max(int((y - reach) // size), 0), min(int((y + reach) // size), grid - 1)
        for row in range(r0, r1 + 1):
            yield from range(row * grid + c0, row * grid + c1 + 1)

    def _inside(self, pose: Pose2D, radius: float) -> bool:
        """Whether a disc of ``radius`` around the point keeps out of every forbidden room."""
        if self.allowed is None:
            return True
        x, y = pose[0], pose[1]
        for room in self._rooms_near(x, y, radius):
            if room in self.allowed:
                continue
            x0, y0, x1, y1 = self.task.room_rect(room)
            dx = max(x0 - x, 0.0, x - x1)
            dy = max(y0 - y, 0.0, y - y1)
            if math.hypot(dx, dy) < radius:
                return False
        return True

    def _doors_near(self, x: float, y: float, reach: float) -> Iterator[Door]:
        """Every doorway within ``reach`` of (x, y) (and maybe a few more, some twice): those
        of the rooms :meth:`_rooms_near` names, since a doorway lies on its rooms' walls."""
        if self._doors_by_room is None:
            by_room: dict[int, list[Door]] = {}
            for door in self.task.doors:
                by_room.setdefault(door.a, []).append(door)
                if door.b != door.a:
                    by_room.setdefault(door.b, []).append(door)
            self._doors_by_room = by_room
        for room in self._rooms_near(x, y, reach):
            yield from self._doors_by_room.get(room, ())

    def _execute(self, actions: list[Action]) -> list[State]:
        states = []
        state = self.state
        for action in actions:
            state = self.mdp.step(state, action)
            states.append(state)
        return states

    def _scene(self) -> FloorScene:
        """The simulator showing the current state, with the doorways into forbidden rooms
        closed."""
        scene = self.mdp.sync(self.state)
        if not self._zoned and self._forbidden:
            scene.set_zones(self._closed_doors())
            self._zoned = True
        return scene

    def _closed_doors(self) -> list[tuple[float, float, float, float]]:
        """Slabs filling each doorway into a forbidden room, on that room's side of the wall.

        Walls already separate the rooms, so closing these doorways keeps the robot (and
        what it carries) out of the forbidden rooms entirely, like making those rooms solid.
        Solid rooms, though, lie along every wall of the rooms next to them: the collision
        checker's broadphase met them wherever the robot drove along a wall, and a CAMP
        spent half as many exact checks again as planning in the full task did."""
        st = self.task.settings
        half_t, half_w = st.wall_thickness / 2, st.door_width / 2
        assert self.allowed is not None
        slabs = []
        for door in self.task.doors:
            if (door.a in self.allowed) == (door.b in self.allowed):
                continue
            # Rooms number along x, then y: b lies beyond the wall at larger x (or y).
            into = 1.0 if door.b not in self.allowed else -1.0
            if door.vertical_wall:
                x0, x1 = sorted((door.x, door.x + into * half_t))
                slabs.append((x0, door.y - half_w, x1, door.y + half_w))
            else:
                y0, y1 = sorted((door.y, door.y + into * half_t))
                slabs.append((door.x - half_w, y0, door.x + half_w, y1))
        return slabs

    def _allowed_at(self, x: float, y: float) -> bool:
        """Whether the base's centre at (x, y) lies in an allowed room (any, outside CAMPs):
        ``task.room_of(x, y) in self.allowed``, inlined."""
        ok = self._room_ok
        if ok is None:
            return True
        size, grid = self._room_size, self._grid
        col, row = int(x // size), int(y // size)
        if col < 0:
            col = 0
        elif col >= grid:
            col = grid - 1
        if row < 0:
            row = 0
        elif row >= grid:
            row = grid - 1
        return ok[row * grid + col]

    def close(self) -> None:
        """Take the planning-only keep-out zones out of the shared simulator, and add the
        time of this call's collision queries to its stages (``collision_checks``: part of
        motion planning, grasps and placements, not a stage of its own in the sum)."""
        scene, since = self._check_clock
        self.stage_times["collision_checks"] = (
            self.stage_times.get("collision_checks", 0.0) + scene.check_seconds - since
        )
        self._check_clock = (scene, scene.check_seconds)
        if self._zoned:
            self.mdp.scene().clear_zones()
            self._zoned = False
