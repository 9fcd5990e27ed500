"""Base motions for NAMO's TAMP interface: OMPL queries in SE(2), within one room, doorway
to doorway across rooms, or across the whole world.

A motion whose start and goal share a room is planned in that room's bounds first; one
across rooms is split at the doorways of its grid route (:mod:`.routes`) into one query per
room. The whole world's query is the fallback for both, since a way round through another
room may exist. Every query checks its edges every ``EDGE_STEP_M``, is seeded from the
planning call's own random numbers and is budgeted in validity checks (:mod:`.work`), so a
call's motions depend on its task, context, seed and settings alone. Under a CAMP every
sample is tested against the allowed rooms, except in queries whose bounds lie in them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from itertools import pairwise
from typing import NamedTuple

from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.tamp.base import PLAN_MARGIN, START_SLACK
from camp_planner.domains.namo.tamp.routes import RouteSearch
from camp_planner.domains.namo.tamp.work import WorkAccounting
from camp_planner.domains.namo.world import Pose2D
from camp_planner.motion.ompl_se2 import MotionResult, plan_base_path
from camp_planner.sim.floor_scene import FloorScene

# OMPL checks every base motion's edges this far apart (metres of SE(2) distance), in any
# query's bounds: a fraction of each query's extent was 2.8 cm within one room and 17.6 cm
# across a 10×10 world.
EDGE_STEP_M = 0.05
_DOOR_OFFSETS = (0.0, 0.04, -0.04, 0.08, -0.08, 0.12, -0.12)  # metres along a doorway

Check = Callable[[float, float, float], bool]


class Validity(NamedTuple):
    """A motion query's validity check for OMPL, with the CAMP's room test (``tested``) and
    without it (``untested``: the same where every point lies in an allowed room)."""

    tested: Check
    untested: Check


class MotionPlanning(RouteSearch, WorkAccounting):
    """OMPL's base motions in the current state's collision world."""

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

    def _valid(self, scene: FloorScene, ignore_boxes: bool, solid: str, start: Pose2D) -> Validity:
        """Validity for OMPL: collision-free (with margin); ``ignore_boxes`` lets the robot
        pass through movable boxes except ``solid`` (the box it is going to pick). Near the
        start poses only need to be free: a box just put down, or a turn made to put it down,
        may leave the robot closer to something than the margin, and with the margin
        demanded from the first step on it could never leave."""
        passable = self.slots - {solid}
        ignored = passable if ignore_boxes else frozenset()
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

    def _query(
        self,
        start: Pose2D,
        goal: Pose2D,
        bounds: tuple[float, float, float, float],
        valid: Validity,
        budget: float,
        deadline: Deadline,
    ) -> MotionResult:
        """One OMPL query within ``bounds``, with ``budget`` of work, seeded from this call's
        random numbers."""
        return plan_base_path(
            start,
            goal,
            bounds,
            self._within(valid, bounds),
            seed=self.rng.randrange(2**31),
            planner=self.motion_planner,
            segment_m=EDGE_STEP_M,
            **self._ompl_limits(budget, deadline),
        )

    def _plan(
        self,
        start: Pose2D,
        goal: Pose2D,
        ignore_boxes: bool,
        deadline: Deadline,
        timeout: float | None = None,
        solid: str = "",
    ) -> MotionResult:
        """A base motion from ``start`` to ``goal`` (through movable boxes but ``solid`` with
        ``ignore_boxes``), with ``timeout`` of work (default ``motion_timeout``) capped by
        ``deadline``: guided doorway to doorway or within its room first (not a motion
        through boxes, which is one query, as the paper's interface layer plans it), then
        in the whole world's bounds if that found no path."""
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
        w0 = self.work()
        valid = self._valid(scene, ignore_boxes, solid, start)
        result: MotionResult | None = None
        if not ignore_boxes:
            result = self._plan_guided(start, goal, solid, valid, budget, deadline)
            if result is None:
                result = self._plan_in_room(start, goal, valid, budget, deadline)
            budget -= self.work() - w0
        if result is None or result.path is None:
            world = (0.0, 0.0, size, size)
            result = self._query(start, goal, world, valid, budget, deadline)
        self.checks += scene.checks - before
        self._timed("motion_planning", t0)
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
    ) -> MotionResult | None:
        """A base motion across rooms as OMPL queries from doorway to doorway, or None when
        start and goal share a room (one query is as good), no route exists or a doorway on
        it has no valid pose.

        Uniform sampling in SE(2) rarely lands in a doorway a base of 0.6 m passes with 0.2 m
        to spare, so RRT-Connect spends most of a cross-room query there, and its time varies
        tenfold between runs. The route (the grid's disc path with every box solid) says
        which doorways to pass; posing the base square in each splits the motion into pieces
        that each lie in one room, which OMPL plans within that room's bounds in
        milliseconds. A piece with no path in its room returns a failed result, and the
        caller then plans the whole motion with what is left of the budget, so the guide
        only narrows OMPL's search and never decides that no path exists."""
        task = self.task
        if task.room_of(start[0], start[1]) == task.room_of(goal[0], goal[1]):
            return None
        t0, w0 = time.perf_counter(), self.work()
        route = self._fewest_boxes_path(start, goal, solid, "solid")
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
                self.guide_fallbacks += 1
                return None
            points.append(door)
            rooms.append(room)
        points.append(goal)
        path: list[Pose2D] = [start]
        vertices: list[Pose2D] = [start]
        checks = 0
        for (a, b), room in zip(pairwise(points), rooms, strict=True):
            left = budget - (self.work() - w0)
            bounds = self._room_bounds(room)
            piece = self._query(a, b, bounds, valid, min(left, budget / 2), deadline)
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
        """A motion whose start and goal share a room, planned first within that room's
        bounds (half the budget), or None when they do not share one.

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
        return self._query(start, goal, self._room_bounds(room), valid, budget / 2, deadline)

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
