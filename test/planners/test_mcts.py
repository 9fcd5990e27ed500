import math
import random
from pathlib import Path

import pytest
from toy_mdps import LEFT, RIGHT, GridMDP, run_episode

from camp_planner.core.mdp import Action, State
from camp_planner.core.planner import Deadline, PlanningError, PlanningTimeout
from camp_planner.planners.mcts import MCTS

# Trap two steps to the left, goal two steps to the right: only the first action differs.
CORRIDOR = ("T.S.G",)


def prepared(mdp: GridMDP, seed: int = 0, **settings: float) -> MCTS:
    planner = MCTS(seed=seed, time_per_step=math.inf, **settings)  # type: ignore[arg-type]
    planner.prepare(mdp, Deadline(None))
    return planner


def actions_of_episode(planner: MCTS, mdp: GridMDP, seed: int) -> list[Action]:
    rng = random.Random(seed)
    state = mdp.initial_state()
    actions: list[Action] = []
    while not mdp.is_terminal(state) and len(actions) < mdp.horizon:
        action = planner.act(state, Deadline(None))
        actions.append(action)
        state = mdp.sample_next_state(state, action, rng)
    return actions


def test_fixed_seed_and_iterations_are_deterministic() -> None:
    mdp = GridMDP(("S...", ".T..", "...G"), slip=0.2, horizon=15)
    runs = [actions_of_episode(prepared(mdp, seed=7, max_iterations=200), mdp, 1) for _ in "ab"]
    assert runs[0] == runs[1]
    planner = prepared(mdp, seed=7, max_iterations=200)
    assert planner.last_iterations == 0
    planner.act(mdp.initial_state(), Deadline(None))
    assert planner.last_iterations == 200


def test_prepare_resets_the_random_stream() -> None:
    mdp = GridMDP(("S...", ".T..", "...G"), slip=0.2, horizon=15)
    planner = prepared(mdp, seed=3, max_iterations=100)
    first = actions_of_episode(planner, mdp, 0)
    planner.prepare(mdp, Deadline(None))
    assert actions_of_episode(planner, mdp, 0) == first


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_first_action_heads_for_the_goal_whatever_the_reward_scale(scale: float) -> None:
    mdp = GridMDP(CORRIDOR, goal_reward=scale, trap_reward=-scale, horizon=10)
    for seed in range(3):
        assert prepared(mdp, seed=seed, max_iterations=300).act((2, 0), Deadline(None)) == RIGHT


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_finds_a_distant_goal_whatever_the_reward_scale(scale: float) -> None:
    # The goal is left of the start and the trap right next to it on the right, so a
    # planner that explores too little (rewards of 1000) or too much (rewards of 1) errs.
    mdp = GridMDP(("G....ST",), goal_reward=scale, trap_reward=-scale, gamma=0.9, horizon=12)
    for seed in range(3):
        planner = prepared(mdp, seed=seed, max_iterations=1500)
        assert planner.act((5, 0), Deadline(None)) == LEFT


def test_reaches_the_goal_in_a_slippery_grid() -> None:
    mdp = GridMDP(("S...", ".T..", "...G"), slip=0.1, horizon=20)
    ends = [
        run_episode(prepared(mdp, seed=seed, max_iterations=300), mdp, random.Random(seed))[-1]
        for seed in range(5)
    ]
    # Every route passes next to the trap, so an unlucky slip may still end an episode there.
    assert ends.count((3, 2)) >= 4


def test_rollout_depth_limits_lookahead() -> None:
    mdp = GridMDP(("S.....G",), horizon=20)
    planner = prepared(mdp, max_iterations=50, rollout_depth=3)
    planner.act((0, 0), Deadline(None))
    # With a 3-step look-ahead the tree holds at most the states 0, 1 and 2 steps away.
    assert planner.last_tree_size <= 1 + 2 + 3


def test_time_budget_alone_stops_the_search() -> None:
    mdp = GridMDP(CORRIDOR, horizon=10)
    planner = MCTS(time_per_step=0.01)
    planner.prepare(mdp, Deadline(None))
    assert planner.act((2, 0), Deadline(None)) in mdp.applicable_actions((2, 0))
    assert planner.last_iterations >= 1


def test_expired_deadline_raises_planning_timeout() -> None:
    mdp = GridMDP(CORRIDOR)
    planner = prepared(mdp, max_iterations=10)
    with pytest.raises(PlanningTimeout):
        planner.act((2, 0), Deadline(0.0))
    with pytest.raises(PlanningTimeout):
        MCTS().prepare(mdp, Deadline(0.0))


