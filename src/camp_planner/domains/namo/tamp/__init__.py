"""The NAMO side of the TAMP interface layer: a symbolic model, and refiners that turn its
steps into motions with OMPL and grasps and placements with PyBullet.

Symbolic model (:mod:`.symbolic`): locations ``here``, ``goal`` and ``near_<box>``; one
move action per destination, which requires every box known to block the way there to have
been moved; ``pick`` and ``place`` put a box aside. Initially nothing is known to block
anything (optimism).

Refinement (:mod:`.move`, :mod:`.place`): a move samples target poses and asks OMPL
(:mod:`.motion`) for a path in the current collision world (walls, the goal object and
every box the planning problem keeps). When no path exists it finds a path through movable
boxes (:mod:`.routes`) and reports the boxes on it as ``(blocks b l)`` facts, as in
Srivastava et al.'s interface layer. Placements must stay clear of doorways and of the ways
the robot still needs. Under a CAMP the robot, with anything it carries, keeps out of
forbidden rooms entirely, so the boxes those rooms hold (dropped from the planning problem)
can never be touched. Every refined action is executed in the MDP's simulator
(``NamoMDP.step``) before the next one is refined, so a finished plan has been verified by
execution. Budgets are counted in work (:mod:`.work`).

The parts, each a class the interface (:mod:`.interface`) is made of, lowest first:
:mod:`.base` (the call's state), :mod:`.symbolic`, :mod:`.work`, :mod:`.grid` and
:mod:`.routes`, :mod:`.motion` (the one part that asks OMPL, through
:mod:`camp_planner.motion.ompl_se2`), :mod:`.move`, :mod:`.place`.
"""

from camp_planner.domains.namo.tamp.base import PLAN_MARGIN
from camp_planner.domains.namo.tamp.interface import (
    NamoTampInterface,
    allowed_rooms,
    tamp_interface,
)

__all__ = ["PLAN_MARGIN", "NamoTampInterface", "allowed_rooms", "tamp_interface"]
