"""NAMO's TAMP interface as one object (``domains/namo/tamp/interface.py``): the factory the
MDP offers the planners, the rooms a CAMP allows, and the steps it refines."""

import pytest
from namo_worlds import CHAIN

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.mdp import HELD, NamoMDP
from camp_planner.domains.namo.tamp import NamoTampInterface, allowed_rooms
from camp_planner.planners.tamp import InterfaceSettings, TampInterface

pytestmark = [pytest.mark.pybullet]


def test_the_mdp_offers_an_interface_for_a_planning_call_and_refuses_a_bad_state() -> None:
    mdp = NamoMDP.from_task(CHAIN)
    state = mdp.initial_state()
    iface = mdp.tamp_interface(state, None, 3, InterfaceSettings(motion_timeout_s=2))
    assert isinstance(iface, NamoTampInterface) and iface.allowed is None
    assert iface.seed == 3 and iface.motion_timeout == 2.0 and iface.relaxed_mode == "grid"
    probe: TampInterface = iface  # the protocol the planners drive
    assert not probe.at_goal() and probe.stage_times == {}
    refused = iface.refine(("jump", "goal"), Deadline(10.0))
    assert not refused.ok and "unknown symbolic step" in refused.reason
    iface.close()
    # A held box must be off the floor.
    held = list(state)
    held[2] = "box_r1_0"
    with pytest.raises(ValueError, match="inconsistent state"):
        mdp.tamp_interface(tuple(held), None, 0, InterfaceSettings())
    held[mdp.state_index("box_r1_0")] = HELD
    mdp.tamp_interface(tuple(held), None, 0, InterfaceSettings()).close()
    mdp.close()


def test_a_camps_context_gives_the_rooms_the_robot_may_enter() -> None:
    mdp = NamoMDP.from_task(CHAIN)
    rooms = (0, 1, 2, 5, 8)
    context = Context("disjunction", tuple(Term("robot_room", r) for r in rooms))
    camp = CAMP.build(mdp, context, frozenset(v.name for v in mdp.variables))
    assert allowed_rooms(camp) == frozenset(rooms)
    assert allowed_rooms(None) is None
    universal = CAMP.build(mdp, Context.universal(), frozenset(v.name for v in mdp.variables))
    assert allowed_rooms(universal) is None
    mdp.close()
