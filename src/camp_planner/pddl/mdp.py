"""A grounded STRIPS task as a factored MDP: the bridge from PDDL to CSIs and CAMPs.

State variables are the ground fluents (0 or 1); the one action variable ``op`` holds the
ground operator's name (``noop`` does nothing). The transition model is STRIPS semantics
(an inapplicable operator changes nothing, so every state–action pair can be simulated, which
CSI learning needs); the reward of an operator is minus its cost under the problem's metric
(its action cost with ``(:metric minimize (total-cost))``, else 1, as Fast Downward counts it;
see :func:`camp_planner.pddl.grounding.ground`), plus ``goal_reward`` on the step that first
reaches the goal; the goal is terminal.

Samples for CSI learning pair a random operator with a state reached by a random walk from
the initial state and then forced to satisfy that operator's preconditions: a walk alone
rarely reaches the states in which long recipes' last steps are applicable, and a dependence
can only be observed where the operator that carries it applies. The operators' syntax gives
a superset of every fluent's parents; which of them matter under a context is learned.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State, Variable
from camp_planner.pddl.grounding import GroundOperator, GroundTask

NOOP = "noop"
_WALK_POOL = 200
OP = "op"


def _assign(state: State, false: Sequence[int], true: Sequence[int]) -> State:
    """``state`` with the fluents ``false`` set to 0, then those in ``true`` set to 1."""
    out = list(state)
    for i in false:
        out[i] = 0
    for i in true:
        out[i] = 1
    return tuple(out)


@dataclass(frozen=True)
class PddlSource:
    """The lifted files a task came from (planners that read PDDL use them directly)."""

    domain_text: str
    problem_text: str


@dataclass
class StripsMDP(FactoredMDP):
    """One grounded STRIPS task."""

    task: GroundTask | None = None
    goal_reward: float = 0.0
    source: PddlSource | None = None
    _ops: dict[str, GroundOperator] = field(default_factory=dict, repr=False)

    @staticmethod
    def from_task(
        task: GroundTask,
        name: str,
        horizon: int,
        goal_reward: float = 0.0,
        gamma: float = 1.0,
        source: PddlSource | None = None,
    ) -> StripsMDP:
        state_vars = tuple(Variable(f, (0, 1)) for f in task.fluents)
        ops = tuple(o.name for o in task.operators)
        action_vars = (Variable(OP, (NOOP, *ops), default=NOOP),)
        goal = task.goal_pos | task.goal_neg
        return StripsMDP(
            name=name,
            state_vars=state_vars,
            action_vars=action_vars,
            reward_vars=frozenset(task.fluents[i] for i in goal),
            horizon=horizon,
            gamma=gamma,
            task=task,
            goal_reward=goal_reward,
            source=source,
        )

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.task is not None
        self._task = self.task
        self._ops = {o.name: o for o in self._task.operators}
        # Flat index lists make applicability and successors cheap on tuple states.
        self._pre = {
            o.name: (tuple(sorted(o.pre_pos)), tuple(sorted(o.pre_neg)))
            for o in self._task.operators
        }
        self._eff = {
            o.name: (tuple(sorted(o.delete - o.add)), tuple(sorted(o.add)))
            for o in self._task.operators
        }
        self._names = [o.name for o in self._task.operators]
        self._applicable_memo: dict[State, list[Action]] = {}
        self._walks: list[State] = []
        self._round: list[str] = []
        self._goal_pos = tuple(sorted(self._task.goal_pos))
        self._goal_neg = tuple(sorted(self._task.goal_neg))
        self._init: State = tuple(
            1 if i in self._task.init else 0 for i in range(len(self._task.fluents))
        )

    # --- the task --------------------------------------------------------------------------
    def operator(self, name: str) -> GroundOperator:
        return self._ops[name]

    def initial_state(self) -> State:
        return self._init

    def is_goal(self, state: State) -> bool:
        return all(state[i] == 1 for i in self._goal_pos) and all(
            state[i] == 0 for i in self._goal_neg
        )

    def is_terminal(self, state: State) -> bool:
        return self.is_goal(state)

    def return_bound(self) -> float | None:
        # Rewards are the goal's alone (less action costs in PDDL), earned at most once.
        return float(self.goal_reward)

    def reward(self, state: State, action: Action, next_state: State) -> float:
        name = action[0]
        cost = 0.0 if name == NOOP else self._ops[str(name)].cost
        bonus = self.goal_reward if self.is_goal(next_state) and not self.is_goal(state) else 0.0
        return bonus - cost

    # --- the simulator ---------------------------------------------------------------------
    def applicable(self, state: State, name: str) -> bool:
        pos, neg = self._pre[name]
        return all(state[i] == 1 for i in pos) and all(state[i] == 0 for i in neg)

    def successor(self, state: State, action: Action) -> State:
        name = str(action[0])
        if name == NOOP or name not in self._pre or not self.applicable(state, name):
            return state
        dels, adds = self._eff[name]
        return _assign(state, dels, adds)

    def applicable_actions(self, state: State) -> Sequence[Action]:
        found = self._applicable_memo.get(state)
        if found is None:
            if len(self._applicable_memo) > 20_000:
                self._applicable_memo.clear()
            found = [(name,) for name in self._pre if self.applicable(state, name)] or [(NOOP,)]
            self._applicable_memo[state] = found
        return found

    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        return self.successor(state, action)

    def transition_distribution(self, state: State, action: Action) -> Sequence[Outcome]:
        return [Outcome(self.successor(state, action), 1.0)]

    def most_likely_next_state(self, state: State, action: Action) -> State:
        return self.successor(state, action)

    # --- what CSI learning needs -----------------------------------------------------------
    def _walk(self, rng: random.Random) -> State:
        """A state from random walks from s0 (a pool, drawn once: walking costs an
        applicability test of every operator per step)."""
        if not self._walks:
            walker = random.Random(len(self._names))
            for _ in range(_WALK_POOL):
                state = self._init
                for _ in range(walker.randrange(self.horizon + 1)):
                    actions = self.applicable_actions(state)
                    state = self.successor(state, actions[walker.randrange(len(actions))])
                self._walks.append(state)
        return self._walks[rng.randrange(len(self._walks))]

    def sample_state(self, rng: random.Random) -> State:
        state = self._walk(rng)
        if rng.random() < 0.5 and self._names:
            state = self._force(state, rng.choice(self._names))
        return state

    def _force(self, state: State, name: str) -> State:
        """``state`` changed just enough to satisfy operator ``name``'s preconditions."""
        pos, neg = self._pre[name]
        return _assign(state, neg, pos)

    def sample_state_action(self, rng: random.Random) -> tuple[State, Action]:
        """A random operator and a walked-to state forced to satisfy its preconditions, so
        that samples cover every operator, however long the recipe that enables it."""
        if not self._pre or rng.random() < 0.1:
            state = self.sample_state(rng)
            return state, self.sample_action(state, rng)
        # Operators in shuffled rounds rather than independent draws: every operator is
        # covered once per round, so a budget of a few rounds reaches all of them.
        if not self._round:
            self._round = list(self._names)
            rng.shuffle(self._round)
        name = self._round.pop()
        return self._force(self._walk(rng), name), (name,)

    def candidate_parents(self) -> dict[str, frozenset[str]]:
        """A fluent's next value can only depend on itself, the operator, and the
        preconditions of the operators that add or delete it."""
        fluents = self._task.fluents
        parents: dict[str, set[str]] = {f: {f, OP} for f in fluents}
        for op in self._task.operators:
            pre = {fluents[i] for i in op.pre_pos | op.pre_neg}
            for i in op.add | op.delete:
                parents[fluents[i]] |= pre
        return {f: frozenset(p) for f, p in parents.items()}

    def sample_value(self, index: int, rng: random.Random) -> Hashable:
        return rng.randrange(2)

    def describe_action(self, action: Action) -> str:
        return str(action[0])

    def true_fluents(self, state: State) -> list[str]:
        """The names of the fluents that hold in ``state`` (for printing and PDDL)."""
        return [self._task.fluents[i] for i, v in enumerate(state) if v == 1]
