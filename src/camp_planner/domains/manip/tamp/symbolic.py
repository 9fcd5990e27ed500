"""The symbolic model the manipulation TAMP interface gives the task planner (STRIPS,
regenerated at every replan).

Objects: the reds and the bins. Predicates: ``(handempty)``, ``(holding ?r)``,
``(held-top ?r)`` / ``(held-side ?r)``, ``(ontable ?r)`` (on the left table or a staging
spot), ``(placed ?r)`` (standing in a bin), ``(free ?b)``, and the optimistic permissions
``(top-ok ?r)``, ``(side-ok ?r)``, ``(regrasp-ok ?r)``, ``(reach-ok ?b)`` that refinement
failures take away: "top grasp of r infeasible" (too wide for the gripper, or blocked from
every base pose tried), "side grasp of r blocked", "r cannot be regrasped here", "bin b
occupied" and "bin b out of reach". Base motions are not symbolic: each refiner picks the
base pose its grasp or placement works from and plans the way there.

Actions: ``pick-top``, ``pick-side``, ``regrasp`` (top-held to side-held, through a staging
spot) and ``place`` (side-held into a free bin). Under a context, the model offers only the
actions the context admits (a pick style or bin it forbids is not an action at all), asked of
the context itself rather than read from its variables.

The goal: every red placed.
"""

from __future__ import annotations

from dataclasses import dataclass

from camp_planner.core.mdp import State
from camp_planner.domains.manip.layout import NONE, STAGING, TABLE
from camp_planner.domains.manip.tamp.base import InterfaceBase
from camp_planner.sim.tabletop_geometry import SIDE, TOP

_ACTIONS = {
    "pick-top": (
        "?r - red",
        "(and (handempty) (ontable ?r) (top-ok ?r))",
        "(and (holding ?r) (held-top ?r) (not (handempty)) (not (ontable ?r)))",
    ),
    "pick-side": (
        "?r - red",
        "(and (handempty) (ontable ?r) (side-ok ?r))",
        "(and (holding ?r) (held-side ?r) (not (handempty)) (not (ontable ?r)))",
    ),
    "regrasp": (
        "?r - red",
        "(and (held-top ?r) (regrasp-ok ?r))",
        "(and (held-side ?r) (not (held-top ?r)))",
    ),
    "place": (
        "?r - red ?b - bin",
        "(and (held-side ?r) (free ?b) (reach-ok ?b))",
        "(and (placed ?r) (handempty) (not (holding ?r)) (not (held-side ?r)) (not (free ?b)))",
    ),
}


@dataclass(frozen=True)
class ManipSnapshot:
    """Where a planning call stands: the MDP state and every learnt fact."""

    state: State
    too_wide: frozenset[tuple[str, str]]
    blocked: frozenset[tuple[str, str]]
    no_regrasp: frozenset[str]
    occupied: frozenset[int]
    unreachable: frozenset[int]


