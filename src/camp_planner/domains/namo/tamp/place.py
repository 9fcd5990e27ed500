"""Refining NAMO's ``place`` steps: put the held box down where no way still needed runs.

Placements keep clear of doorways, of the corridor to the goal, of the ways found blocked
(``keep_out``) and of the ways to the boxes still to clear. A box is put down within reach,
turning on the spot if need be, or carried to a freer spot nearby first; a box put down
once and found in the way again is carried off first.
"""

from __future__ import annotations

import math
import time

from camp_planner.core.mdp import Action
from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.layout import NONE, in_reach
from camp_planner.domains.namo.tamp.base import PLAN_MARGIN
from camp_planner.domains.namo.tamp.move import MoveRefiner
from camp_planner.domains.namo.world import Pose2D
from camp_planner.planners.tamp import Refinement

PLACE_SAMPLES = 16
CARRY_SPOTS = 8
DOOR_KEEP_OUT = 0.75  # metres around a doorway's centre where nothing may be put down


class PlaceRefiner(MoveRefiner):
    """Placements, built on the move refiner's drives for carrying a box off."""

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
        if doors and any(
            math.hypot(px - d.x, py - d.y) < DOOR_KEEP_OUT
            for d in self._doors_near(px, py, DOOR_KEEP_OUT)
        ):
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
