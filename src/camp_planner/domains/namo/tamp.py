"""The NAMO side of the TAMP interface layer: a symbolic model, and refiners that turn its
steps into motions with OMPL and grasps and placements with PyBullet.

Symbolic model (STRIPS, regenerated at every replan): locations ``here`` (where planning
started), ``goal`` and ``near_<box>`` (a pose from which the box can be picked); boxes;
``(at ?l)``, ``(holding ?b)``, ``(handempty)``, ``(moved ?b)``. One move action per
destination requires every box known to block the way there to have been moved; ``pick`` and
``place`` put a box aside. Initially nothing is known to block anything (optimism).

Refinement: a move samples target poses and asks OMPL for a path in the current collision
world (walls, the goal object and every box the planning problem keeps). When no path exists
it plans again ignoring movable boxes and reports the boxes on that path as ``(blocks b l)``
facts, as in Srivastava et al.'s interface layer. Placements must stay clear of doorways and
of the corridor the robot still needs. Under a CAMP the robot, with anything it carries,
keeps out of forbidden rooms entirely, so the boxes those rooms hold (dropped from the
planning problem) can never be touched.

Every refined action is executed in the MDP's simulator (``NamoMDP.step``) before the next
one is refined, so a finished plan has been verified by execution.
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
from scipy import ndimage
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from camp_planner.core.camp import CAMP
from camp_planner.core.mdp import Action, State
from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.mdp import HELD, NONE, NamoMDP, in_reach, layout
from camp_planner.domains.namo.world import NamoTask, Pose2D
from camp_planner.motion.ompl_se2 import MotionResult, plan_base_path
from camp_planner.planners.tamp import Refinement
from camp_planner.sim.namo_scene import HOLD_AHEAD

TARGET_SAMPLES = 6
RELAXED_TRIES = 3
PLACE_SAMPLES = 16
CARRY_SPOTS = 8
# Motion plans keep this clearance, so that executing them (checked more finely, without
# clearance) never grazes what the planner's coarser checks passed.
PLAN_MARGIN = 0.03
# OMPL's edge checks: 0.4 % of the query's SE(2) extent, which is 5.7 cm across the paper's
# 9 m world but 2.8 cm within one room and 17.6 cm across a 10×10 world (the planners'
# ``edge_step_m`` sets metres instead).
EDGE_RESOLUTION = 0.004
START_SLACK = 0.1  # metres from a motion's start within which poses need not keep the margin
# The base is holonomic: near a path's ends the relaxed path keeps the end's heading (it
# slides out of a tight spot) rather than turning in place into a box beside it, which would
# name that box as an obstruction the real motion never meets.
HOLD_HEADING = 0.3  # metres
GRID_CELL = 0.05  # metres, for the quick reachability test before motion planning
# Relaxed grid searches run on the cells within this distance of a statically free cell
# (wide enough that the cells opened around a motion's ends almost always lie inside).
REGION_SLACK = 0.3
_DOOR_OFFSETS = (0.0, 0.04, -0.04, 0.08, -0.08, 0.12, -0.12)  # metres along a doorway
DOOR_KEEP_OUT = 0.75  # metres around a doorway's centre where nothing may be put down
# A grid cell under a box costs this many free cells: a box (about 15 cells across, with the
# disc's radius around it) outweighs any detour in a 180 x 180 grid.
BOX_CELL_COST = 1000.0
NEAR_BOX_CELL_COST = 10.0
# ``budget_clock: work``: nominal seconds per unit of work. Measured on the machine of record
# (2026-11-28, pure TAMP on 10 tasks of the paper's world and 3 of the 10×10 one, 2 seeds):
# 6.7-7.1 µs of OMPL query per validity check, 0.5-0.6 ms per IK request, 77-82 ns per node
# of a grid search and 5-9 ns per cell labelled. Those were 70 % of planning time, so each
# is raised to carry its share of the code around it (checks less: grasps and placements
# check too): a planning call's work then came to 0.9-1.1 times its planning time.
CHECK_WORK_S = 8e-6
IK_WORK_S = 0.8e-3
GRID_NODE_WORK_S = 110e-9
GRID_CELL_WORK_S = 10e-9


Check = Callable[[float, float, float], bool]


class Validity(NamedTuple):
    """A motion query's validity check for OMPL, with the CAMP's room test (``tested``) and
    without it (``untested``: the same where every point lies in an allowed room)."""

    tested: Check
    untested: Check


def allowed_rooms(camp: CAMP | None) -> frozenset[int] | None:
    """The rooms a CAMP's context lets the robot enter (None: no constraint)."""
    if camp is None or camp.context is None or camp.context.is_universal:
        return None
    values = camp.context.allowed_values().get("robot_room")
    if values is None:
        return None
    return frozenset(int(str(v)) for v in values)


