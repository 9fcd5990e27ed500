"""The manipulation MDP (``camp_planner.domains.manip.mdp``): its variable layout, and
transitions executed in the PyBullet scene, where an infeasible action changes nothing."""

from collections.abc import Iterator

import pytest
from manip_actions import REGRASP
from manip_actions import move as _move
from manip_actions import pick as _pick
from manip_actions import place as _place

from camp_planner.core.mdp import State
from camp_planner.domains.manip.layout import ABSENT, GREEN, HELD, NONE, layout
from camp_planner.domains.manip.mdp import GOAL_REWARD, ManipMDP
from camp_planner.domains.manip.world import generate_task

SKINNY = generate_task(0, 0)
FAT = generate_task(1, 1)
assert not SKINNY.fat and FAT.fat


@pytest.fixture(scope="module")
def skinny() -> Iterator[ManipMDP]:
    mdp = ManipMDP.from_task(SKINNY)
    yield mdp
    mdp.close()


def test_the_layout_names_every_variable_in_order() -> None:
    lay = layout()
    names = [v.name for v in lay.state_vars]
    assert names[:3] == ["base", "held", "grasp_style"]
    assert names[3:7] == ["red_0_loc", "red_0_pose", "red_1_loc", "red_1_pose"]
    assert names[7:22] == [f"blue_{k}" for k in range(15)]
    assert names[22:] == [f"bin_{j}" for j in range(9)]
    assert [v.name for v in lay.action_vars] == ["skill", "target", "obj", "grasp", "bin"]
    assert all(v.default == NONE for v in lay.action_vars)
    assert all(lay.state_vars[i].default == ABSENT for i in lay.blue_index.values())
    grasp = lay.action_vars[3]
    assert grasp.domain == (NONE, "top", "side")
    assert lay.action_vars[4].domain == (NONE, *range(9))
    assert len(lay.base_poses) == 1 + 2 * 24


def test_the_initial_state_and_no_simulator_until_stepped() -> None:
    mdp = ManipMDP.from_task(SKINNY)
    s0 = mdp.initial_state()
    lay = mdp.layout
    assert s0[:3] == ("start", NONE, NONE)
    assert s0[lay.loc_index["red_0"]] == "table"
    assert [s0[i] == GREEN for i in lay.bin_index] == list(SKINNY.occupied)
    assert mdp._scene is None  # listing tasks and building MDPs never starts PyBullet
    assert not mdp.is_terminal(s0)


def _holding_side(mdp: ManipMDP) -> State:
    """red_0 picked from the top at left_18, then regrasped from the side at right_3."""
    s = mdp.step(mdp.initial_state(), _move("left_18"))
    s = mdp.step(s, _pick("red_0", "top"))
    assert s[1:3] == ("red_0", "top")
    s = mdp.step(s, _move("right_3"))
    s = mdp.step(s, REGRASP)
    assert s[1:3] == ("red_0", "side")
    return s


@pytest.mark.pybullet
def test_a_top_pick_regrasp_and_place_into_a_free_bin(skinny: ManipMDP) -> None:
    lay = skinny.layout
    s = _holding_side(skinny)
    i = lay.loc_index["red_0"]
    assert s[i] == s[i + 1] == HELD
    free = SKINNY.free_bins
    placed = [k for k in free if skinny.step(s, _place(k)) != s]
    assert placed
    k = placed[0]
    after = skinny.step(s, _place(k))
    assert after[1:3] == (NONE, NONE)
    assert after[i] == f"bin_{k}" and after[lay.bin_index[k]] == "red_0"
    b = SKINNY.bins[k]
    pose = after[i + 1]
    assert isinstance(pose, tuple) and b.contains(float(pose[0]), float(pose[1]))


@pytest.mark.pybullet
def test_a_place_into_an_occupied_bin_is_a_no_op_and_frees_up_without_its_green(
    skinny: ManipMDP,
) -> None:
    s = _holding_side(skinny)
    lay = skinny.layout
    occupied = [k for k in range(9) if SKINNY.occupied[k]]
    assert all(skinny.step(s, _place(k)) == s for k in occupied)
    # The same bins without their greens: the occupant is what refused some of them.
    emptied = s
    for k in occupied:
        emptied = skinny.assign_state(emptied, lay.bin_index[k], NONE)
    assert any(skinny.step(emptied, _place(k)) != emptied for k in occupied)


