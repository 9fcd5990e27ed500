"""CAMP construction (paper Definition 3).

Given an MDP, a context and the relevant variables, the CAMP projects states and actions onto
the relevant variables (σ, τ), fills dropped variables back in with right inverses, and sends
every state–action pair outside the context to an absorbing sink ⊥.

Design choices, documented because the paper leaves them open:
* R(⊥) = −∞ becomes a finite ``sink_reward`` paid once on entering ⊥, which then ends the
  episode: planners need finite arithmetic, and a penalty beyond any achievable return makes
  the sink exactly as unattractive.
* The right inverse σ⁻¹ fills a dropped state variable with its ``default`` when the domain
  declares one (an inert value, e.g. "removed" for an obstacle, so the simulator does no work
  for it), else with its value in the task's initial state. The paper notes the choice is
  inconsequential for dropped variables; τ⁻¹ fills dropped action variables with their no-op.
* ``relevant=None`` builds the ablation: the sink only, nothing projected away.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter

from camp_planner.core.context import Context
from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State

SINK: State = ("⊥",)
_MEMO_LIMIT = 500_000


@dataclass
class CAMP(FactoredMDP):
    """An MDP with a context imposed and irrelevant variables dropped."""

    base: FactoredMDP | None = None
    context: Context | None = None
    sink_reward: float = -1000.0
    keep_state: tuple[int, ...] = ()
    keep_action: tuple[int, ...] = ()

    @staticmethod
    def build(
        base: FactoredMDP,
        context: Context,
        relevant: frozenset[str] | None,
        sink_reward: float = -1000.0,
    ) -> CAMP:
        if relevant is None:
            keep_s = tuple(range(len(base.state_vars)))
            keep_a = tuple(range(len(base.action_vars)))
        else:
            # Context variables always stay: the CAMP must see them to detect violations.
            wanted = relevant | context.variables
            keep_s = tuple(i for i, v in enumerate(base.state_vars) if v.name in wanted)
            keep_a = tuple(i for i, v in enumerate(base.action_vars) if v.name in wanted)
        camp = CAMP(
            name=f"{base.name}|{context.id}",
            state_vars=tuple(base.state_vars[i] for i in keep_s),
            action_vars=tuple(base.action_vars[i] for i in keep_a),
            reward_vars=base.reward_vars,
            horizon=base.horizon,
            gamma=base.gamma,
            base=base,
            context=context,
            sink_reward=sink_reward,
            keep_state=keep_s,
            keep_action=keep_a,
        )
        return camp

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.base is not None and self.context is not None
        base = self.base
        init = base.initial_state()
        self._fill_state: list[Hashable] = [
            v.default if v.default is not None else init[i] for i, v in enumerate(base.state_vars)
        ]
        self._fill_action: list[Hashable] = [v.default for v in base.action_vars]
        self._in_context = self.context.compile(base)
        self._base = base
        self._full_state = len(self.keep_state) == len(base.state_vars)
        self._full_action = len(self.keep_action) == len(base.action_vars)
        # Planners ask for the same abstract states and actions again and again; the right
        # inverses are pure functions, so they are memoised (bounded, cleared when full).
        self._sigma_inv_memo: dict[State, State] = {}
        self._sigma_get = _tuple_getter(self.keep_state)
        self._tau_get = _tuple_getter(self.keep_action)
        self._tau_inv_memo: dict[Action, Action] = {}
        self._context_estimate = base.context_value_estimate(self.context)

    # --- the abstraction -------------------------------------------------------------------
    @property
    def dropped_variables(self) -> tuple[str, ...]:
        kept = {v.name for v in self.variables}
        return tuple(v.name for v in self._base.variables if v.name not in kept)

    def sigma(self, state: State) -> State:
        if state == SINK or self._full_state:
            return state
        return self._sigma_get(state)

    def sigma_inv(self, abstract: State) -> State:
        if self._full_state:
            return abstract
        found = self._sigma_inv_memo.get(abstract)
        if found is not None:
            return found
        full = list(self._fill_state)
        for value, i in zip(abstract, self.keep_state, strict=True):
            full[i] = value
        if len(self._sigma_inv_memo) >= _MEMO_LIMIT:
            self._sigma_inv_memo.clear()
        result = self._sigma_inv_memo[abstract] = tuple(full)
        return result

    def tau(self, action: Action) -> Action:
        if self._full_action:
            return action
        return self._tau_get(action)

    def tau_inv(self, abstract: Action) -> Action:
        if self._full_action:
            return abstract
        found = self._tau_inv_memo.get(abstract)
        if found is not None:
            return found
        full = list(self._fill_action)
        for value, i in zip(abstract, self.keep_action, strict=True):
            full[i] = value
        if len(self._tau_inv_memo) >= _MEMO_LIMIT:
            self._tau_inv_memo.clear()
        result = self._tau_inv_memo[abstract] = tuple(full)
        return result

    def in_context(self, state: State, action: Action) -> bool:
        """Whether a ground (s, a) of the base MDP is inside the context."""
        return self._in_context(state, action)

    # --- FactoredMDP -----------------------------------------------------------------------
    def initial_state(self) -> State:
        return self.sigma(self._base.initial_state())

    def value_estimate(self, state: State, steps_left: int | None = None) -> float | None:
        if state == SINK:
            return None
        if self._context_estimate is not None:
            return self._context_estimate(self.sigma_inv(state), steps_left)
        # The base estimate ignores the context: it stays optimistic, and the search learns
        # where the sink lies.
        return self._base.value_estimate(self.sigma_inv(state), steps_left)

    def applicable_actions(self, state: State) -> Sequence[Action]:
        if state == SINK:
            return [tuple(self._fill_action[i] for i in self.keep_action)]
        ground = self._base.applicable_actions(self.sigma_inv(state))
        return list(dict.fromkeys(self.tau(a) for a in ground))

    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        if state == SINK:
            return SINK
        s, a = self.sigma_inv(state), self.tau_inv(action)
        if not self._in_context(s, a):
            return SINK
        return self.sigma(self._base.sample_next_state(s, a, rng))

    def transition_distribution(self, state: State, action: Action) -> Sequence[Outcome] | None:
        if state == SINK:
            return [Outcome(SINK, 1.0)]
        s, a = self.sigma_inv(state), self.tau_inv(action)
        if not self._in_context(s, a):
            return [Outcome(SINK, 1.0)]
        outcomes = self._base.transition_distribution(s, a)
        if outcomes is None:
            return None
        merged: dict[State, float] = {}
        for o in outcomes:
            key = self.sigma(o.state)
            merged[key] = merged.get(key, 0.0) + o.probability
        return [Outcome(k, p) for k, p in merged.items()]

    def most_likely_next_state(self, state: State, action: Action) -> State:
        if state == SINK:
            return SINK
        s, a = self.sigma_inv(state), self.tau_inv(action)
        if not self._in_context(s, a):
            return SINK
        return self.sigma(self._base.most_likely_next_state(s, a))

    def reward(self, state: State, action: Action, next_state: State) -> float:
        if state == SINK:
            return 0.0
        if next_state == SINK:
            return self.sink_reward
        return self._base.reward(
            self.sigma_inv(state), self.tau_inv(action), self.sigma_inv(next_state)
        )

    def is_terminal(self, state: State) -> bool:
        return state == SINK or self._base.is_terminal(self.sigma_inv(state))

    def is_goal(self, state: State) -> bool:
        return state != SINK and self._base.is_goal(self.sigma_inv(state))

    def sample_state(self, rng: random.Random) -> State:
        return self.sigma(self._base.sample_state(rng))


# A continuous variable counts as this many values: a nominal resolution, so that sizes stay
# finite and comparable across contexts (only differences between CAMPs matter).
CONTINUOUS_VALUES = 1000.0


def log_state_count(mdp: FactoredMDP, names: Iterable[str] | None = None) -> float:
    """The natural log of how many states ``mdp`` can be in when only the state variables
    ``names`` are tracked (None: all): the sum of their task-specific value counts' logs.
    An upper bound on the reachable abstract state space, and the quantity an enumerating
    planner's cost grows with; computed without building the CAMP, in microseconds."""
    wanted = None if names is None else set(names)
    total = 0.0
    for i, var in enumerate(mdp.state_vars):
        if wanted is not None and var.name not in wanted:
            continue
        count = mdp.value_count(i)
        total += math.log(max(1.0, CONTINUOUS_VALUES if math.isinf(count) else count))
    return total


def _tuple_getter(
    indices: tuple[int, ...],
) -> Callable[[tuple[Hashable, ...]], tuple[Hashable, ...]]:
    """A fast projection onto ``indices`` that always returns a tuple."""
    if len(indices) == 1:
        (only,) = indices
        return lambda t: (t[only],)
    if not indices:
        return lambda t: ()
    getter = itemgetter(*indices)
    return lambda t: getter(t)
