"""The manipulation TAMP interface for one planning call: the parts of this package as one
object, and the factory ``ManipMDP.tamp_interface`` calls."""

from __future__ import annotations

from typing import Any

from camp_planner.core.camp import CAMP
from camp_planner.core.mdp import State
from camp_planner.core.planner import Deadline
from camp_planner.domains.manip.layout import HELD, NONE
from camp_planner.domains.manip.tamp.base import Allows, Simulator
from camp_planner.domains.manip.tamp.refine import Refiners
from camp_planner.domains.manip.tamp.symbolic import SymbolicModel
from camp_planner.planners.tamp import InterfaceSettings, Refinement


class ManipTampInterface(Refiners, SymbolicModel):
    """One planning call's symbolic state, geometric state and refiners (the
    :class:`~camp_planner.planners.tamp.TampInterface` the TAMP planner drives)."""

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        """Refine symbolic ``step`` from the current state, executing it in the simulator."""
        name = step[0]
        if name in ("pick-top", "pick-side"):
            return self._refine_pick(step[1], name[len("pick-") :], deadline)
        if name == "regrasp":
            return self._refine_regrasp(step[1], deadline)
        if name == "place":
            return self._refine_place(step[1], step[2], deadline)
        return Refinement(False, reason=f"unknown symbolic step {step}")


def context_test(camp: CAMP | None) -> Allows | None:
    """The context of ``camp`` as a test of (state, action) in the full MDP (None: none)."""
    if camp is None or camp.context is None or camp.context.is_universal:
        return None
    assert camp.base is not None
    return camp.context.compile(camp.base)


def tamp_interface(
    mdp: Simulator, state: State, camp: Any, seed: int, settings: InterfaceSettings
) -> ManipTampInterface:
    """The interface for one planning call from ``state`` in ``mdp`` (under ``camp``'s
    context if given), seeded with ``seed``."""
    held = str(state[1])
    if held != NONE and state[mdp.layout.loc_index[held]] != HELD:
        raise ValueError(f"inconsistent state: {held} is held and also standing somewhere")
    return ManipTampInterface(mdp, state, context_test(camp), seed, settings)