def test_deadline_stops_an_unbounded_search() -> None:
    ticks = iter(range(10**9))
    deadline = Deadline(10.0, clock=lambda: float(next(ticks)))
    mdp = GridMDP(CORRIDOR)
    planner = prepared(mdp)
    planner.act((2, 0), deadline)
    assert 1 <= planner.last_iterations <= 10


def test_unbounded_search_is_refused() -> None:
    mdp = GridMDP(CORRIDOR)
    with pytest.raises(PlanningError, match="max_iterations"):
        prepared(mdp).act((2, 0), Deadline(None))


def test_terminal_state_is_an_error() -> None:
    mdp = GridMDP(CORRIDOR)
    with pytest.raises(PlanningError):
        prepared(mdp, max_iterations=10).act((4, 0), Deadline(None))


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="time_per_step"):
        MCTS(time_per_step=0.0)
    with pytest.raises(ValueError, match="max_iterations"):
        MCTS(max_iterations=0)
    with pytest.raises(ValueError, match="exploration"):
        MCTS(exploration=-1.0)


class _EstimatedGrid(GridMDP):
    """A grid whose value estimate is the goal reward discounted by the Manhattan distance."""

    def value_estimate(self, state: State, steps_left: int | None = None) -> float | None:
        x, y = state
        d = min(abs(int(x) - gx) + abs(int(y) - gy) for gx, gy in self.goals)
        if d == 0 or (steps_left is not None and d > steps_left):
            return 0.0
        return self.goal_reward * self.gamma ** (d - 1)


def test_value_estimate_leaves_reach_a_goal_random_rollouts_never_find() -> None:
    # 30 steps down a corridor within 40: a random walk essentially never gets there.
    mdp = _EstimatedGrid(("S" + "." * 29 + "G",), gamma=0.99, horizon=40)
    goal = next(iter(mdp.goals))
    ends = {}
    for leaf in ("rollout", "estimate"):
        planner = MCTS(seed=0, time_per_step=math.inf, max_iterations=60, leaf=leaf)
        planner.prepare(mdp, Deadline(None))
        ends[leaf] = run_episode(planner, mdp, random.Random(0))[-1]
    assert ends["estimate"] == goal
    assert ends["rollout"] != goal


def test_estimate_leaves_need_an_mdp_that_offers_an_estimate() -> None:
    planner = MCTS(seed=0, max_iterations=10, leaf="estimate")
    with pytest.raises(PlanningError, match="value estimate"):
        planner.prepare(GridMDP(CORRIDOR), Deadline(None))
    with pytest.raises(ValueError, match="leaf"):
        MCTS(leaf="heuristic")


@pytest.mark.parametrize("normalise", ["open", "tree"])
def test_paths_that_end_the_episode_in_the_tree_set_the_range_only_when_asked(
    normalise: str,
) -> None:
    mdp = _EstimatedGrid(CORRIDOR, trap_reward=-1000.0, goal_reward=100.0, horizon=10)
    planner = MCTS(
        seed=0, time_per_step=math.inf, max_iterations=100, leaf="estimate", normalise=normalise
    )
    planner.prepare(mdp, Deadline(None))
    assert planner.act((2, 0), Deadline(None)) == RIGHT
    assert planner._lo_all < -900  # the trap was tried...
    # ...but only the tree-wide range counts it.
    assert (planner._lo < -900) == (normalise == "tree")


def test_normalise_must_be_known() -> None:
    with pytest.raises(ValueError, match="normalise"):
        MCTS(normalise="node")


@pytest.mark.slow
def test_a_camp_with_a_sink_reaches_the_goal_in_the_gridworld() -> None:
    # Gridworld test task 5 in the sink-only CAMP of "stay out of rooms 6 and 7": with the
    # tree-wide range the -1000 of the first path into the sink flattened every other
    # difference and the agent wandered until the horizon (return 0).
    from camp_planner.core.objective import run_episode as run_mdp_episode
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create("gridworld", None, Path("unused-artifacts"))
    task = pipe.domain.make_tasks(pipe.config, "test")[5]
    context = next(c for c in pipe.space if c.name == "agent_room ∈ {0,1,2,3,4,5,8}")
    camp = pipe.build_camp(pipe.domain.make_mdp(task, pipe.config), context, True)
    planner = MCTS(seed=0, time_per_step=math.inf, max_iterations=1000, leaf="estimate")
    assert planner.normalise == "open"
    result = run_mdp_episode(camp, planner, lam=0.0, timeout_s=None, rng=random.Random(0))
    assert result.success
