"""NAMO's TAMP interface for one planning call: the parts of this package as one object,
and the factory ``NamoMDP.tamp_interface`` calls."""

from __future__ import annotations

from camp_planner.core.camp import CAMP
from camp_planner.core.mdp import State
from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.layout import HELD, NONE
from camp_planner.domains.namo.tamp.base import Simulator
from camp_planner.domains.namo.tamp.place import PlaceRefiner
from camp_planner.domains.namo.tamp.symbolic import SymbolicModel
from camp_planner.planners.tamp import InterfaceSettings, Refinement


def allowed_rooms(camp: CAMP | None) -> frozenset[int] | None:
    """The rooms a CAMP's context lets the robot enter (None: no constraint)."""
    if camp is None or camp.context is None or camp.context.is_universal:
        return None
    values = camp.context.allowed_values().get("robot_room")
    if values is None:
        return None
    return frozenset(int(str(v)) for v in values)


class NamoTampInterface(PlaceRefiner, SymbolicModel):
    """One planning call's symbolic state, geometric state and refiners (the
    :class:`~camp_planner.planners.tamp.TampInterface` the TAMP planner and Stilman's
    algorithm drive)."""

    def refine(self, step: tuple[str, ...], deadline: Deadline) -> Refinement:
        """Refine symbolic ``step`` from the current state, executing it in the simulator."""
        name = step[0]
        if name.startswith("move_to_"):
            return self._refine_move(name[len("move_to_") :], deadline)
        if name == "pick":
            return self._refine_pick(step[1])
        if name == "place":
            return self._refine_place(step[1], deadline)
        return Refinement(False, reason=f"unknown symbolic step {step}")


def tamp_interface(
    mdp: Simulator, state: State, camp: CAMP | None, seed: int, settings: InterfaceSettings
) -> NamoTampInterface:
    """The interface for one planning call from ``state`` in ``mdp`` (under ``camp``'s
    context if given), seeded with ``seed``."""
    held = state[2]
    if held != NONE and state[mdp.state_index(str(held))] != HELD:
        raise ValueError("inconsistent state: the held box is also on the floor")
    return NamoTampInterface(mdp, state, allowed_rooms(camp), seed, settings)
