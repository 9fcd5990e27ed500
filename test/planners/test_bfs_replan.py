import random

import pytest
from toy_mdps import DOWN, RIGHT, UP, GridMDP, run_episode

from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State, Variable
from camp_planner.core.planner import Deadline, NoPlanFound, PlanningTimeout
from camp_planner.planners.bfs_replan import BFSReplan

WALLED = (
    "S.#..",
    "..#.G",
    ".....",
)
TRAPPED = (
    "S.T.G",
    ".....",
)


def prepared(mdp: GridMDP, replan: str = "always") -> BFSReplan:
    planner = BFSReplan(replan=replan)
    planner.prepare(mdp, Deadline(None))
    return planner


def test_plan_is_a_shortest_rewarding_plan_around_walls() -> None:
    mdp = GridMDP(WALLED)
    planner = prepared(mdp)
    planner.act(mdp.initial_state(), Deadline(None))
    # Manhattan distance is 5 but the wall forces a detour through the bottom row.
    assert len(planner.plan) == 7
    visited = run_episode(prepared(mdp), mdp, random.Random(0))
    assert visited[-1] == (4, 1)
    assert len(visited) - 1 == 7


def test_plan_goes_around_the_trap() -> None:
    mdp = GridMDP(TRAPPED)
    visited = run_episode(prepared(mdp), mdp, random.Random(0))
    assert (2, 0) not in visited
    assert visited[-1] == (4, 0)
    assert len(visited) - 1 == 6


def test_first_action_of_shortest_plan() -> None:
    mdp = GridMDP(("S..", "..G"))
    action = prepared(mdp).act((2, 0), Deadline(None))
    assert action == DOWN
    assert prepared(mdp).act((1, 1), Deadline(None)) == RIGHT


def test_walled_off_goal_raises_no_plan_found() -> None:
    mdp = GridMDP(("S.#G", "..#."))
    planner = prepared(mdp)
    with pytest.raises(NoPlanFound):
        planner.act(mdp.initial_state(), Deadline(None))
    # The visited set expands every reachable cell once, not once per path.
    assert planner.last_expansions == 4


def test_goal_beyond_horizon_raises_no_plan_found() -> None:
    layout = ("S.....G",)
    with pytest.raises(NoPlanFound):
        prepared(GridMDP(layout, horizon=5)).act((0, 0), Deadline(None))
    assert prepared(GridMDP(layout, horizon=6)).act((0, 0), Deadline(None)) == RIGHT


def test_terminal_states_are_not_expanded() -> None:
    # The only route to the goal runs through the trap, which ends the episode.
    with pytest.raises(NoPlanFound):
        prepared(GridMDP(("STG",))).act((0, 0), Deadline(None))


def test_expired_deadline_raises_planning_timeout() -> None:
    mdp = GridMDP(WALLED)
    planner = prepared(mdp)
    with pytest.raises(PlanningTimeout):
        planner.act(mdp.initial_state(), Deadline(0.0))
    with pytest.raises(PlanningTimeout):
        BFSReplan().prepare(mdp, Deadline(0.0))


def test_long_search_checks_the_deadline_while_expanding() -> None:
    ticks = iter(range(10**9))
    # The clock advances once per read, so only a check inside the search can notice expiry.
    deadline = Deadline(3.0, clock=lambda: float(next(ticks)))
    mdp = GridMDP(["S" + "." * 39] + ["." * 40] * 39, horizon=200)
    planner = prepared(mdp)
    with pytest.raises(PlanningTimeout):
        planner.act(mdp.initial_state(), deadline)
    assert planner.last_expansions >= 256


def test_always_replans_every_step() -> None:
    mdp = GridMDP(WALLED)
    planner = prepared(mdp, "always")
    visited = run_episode(planner, mdp, random.Random(0))
    assert planner.searches == len(visited) - 1


def test_on_deviation_keeps_the_plan_while_on_track() -> None:
    mdp = GridMDP(WALLED)
    planner = prepared(mdp, "on_deviation")
    visited = run_episode(planner, mdp, random.Random(0))
    assert visited[-1] == (4, 1)
    assert planner.searches == 1


def test_on_deviation_replans_when_the_state_differs_from_the_prediction() -> None:
    mdp = GridMDP(("S..", "..G"))
    planner = prepared(mdp, "on_deviation")
    first = planner.act((0, 0), Deadline(None))
    predicted = mdp.most_likely_next_state((0, 0), first)
    planner.act(predicted, Deadline(None))
    assert planner.searches == 1
    planner.act((0, 0), Deadline(None))
    assert planner.searches == 2


def test_reaches_goal_despite_slips() -> None:
    mdp = GridMDP(("S...", "....", "...G"), slip=0.2, horizon=40)
    for seed in range(5):
        planner = prepared(mdp, "on_deviation")
        assert run_episode(planner, mdp, random.Random(seed))[-1] == (3, 2)


def test_unknown_replan_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="replan"):
        BFSReplan(replan="sometimes")


def test_up_is_found_when_goal_is_above() -> None:
    mdp = GridMDP(("G", ".", "S"))
    assert prepared(mdp).act((0, 2), Deadline(None)) == UP


class _Gamble(FactoredMDP):
    """Position 0..3, goal at 3. ``walk`` advances one step surely; ``gamble`` jumps to the
    goal with probability 0.1 and otherwise stays."""

    def __init__(self) -> None:
        super().__init__(
            name="gamble",
            state_vars=(Variable("pos", (0, 1, 2, 3)),),
            action_vars=(Variable("act", ("walk", "gamble")),),
            reward_vars=frozenset({"pos"}),
            horizon=10,
        )

    def initial_state(self) -> State:
        return (0,)

    def reward(self, state: State, action: Action, next_state: State) -> float:
        return 1.0 if next_state == (3,) and state != (3,) else 0.0

    def is_terminal(self, state: State) -> bool:
        return state == (3,)

    def applicable_actions(self, state: State) -> list[Action]:
        return [("walk",), ("gamble",)]

    def transition_distribution(self, state: State, action: Action) -> list[Outcome]:
        pos = int(str(state[0]))
        if action == ("walk",):
            return [Outcome((min(pos + 1, 3),), 1.0)]
        return [Outcome((pos,), 0.9), Outcome((3,), 0.1)]

    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        outcomes = self.transition_distribution(state, action)
        return outcomes[0].state if rng.random() < outcomes[0].probability else outcomes[-1].state

    def sample_state(self, rng: random.Random) -> State:
        return (rng.randrange(4),)


def test_most_likely_determinisation_walks() -> None:
    planner = BFSReplan(determinization="most_likely")
    planner.prepare(_Gamble(), Deadline(None))
    assert planner.act((0,), Deadline(None)) == ("walk",)
    assert len(planner.plan) == 3


def test_all_outcomes_determinisation_counts_on_luck() -> None:
    planner = BFSReplan(determinization="all_outcomes")
    planner.prepare(_Gamble(), Deadline(None))
    assert planner.act((0,), Deadline(None)) == ("gamble",)
    assert planner.plan == [("gamble",)]


def test_all_outcomes_matches_on_deterministic_grids() -> None:
    mdp = GridMDP(WALLED)
    a, b = BFSReplan(), BFSReplan(determinization="all_outcomes")
    for p in (a, b):
        p.prepare(mdp, Deadline(None))
        p.act(mdp.initial_state(), Deadline(None))
    assert len(a.plan) == len(b.plan) == 7


def test_unknown_determinisation_is_rejected() -> None:
    with pytest.raises(ValueError, match="determinization"):
        BFSReplan(determinization="optimistic")
