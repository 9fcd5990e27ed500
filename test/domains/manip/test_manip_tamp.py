"""The manipulation TAMP interface (``domains/manip/tamp``): its symbolic model, what it
learns from the simulator's refusals, and plans that, executed in the full world with every
object present, reach the goal and touch nothing a context made irrelevant."""

from __future__ import annotations

import random

import pytest

from camp_planner.core.camp import CAMP, SINK
from camp_planner.core.context import Context, Term
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline
from camp_planner.domains.manip.domain import ManipDomain
from camp_planner.domains.manip.layout import NONE
from camp_planner.domains.manip.mdp import ManipMDP
from camp_planner.domains.manip.tamp import ManipTampInterface
from camp_planner.domains.manip.world import ManipTask
from camp_planner.planners.tamp import TAMP, InterfaceSettings, TampInterface

pytestmark = [pytest.mark.pybullet, pytest.mark.fast_downward]

TOP_ONLY = Context("disjunction", (Term("grasp", "none"), Term("grasp", "top")))


def _task(fat: bool) -> ManipTask:
    domain = ManipDomain()
    for task in domain.make_tasks(domain.default_config(), "test"):
        if (task.reds[0].radius > 0.05) == fat:
            return task
    raise AssertionError("no such task")


def _episode(mdp: ManipMDP, camp: CAMP | None = None, seed: int = 0):  # type: ignore[no-untyped-def]
    return run_episode(
        mdp, TAMP(seed=seed), lam=100.0, timeout_s=60.0, rng=random.Random(seed), camp=camp
    )


def _verify_in_full_world(task: ManipTask, actions: list, states: list) -> None:  # type: ignore[type-arg]
    """Execute ``actions`` in a fresh MDP of the full task: every step must give the state
    the plan expects (every blue and green present)."""
    full = ManipMDP.from_task(task)
    state = full.initial_state()
    assert states[0] == state
    for action, expected in zip(actions, states[1:], strict=True):
        state = full.step(state, action)
        assert state == expected, f"{full.describe_action(action)} went elsewhere"
    assert full.is_terminal(state)
    full.close()


def test_the_interface_models_the_task_and_learns_why_a_grasp_is_infeasible() -> None:
    task = _task(fat=True)
    mdp = ManipMDP.from_task(task)
    iface = mdp.tamp_interface(mdp.initial_state(), None, 0, InterfaceSettings())
    assert isinstance(iface, ManipTampInterface)
    probe: TampInterface = iface
    domain, problem = probe.pddl()
    for action in ("pick-top", "pick-side", "regrasp", "place"):
        assert f"(:action {action}" in domain
    assert "(top-ok red_0)" in problem and "(:goal (and (placed red_0) (placed red_1)))" in problem
    for b in range(9):  # a bin is free exactly when the state says it holds nothing
        assert (f"(free bin_{b})" in problem) == (b in task.free_bins)
    # A fat red's cap is wider than the gripper opens: the simulator says so from the
    # geometry, from the first pose tried, and the fact survives forgetting.
    refused = iface.refine(("pick-top", "red_0"), Deadline(30.0))
    assert not refused.ok and refused.facts == ["(too-wide red_0 top)"]
    iface.learn(refused.facts)
    assert "(top-ok red_0)" not in iface.pddl()[1]
    assert not iface.forget()
    assert "(top-ok red_0)" not in iface.pddl()[1]
    assert not iface.refine(("jump",), Deadline(1.0)).ok
    iface.close()
    mdp.close()


def test_a_fat_object_is_picked_from_the_side_and_the_plan_holds_in_the_full_world() -> None:
    task = _task(fat=True)
    mdp = ManipMDP.from_task(task)
    result = _episode(mdp)
    assert result.success and result.outcome == "goal"
    picks = [a for a in result.actions if a[0] == "pick"]
    assert len(picks) == 2 and all(a[3] == "side" for a in picks)
    places = [a[4] for a in result.actions if a[0] == "place"]
    assert set(places) <= set(task.free_bins)
    # Every move has the OMPL path that got there, from the pose before it.
    for before, action in zip(result.states, result.actions, strict=False):
        if action[0] == "move":
            path = mdp.base_paths[(str(before[0]), str(action[1]))]
            assert path[0][:2] == pytest.approx(mdp.poses[str(before[0])][:2], abs=1e-6)
            assert path[-1][:2] == pytest.approx(mdp.poses[str(action[1])][:2], abs=1e-6)
    _verify_in_full_world(task, result.actions, result.states)
    mdp.close()


