"""Offline asynchronous value iteration over the states reachable from the initial state.

:meth:`ValueIteration.prepare` enumerates the reachable state space once, caching every
transition (exact, or estimated from samples when the simulator can't enumerate outcomes), then
runs in-place Gauss–Seidel sweeps. :meth:`ValueIteration.act` is a greedy one-step look-ahead.
"""

from __future__ import annotations

import math
import random

from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import Deadline, Planner, PlanningError

# Per action: expected immediate reward, successor indices, and gamma * probability per
# successor. Folding the reward expectation and gamma in up front keeps sweeps to one
# multiply-add per outcome.
_ActionModel = tuple[float, tuple[int, ...], tuple[float, ...]]
# Reading the clock per state would dominate a sweep's cost.
_CHECK_EVERY = 1024


class ValueIteration(Planner):
    """Gauss–Seidel value iteration on the reachable states, greedy at execution time.

    Settings:
        tolerance: stop once the largest Bellman residual of a sweep is below this.
        max_sweeps: stop after this many sweeps (default: the MDP's horizon).
        samples_per_action: simulator calls per (state, action) when the MDP's
            ``transition_distribution`` returns ``None``.
        max_states: raise :class:`PlanningError` rather than enumerate more states than this.

    After :meth:`prepare`, ``num_states`` is the number of enumerated states and ``sweeps`` the
    number of sweeps run; ``residual`` is the last sweep's largest Bellman residual.
    """

    name = "vi"

    def __init__(
        self,
        seed: int = 0,
        tolerance: float = 1e-3,
        max_sweeps: int | None = None,
        samples_per_action: int = 20,
        max_states: int | None = None,
    ) -> None:
        super().__init__(seed)
        if not tolerance > 0:
            raise ValueError(f"tolerance must be positive, got {tolerance}")
        if max_sweeps is not None and max_sweeps < 0:
            raise ValueError(f"max_sweeps must be non-negative, got {max_sweeps}")
        if samples_per_action < 1:
            raise ValueError(f"samples_per_action must be at least 1, got {samples_per_action}")
        if max_states is not None and max_states < 1:
            raise ValueError(f"max_states must be at least 1, got {max_states}")
        self.tolerance = tolerance
        self.max_sweeps = max_sweeps
        self.samples_per_action = samples_per_action
        self.max_states = max_states
        self.num_states = 0
        self.sweeps = 0
        self.residual = math.inf
        self._mdp: FactoredMDP | None = None
        self._rng = random.Random(seed)
        self._index: dict[State, int] = {}
        self._actions: list[tuple[Action, ...]] = []
        self._model: list[tuple[_ActionModel, ...]] = []
        self._values: list[float] = []

    # --- offline phase ---------------------------------------------------------------------
    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        deadline.check()
        self._mdp = mdp
        self._rng = random.Random(self.seed)
        self.num_states = 0
        self.sweeps = 0
        self.residual = math.inf
        self._enumerate(mdp, deadline)
        self._values = [0.0] * self.num_states
        self._sweep(mdp, deadline)

    def _enumerate(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        """Breadth-first discovery of the reachable states, caching each one's model."""
        start = mdp.initial_state()
        index: dict[State, int] = {start: 0}
        states = [start]
        all_actions: list[tuple[Action, ...]] = []
        model: list[tuple[_ActionModel, ...]] = []
        max_states = self.max_states
        gamma = mdp.gamma
        reward = mdp.reward
        self._index = index
        self._actions = all_actions
        self._model = model

        i = 0
        while i < len(states):
            if i % _CHECK_EVERY == 0:
                deadline.check()
            state = states[i]
            i += 1
            if mdp.is_terminal(state):
                all_actions.append(())
                model.append(())
                continue
            actions = tuple(mdp.applicable_actions(state))
            per_action: list[_ActionModel] = []
            for action in actions:
                expected_reward = 0.0
                successors: list[int] = []
                weights: list[float] = []
                for next_state, probability in self._outcomes(mdp, state, action):
                    if probability <= 0.0:
                        continue
                    j = index.get(next_state)
                    if j is None:
                        j = len(states)
                        if max_states is not None and j >= max_states:
                            raise PlanningError(
                                f"value iteration found more than max_states={max_states} "
                                f"reachable states in {mdp.name!r}; raise max_states or plan "
                                "in a smaller (abstracted) MDP"
                            )
                        index[next_state] = j
                        states.append(next_state)
                    expected_reward += probability * reward(state, action, next_state)
                    successors.append(j)
                    weights.append(gamma * probability)
                per_action.append((expected_reward, tuple(successors), tuple(weights)))
            all_actions.append(actions)
            model.append(tuple(per_action))
        self.num_states = len(states)

    def _outcomes(
        self, mdp: FactoredMDP, state: State, action: Action
    ) -> list[tuple[State, float]]:
        """T(state, action, ·) as (successor, probability) pairs, estimated if need be."""
        distribution = mdp.transition_distribution(state, action)
        if distribution is not None:
            return [(o.state, o.probability) for o in distribution]
        counts: dict[State, int] = {}
        rng = self._rng
        sample = mdp.sample_next_state
        for _ in range(self.samples_per_action):
            next_state = sample(state, action, rng)
            counts[next_state] = counts.get(next_state, 0) + 1
        share = 1.0 / self.samples_per_action
        return [(next_state, count * share) for next_state, count in counts.items()]

    def _sweep(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        """In-place Bellman backups until the residual drops below tolerance."""
        values = self._values
        model = self._model
        n = len(values)
        max_sweeps = mdp.horizon if self.max_sweeps is None else self.max_sweeps
        tolerance = self.tolerance
        while self.sweeps < max_sweeps:
            residual = 0.0
            # Enumeration is breadth-first from s0, so sweeping it backwards pulls values from
            # far-away (often goal) states towards s0 within a single sweep.
            for block_end in range(n, 0, -_CHECK_EVERY):
                deadline.check()
                for s in range(block_end - 1, max(block_end - _CHECK_EVERY, 0) - 1, -1):
                    per_action = model[s]
                    if not per_action:
                        continue
                    best = -math.inf
                    for expected_reward, successors, weights in per_action:
                        q = expected_reward
                        for j, w in zip(successors, weights, strict=True):
                            q += w * values[j]
                        if q > best:
                            best = q
                    change = abs(best - values[s])
                    if change > residual:
                        residual = change
                    values[s] = best
            self.sweeps += 1
            self.residual = residual
            if residual < tolerance:
                break

    # --- execution -------------------------------------------------------------------------
    def value(self, state: State) -> float:
        """V(state) after :meth:`prepare`; 0 for states that weren't enumerated."""
        i = self._index.get(state)
        return 0.0 if i is None else self._values[i]

    def q_values(self, state: State) -> list[tuple[Action, float]]:
        """Q(state, a) for every applicable action, in the MDP's action order."""
        mdp = self._mdp
        if mdp is None:
            raise PlanningError("ValueIteration used before prepare")
        values = self._values
        i = self._index.get(state)
        result: list[tuple[Action, float]] = []
        if i is not None:
            for action, (expected_reward, successors, weights) in zip(
                self._actions[i], self._model[i], strict=True
            ):
                q = expected_reward
                for j, w in zip(successors, weights, strict=True):
                    q += w * values[j]
                result.append((action, q))
            return result
        if mdp.is_terminal(state):
            return []
        # Off the enumerated space: one exact (or sampled) look-ahead, unknown successors
        # counting as worthless since nothing better is known about them.
        gamma = mdp.gamma
        index = self._index
        for action in mdp.applicable_actions(state):
            q = 0.0
            for next_state, probability in self._outcomes(mdp, state, action):
                known = index.get(next_state)
                future = 0.0 if known is None else values[known]
                q += probability * (mdp.reward(state, action, next_state) + gamma * future)
            result.append((action, q))
        return result

    def act(self, state: State, deadline: Deadline) -> Action:
        deadline.check()
        q_values = self.q_values(state)
        if not q_values:
            raise PlanningError("no applicable actions in the current state (terminal?)")
        best_action, best = q_values[0]
        for action, q in q_values[1:]:
            # The margin makes ties exact up to float noise, so they go to the earlier action.
            if q > best + 1e-12 * (1.0 + abs(best)):
                best_action, best = action, q
        return best_action
