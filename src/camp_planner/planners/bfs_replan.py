"""Determinise-and-replan: breadth-first search in the most-likely-outcome model.

The stochastic MDP is replaced by ``mdp.most_likely_next_state`` and searched breadth-first for
the shortest action sequence ending in a rewarding transition. The first action is executed and
the planner replans either at every step or only when the world deviates from the prediction.
"""

from __future__ import annotations

from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import Deadline, NoPlanFound, Planner, PlanningError

_REPLAN_MODES = ("always", "on_deviation")
# Reading the clock at every expansion would cost more than the expansion itself.
_CHECK_EVERY = 256


class BFSReplan(Planner):
    """Shortest rewarding plan in the determinised MDP, replanned on demand.

    Settings:
        replan: ``"always"`` searches at every :meth:`act`; ``"on_deviation"`` follows the last
            plan while the observed state equals the state it predicted.

    ``last_expansions`` is the number of states the last search expanded and ``searches`` the
    number of searches since :meth:`prepare`.
    """

    name = "bfs_replan"

    def __init__(self, seed: int = 0, replan: str = "always") -> None:
        super().__init__(seed)
        if replan not in _REPLAN_MODES:
            raise ValueError(f"replan must be one of {', '.join(_REPLAN_MODES)}; got {replan!r}")
        self.replan = replan
        self.last_expansions = 0
        self.searches = 0
        self._mdp: FactoredMDP | None = None
        self._plan: list[Action] = []
        # _plan_states[i] is the state in which _plan[i] is expected to be taken.
        self._plan_states: list[State] = []
        self._step = 0

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        deadline.check()
        self._mdp = mdp
        self._plan = []
        self._plan_states = []
        self._step = 0
        self.last_expansions = 0
        self.searches = 0

    def act(self, state: State, deadline: Deadline) -> Action:
        deadline.check()
        step = self._step
        if (
            self.replan == "on_deviation"
            and step < len(self._plan)
            and self._plan_states[step] == state
        ):
            self._step = step + 1
            return self._plan[step]
        # Dropped first so that a failed search can't leave a stale plan to follow next time.
        self._plan = []
        self._plan_states = []
        self._step = 0
        self._plan, self._plan_states = self._search(state, deadline)
        self._step = 1
        return self._plan[0]

    @property
    def plan(self) -> list[Action]:
        """The actions of the current plan, from the state it was computed in."""
        return list(self._plan)

    def _search(self, start: State, deadline: Deadline) -> tuple[list[Action], list[State]]:
        """Breadth-first search to the first rewarding transition within the horizon."""
        mdp = self._mdp
        if mdp is None:
            raise PlanningError("BFSReplan.act called before prepare")
        self.searches += 1
        self.last_expansions = 0
        if mdp.is_terminal(start):
            raise NoPlanFound("the current state is terminal")
        successor = mdp.most_likely_next_state
        reward = mdp.reward
        is_terminal = mdp.is_terminal
        applicable_actions = mdp.applicable_actions
        horizon = mdp.horizon

        parents: dict[State, tuple[State, Action] | None] = {start: None}
        frontier = [start]
        expansions = 0
        depth = 0
        while frontier and depth < horizon:
            depth += 1
            # States first reached at the horizon can't be expanded, so only goal-test there.
            keep = depth < horizon
            next_frontier: list[State] = []
            for state in frontier:
                expansions += 1
                if expansions % _CHECK_EVERY == 0:
                    self.last_expansions = expansions
                    deadline.check()
                for action in applicable_actions(state):
                    next_state = successor(state, action)
                    if reward(state, action, next_state) > 0:
                        self.last_expansions = expansions
                        return _extract_plan(parents, state, action, next_state)
                    if keep and next_state not in parents:
                        parents[next_state] = (state, action)
                        if not is_terminal(next_state):
                            next_frontier.append(next_state)
            frontier = next_frontier
        self.last_expansions = expansions
        raise NoPlanFound(
            f"no rewarding transition within {horizon} steps of the determinised model "
            f"({expansions} states expanded)"
        )


def _extract_plan(
    parents: dict[State, tuple[State, Action] | None],
    state: State,
    action: Action,
    next_state: State,
) -> tuple[list[Action], list[State]]:
    """The plan ending in ``state --action--> next_state`` and the states it passes through."""
    actions = [action]
    states = [next_state, state]
    link = parents[state]
    while link is not None:
        state, action = link
        actions.append(action)
        states.append(state)
        link = parents[state]
    actions.reverse()
    states.reverse()
    return actions, states