def test_a_top_grasp_camp_plan_touches_no_blue_in_the_full_world() -> None:
    task = _task(fat=False)
    mdp = ManipMDP.from_task(task)
    blues = {b.name for b in task.distractors}
    # The CAMP drops every blue (what CSI learning finds under this context; the audit test
    # checks that it does): its simulated world has none of them.
    relevant = frozenset(v.name for v in mdp.state_vars if v.name not in blues)
    relevant |= frozenset(v.name for v in mdp.action_vars)
    camp = CAMP.build(mdp, TOP_ONLY, relevant)
    assert set(camp.dropped_variables) == blues
    result = _episode(mdp, camp)
    assert result.success and result.context_violations == 0
    picks = [a for a in result.actions if a[0] == "pick"]
    assert picks and all(a[3] == "top" for a in picks)
    assert any(a[0] == "regrasp" for a in result.actions)  # placing needs a side grasp
    _verify_in_full_world(task, result.actions, result.states)
    # In the full world, with every blue present: no base pose on the way and no arm pose of
    # a pick touches one.
    full = ManipMDP.from_task(task)
    for state, action in zip(result.states, result.actions, strict=False):
        scene = full.sync(state)
        if action[0] == "move":
            for pose in mdp.base_paths[(str(state[0]), str(action[1]))]:
                assert not scene.base_collisions(pose) & blues
        if action[0] == "pick":
            check = scene.check_grasp(scene.grasp(str(action[2]), str(action[3])))
            assert check.ok and not check.hits
    full.close()
    mdp.close()


def test_a_placement_into_a_bin_outside_the_context_goes_to_the_sink() -> None:
    task = _task(fat=False)
    mdp = ManipMDP.from_task(task)
    allowed = task.free_bins[:2]
    context = Context("disjunction", (Term("bin", NONE), *(Term("bin", b) for b in allowed)))
    camp = CAMP.build(mdp, context, None)
    other = next(b for b in task.free_bins if b not in allowed) if len(task.free_bins) > 2 else 8
    state = camp.initial_state()
    assert camp.most_likely_next_state(state, ("place", NONE, NONE, NONE, other)) == SINK
    assert camp.most_likely_next_state(state, ("move", "right_0", NONE, NONE, NONE)) != SINK
    # The interface offers the task planner only the bins the context allows.
    iface = mdp.tamp_interface(mdp.initial_state(), camp, 0, InterfaceSettings())
    domain, problem = iface.pddl()
    named = {b for b in range(9) if f"bin_{b} " in domain or f"bin_{b})" in problem}
    assert named == set(allowed)
    result = _episode(mdp, camp)
    assert result.success
    assert {a[4] for a in result.actions if a[0] == "place"} <= set(allowed)
    iface.close()
    mdp.close()


def test_a_fallback_taking_over_mid_episode_plans_from_where_the_robot_is() -> None:
    """A CAMP's planner prepares from the task's start; asked to act elsewhere (a fallback
    after another attempt moved the robot), it plans from there instead of giving up."""
    task = _task(fat=False)
    mdp = ManipMDP.from_task(task)
    camp = CAMP.build(mdp, Context.universal(), None)
    planner = TAMP(seed=0)
    planner.prepare(camp, Deadline(60.0))
    start = mdp.initial_state()
    state = next(
        s
        for p in mdp.layout.base_poses
        if (s := mdp.step(start, ("move", p, NONE, NONE, NONE))) != start
    )
    for _ in range(mdp.horizon):
        if mdp.is_terminal(state):
            break
        action = camp.tau_inv(planner.act(camp.sigma(state), Deadline(60.0)))
        state = mdp.step(state, action)
    assert mdp.is_terminal(state) and planner.deviations == 0
    mdp.close()
