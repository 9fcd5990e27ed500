"""The refiners of the manipulation TAMP interface: a symbolic pick, regrasp or place becomes
a base motion to a work pose the skill works from and the skill itself, both executed in the
simulator (so every refined step is verified as it is built).

Candidate base poses are the task's work poses within the arm's reach of the target, nearest
first (ties broken by the call's random numbers); the first one that is free and from which
the simulator accepts the grasp or placement (IK, gripper width, collisions of the arm and
the held object with every object present) and that OMPL can reach is taken. When none
works, the reasons the simulator gave become facts for the task planner: the object is too
wide for that grasp, the grasp is blocked (naming what it hits), a bin is occupied or out of
reach, a regrasp impossible.
"""

from __future__ import annotations

import math
import time
from collections import Counter

from camp_planner.core.mdp import Action
from camp_planner.core.planner import Deadline
from camp_planner.domains.manip.layout import NONE
from camp_planner.domains.manip.tamp.motion import MotionPlanning
from camp_planner.domains.manip.world import ARM_REACH
from camp_planner.planners.tamp import Refinement
from camp_planner.sim.tabletop_geometry import SIDE
from camp_planner.sim.tabletop_scene import ArmCheck

# Work poses whose arm mount lies within this of a target are candidates.
REACH_M = ARM_REACH
# Candidates are tried in order of their reach to the target plus this times the base's
# straight-line travel to them: a pose on the table's far side may reach an object slightly
# better, but the way round the table cost ten times the checks of a nearby pose's.
TRAVEL_WEIGHT = 0.3


