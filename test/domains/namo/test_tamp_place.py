"""Placements of NAMO's TAMP interface (``domains/namo/tamp/place.py``): a box is put
down off the ways still needed, the ways to the boxes still to clear included."""

import pytest
from namo_worlds import two_ways

from camp_planner.core.planner import Deadline, PlanningTimeout
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.planners.tamp import AttemptCutoff, InterfaceSettings

pytestmark = [pytest.mark.pybullet]


def test_a_box_is_not_put_down_in_front_of_the_next_box_to_clear() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = two_ways(round_boxes=True)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    iface.learn(["(blocks box_r3_0 goal)", "(blocks box_r4_0 goal)", "(blocks box_r1_0 goal)"])
    iface.moved.add("box_r1_0")
    now = [0.0]
    call = Deadline(60.0, clock=lambda: now[0])
    ahead = iface._ways_ahead("box_r3_0", AttemptCutoff(10.0, call, lambda: 0.0))
    # The box still to clear (box_r4_0 at 3.4, 4.5) and a way from here to it; not the box
    # in hand (box_r3_0) nor the one already moved (box_r1_0).
    assert (3.4, 4.5, 0.0) in ahead
    assert (1.5, 3.4, 0.0) not in ahead and (3.4, 1.5, 0.0) not in ahead
    assert len(ahead) > 10
    assert not iface._spot_ok(3.0, 4.5, ahead)  # right in front of box_r4_0
    # Past the planning call's deadline no way is searched for: nothing found could be
    # used, and with dozens of boxes pending the searches ran 0.6 s past it.
    searched: list[tuple[float, float, float]] = []
    fewest = iface._fewest_boxes_path
    iface._fewest_boxes_path = lambda a, b, solid: searched.append(b) or fewest(a, b, solid)
    now[0] = 61.0
    with pytest.raises(PlanningTimeout):
        iface._ways_ahead("box_r3_0", AttemptCutoff(120.0, call, lambda: 0.0))
    assert searched == []
    iface.close()
    mdp.close()