@pytest.mark.pybullet
def test_a_place_needs_a_side_grasp(skinny: ManipMDP) -> None:
    s = skinny.step(skinny.initial_state(), _move("left_18"))
    s = skinny.step(s, _pick("red_0", "top"))
    s = skinny.step(s, _move("right_3"))
    assert all(skinny.step(s, _place(k)) == s for k in range(9))


@pytest.mark.pybullet
def test_a_fat_red_top_pick_is_a_no_op_and_its_side_pick_works() -> None:
    mdp = ManipMDP.from_task(FAT)
    try:
        s0 = mdp.initial_state()
        moved = [mdp.step(s0, _move(p)) for p in mdp.layout.base_poses if p.startswith("left")]
        stands = [s for s in moved if s != s0]
        assert stands
        for red in mdp.layout.reds:
            assert all(mdp.step(s, _pick(red, "top")) == s for s in stands)
        assert any(mdp.step(s, _pick("red_0", "side")) != s for s in stands)
    finally:
        mdp.close()


@pytest.mark.pybullet
def test_a_blue_on_the_side_approach_blocks_the_pick_and_not_a_top_pick(
    skinny: ManipMDP,
) -> None:
    lay = skinny.layout
    s = skinny.step(skinny.initial_state(), _move("left_18"))
    assert skinny.step(s, _pick("red_0", "side")) != s
    assert skinny.step(s, _pick("red_0", "top")) != s
    grasp = skinny.sync(s).grasp("red_0", "side")
    (ax, ay, _), (gx, gy, _) = grasp.approach, grasp.position
    blue = lay.blue_index["blue_0"]
    blocked = skinny.assign_state(s, blue, (round((ax + gx) / 2, 4), round((ay + gy) / 2, 4)))
    assert skinny.step(blocked, _pick("red_0", "side")) == blocked
    # The blue stands beside the red, not over it: a top grasp passes.
    assert skinny.step(blocked, _pick("red_0", "top")) != blocked


@pytest.mark.pybullet
def test_an_absent_blue_is_not_in_the_simulated_world(skinny: ManipMDP) -> None:
    lay = skinny.layout
    i = lay.blue_index["blue_3"]
    s = skinny.assign_state(skinny.initial_state(), i, ABSENT)
    scene = skinny.sync(s)
    (x, _, z), _ = scene.object_pose("blue_3")
    assert z < -10 and x > 100  # out of every query
    s = skinny.assign_state(s, i, skinny.initial_state()[i])
    _, _, z = skinny.sync(s).object_pose("blue_3")[0]
    assert z == pytest.approx(SKINNY.settings.table_height)


def test_the_goal_reward_when_both_reds_are_in_bins() -> None:
    mdp = ManipMDP.from_task(SKINNY)
    lay = mdp.layout
    s = mdp.initial_state()
    one = mdp.assign_state(s, lay.loc_index["red_0"], "bin_1")
    both = mdp.assign_state(one, lay.loc_index["red_1"], "bin_3")
    assert not mdp.is_terminal(one) and mdp.is_terminal(both)
    assert mdp.reward(one, REGRASP, both) == GOAL_REWARD
    assert mdp.reward(s, REGRASP, one) == 0.0
    assert mdp.reward(both, REGRASP, both) == 0.0
    # A terminal state does not move (and never starts the simulator).
    assert mdp.step(both, _move("left_18")) == both
    assert mdp._scene is None


def test_assignments_keep_held_style_and_locations_consistent() -> None:
    mdp = ManipMDP.from_task(SKINNY)
    lay = mdp.layout
    i = lay.loc_index["red_1"]
    s = mdp.assign_state(mdp.initial_state(), 1, "red_1")
    assert s[1:3] == ("red_1", "side") and s[i] == s[i + 1] == HELD
    s2 = mdp.assign_state(s, 1, "red_0")
    assert s2[i] == "table" and s2[lay.loc_index["red_0"]] == HELD
    assert mdp.assign_state(mdp.initial_state(), 2, "top") == mdp.initial_state()
    staged = mdp.assign_state(mdp.initial_state(), i, "staging")
    assert staged[i] == "staging" and mdp._loc_of(staged[i + 1]) == "staging"  # type: ignore[arg-type]


@pytest.mark.pybullet
def test_steps_are_deterministic_and_csi_samples_are_valid(skinny: ManipMDP) -> None:
    import random

    rng = random.Random(3)
    for _ in range(10):
        s, a = skinny.sample_state_action(rng)
        assert len(s) == len(skinny.state_vars) and len(a) == len(skinny.action_vars)
        first = skinny._step(s, a)
        assert skinny._step(s, a) == first