class Refiners(MotionPlanning):
    """Pick, regrasp and place, each with its base motion."""

    def _candidates(self, x: float, y: float, prefix: str) -> list[str]:
        """Work poses (names starting with ``prefix``) whose arm mount is within reach of
        (x, y), best first (see ``TRAVEL_WEIGHT``)."""
        m = self.task.settings.arm_mount_x
        hx, hy, _ = self.mdp.poses[str(self.state[0])]
        scored = []
        for name, (px, py, yaw) in self.mdp.poses.items():
            if not name.startswith(prefix):
                continue
            d = math.hypot(x - px - m * math.cos(yaw), y - py - m * math.sin(yaw))
            if d <= REACH_M:
                travel = math.hypot(px - hx, py - hy)
                scored.append((round(d + TRAVEL_WEIGHT * travel, 3), self.rng.random(), name))
        return [name for _, _, name in sorted(scored)]

    def _table_of(self, x: float) -> str:
        return "left_" if x < 0 else "right_"

    def _go_and_do(self, pose: str, action: Action, deadline: Deadline) -> Refinement | None:
        """Move to ``pose`` (OMPL) and take ``action`` there, executing both; None if the
        way there is not found or the action does not change the state."""
        path = self._motion(pose, deadline)
        if path is None:
            return None
        actions: list[Action] = []
        if pose != self.state[0]:
            actions.append(("move", pose, NONE, NONE, NONE))
        actions.append(action)
        states = self._execute(actions)
        if states[-1] == self.state or (len(actions) == 2 and states[0] == self.state):
            return None
        self.state = states[-1]
        return Refinement(True, actions, states)

    def _check_at(self, pose: str, check: str, *args: object) -> ArmCheck | None:
        """The simulator's verdict on a grasp (``check`` "grasp": red, style) or placement
        ("place": x, y, z) from work pose ``pose``; None if the base cannot stand there."""
        scene = self.mdp.sync(self._at(pose))
        xy = self.mdp.poses[pose]
        if not self.task.on_floor(xy) or not scene.base_free(xy):
            return None
        if check == "grasp":
            red, style = str(args[0]), str(args[1])
            return scene.check_grasp(scene.grasp(red, style))
        x, y, z = (float(v) for v in args)  # type: ignore[arg-type]
        return scene.check_place(scene.place_pose(x, y, z))

    def _refine_pick(self, red: str, style: str, deadline: Deadline) -> Refinement:
        t0 = time.perf_counter()
        try:
            x, y = self._red_xy(red)
            reasons: Counter[str] = Counter()
            hits: set[str] = set()
            for pose in self._candidates(x, y, self._table_of(x)):
                deadline.check()
                verdict = self._check_at(pose, "grasp", red, style)
                if verdict is None:
                    reasons["base_blocked"] += 1
                    continue
                if verdict.ok:
                    done = self._go_and_do(pose, ("pick", NONE, red, style, NONE), deadline)
                    if done is not None:
                        return done
                    reasons["no_motion"] += 1
                    continue
                if verdict.reason == "too_wide":
                    # The object's width, not the base pose: no other pose changes it.
                    return Refinement(
                        False,
                        facts=[f"(too-wide {red} {style})"],
                        reason=f"{style} grasp of {red}: wider than the gripper opens",
                    )
                reasons[verdict.reason] += 1
                hits |= verdict.hits
            what = f", hits {', '.join(sorted(hits))}" if hits else ""
            return Refinement(
                False,
                facts=[f"(blocked {red} {style})"],
                reason=f"{style} grasp of {red} blocked from every pose ({dict(reasons)}{what})",
            )
        finally:
            self._timed("grasping", t0)

    def _refine_regrasp(self, red: str, deadline: Deadline) -> Refinement:
        """Put the held red down on a staging spot and pick it from the side: from the
        first right-table pose within reach of a staging spot where the MDP's regrasp works."""
        t0 = time.perf_counter()
        try:
            spots = self.task.staging_spots()
            tried: set[str] = set()
            for x, y in spots:
                for pose in self._candidates(x, y, "right_"):
                    if pose in tried:
                        continue
                    tried.add(pose)
                    deadline.check()
                    at = self._at(pose)
                    scene = self.mdp.sync(at)
                    if not scene.base_free(self.mdp.poses[pose]):
                        continue
                    after = self.mdp.step(at, ("regrasp", NONE, NONE, NONE, NONE))
                    if after == at or after[2] != SIDE:
                        continue
                    done = self._go_and_do(pose, ("regrasp", NONE, NONE, NONE, NONE), deadline)
                    if done is not None:
                        return done
            return Refinement(
                False,
                facts=[f"(no-regrasp {red})"],
                reason=f"no staging spot lets {red} be put down and picked from the side",
            )
        finally:
            self._timed("regrasping", t0)

    def _refine_place(self, red: str, bin_name: str, deadline: Deadline) -> Refinement:
        t0 = time.perf_counter()
        try:
            index = int(bin_name[len("bin_") :])
            b = self.task.bins[index]
            # What stands in this bin (a neighbour's green or a red in the next bin may be hit
            # too, but that is a matter of reach, not of this bin's occupant).
            lay = self.layout
            occupants = {f"green_{index}"} | {
                r for r in lay.reds if self.state[lay.loc_index[r]] == f"bin_{index}"
            }
            reasons: Counter[str] = Counter()
            for pose in self._candidates(b.x, b.y, "right_"):
                deadline.check()
                verdict = self._check_at(pose, "place", b.x, b.y, b.floor_z)
                if verdict is None:
                    reasons["base_blocked"] += 1
                    continue
                if verdict.ok:
                    done = self._go_and_do(pose, ("place", NONE, NONE, NONE, index), deadline)
                    if done is not None:
                        return done
                    reasons["no_motion"] += 1
                    continue
                if verdict.hits & occupants:
                    # Something stands in the bin: no pose will change that.
                    return Refinement(
                        False,
                        facts=[f"(occupied {bin_name})"],
                        reason=f"{bin_name} is occupied ({', '.join(sorted(verdict.hits))})",
                    )
                reasons[verdict.reason] += 1
            return Refinement(
                False,
                facts=[f"(unreachable {bin_name})"],
                reason=f"no pose places {red} into {bin_name} ({dict(reasons)})",
            )
        finally:
            self._timed("placing", t0)
