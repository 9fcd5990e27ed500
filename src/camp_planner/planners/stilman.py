"""Stilman's ResolveSpatialConstraints for navigation among movable obstacles.

After Stilman & Kuffner (2005/2008): plan the robot's way ignoring movable obstacles; take
the first obstacle the way runs into; recursively resolve the constraints of *reaching* it
(its own obstructors first), pick it, and put it down somewhere that frees the way and keeps
off every way still needed (the spatial constraints of the callers up the recursion); then
plan again. Failed branches are backtracked: the state before the attempt is restored, and
the same obstructor is put down somewhere else (a fresh placement sample) when the search
failed *after* moving it, or the next obstructor in order is tried when it could not be
moved at all. Stilman and Kuffner search over placements this way; trying only the first
placement made the search give up on solvable tasks whenever one box was put down where
the next box to clear is approached from (NAMO test draw 2, task 0, planner seed 2).

No task planner is involved: the recursion order comes from the geometry alone. The
geometric steps are the same refiners the TAMP planner uses (same motion planner, same
simulator, same collision checker), through the domain's TAMP interface, so the comparison
between the two is fair.
"""

from __future__ import annotations

import time
from typing import Any

from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import Deadline, NoPlanFound, PlanningError
from camp_planner.planners.tamp import InterfacePlanner, InterfaceSettings, tamp_base

# Clears allowed along one way per box met on it (see ``Stilman._reach``).
CLEARS_PER_BOX = 2


class _GoalReached(Exception):
    """The robot reached the goal while resolving an obstruction: the plan ends there."""


class Stilman(InterfacePlanner):
    """ResolveSpatialConstraints with backtracking over the order of obstructors.

    Settings, besides the shared :class:`InterfaceSettings` (by name or as ``settings``):
        max_depth: how deep obstructions of obstructions are resolved.
        placements: placements of one obstructor tried before the next obstructor (1: the
            first placement only).
        max_backtracks: placements undone per attempt, at most; past it a failed branch
            fails the call, so an unsolvable task still fails in seconds, not at the
            deadline (the search is exponential in the number of boxes moved).
    """

    name = "stilman"
    # Bumped whenever the same call would plan differently (CHANGELOG.md).
    version = "4"

    def __init__(
        self,
        seed: int = 0,
        max_depth: int = 4,
        placements: int = 3,
        max_backtracks: int = 12,
        settings: InterfaceSettings | None = None,
        **named: Any,
    ) -> None:
        super().__init__(seed, settings, named)
        if max_depth < 0:
            raise ValueError(f"max_depth must be non-negative, got {max_depth}")
        self.max_depth = max_depth
        if placements < 1:
            raise ValueError(f"placements must be at least 1, got {placements}")
        if max_backtracks < 0:
            raise ValueError(f"max_backtracks must be non-negative, got {max_backtracks}")
        self.placements = int(placements)
        self.max_backtracks = int(max_backtracks)
        self.backtracks = 0  # placements undone in the last planning call

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        self.backtracks = 0
        super().prepare(mdp, deadline)

    def act(self, state: State, deadline: Deadline) -> Action:
        if self._mdp is None:
            raise PlanningError("Stilman.act called before prepare")
        if self._step >= len(self._plan) or self._expected[self._step] != state:
            raise NoPlanFound("execution left the plan Stilman's algorithm verified")
        action = self._plan[self._step]
        self._step += 1
        return action

    def _solve(self, state: State, deadline: Deadline) -> None:
        mdp = self._mdp
        assert mdp is not None
        base, camp = tamp_base(mdp)
        full = camp.sigma_inv(state) if camp is not None else state
        self._interface = self._open(
            base.tamp_interface(full, camp, self._attempt_seed, self.settings)
        )
        self._actions: list[Action] = []
        self._states: list[State] = [full]
        self._resolved = 0
        self._budget = self.max_backtracks
        t0 = time.perf_counter()
        try:
            try:
                reached = self._reach("goal", 0, deadline)
            except _GoalReached:
                reached = True  # on the way to an obstructor: the rest of the search is moot
            if not reached:
                raise NoPlanFound("Stilman's algorithm found no way to the goal")
        finally:
            self._finish(self._interface)
            self._add_time("search", time.perf_counter() - t0)
        self._adopt(camp, self._actions, self._states)
        self.last_stats = {
            "actions": len(self._plan),
            "obstacles_moved": self._resolved,
            "backtracks": self.backtracks,
            "cutoffs": self.cutoffs,
        }

    # --- ResolveSpatialConstraints --------------------------------------------------------
    def _snapshot(self) -> tuple[object, int, int, int]:
        kept = self._interface.snapshot()
        return kept, len(self._actions), len(self._states), self._resolved

    def _restore(self, snap: tuple[object, int, int, int]) -> None:
        kept, n_actions, n_states, self._resolved = snap
        self._interface.restore(kept)
        del self._actions[n_actions:]
        del self._states[n_states:]

    def _record(self, outcome: Any) -> None:
        self._actions += outcome.actions
        self._states += outcome.states
        if self._interface.at_goal():
            # A motion to an obstructor passed the goal: done, with no backtracking that
            # could undo it.
            raise _GoalReached

    def _reach(
        self, loc: str, depth: int, deadline: Deadline, cleared: tuple[str, ...] = ()
    ) -> bool:
        """Get the robot to ``loc``, clearing obstructions recursively; True on success.

        ``cleared``: the obstructors moved off this way so far, in order. The same box may
        be cleared off a way more than once (the interface puts a box down near the way
        when nothing better is free, and carries it off when it meets it there again), so
        a way allows ``CLEARS_PER_BOX`` clears per box it met, and never fewer than
        ``max_depth`` + 5 in all. A box that keeps coming back fails the branch; a long
        way with many boxes (fifteen or more across a 10×10 world) is cleared to the end."""
        iface = self._interface
        deadline.check()
        outcome = iface.refine((f"move_to_{loc}", iface.at), deadline)
        if outcome.ok:
            self._record(outcome)
            return True
        blockers = [f.strip("() ").split()[1] for f in outcome.facts]
        allowed = max(self.max_depth + 5, CLEARS_PER_BOX * len(set(cleared)))
        if not blockers or depth >= self.max_depth or len(cleared) >= allowed:
            return False
        iface.learn(outcome.facts)  # keeps the way as a spatial constraint for placements
        for box in blockers:  # the first obstructor on the way first
            for _ in range(self.placements):
                snap = self._snapshot()
                if not self._clear(box, depth, deadline):
                    self._restore(snap)
                    break  # it cannot be moved from here: the next obstructor
                if self._reach(loc, depth, deadline, (*cleared, box)):
                    return True
                # Moved, and the rest of the way failed: undo it, put it down elsewhere.
                self._restore(snap)
                if self._budget <= 0:
                    return False
                self._budget -= 1
                self.backtracks += 1
        return False

    def _clear(self, box: str, depth: int, deadline: Deadline) -> bool:
        """Reach ``box``, pick it and put it down off every way still needed."""
        iface = self._interface
        if not self._reach(f"near_{box}", depth + 1, deadline):
            return False
        picked = iface.refine(("pick", box, f"near_{box}"), deadline)
        if not picked.ok:
            return False
        self._record(picked)
        placed = iface.refine(("place", box), deadline)
        if not placed.ok:
            return False
        self._record(placed)
        self._resolved += 1
        return True