class NamoTampInterface:
    """One planning call's symbolic state, geometric state and refiners."""

    def __init__(
        self,
        mdp: NamoMDP,
        state: State,
        allowed: frozenset[int] | None,
        seed: int,
        settings: dict[str, Any],
    ) -> None:
        self.mdp = mdp
        task = mdp.task
        assert task is not None
        self.task: NamoTask = task
        self.slot_names = layout(task.settings.grid).slot_names
        self.slots = frozenset(self.slot_names)
        self.state = state
        self.allowed = allowed
        # The room test as a table of the grid's rooms: OMPL asks it before every validity
        # check of a CAMP's query, where ``task.room_of`` with its builtin clamping took four
        # times as long as the lookup (docs/results.md, "The CAMP's room test made cheap").
        self._room_ok: tuple[bool, ...] | None = (
            None if allowed is None else tuple(r in allowed for r in range(task.settings.n_rooms))
        )
        self._room_size = task.settings.room_size
        self._grid = task.settings.grid
        self.rng = random.Random(seed)
        self.seed = seed
        self.motion_timeout = float(settings.get("motion_timeout_s", 2.0))
        self.motion_planner = str(settings.get("motion_planner", "RRTConnect"))
        self.detour_timeout = float(settings.get("detour_timeout_s", 0.5))
        self.relaxed_mode = str(settings.get("relaxed", "grid"))  # validated by the planner
        self.guide = str(settings.get("guide", "doors"))  # validated by the planner
        step = settings.get("edge_step_m")  # validated by the planner
        self.edge_step_m = None if step is None else float(step)
        self.give_up = settings.get("failed_motions", "retry") == "give_up"
        # What motion budgets are measured on (validated by the planner): seconds, or the
        # work this interface has done (``work``), the same on any machine.
        self.work_budgets = settings.get("budget_clock", "wall") == "work"
        # Whether a drive that reaches the goal on its way elsewhere ends the plan there
        # (``goal_en_route``, validated by the planner) instead of failing.
        self.goal_en_route = bool(settings.get("goal_en_route", True))
        # How OMPL is seeded (validated by the planner): each query from ``self.rng``
        # (``query``), or once per process.
        self.motion_seeds = str(settings.get("motion_seeds", "process"))
        # (start, goal, ignore_boxes, solid, state) -> the largest budget a search for that
        # motion failed in, this call (``failed_motions: give_up`` only).
        self._failed: dict[tuple[Any, ...], float] = {}
        self.failures_remembered = 0  # motions answered from ``_failed`` without a search
        self.guided_queries = 0  # base motions planned doorway to doorway
        self.guide_fallbacks = 0  # ... of which a piece failed or a doorway had no pose
        self.room_queries = 0  # motions within one room planned in its bounds (guide: rooms)
        self.stage_times: dict[str, float] = {}
        self.checks = 0
        # The simulator's collision queries are timed where they run: their share of this
        # call is the scene's clock now against at close (stage ``collision_checks``).
        scene = mdp.scene()
        self._check_clock: tuple[Any, float] = (scene, scene.check_seconds)
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
        self._static_blocked: np.ndarray | None = None
        self._region: tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
        self._zoned = False
        self._forbidden = [
            self.task.room_rect(r)
            for r in range(self.task.settings.n_rooms)
            if allowed is not None and r not in allowed
        ]

    # --- the symbolic layer -------------------------------------------------------------------
    def _value(self, name: str) -> Any:
        return self.state[self.mdp.state_index(name)]

    def pddl(self) -> tuple[str, str]:
        held = str(self.state[2])
        boxes = sorted(
            {*self.near, *(b for bs in self.blocks.values() for b in bs)}
            | ({held} if held != NONE else set())
        )
        locations = ["here", "goal", *(f"near_{b}" for b in sorted(self.near))]
        moves = []
        for loc in locations[1:]:
            required = self.blocks.get(loc, set()) | self.after.get(loc, set())
            needs = " ".join(f"(moved {b})" for b in sorted(required))
            moves.append(
                f"  (:action move_to_{loc}\n    :parameters (?from - loc)\n"
                f"    :precondition (and (at ?from) (handempty) {needs})\n"
                f"    :effect (and (not (at ?from)) (at {loc})))"
            )
        box_consts = " ".join(boxes)
        domain = (
            "(define (domain namo-tamp)\n  (:requirements :strips :typing)\n"
            "  (:types loc box)\n"
            f"  (:constants {' '.join(locations)} - loc {box_consts + ' - box' if boxes else ''})\n"
            "  (:predicates (at ?l - loc) (holding ?b - box) (handempty) (moved ?b - box)\n"
            "    (pickloc ?b - box ?l - loc))\n"
            + "\n".join(moves)
            + "\n  (:action pick\n    :parameters (?b - box ?l - loc)\n"
            "    :precondition (and (at ?l) (pickloc ?b ?l) (handempty))\n"
            "    :effect (and (holding ?b) (not (handempty))))\n"
            "  (:action place\n    :parameters (?b - box)\n    :precondition (holding ?b)\n"
            "    :effect (and (handempty) (not (holding ?b)) (moved ?b))))\n"
        )
        init = [f"(at {self.at})"]
        init.append(f"(holding {held})" if held != NONE else "(handempty)")
        init += [f"(moved {b})" for b in sorted(self.moved) if b in boxes]
        init += [f"(pickloc {b} near_{b})" for b in sorted(self.near)]
        problem = (
            "(define (problem namo-task)\n  (:domain namo-tamp)\n"
            f"  (:init {' '.join(init)})\n  (:goal (at goal)))\n"
        )
        return domain, problem

    def learn(self, facts: list[str]) -> None:
        """Add ``(blocks b l)`` facts, given in the order the way to ``l`` meets the boxes.

        The way reaches each box past the ones before it, so those also block the way to
        it: ``a`` must be moved before ``near_b`` is entered, for every ``a`` met before
        ``b``. These orders are inferred, not observed, and kept apart in ``after`` so that
        ``forget`` can drop them alone. Without these precedences
        the task planner may clear the boxes in any order, and the way to a far one, planned
        from the start, crosses other boxes (whose ways cross the first ones): the learnt
        facts then form a cycle, the problem is unsolvable, and since forgetting them and
        replanning from the same state rediscovers the same cycle, planning gave up after
        ``max_replans`` (7 of the 50 default training tasks)."""
        met: dict[str, list[str]] = {}
        for fact in facts:
            parts = fact.strip("() ").split()
            if parts[0] == "blocks":
                box, loc = parts[1], parts[2]
                for earlier in met.setdefault(loc, []):
                    self.after.setdefault(f"near_{box}", set()).add(earlier)
                met[loc].append(box)
                self.blocks.setdefault(loc, set()).add(box)
                self.near.add(box)
                # A box moved once but in the way again must be moved again.
                self.moved.discard(box)

    def forget(self) -> bool:
        """Called when the learnt facts make the task unsolvable: first drop only the
        inferred orders of clearing, then (if there are none) every learnt fact.

        An inferred order can contradict an observed obstruction: the way to the goal meets
        A before B, but the only pose that picks A stands where B is. Forgetting everything
        then rediscovered the same pair and the same cycle until ``max_replans`` (NAMO test
        task 3 of eval seed 0, planner seed 1: 22 s, no plan)."""
        if self.after:
            self.after.clear()
            return True
        if not self.blocks:
            return False
        self.blocks.clear()
        # Boxes already put aside stay where they are; only the symbolic claims about which
        # box blocks which way are dropped, and re-learnt from the current geometry.
        self.near = {b for b in self.near if b == str(self.state[2])}
        if self.at.startswith("near_") and self.at[len("near_") :] not in self.near:
            self.at = "here"  # "where this call's robot is", now that near_<box> is gone
        self.keep_out = []
        self._corridor = None
        return True

    def at_goal(self) -> bool:
        return self.mdp.is_terminal(self.state)

    # --- refinement ---------------------------------------------------------------------------
    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        name = step[0]
        if name.startswith("move_to_"):
            return self._refine_move(name[len("move_to_") :], deadline)
        if name == "pick":
            return self._refine_pick(step[1])
        if name == "place":
            return self._refine_place(step[1], deadline)
        return Refinement(False, reason=f"unknown symbolic step {step}")

    @staticmethod
    def _pose(state: State) -> Pose2D:
        pose = state[0]
        assert isinstance(pose, tuple)
        return (float(pose[0]), float(pose[1]), float(pose[2]))

    def _timed(self, stage: str, t0: float) -> None:
        self.stage_times[stage] = self.stage_times.get(stage, 0.0) + time.perf_counter() - t0

    def _inside(self, pose: Pose2D, radius: float) -> bool:
        """Whether a disc of ``radius`` around the point keeps out of every forbidden room."""
        x, y = pose[0], pose[1]
        for x0, y0, x1, y1 in self._forbidden:
            dx = max(x0 - x, 0.0, x - x1)
            dy = max(y0 - y, 0.0, y - y1)
            if math.hypot(dx, dy) < radius:
                return False
        return True

    def work(self) -> float:
        """The work this interface has done, in nominal seconds: its collision checks, IK
        solves and grid cells searched, each at a fixed cost (``CHECK_WORK_S`` and the
        like). The costs include a share of the code around each (a planning call's work
        came to about its planning time on the machine of record), and counts do not depend
        on the machine: a budget measured on this clock ends at the same point anywhere."""
        scene = self.mdp.scene()
        checks0, ik0 = self._work_from
        return float(
            (scene.checks - checks0) * CHECK_WORK_S
            + (scene.ik_requests - ik0) * IK_WORK_S
            + self.grid_nodes * GRID_NODE_WORK_S
            + self.grid_cells * GRID_CELL_WORK_S
        )

    def _budget_clock(self) -> float:
        """The clock motion budgets are measured on: work done, or the wall clock."""
        return self.work() if self.work_budgets else time.perf_counter()

    def _ompl_limits(self, budget: float, deadline: Deadline) -> dict[str, Any]:
        """``plan_base_path``'s limits for a query with ``budget`` (on the budget clock):
        seconds, or validity checks with the planning call's time left as a cap."""
        if not self.work_budgets:
            return {"timeout_s": max(budget, 1e-3)}
        return {
            "timeout_s": max(deadline.call.remaining, 1e-3),
            "max_checks": max(1, math.ceil(budget / CHECK_WORK_S)),
        }

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

    def _scene(self) -> Any:
        """The simulator showing the current state, with the doorways into forbidden rooms
        closed."""
        scene = self.mdp._sync(self.state)
        if not self._zoned and self._forbidden:
            scene.set_zones(self._closed_doors())
            self._zoned = True
        return scene

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

    def _all_allowed(self, bounds: tuple[float, float, float, float]) -> bool:
        """Whether every point of ``bounds`` (x0, y0, x1, y1) lies in an allowed room, so
        that a query within them needs no room test. ``room_of`` is monotone in x and in y:
        the rooms the bounds meet are those between the rooms of its corners."""
        if self.allowed is None:
            return True
        x0, y0, x1, y1 = bounds
        room_of = self.task.room_of
        c0, r0 = divmod(room_of(x0, y0), self._grid)[::-1]
        c1, r1 = divmod(room_of(x1, y1), self._grid)[::-1]
        return all(
            r * self._grid + c in self.allowed for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)
        )

    def _within(self, valid: Validity, bounds: tuple[float, float, float, float]) -> Check:
        """The check for an OMPL query within ``bounds``: without the room test when every
        point there lies in an allowed room, where it would answer yes to every sample."""
        return valid.untested if self._all_allowed(bounds) else valid.tested

    def _valid(self, scene: Any, ignore_boxes: bool, solid: str, start: Pose2D) -> Validity:
        """Validity for OMPL: collision-free (with margin); ``ignore_boxes`` lets the robot
        pass through movable boxes except ``solid`` (the box it is going to pick). Near the
        start poses only need to be free: a box just put down, or a turn made to put it down,
        may leave the robot closer to something than the margin, and with the margin
        demanded from the first step on it could never leave."""
        passable = self.slots - {solid}
        ignored = passable if ignore_boxes else ()
        allowed_at = self._allowed_at
        sx, sy = start[0], start[1]

        def untested(x: float, y: float, yaw: float) -> bool:
            margin = 0.0 if math.hypot(x - sx, y - sy) < START_SLACK else PLAN_MARGIN
            return not scene.blocked_at((x, y, yaw), margin, ignored)

        def tested(x: float, y: float, yaw: float) -> bool:
            if not allowed_at(x, y):
                return False  # a forbidden room, reachable by no path: no sample there
            margin = 0.0 if math.hypot(x - sx, y - sy) < START_SLACK else PLAN_MARGIN
            return not scene.blocked_at((x, y, yaw), margin, ignored)

        if self.allowed is None:  # every room is allowed: the test would always pass
            return Validity(untested, untested)
        return Validity(tested, untested)

    def _plan(
        self,
        start: Pose2D,
        goal: Pose2D,
        ignore_boxes: bool,
        deadline: Deadline,
        timeout: float | None = None,
        solid: str = "",
    ) -> MotionResult:
        scene = self._scene()
        size = self.task.settings.world_size
        t0 = time.perf_counter()
        if not self._connected(start, goal, ignore_boxes, solid):
            # Not even the disc inscribed in the base fits through: no path exists, and OMPL
            # would spend its whole budget failing to find one.
            self._timed("motion_planning", t0)
            return MotionResult(None, time.perf_counter() - t0, 0, False)
        before = scene.checks
        budget = min(timeout or self.motion_timeout, max(deadline.remaining, 1e-3))
        w0 = self._budget_clock()
        key, asked = (start, goal, ignore_boxes, solid, self.state), budget
        if self.give_up and self._failed.get(key, 0.0) >= asked:
            # A randomised search that used up a larger budget on the same motion among the
            # same boxes is not worth running again (the same queries failed three or four
            # times in a row in the paper's and the 7×7 world).
            self.failures_remembered += 1
            self._timed("motion_planning", t0)
            return MotionResult(None, time.perf_counter() - t0, 0, False)
        valid = self._valid(scene, ignore_boxes, solid, start)
        result: MotionResult | None = None
        # A relaxed query (through movable boxes) is guided only in ``relaxed: ompl_doors``:
        # ``relaxed: ompl`` keeps the paper's one unguided query, so its runs reproduce.
        guided = self.relaxed_mode == "ompl_doors" if ignore_boxes else self.guide != "none"
        if guided:
            result = self._plan_guided(start, goal, solid, valid, budget, deadline, ignore_boxes)
            if result is None and self.guide == "rooms" and not ignore_boxes:
                result = self._plan_in_room(start, goal, valid, budget, deadline)
            budget -= self._budget_clock() - w0
        # A guided or in-room search that failed is the answer under ``give_up``: the whole
        # world's query after one found a path in none of 12 such cases (80 runs in the
        # paper's and the 7×7 world) and took as long again as the search before it.
        if result is None or (result.path is None and not self.give_up):
            result = plan_base_path(
                start,
                goal,
                (0.0, 0.0, size, size),
                self._within(valid, (0.0, 0.0, size, size)),
                seed=self.rng.randrange(2**31),
                seeding=self.motion_seeds,
                planner=self.motion_planner,
                resolution=EDGE_RESOLUTION,
                segment_m=self.edge_step_m,
                **self._ompl_limits(budget, deadline),
            )
        self.checks += scene.checks - before
        self._timed("motion_planning", t0)
        if self.give_up and result.path is None:
            self._failed[key] = max(self._failed.get(key, 0.0), asked)
        # A query may return a little past the call's deadline (OMPL's budget was what was
        # left of it); nothing found now can be used, and checking a long path for boxes or
        # driving it took Stilman's algorithm up to 0.5 s past its 60 s.
        deadline.call.check()
        return result

    def _plan_guided(
        self,
        start: Pose2D,
        goal: Pose2D,
        solid: str,
        valid: Validity,
        budget: float,
        deadline: Deadline,
        ignore_boxes: bool = False,
    ) -> MotionResult | None:
        """A base motion across rooms as OMPL queries from doorway to doorway, or None when
        start and goal share a room (one query is as good), no route exists or a doorway on
        it has no valid pose.

        Uniform sampling in SE(2) rarely lands in a doorway a base of 0.6 m passes with 0.2 m
        to spare, so RRT-Connect spends most of a cross-room query there, and its time varies
        tenfold between runs. The route (the grid's disc path with every box solid; with
        ``ignore_boxes``, every box but ``solid`` ignored) says which doorways to pass;
        posing the base square in each splits the motion into pieces that each lie in one
        room, which OMPL plans within that room's bounds in milliseconds. A piece with no
        path in its room returns a failed result; with ``failed_motions: retry`` the caller
        then plans the whole motion with what is left of the budget, so the guide only
        narrows OMPL's search and never decides that no path exists."""
        task = self.task
        if task.room_of(start[0], start[1]) == task.room_of(goal[0], goal[1]):
            return None
        t0, w0 = time.perf_counter(), self._budget_clock()
        route = self._fewest_boxes_path(start, goal, solid, "ignored" if ignore_boxes else "solid")
        if route is None:
            return None
        self.guided_queries += 1
        # Waypoints: a square pose in every doorway the route passes, and the room after it.
        points: list[Pose2D] = [start]
        rooms = [task.room_of(start[0], start[1])]
        for x, y, _ in route[1:]:
            room = task.room_of(x, y)
            if room == rooms[-1]:
                continue
            door = self._door_pose(rooms[-1], room, valid.tested)
            if door is None:
                # No search was run: the caller plans the whole motion, whatever
                # ``failed_motions`` says.
                self.guide_fallbacks += 1
                return None
            points.append(door)
            rooms.append(room)
        points.append(goal)
        path: list[Pose2D] = [start]
        vertices: list[Pose2D] = [start]
        checks = 0
        for (a, b), room in zip(pairwise(points), rooms, strict=True):
            left = budget - (self._budget_clock() - w0)
            bounds = self._room_bounds(room)
            piece = plan_base_path(
                a,
                b,
                bounds,
                self._within(valid, bounds),
                seed=self.rng.randrange(2**31),
                seeding=self.motion_seeds,
                planner=self.motion_planner,
                resolution=EDGE_RESOLUTION,
                segment_m=self.edge_step_m,
                **self._ompl_limits(min(left, budget / 2), deadline),
            )
            checks += piece.checks
            if piece.path is None or piece.vertices is None:
                self.guide_fallbacks += 1
                return MotionResult(None, time.perf_counter() - t0, checks, False)
            path += piece.path[1:]
            vertices += piece.vertices[1:]
        return MotionResult(path, time.perf_counter() - t0, checks, False, vertices)

    def _room_bounds(self, room: int) -> tuple[float, float, float, float]:
        """OMPL's bounds for a motion inside ``room``: its rectangle grown by what the base
        can reach past a wall's face (it may stand in a doorway), clipped to the world."""
        task = self.task
        size = task.settings.world_size
        grow = task.settings.base_half_extent * math.sqrt(2) + 2 * PLAN_MARGIN
        x0, y0, x1, y1 = task.room_rect(room)
        return (
            max(x0 - grow, 0.0),
            max(y0 - grow, 0.0),
            min(x1 + grow, size),
            min(y1 + grow, size),
        )

    def _plan_in_room(
        self,
        start: Pose2D,
        goal: Pose2D,
        valid: Validity,
        budget: float,
        deadline: Deadline,
    ) -> MotionResult | None:
        """``guide: rooms``: a motion whose start and goal share a room, planned first within
        that room's bounds (half the budget), or None when they do not share one.

        In the whole world's bounds, most of RRT-Connect's samples land in other rooms and
        each costs a collision check, where a CAMP's forbidden rooms reject theirs unchecked
        (on a 7×7 world pure planning's OMPL queries took about twice as long per call as
        the CAMP's: ``research/profile_namo.py``).
        A failed result hands the motion to the caller's whole-world query, since a way
        round through another room may exist."""
        room = self.task.room_of(start[0], start[1])
        if room != self.task.room_of(goal[0], goal[1]):
            return None
        self.room_queries += 1
        bounds = self._room_bounds(room)
        return plan_base_path(
            start,
            goal,
            bounds,
            self._within(valid, bounds),
            seed=self.rng.randrange(2**31),
            seeding=self.motion_seeds,
            planner=self.motion_planner,
            resolution=EDGE_RESOLUTION,
            segment_m=self.edge_step_m,
            **self._ompl_limits(budget / 2, deadline),
        )

    def _door_pose(
        self, here: int, there: int, valid: Callable[[float, float, float], bool]
    ) -> Pose2D | None:
        """A valid base pose in the doorway from room ``here`` to ``there``, square to the
        wall and facing the way of travel, as near the doorway's centre as the boxes allow."""
        for door in self.task.doors:
            if {door.a, door.b} != {here, there}:
                continue
            forward = 1.0 if there > here else -1.0  # rooms number along x, then along y
            if door.vertical_wall:  # a wall at x = door.x: travel along x
                heading = 0.0 if forward > 0 else math.pi
                candidates = [(door.x, door.y + d) for d in _DOOR_OFFSETS]
            else:
                heading = math.pi / 2 if forward > 0 else -math.pi / 2
                candidates = [(door.x + d, door.y) for d in _DOOR_OFFSETS]
            for x, y in candidates:
                if valid(x, y, heading):
                    return (x, y, heading)
        return None

    def _grid_setup(self) -> tuple[float, int, float, np.ndarray]:
        """Cell size, cells per side, the radius of the disc the grid moves, and the cells
        that walls, forbidden rooms and the goal object block (these never move: computed
        once).

        Every pose a motion plan visits keeps ``PLAN_MARGIN`` from everything, so the disc
        inscribed in the base, grown by that margin, must pass wherever the base does. A
        point of a continuous path lies within half a cell diagonal of its cell's centre, so
        shrinking the disc by that much keeps the grid from blocking any gap the disc can
        pass (a cell a path enters is left open)."""
        cell = GRID_CELL
        n = math.ceil(self.task.settings.world_size / cell)
        radius = self.task.settings.base_half_extent + PLAN_MARGIN - cell * math.sqrt(2) / 2
        if self._static_blocked is None:
            gx, gy = self.task.goal
            g = self.task.settings.goal_radius
            static = np.zeros((n, n), dtype=bool)
            for rect in [*self.task.walls(), *self._forbidden, (gx - g, gy - g, gx + g, gy + g)]:
                _block(static, rect, radius, cell)
            self._static_blocked = static
        return cell, n, radius, self._static_blocked

    def _search_graph(self, *ends: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The grid graph a relaxed search runs on (as :func:`_free_grid_graph` returns it):
        the cells within ``REGION_SLACK`` of a cell walls, forbidden rooms and the goal
        object leave free (built once), or the whole grid when the cells opened around one of
        ``ends`` reach beyond those. Every other cell is blocked in every search, so
        leaving it out changes no path."""
        if self._in_region(*ends):
            assert self._region is not None
            return self._region[1]
        return _whole_grid_graph(self._grid_setup()[1])

    def _in_region(self, *ends: tuple[int, int]) -> bool:
        """Whether the cells opened around each of ``ends`` lie in the region
        :meth:`_search_graph` searches (built here the first time)."""
        cell, _, _, static = self._grid_setup()
        if self._region is None:
            grow = math.ceil(REGION_SLACK / cell)
            region = ndimage.binary_dilation(~static, iterations=grow)
            self._region = region, _free_grid_graph(region)
        return all(_around(self._region[0], end).all() for end in ends)

    def _cell(self, p: Pose2D, cell: float, n: int) -> tuple[int, int]:
        return (min(max(int(p[1] / cell), 0), n - 1), min(max(int(p[0] / cell), 0), n - 1))

    def _connected(self, start: Pose2D, goal: Pose2D, ignore_boxes: bool, solid: str) -> bool:
        """A necessary condition for a base path: on a 5 cm grid, the centre of the disc
        inscribed in the base can get from start to goal without that disc overlapping a wall,
        a forbidden room, the goal object or a (non-ignored) box. The robot contains the disc,
        so when this fails no path exists."""
        cell, n, radius, static = self._grid_setup()
        blocked = static.copy()
        for name in self.slot_names:
            value = self._value(name)
            if isinstance(value, tuple) and (not ignore_boxes or name == solid):
                _block(blocked, self.task.box_rect(float(value[0]), float(value[1])), radius, cell)
        s, t = self._cell(start, cell, n), self._cell(goal, cell, n)
        _open_around(blocked, s, t)  # both poses were checked exactly by the caller
        # 4-connected components of the free cells (ndimage's default structure).
        labels, _ = ndimage.label(~blocked)
        self.grid_cells += blocked.size
        return s == t or bool(labels[s] != 0 and labels[s] == labels[t])

    def _fewest_boxes_path(
        self, start: Pose2D, goal: Pose2D, solid: str, boxes: str = "costly"
    ) -> list[Pose2D] | None:
        """A relaxed path that runs through as few movable boxes as it can (a minimum
        constraint removal path on the 5 cm grid, after Hauser's MCR): Dijkstra where a cell
        under a box costs far more than a free one, so the path crosses the fewest box cells
        first and is the shortest such path second. Walls, forbidden rooms, the goal object
        and ``solid`` stay impassable. Poses follow the cells, heading along the path; None
        if even this relaxation has no path.

        A random relaxed motion plan names whichever boxes its path happens to cross, and
        the conjunction of such facts over several locations can make the symbolic problem
        unsolvable (A must go before B's way is free, and B before A's); the fewest-boxes
        path names only obstructions no way around avoids. Headings follow the path, except
        within ``HOLD_HEADING`` of either end. ``boxes="solid"`` makes every box
        impassable: the shortest way around them all, keeping clear of them where it can.
        ``boxes="ignored"`` makes every box but ``solid`` free ground: the shortest way
        whatever it crosses, which is the route of a motion plan that ignores movable boxes."""
        return self._fewest_boxes_paths(start, [goal], solid, boxes)[0]

    def _fewest_boxes_paths(
        self,
        start: Pose2D,
        goals: Sequence[Pose2D],
        solid: str,
        boxes: str = "costly",
        deadline: Deadline | None = None,
    ) -> list[list[Pose2D] | None]:
        """:meth:`_fewest_boxes_path` from ``start`` to each of ``goals``, the same paths,
        with as few searches as that allows.

        Dijkstra from one cell finds the way to every cell, so goals that would search the
        same graph share one search. Each goal's search opens the cells around it (see
        :func:`_open_around`) and runs on the region or the whole grid (see
        :meth:`_search_graph`); goals whose opening frees nothing the start's did not, and
        that pick the same graph, search the same graph with the same costs, hence find the
        same paths, ties included. Any other goal searches alone. With ``deadline``, its
        planning call's deadline is checked before each search (PlanningTimeout).
        :meth:`_ways_ahead` asked
        for one search per box still in the way: at 7×7 that was a third of pure planning's
        time."""
        cell, n, radius, static = self._grid_setup()
        blocked = static.copy()
        under_box = np.zeros((n, n), dtype=bool)
        near_box = np.zeros((n, n), dtype=bool)
        # Beyond the inscribed disc the base's corners (and the tucked arm) may still touch
        # a box, depending on the heading: cells there cost a little, so that a path keeps
        # clear of boxes where it can rather than grazing (and so naming) them.
        reach = self.task.settings.base_half_extent * math.sqrt(2) + PLAN_MARGIN
        for name in self.slot_names:
            value = self._value(name)
            if not isinstance(value, tuple) or (boxes == "ignored" and name != solid):
                continue
            rect = self.task.box_rect(float(value[0]), float(value[1]))
            _block(blocked if boxes == "solid" or name == solid else under_box, rect, radius, cell)
            _block(near_box, rect, reach, cell)
        s = self._cell(start, cell, n)
        ends = [self._cell(goal, cell, n) for goal in goals]
        opened = blocked.copy()
        _open_around(opened, s)
        # Goals grouped by the graph they search: None for one of their own.
        groups: dict[bool | None, list[int]] = {}
        for k, t in enumerate(ends):
            shared = not _around(opened, t).any()
            groups.setdefault(self._in_region(s, t) if shared else None, []).append(k)
        out: list[list[Pose2D] | None] = [None] * len(goals)
        for key, members in groups.items():
            for batch in [members] if key is not None else [[k] for k in members]:
                if deadline is not None:
                    deadline.call.check()
                grid = opened
                if key is None:
                    grid = opened.copy()
                    _open_around(grid, ends[batch[0]])
                found = self._grid_paths(
                    start,
                    [goals[k] for k in batch],
                    s,
                    [ends[k] for k in batch],
                    (grid, under_box, near_box),
                )
                for k, path in zip(batch, found, strict=True):
                    out[k] = path
        return out

    def _grid_paths(
        self,
        start: Pose2D,
        goals: list[Pose2D],
        s: tuple[int, int],
        ends: list[tuple[int, int]],
        grids: tuple[np.ndarray, np.ndarray, np.ndarray],
    ) -> list[list[Pose2D] | None]:
        """One Dijkstra search from cell ``s`` and the path (as poses) to each of ``goals``,
        whose cells are ``ends``; ``grids`` are the cells blocked, under a box and near one."""
        blocked, under_box, near_box = grids
        n = blocked.shape[0]
        # The search runs on the region's cells only: a context's forbidden rooms lie
        # outside it, so a CAMP's graph is the size of its allowed rooms, not the world's.
        ids, indices, indptr = self._search_graph(s, *ends)
        # Entering a cell costs the cell's cost; blocked cells cost infinity (no way in).
        node_cost = np.ones(len(ids))
        node_cost[near_box.ravel()[ids]] = NEAR_BOX_CELL_COST
        node_cost[under_box.ravel()[ids]] = BOX_CELL_COST
        node_cost[blocked.ravel()[ids]] = np.inf
        src = int(np.searchsorted(ids, s[0] * n + s[1]))
        graph = csr_matrix((node_cost[indices], indices, indptr), shape=(len(ids), len(ids)))
        dist, parent = dijkstra(graph, indices=src, return_predecessors=True)
        self.grid_nodes += len(ids)
        out: list[list[Pose2D] | None] = []
        for goal, t in zip(goals, ends, strict=True):
            dst = int(np.searchsorted(ids, t[0] * n + t[1]))
            out.append(
                None
                if math.isinf(dist[dst])
                else self._cells_to_poses(
                    start, goal, [int(ids[k]) for k in _back_track(parent, src, dst)], n
                )
            )
        return out

    @staticmethod
    def _cells_to_poses(start: Pose2D, goal: Pose2D, cells: list[int], n: int) -> list[Pose2D]:
        """A grid path's cells as poses from ``start`` to ``goal``, each heading along the path
        except within ``HOLD_HEADING`` of either end."""
        cell = GRID_CELL
        points = [((i % n + 0.5) * cell, (i // n + 0.5) * cell) for i in cells[1:-1]]
        poses: list[Pose2D] = [start]
        for k, (x, y) in enumerate(points):
            if math.hypot(x - start[0], y - start[1]) < HOLD_HEADING:
                heading = start[2]
            elif math.hypot(x - goal[0], y - goal[1]) < HOLD_HEADING:
                heading = goal[2]
            else:
                nx, ny = points[k + 1] if k + 1 < len(points) else (goal[0], goal[1])
                heading = math.atan2(ny - y, nx - x)
            poses.append((x, y, heading))
        poses.append(goal)
        return poses

    def _targets(self, loc: str) -> list[Pose2D]:
        """Candidate base poses for location ``loc``, free and inside the allowed rooms."""
        scene = self._scene()
        out: list[Pose2D] = []
        if loc == "goal":
            cx, cy = self.task.goal
            dists = (0.55, 0.72)
            box_top = None
        else:
            value = self._value(loc[len("near_") :])
            if not isinstance(value, tuple):
                return []
            cx, cy = float(value[0]), float(value[1])
            dists = (0.46, 0.56)
            box_top = self.task.settings.box_size[2] + 0.02
        # Square to the box and at the distance the arm holds it: picking it there lifts it
        # in place, without swinging it into a wall or a neighbour beside it (the slots along
        # walls leave 5 cm). Then random headings and distances.
        square = [(HOLD_AHEAD, k * math.pi / 2) for k in range(-1, 3)]
        if box_top is None:
            square = []
        self.rng.shuffle(square)
        random_draws = [
            (self.rng.uniform(*dists), self.rng.uniform(-math.pi, math.pi))
            for _ in range(TARGET_SAMPLES * 20)
        ]
        for d, heading in square + random_draws:
            pose = (cx - d * math.cos(heading), cy - d * math.sin(heading), heading)
            if not self._allowed_at(pose[0], pose[1]) or scene.collisions(pose, PLAN_MARGIN):
                continue
            if loc == "goal" and not self.task.reached(pose[0], pose[1]):
                continue
            if box_top is not None and not scene.arm_reaches(cx, cy, box_top):
                continue
            if box_top is not None and not self._pick_works(pose, loc[len("near_") :]):
                continue
            out.append(pose)
            if len(out) >= TARGET_SAMPLES:
                break
        hx, hy, _ = self._pose(self.state)
        out.sort(key=lambda p: math.hypot(p[0] - hx, p[1] - hy))
        return out

    def _execute(self, actions: list[Action]) -> list[State]:
        states = []
        state = self.state
        for action in actions:
            state = self.mdp.step(state, action)
            states.append(state)
        return states

    def _refine_move(self, loc: str, deadline: Deadline) -> Refinement:
        self._corridor_poses(deadline)
        if loc == self.at and loc != "here":
            return Refinement(True)  # already there
        target_box = loc[len("near_") :] if loc.startswith("near_") else ""
        start = self._pose(self.state)
        self._clear_failed = False
        targets = self._targets(loc)
        if not targets:
            return Refinement(False, reason=f"no free pose at {loc} inside the allowed rooms")
        # Plan through movable boxes first: usually nothing is in the way and this is the
        # path; otherwise it names the boxes that are. A few tries keep the fewest blockers.
        best: tuple[set[str], Pose2D] | None = None
        best_path: list[Pose2D] = []
        best_order: list[str] = []
        # The box to be picked stays solid (the approach must not pass through it); if no
        # such path turns up, the approach itself may need it moved first.
        tries = [(t, target_box) for t in targets[:RELAXED_TRIES]]
        if target_box:
            tries += [(t, "") for t in targets[:2]]
        for target, solid in tries:
            if deadline.expired() or (best is not None and solid != target_box):
                break
            relaxed, blockers = self._relaxed(start, target, deadline, solid)
            if relaxed.path is None:
                continue
            if not blockers and relaxed.vertices is not None:
                done = self._drive(relaxed.vertices, target, loc, self.goal_en_route)
                if done is not None:
                    return done
            if target_box and target_box in blockers:
                # The way runs through the box to be picked: pick it from where the way
                # reaches it instead.
                approach, crowding = self._approach(relaxed.path, target_box)
                if approach is not None:
                    targets.insert(0, approach)
                    blockers.discard(target_box)
                    target = approach
                else:
                    # No pose on this side picks the box: what stands there must go first.
                    blockers |= crowding
            if best is None or len(blockers) < len(best[0]):
                best = (blockers, target)
                best_path = relaxed.path
                best_order = list(self.order)
        if best is None:
            return Refinement(False, reason=f"no path to {loc} even through movable boxes")
        blockers, target = best
        order = [b for b in best_order if b in blockers] + sorted(blockers - set(best_order))
        # Something is in the way: maybe there is a way around it (RRT-Connect finds open
        # paths in tens of milliseconds, so a short budget suffices to try).
        if not deadline.expired():
            result = self._plan(start, target, False, deadline, self.detour_timeout)
            if result.vertices is not None:
                done = self._drive(result.vertices, target, loc, self.goal_en_route)
                if done is not None:
                    return done
        blockers.discard(target_box)
        # Boxes put aside later must keep off the way they were found blocking.
        self.keep_out += best_path[::4]
        if not blockers:
            return Refinement(False, reason=f"motion planning to {loc} failed without obstruction")
        return Refinement(
            False,
            # In the order the way meets them (Stilman's algorithm clears the first first).
            facts=[f"(blocks {b} {loc})" for b in order if b in blockers],
            reason=f"{', '.join(sorted(blockers))} block the way to {loc}",
        )

    def _relaxed(
        self, start: Pose2D, target: Pose2D, deadline: Deadline, solid: str
    ) -> tuple[MotionResult, set[str]]:
        """A path that may pass through movable boxes (all but ``solid``), and the boxes it
        runs into (``self.order`` holds them in the order met). ``relaxed: grid`` (the
        default) takes the fewest-boxes grid path; when that path is clear it asks OMPL for
        a drivable path with every box solid (returned with its ``vertices``), and only when
        OMPL finds none there (the grid's disc passed a gap the real base does not) falls
        back to OMPL through boxes. ``relaxed: ompl`` is the earlier behaviour: one OMPL
        query through boxes, whatever they cross. ``relaxed: ompl_doors`` is the same query
        planned doorway to doorway along the shortest route that ignores the boxes (one
        OMPL query per room, as the base's other motions are)."""
        if self.relaxed_mode == "grid":
            t0 = time.perf_counter()
            path = self._fewest_boxes_path(start, target, solid)
            self._timed("motion_planning", t0)
            if path is None:
                return MotionResult(None, time.perf_counter() - t0, 0, False), set()
            blockers = self._boxes_on(path, deadline)
            if blockers:
                return MotionResult(path, time.perf_counter() - t0, 0, False), blockers
            # The grid's disc is only a necessary condition: in a cramped spot it passes
            # where the base cannot, and OMPL spends its whole budget failing. Open paths
            # take it tens of milliseconds, so after one such failure in this move the
            # other target poses get a quarter of the budget.
            budget = self.motion_timeout / (4 if self._clear_failed else 1)
            clear = self._plan(start, target, False, deadline, budget, solid=solid)
            self._clear_failed = self._clear_failed or clear.vertices is None
            if clear.vertices is not None:
                # Every box was solid for OMPL: this path runs into none of them.
                self.order = []
                return clear, set()
        result = self._plan(start, target, True, deadline, 2 * self.motion_timeout, solid=solid)
        return result, self._boxes_on(result.path, deadline) if result.path is not None else set()

    def _approach(self, path: list[Pose2D], box: str) -> tuple[Pose2D | None, set[str]]:
        """The last pose of ``path`` before it reaches ``box`` from which the box can be
        picked (facing it, free, arm reaching its top), or None and the other boxes that
        stand where such poses would be."""
        value = self._value(box)
        if not isinstance(value, tuple):
            return None, set()
        bx, by = float(value[0]), float(value[1])
        scene = self._scene()
        top = self.task.settings.box_size[2] + 0.02
        hit = self._first_hit(path, box)
        crowding: set[str] = set()
        # Come in along the way the path arrives, facing the box, at picking distance.
        for back in (1, 10, 20):
            x, y, _ = path[max(hit - back, 0)]
            length = math.hypot(bx - x, by - y)
            if length < 1e-6:
                continue
            ux, uy = (bx - x) / length, (by - y) / length
            for d in (0.46, 0.5, 0.54):
                pose = (bx - d * ux, by - d * uy, math.atan2(uy, ux))
                hits = scene.collisions(pose, PLAN_MARGIN)
                if not hits and scene.arm_reaches(bx, by, top) and self._pick_works(pose, box):
                    return pose, set()
                crowding |= (hits & self.slots) - {box}
        return None, crowding

    def _pick_works(self, pose: Pose2D, box: str) -> bool:
        """Whether the simulator lets the robot, standing at ``pose`` with empty hands, pick
        ``box``. Reach and inverse kinematics are not enough: the picked box is held ahead of
        the base at the base's heading, so a box put down beside a wall, picked at a slant,
        swings into the wall and the pick fails. An approach pose that passed only the
        reach test then ended the whole planning call (NAMO test task 8 of eval seed 1,
        planner seed 2: 5.7 s, no plan).

        The callers have checked reach and inverse kinematics at ``pose``; this adds the
        last test ``NamoMDP``'s pick makes, the grasped box clear of everything, at the pose
        as the executed action rounds it, and puts the box back as the state has it."""
        value = self._value(box)
        if self.state[2] != NONE or not isinstance(value, tuple):
            return False
        rounded = (round(pose[0], 4), round(pose[1], 4), round(pose[2], 4))
        bx, by = float(value[0]), float(value[1])
        if self.task.reached(rounded[0], rounded[1]) or not in_reach(rounded, bx, by):
            return False  # the episode would end there (a terminal state picks nothing)
        t0 = time.perf_counter()
        scene = self._scene()
        scene.set_base(rounded)
        scene.grasp(box)
        blocked = scene.collisions()
        scene.let_go()
        scene.place_box(box, bx, by)
        self._timed("grasp_place", t0)
        return not blocked

    def _first_hit(self, path: list[Pose2D], box: str) -> int:
        scene = self._scene()
        for i, pose in enumerate(path):
            if box in scene.collisions_at(pose):
                return i
        return len(path)

    def _boxes_on(self, path: list[Pose2D], deadline: Deadline) -> set[str]:
        """The boxes ``path`` runs into; ``self.order`` remembers the order it meets them.

        Raises PlanningTimeout once the planning call's deadline has passed (a path across
        the whole world has a thousand poses to check)."""
        scene = self._scene()
        before = scene.checks
        hits: dict[str, None] = {}
        for i, pose in enumerate(path):
            if i % 64 == 63:
                deadline.call.check()
            for name in sorted(scene.collisions_at(pose) & self.slots):
                hits.setdefault(name, None)
        self.checks += scene.checks - before
        self.order = list(hits)
        return set(hits)

    def _drive(
        self, vertices: list[Pose2D], target: Pose2D, loc: str, en_route: bool = False
    ) -> Refinement | None:
        """Execute the path's segments; None if execution did not end at ``target``.

        A way may pass within reach of the goal object before its last vertex (a doorway
        next to it, or, with ``en_route``, a way past it to a box): the episode ends there,
        so the drive does too, wherever it was going. The simulator moves a robot that has
        reached the goal no further, so such a drive to anywhere else used to end short of
        its target and fail, and a task whose every way to a box passed the goal failed with
        it (NAMO eval v14, seed 2, test task 2, planner seed 2). Carrying a box is not cut
        short: the carry's refiner puts the box down where the drive ends, which it cannot
        do from the goal, and it tries another spot instead."""
        actions: list[Action] = [
            ("move", tuple(round(v, 4) for v in p), NONE) for p in vertices[1:]
        ]
        states = self._execute(actions)
        if loc == "goal" or en_route:
            for k, state in enumerate(states):
                if self.mdp.is_terminal(state):
                    self.state = state
                    self.at = "goal"
                    return Refinement(True, actions[: k + 1], states[: k + 1])
        ex, ey, _ = self._pose(states[-1] if states else self.state)
        if math.hypot(ex - target[0], ey - target[1]) > 0.02:
            return None
        self.state = states[-1] if states else self.state
        self.at = loc
        return Refinement(True, actions, states)

    def _refine_pick(self, box: str) -> Refinement:
        t0 = time.perf_counter()
        nxt = self.mdp.step(self.state, ("pick", None, box))
        self._timed("grasp_place", t0)
        if nxt[2] != box:
            # Picking is deterministic: retrying from the same pose fails the same way, so
            # the next symbolic plan must come here again, from a newly sampled pose.
            self.at = "here"
            return Refinement(False, reason=f"cannot pick {box} from here")
        self.state = nxt
        return Refinement(True, [("pick", None, box)], [nxt])

    def _corridor_poses(self, deadline: Deadline) -> list[Pose2D]:
        """Where the robot still needs to pass: a path to the goal through movable boxes,
        planned once per call while the hands are empty (every 4th waypoint kept)."""
        if self._corridor is None:
            if self.state[2] != NONE:
                return []
            goal = self._targets("goal")
            self._goal_pose = goal[0] if goal else None
            path: list[Pose2D] | None = None
            if goal and self.relaxed_mode == "grid":
                t0 = time.perf_counter()
                path = self._fewest_boxes_path(self._pose(self.state), goal[0], "")
                self._timed("motion_planning", t0)
            elif goal:
                path = self._plan(self._pose(self.state), goal[0], True, deadline).path
            self._corridor = (path or [])[::4]
        return self._corridor

    def _refine_place(self, box: str, deadline: Deadline) -> Refinement:
        self._corridor_poses(deadline)  # times its own motion planning
        t0 = time.perf_counter()
        motion_before = self.stage_times.get("motion_planning", 0.0)
        try:
            return self._place(box, deadline)
        finally:
            # Carrying a box to a freer spot plans motions, already counted as motion
            # planning: the stages stay disjoint, so they add up.
            carried = self.stage_times.get("motion_planning", 0.0) - motion_before
            self.stage_times["grasp_place"] = (
                self.stage_times.get("grasp_place", 0.0) + time.perf_counter() - t0 - carried
            )

    def _ways_ahead(self, box: str, deadline: Deadline) -> list[Pose2D]:
        """Where the robot must still go before the goal: each box known to block a way and
        not yet moved (``box``, in hand, aside), and the fewest-boxes way from here to it.
        A box put down there would stand in front of the next one to clear; the corridor to
        the goal, planned when this call began, does not pass where the next box is
        approached from.

        The ways share grid searches where they give the same paths (see
        :meth:`_fewest_boxes_paths`). Raises PlanningTimeout once the planning call's
        deadline has passed: Stilman's algorithm can have dozens of boxes pending, and one
        search per box took it 0.6 s past its 60 s (sampled in bench_namo)."""
        pending = {b for bs in self.blocks.values() for b in bs} - self.moved - {box}
        here = self._pose(self.state)
        t0 = time.perf_counter()
        # The way to the goal from here: the corridor was planned from where this call
        # began, and the robot has since moved (often past boxes it put down behind it).
        goals = [] if self._goal_pose is None else [self._goal_pose]
        for name in sorted(pending):
            value = self._value(name)
            if isinstance(value, tuple):
                goals.append((float(value[0]), float(value[1]), 0.0))
        paths = self._fewest_boxes_paths(here, goals, "", deadline=deadline) if goals else []
        out: list[Pose2D] = []
        for k, (goal, path) in enumerate(zip(goals, paths, strict=True)):
            if k > 0 or self._goal_pose is None:
                out.append(goal)
            out += (path or [])[::4]
        self._timed("motion_planning", t0)
        return out

    def _place(self, box: str, deadline: Deadline) -> Refinement:
        keep_out = self._corridor_poses(deadline) + self.keep_out + self._ways_ahead(box, deadline)
        placed_before = self.placements.get(box, 0)
        self.placements[box] = placed_before + 1
        # A box put down within reach once and found in the way again is standing in a
        # cramped spot: carry it off first, rather than put it down nearby once more.
        order = ("carry", "reach") if placed_before else ("reach", "carry")
        for how in order:
            if how == "reach":
                done = self._place_avoiding(box, keep_out, deadline)
            else:  # carry the box (checked with the robot) to a freer spot nearby
                done = self._carry_and_place(box, keep_out, deadline)
            if done is not None:
                return done
        # A box merely near the corridor beats no placement (a later move reports it).
        done = self._place_avoiding(box, [], deadline, doors=False)
        if done is not None:
            return done
        return Refinement(False, reason=f"no place to put {box} down near {self.at}")

    def _carry_and_place(
        self, box: str, keep_out: list[Pose2D], deadline: Deadline
    ) -> Refinement | None:
        """Choose a free floor spot first (clear of doorways and ``keep_out``), then a base
        pose facing it, then a transfer motion there with the box in hand."""
        start = self._pose(self.state)
        scene = self._scene()
        before = self.state
        tried = 0
        for _ in range(300):
            if deadline.expired() or tried >= CARRY_SPOTS:
                break
            d, heading = self.rng.uniform(0.8, 2.5), self.rng.uniform(-math.pi, math.pi)
            px, py = start[0] + d * math.cos(heading), start[1] + d * math.sin(heading)
            if not self._spot_ok(px, py, keep_out):
                continue
            face = self.rng.uniform(-math.pi, math.pi)
            pose = (px - 0.5 * math.cos(face), py - 0.5 * math.sin(face), face)
            scene = self._scene()
            if scene.collisions(pose, PLAN_MARGIN):
                continue
            tried += 1
            result = self._plan(start, pose, False, deadline)
            if result.vertices is None:
                continue
            carried = self._drive(result.vertices, pose, self.at)
            if carried is None:
                self.state = before
                continue
            point = (round(px, 4), round(py, 4))
            placed = self.mdp.step(self.state, ("place", point, NONE))
            if placed[2] != NONE:
                self.state = before
                continue
            self.state = placed
            self.moved.add(box)
            return Refinement(
                True, [*carried.actions, ("place", point, NONE)], [*carried.states, placed]
            )
        return None

    def _spot_ok(self, px: float, py: float, keep_out: list[Pose2D], doors: bool = True) -> bool:
        """Whether a box may be put down at (px, py): inside an allowed room, clear of its
        walls, of doorways and of the corridors the robot still needs."""
        if not (
            0.0 < px < self.task.settings.world_size and 0.0 < py < self.task.settings.world_size
        ):
            return False
        if self.allowed is not None and self.task.room_of(px, py) not in self.allowed:
            return False
        if not self._inside((px, py, 0.0), 0.25):
            return False
        if doors and any(math.hypot(px - d.x, py - d.y) < DOOR_KEEP_OUT for d in self.task.doors):
            return False
        clear = self.task.settings.base_half_extent + 0.35
        return not any(math.hypot(px - c[0], py - c[1]) < clear for c in keep_out)

    def _place_avoiding(
        self,
        box: str,
        corridor: list[Pose2D],
        deadline: Deadline,
        turns: tuple[float, ...] = (0.0, 0.6, -0.6, 1.2, -1.2, 1.9, -1.9, 2.6, -2.6, math.pi),
        doors: bool = True,
    ) -> Refinement | None:
        x, y, yaw = self._pose(self.state)
        for turn in turns:
            if deadline.expired():
                break
            actions: list[Action] = []
            state = self.state
            if turn:
                new_yaw = math.atan2(math.sin(yaw + turn), math.cos(yaw + turn))
                target = (round(x, 4), round(y, 4), round(new_yaw, 4))
                state = self.mdp.step(state, ("move", target, NONE))
                if abs(math.remainder(self._pose(state)[2] - target[2], 2 * math.pi)) > 1e-3:
                    continue  # the turn with the box in hand is blocked
                actions.append(("move", target, NONE))
            pose = self._pose(state)
            # Of the placements that work, the one farthest from every way still needed.
            best: tuple[float, tuple[float, float]] | None = None
            avoid = [*corridor, *self.keep_out]
            for _ in range(PLACE_SAMPLES):
                d = self.rng.uniform(0.45, 0.7)
                b = self.rng.uniform(-0.9, 0.9)
                px, py = x + d * math.cos(pose[2] + b), y + d * math.sin(pose[2] + b)
                if not in_reach(pose, px, py) or not self._spot_ok(px, py, corridor, doors):
                    continue
                point = (round(px, 4), round(py, 4))
                placed = self.mdp.step(state, ("place", point, NONE))
                if placed[2] != NONE:
                    continue
                clearance = min((math.hypot(px - c[0], py - c[1]) for c in avoid), default=0.0)
                if best is None or clearance > best[0]:
                    best = (clearance, point)
            if best is not None:
                actions.append(("place", best[1], NONE))
                states = self._execute(actions)
                self.state = states[-1]
                self.moved.add(box)
                return Refinement(True, actions, states)
        return None


@functools.cache
@functools.lru_cache(maxsize=4)
def _whole_grid_graph(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph of every cell of an ``n`` × ``n`` grid, built once per size (read only)."""
    graph = _free_grid_graph(np.ones((n, n), dtype=bool))
    for array in graph:
        array.flags.writeable = False
    return graph


def _free_grid_graph(free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 4-connected graph of the cells ``free`` marks: the flat (row-major) index of each
    node, nodes numbered in that order, and the ``indices`` and ``indptr`` of a CSR
    adjacency matrix, each node's neighbours in ascending order (as in the whole grid's
    graph, so that Dijkstra breaks ties the same way). Built in time linear in the free
    cells, apart from one lookup array over the grid."""
    n_rows, n_cols = free.shape
    ids = np.flatnonzero(free)
    node = np.full(free.size, -1, dtype=np.int64)
    node[ids] = np.arange(len(ids))
    rows, cols = np.divmod(ids, n_cols)
    # Up, left, right, down: ascending flat indices, hence ascending node numbers.
    neighbours = np.empty((len(ids), 4), dtype=np.int64)
    for k, (inside, step) in enumerate(
        ((rows > 0, -n_cols), (cols > 0, -1), (cols < n_cols - 1, 1), (rows < n_rows - 1, n_cols))
    ):
        neighbours[:, k] = np.where(inside, node[np.where(inside, ids + step, 0)], -1)
    edge = neighbours >= 0
    indptr = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(edge.sum(axis=1), out=indptr[1:])
    return ids, neighbours[edge], indptr


def _back_track(parent: np.ndarray, src: int, dst: int) -> list[int]:
    """The nodes of the search tree's path from ``src`` to ``dst`` (``parent``: Dijkstra's
    predecessors), in order."""
    nodes = [dst]
    while nodes[-1] != src:
        nodes.append(int(parent[nodes[-1]]))
    return nodes[::-1]


def _around(grid: np.ndarray, cell: tuple[int, int]) -> np.ndarray:
    """The window of ``grid`` that :func:`_open_around` opens around ``cell`` (a view)."""
    k = math.ceil(START_SLACK / GRID_CELL)
    r, c = cell
    return grid[max(r - k, 0) : r + k + 1, max(c - k, 0) : c + k + 1]


def _open_around(grid: np.ndarray, *cells: tuple[int, int]) -> None:
    """Unblock the cells within ``START_SLACK`` (rounded up) of each cell: there, motion
    planning does not ask for the margin the grid's disc includes."""
    for cell in cells:
        _around(grid, cell)[...] = False


def _block(
    grid: np.ndarray, rect: tuple[float, float, float, float], radius: float, cell: float
) -> None:
    """Mark the cells of ``grid`` (rows: y, columns: x) whose centre is closer than ``radius``
    to ``rect``; only the window around the rectangle is computed."""
    window = _block_window(rect, radius, cell, grid.shape[0])
    if window is not None:
        r0, r1, c0, c1, mask = window
        grid[r0:r1, c0:c1] |= mask


@functools.lru_cache(maxsize=4096)
def _block_window(
    rect: tuple[float, float, float, float], radius: float, cell: float, n: int
) -> tuple[int, int, int, int, np.ndarray] | None:
    """The window of an ``n`` × ``n`` grid that :func:`_block` marks, and its mask (read
    only). Remembered: boxes stand still between most grid searches, and every search
    rasterised each box again (12,000 windows in ten of the paper's tasks)."""
    x0, y0, x1, y1 = rect
    c0, c1 = max(int((x0 - radius) / cell), 0), min(int((x1 + radius) / cell) + 1, n)
    r0, r1 = max(int((y0 - radius) / cell), 0), min(int((y1 + radius) / cell) + 1, n)
    if c0 >= c1 or r0 >= r1:
        return None
    xs = (np.arange(c0, c1) + 0.5) * cell
    ys = (np.arange(r0, r1) + 0.5) * cell
    dx = np.maximum(np.maximum(x0 - xs, 0.0), xs - x1)[None, :]
    dy = np.maximum(np.maximum(y0 - ys, 0.0), ys - y1)[:, None]
    mask = dx * dx + dy * dy < radius * radius
    mask.flags.writeable = False
    return r0, r1, c0, c1, mask


def tamp_interface(
    mdp: NamoMDP, state: State, camp: CAMP | None, seed: int, settings: dict[str, Any]
) -> NamoTampInterface:
    held = state[2]
    if held != NONE and state[mdp.state_index(str(held))] != HELD:
        raise ValueError("inconsistent state: the held box is also on the floor")
    return NamoTampInterface(mdp, state, allowed_rooms(camp), seed, settings)