class SymbolicModel(InterfaceBase):
    """The symbolic layer of the interface: PDDL out, learnt facts in."""

    def _allowed_styles(self) -> list[str]:
        return [
            s
            for s in (TOP, SIDE)
            if any(self.allows(("pick", NONE, r, s, NONE)) for r in self.layout.reds)
        ]

    def _allowed_bins(self) -> list[int]:
        return [b for b in range(self.layout.n_bins) if self.allows(("place", NONE, NONE, NONE, b))]

    def pddl(self) -> tuple[str, str]:
        """The symbolic domain and problem of the current state and every learnt fact."""
        styles = self._allowed_styles()
        bins = self._allowed_bins()
        reds = self.layout.reds
        offered = [f"pick-{s}" for s in styles]
        if self.allows(("regrasp", NONE, NONE, NONE, NONE)):
            offered.append("regrasp")
        if bins:
            offered.append("place")
        actions = "\n".join(
            f"  (:action {name}\n    :parameters ({_ACTIONS[name][0]})\n"
            f"    :precondition {_ACTIONS[name][1]}\n    :effect {_ACTIONS[name][2]})"
            for name in offered
        )
        bin_objects = " ".join(f"bin_{b}" for b in bins)
        domain = (
            "(define (domain manip-tamp)\n  (:requirements :strips :typing)\n"
            "  (:types red bin)\n"
            f"  (:constants {' '.join(reds)} - red {bin_objects + ' - bin' if bins else ''})\n"
            "  (:predicates (handempty) (holding ?r - red) (held-top ?r - red)\n"
            "    (held-side ?r - red) (ontable ?r - red) (placed ?r - red) (free ?b - bin)\n"
            "    (top-ok ?r - red) (side-ok ?r - red) (regrasp-ok ?r - red)\n"
            "    (reach-ok ?b - bin))\n" + actions + ")\n"
        )
        problem = (
            "(define (problem manip-task)\n  (:domain manip-tamp)\n"
            f"  (:init {' '.join(self._init(bins))})\n"
            f"  (:goal (and {' '.join(f'(placed {r})' for r in reds)})))\n"
        )
        return domain, problem

    def _init(self, bins: list[int]) -> list[str]:
        lay = self.layout
        state = self.state
        held = self._held()
        init: list[str] = []
        if held == NONE:
            init.append("(handempty)")
        else:
            init += [f"(holding {held})", f"(held-{state[2]} {held})"]
        for red in lay.reds:
            loc = str(state[lay.loc_index[red]])
            if loc in (TABLE, STAGING):
                init.append(f"(ontable {red})")
            elif loc.startswith("bin_"):
                init.append(f"(placed {red})")
            for style in (TOP, SIDE):
                if (red, style) not in self.too_wide and (red, style) not in self.blocked:
                    init.append(f"({style}-ok {red})")
            if red not in self.no_regrasp:
                init.append(f"(regrasp-ok {red})")
        for b in bins:
            if state[lay.bin_index[b]] == NONE and b not in self.occupied:
                init.append(f"(free bin_{b})")
            if b not in self.unreachable:
                init.append(f"(reach-ok bin_{b})")
        return init

    def learn(self, facts: list[str]) -> None:
        """Add learnt facts: ``(too-wide r style)``, ``(blocked r style)``,
        ``(no-regrasp r)``, ``(occupied bin_b)``, ``(unreachable bin_b)``."""
        for fact in facts:
            name, *args = fact.strip("() ").split()
            if name == "too-wide":
                self.too_wide.add((args[0], args[1]))
            elif name == "blocked":
                self.blocked.add((args[0], args[1]))
            elif name == "no-regrasp":
                self.no_regrasp.add(args[0])
            elif name == "occupied":
                self.occupied.add(int(args[0][len("bin_") :]))
            elif name == "unreachable":
                self.unreachable.add(int(args[0][len("bin_") :]))
            else:
                raise ValueError(f"unknown fact {fact}")

    def forget(self) -> bool:
        """Drop what the state reached may have changed (a grasp blocked by the other red,
        a bin out of reach holding that red); keep what the geometry fixes (too wide). False
        if there was nothing to drop."""
        learnt = self.blocked or self.no_regrasp or self.occupied or self.unreachable
        self.blocked.clear()
        self.no_regrasp.clear()
        self.occupied.clear()
        self.unreachable.clear()
        return bool(learnt)

    def at_goal(self) -> bool:
        return self.mdp.is_terminal(self.state)

    def snapshot(self) -> ManipSnapshot:
        return ManipSnapshot(
            self.state,
            frozenset(self.too_wide),
            frozenset(self.blocked),
            frozenset(self.no_regrasp),
            frozenset(self.occupied),
            frozenset(self.unreachable),
        )

    def restore(self, snapshot: object) -> None:
        assert isinstance(snapshot, ManipSnapshot)
        self.state = snapshot.state
        self.too_wide = set(snapshot.too_wide)
        self.blocked = set(snapshot.blocked)
        self.no_regrasp = set(snapshot.no_regrasp)
        self.occupied = set(snapshot.occupied)
        self.unreachable = set(snapshot.unreachable)
