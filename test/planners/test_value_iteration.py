import random
from collections.abc import Callable

import pytest
from toy_mdps import LEFT, RIGHT, UP, GridMDP, run_episode

from camp_planner.core.planner import Deadline, PlanningError, PlanningTimeout
from camp_planner.planners.value_iteration import ValueIteration

TRAPPED = (
    "S.T.G",
    ".....",
)


def prepared(mdp: GridMDP, **settings: float) -> ValueIteration:
    planner = ValueIteration(**settings)  # type: ignore[arg-type]
    planner.prepare(mdp, Deadline(None))
    return planner


def test_values_match_hand_computation_on_a_chain() -> None:
    # S . G with slip 0.2: a slip in a one-row corridor bumps the wall and stays put, so
    # V(1) = 0.8 * 1 + 0.2 * 0.9 * V(1) and V(0) = 0.8 * 0.9 * V(1) + 0.2 * 0.9 * V(0).
    mdp = GridMDP(("S.G",), slip=0.2, gamma=0.9)
    planner = prepared(mdp, tolerance=1e-12, max_sweeps=10_000)
    v1 = 0.8 / 0.82
    v0 = 0.72 * v1 / 0.82
    assert planner.value((1, 0)) == pytest.approx(v1, abs=1e-9)
    assert planner.value((0, 0)) == pytest.approx(v0, abs=1e-9)
    assert planner.value((2, 0)) == 0.0
    assert planner.num_states == 3
    assert planner.residual < 1e-12
    assert planner.act((0, 0), Deadline(None)) == RIGHT


def test_default_sweeps_are_capped_by_the_horizon() -> None:
    mdp = GridMDP(("S.G",), slip=0.2, gamma=0.9, horizon=3)
    planner = prepared(mdp, tolerance=1e-12)
    assert planner.sweeps == 3
    assert planner.value((1, 0)) < 0.8 / 0.82


def test_converges_before_max_sweeps_with_loose_tolerance() -> None:
    mdp = GridMDP(("S...G",), gamma=0.9)
    planner = prepared(mdp, max_sweeps=1000)
    # Deterministic chain swept backwards: one sweep finds the values, the next confirms them.
    assert planner.sweeps == 2
    assert planner.value((0, 0)) == pytest.approx(0.9**3)


def test_greedy_policy_reaches_goal_around_the_trap() -> None:
    mdp = GridMDP(TRAPPED)
    planner = prepared(mdp)
    visited = run_episode(planner, mdp, random.Random(0))
    assert (2, 0) not in visited
    assert visited[-1] == (4, 0)
    assert len(visited) - 1 == 6
    assert planner.num_states == len(mdp.cells)


def test_slippery_policy_keeps_away_from_the_trap() -> None:
    mdp = GridMDP(("....", "S.TG", "...."), slip=0.2, horizon=40)
    planner = prepared(mdp, max_sweeps=200)
    reached = [run_episode(planner, mdp, random.Random(seed))[-1] for seed in range(20)]
    assert reached.count((3, 1)) >= 18


def test_works_without_transition_distribution() -> None:
    exact = prepared(GridMDP(TRAPPED, gamma=0.9), max_sweeps=100)
    mdp = GridMDP(TRAPPED, gamma=0.9, enumerable=False)
    sampled = prepared(mdp, max_sweeps=100)
    # Without slips every sample agrees, so the empirical model is the exact one.
    for cell in mdp.cells:
        assert sampled.value(cell) == pytest.approx(exact.value(cell))
    assert run_episode(sampled, mdp, random.Random(0))[-1] == (4, 0)


def test_sampled_model_handles_slips() -> None:
    mdp = GridMDP(("S.G",), slip=0.2, gamma=0.9, enumerable=False)
    planner = prepared(mdp, tolerance=1e-9, max_sweeps=1000, samples_per_action=400)
    assert planner.value((1, 0)) == pytest.approx(0.8 / 0.82, abs=0.05)
    assert planner.act((0, 0), Deadline(None)) == RIGHT


def test_same_seed_gives_the_same_sampled_values() -> None:
    mdp = GridMDP(("S..", "..G"), slip=0.3, enumerable=False)
    a = prepared(mdp, max_sweeps=50)
    b = prepared(mdp, max_sweeps=50)
    assert [a.value(c) for c in mdp.cells] == [b.value(c) for c in mdp.cells]


def test_unenumerated_state_uses_one_step_lookahead() -> None:
    # The right-hand side is unreachable from S, so act must look ahead on the fly.
    mdp = GridMDP(("S.#.G",))
    planner = prepared(mdp)
    assert planner.num_states == 2
    assert planner.act((3, 0), Deadline(None)) == RIGHT


def test_ties_go_to_the_first_action() -> None:
    # Nothing is rewarding, so every action is worth 0 and the first one (up) is chosen.
    mdp = GridMDP(("S..",))
    planner = prepared(mdp)
    assert planner.act((1, 0), Deadline(None)) == UP


def test_prefers_goal_over_trap_when_both_adjacent() -> None:
    mdp = GridMDP(("GST",))
    assert prepared(mdp).act((1, 0), Deadline(None)) == LEFT


def test_max_states_raises_planning_error() -> None:
    mdp = GridMDP(TRAPPED)
    with pytest.raises(PlanningError, match="max_states"):
        prepared(mdp, max_states=5)
    assert prepared(mdp, max_states=len(mdp.cells)).num_states == len(mdp.cells)


def test_expired_deadline_raises_planning_timeout() -> None:
    mdp = GridMDP(TRAPPED)
    with pytest.raises(PlanningTimeout):
        ValueIteration().prepare(mdp, Deadline(0.0))
    planner = prepared(mdp)
    with pytest.raises(PlanningTimeout):
        planner.act(mdp.initial_state(), Deadline(0.0))


def test_deadline_is_checked_during_enumeration_and_sweeps() -> None:
    mdp = GridMDP(["S" + "." * 39] + ["." * 40] * 39)

    def ticking_clock() -> Callable[[], float]:
        ticks = iter(range(10**9))
        return lambda: float(next(ticks))

    # The clock advances once per read, so a budget of n reads expires at the n-th check.
    planner = ValueIteration(max_sweeps=1000)
    with pytest.raises(PlanningTimeout):
        planner.prepare(mdp, Deadline(2.0, clock=ticking_clock()))
    assert planner.num_states == 0  # expired while enumerating the 1600 states
    with pytest.raises(PlanningTimeout):
        planner.prepare(mdp, Deadline(4.0, clock=ticking_clock()))
    assert planner.num_states == 1600  # enumeration finished; the sweep noticed the expiry


def test_terminal_state_has_no_action() -> None:
    mdp = GridMDP(TRAPPED)
    with pytest.raises(PlanningError):
        prepared(mdp).act((4, 0), Deadline(None))


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="tolerance"):
        ValueIteration(tolerance=0.0)
    with pytest.raises(ValueError, match="samples_per_action"):
        ValueIteration(samples_per_action=0)
