"""The symbolic model of NAMO's TAMP interface (``domains/namo/tamp/symbolic.py``): facts
learnt in the order a way meets the boxes, forgotten weakest first, and snapshots."""

import pytest
from namo_worlds import CHAIN

from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.planners.tamp import InterfaceSettings

pytestmark = [pytest.mark.pybullet, pytest.mark.fast_downward]


def test_boxes_met_along_one_way_are_cleared_in_the_order_met() -> None:
    # Learnt without precedences, the three facts let the task planner clear the far box
    # first; its own way, planned from the start, then crossed the near ones and the facts
    # cycled (7 of the 50 default training tasks gave up after max_replans).
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.planners.fast_downward import FDRunner

    mdp = NamoMDP.from_task(CHAIN)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    way = ["box_r1_0", "box_r4_1", "box_r3_0"]  # the order the way to the goal meets them
    iface.learn([f"(blocks {b} goal)" for b in way])
    assert iface.blocks == {"goal": set(way)}  # observed
    assert iface.after["near_box_r4_1"] == {"box_r1_0"}  # inferred from the order met
    assert iface.after["near_box_r3_0"] == {"box_r1_0", "box_r4_1"}
    assert "near_box_r1_0" not in iface.after
    plan = FDRunner().solve(*iface.pddl(), Deadline(60.0))
    picks = [line.strip("()").split()[1] for line in plan if line.startswith("(pick")]
    assert picks == way
    iface.close()
    mdp.close()


def test_an_inferred_order_is_forgotten_before_what_was_observed() -> None:
    # The way to the goal meets box_r1_0 before box_r4_1, which orders box_r1_0 first; then
    # the way to box_r1_0 is found blocked by box_r4_1. The observed obstruction contradicts
    # the inferred order, and forgetting both rediscovered the same pair (a cycle until
    # max_replans, on NAMO test task 3 of eval seed 0).
    from camp_planner.core.planner import Unsolvable
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.planners.fast_downward import FDRunner

    mdp = NamoMDP.from_task(CHAIN)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    iface.learn(["(blocks box_r1_0 goal)", "(blocks box_r4_1 goal)"])
    iface.learn(["(blocks box_r4_1 near_box_r1_0)"])
    with pytest.raises(Unsolvable):
        FDRunner().solve(*iface.pddl(), Deadline(60.0))
    assert iface.forget()  # drops the inferred order only
    assert iface.after == {}
    assert iface.blocks == {"goal": {"box_r1_0", "box_r4_1"}, "near_box_r1_0": {"box_r4_1"}}
    plan = FDRunner().solve(*iface.pddl(), Deadline(60.0))
    picks = [line.strip("()").split()[1] for line in plan if line.startswith("(pick")]
    assert picks == ["box_r4_1", "box_r1_0"]
    assert iface.forget()  # now the observed facts go too
    assert iface.blocks == {} and not iface.forget()
    iface.close()
    mdp.close()


def test_a_snapshot_restores_the_state_and_what_is_known_and_keeps_no_alias() -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    mdp = NamoMDP.from_task(CHAIN)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    iface.learn(["(blocks box_r1_0 goal)"])
    iface.keep_out.append((1.0, 1.0, 0.0))
    snap = iface.snapshot()
    before = (iface.state, iface.at, set(iface.moved), dict(iface.blocks), set(iface.near))
    iface.learn(["(blocks box_r4_1 near_box_r1_0)"])
    iface.moved.add("box_r1_0")
    iface.at, iface.state = (
        "near_box_r1_0",
        mdp.step(iface.state, ("move", (2.0, 1.5, 0.0), "none")),
    )
    iface.keep_out.append((2.0, 2.0, 0.0))
    iface.restore(snap)
    assert (iface.state, iface.at, iface.moved, iface.blocks, iface.near) == before
    assert iface.keep_out == [(1.0, 1.0, 0.0)]
    # What the interface holds after a restore is its own: changing it leaves the snapshot.
    iface.moved.add("box_r3_0")
    iface.blocks["goal"].add("box_r3_0")
    iface.restore(snap)
    assert iface.moved == set() and iface.blocks == {"goal": {"box_r1_0"}}
    iface.close()
    mdp.close()
