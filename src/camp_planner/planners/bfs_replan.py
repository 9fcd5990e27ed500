"""Determinise-and-replan: breadth-first graph search in a determinised model.

The stochastic MDP is replaced by a deterministic graph and searched breadth-first for the
shortest action sequence ending in a rewarding transition. Two determinisations (as in
FF-Replan): ``most_likely`` keeps only ``mdp.most_likely_next_state``; ``all_outcomes`` turns
every outcome with non-zero probability into an edge (optimistic: the plan may count on lucky
outcomes; replanning corrects it). The first action is executed and the planner replans either
at every step or only when the world deviates from the prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import Deadline, NoPlanFound, Planner, PlanningError

_REPLAN_MODES = ("always", "on_deviation")
_DETERMINISATIONS = ("most_likely", "all_outcomes")
# Reading the clock at every expansion would cost more than the expansion itself.
_CHECK_EVERY = 256


class BFSReplan(Planner):
    """Shortest rewarding plan in the determinised MDP, replanned on demand.

    Settings:
        replan: ``"always"`` searches at every :meth:`act`; ``"on_deviation"`` follows the last
            plan while the observed state equals the state it predicted.
        determinization: ``"most_likely"`` or ``"all_outcomes"`` (see the module docstring).

    ``last_expansions`` is the number of states the last search expanded and ``searches`` the
    number of searches since :meth:`prepare`.
    """

    name = "bfs_replan"

    def __init__(
        self, seed: int = 0, replan: str = "always", determinization: str = "most_likely"
    ) -> None:
        super().__init__(seed)
        if replan not in _REPLAN_MODES:
            raise ValueError(f"replan must be one of {', '.join(_REPLAN_MODES)}; got {replan!r}")
        if determinization not in _DETERMINISATIONS:
            raise ValueError(
                f"determinization must be one of {', '.join(_DETERMINISATIONS)}; "
                f"got {determinization!r}"
            )
        self.replan = replan
        self.determinization = determinization
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

    def _successors(self, mdp: FactoredMDP) -> Callable[[State, Action], Iterable[State]]:
        return _all_outcomes(mdp) if self.determinization == "all_outcomes" else _most_likely(mdp)

    @property
    def plan(self) -> list[Action]:
        """The actions of the current plan, from the state it was computed in."""
        return list(self._plan)

    def steps_to_go(self) -> int | None:
        # ``_step`` already points past the action the last ``act`` returned.
        return len(self._plan) - self._step + 1 if self._plan else None

    def _search(self, start: State, deadline: Deadline) -> tuple[list[Action], list[State]]:
        """Breadth-first search to the first rewarding transition within the horizon."""
        mdp = self._mdp
        if mdp is None:
            raise PlanningError("BFSReplan.act called before prepare")
        self.searches += 1
        self.last_expansions = 0
        if mdp.is_terminal(start):
            raise NoPlanFound("the current state is terminal")
        successors = self._successors(mdp)
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
                    for next_state in successors(state, action):
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


def _most_likely(mdp: FactoredMDP) -> Callable[[State, Action], Iterable[State]]:
    successor = mdp.most_likely_next_state
    return lambda state, action: (successor(state, action),)


def _all_outcomes(mdp: FactoredMDP) -> Callable[[State, Action], Iterable[State]]:
    def successors(state: State, action: Action) -> Iterable[State]:
        outcomes = mdp.transition_distribution(state, action)
        if outcomes is None:  # a simulator that can't enumerate: its most likely outcome
            return (mdp.most_likely_next_state(state, action),)
        # Most likely first, so ties in depth prefer the plan that needs the least luck.
        ranked = sorted(outcomes, key=lambda o: -o.probability)
        return [o.state for o in ranked if o.probability > 0]

    return successors


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
