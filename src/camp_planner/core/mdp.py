"""Factored MDPs as black boxes: variables, states, actions and the simulator interface.

States and actions are plain tuples aligned with the MDP's variable lists, so they hash and
compare cheaply: planners store millions of them.
"""

from __future__ import annotations

import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from camp_planner.core.context import Context

State = tuple[Hashable, ...]
Action = tuple[Hashable, ...]
# (state, steps left or None) -> an optimistic value, as FactoredMDP.value_estimate.
ValueEstimate = Callable[[State, "int | None"], "float | None"]


def freeze(value: object) -> Hashable:
    """JSON turns tuples into lists; states, actions and context values need them back."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, Hashable):
        return value
    raise TypeError(f"{value!r} is not a hashable value")


@dataclass(frozen=True)
class Variable:
    """One state or action variable. ``domain`` is ``None`` for a continuous variable.

    ``default`` is the value a right inverse of a projection fills in when the variable is
    dropped; for action variables it must be the value that means "this part does nothing".
    """

    name: str
    domain: tuple[Hashable, ...] | None = None
    default: Hashable = None

    @property
    def is_discrete(self) -> bool:
        return self.domain is not None

    @property
    def domain_size(self) -> float:
        return math.inf if self.domain is None else float(len(self.domain))


@dataclass(frozen=True)
class Outcome:
    """One possible successor of a transition with its probability."""

    state: State
    probability: float


@dataclass
class FactoredMDP(ABC):
    """A finite-horizon factored MDP whose transition model is a black-box sampler.

    Subclasses implement the simulator; everything the CAMP machinery needs from a domain is
    here. ``transition_distribution`` is optional: planners and CSI learning fall back to
    sampling when a simulator cannot enumerate its outcomes.
    """

    name: str
    state_vars: tuple[Variable, ...]
    action_vars: tuple[Variable, ...]
    reward_vars: frozenset[str]
    horizon: int = 25
    gamma: float = 0.99
    _state_index: dict[str, int] = field(init=False, repr=False, compare=False)
    _action_index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._state_index = {v.name: i for i, v in enumerate(self.state_vars)}
        self._action_index = {v.name: i for i, v in enumerate(self.action_vars)}
        unknown = set(self.reward_vars) - set(self._state_index)
        if unknown:
            raise ValueError(f"reward variables {sorted(unknown)} are not state variables")
        names = [v.name for v in self.variables]
        if len(set(names)) != len(names):
            raise ValueError("state and action variable names must be unique")

    # --- structure -------------------------------------------------------------------------
    @property
    def variables(self) -> tuple[Variable, ...]:
        """All state variables followed by all action variables (the paper's V)."""
        return self.state_vars + self.action_vars

    def state_index(self, name: str) -> int:
        return self._state_index[name]

    def action_index(self, name: str) -> int:
        return self._action_index[name]

    def variable(self, name: str) -> Variable:
        if name in self._state_index:
            return self.state_vars[self._state_index[name]]
        return self.action_vars[self._action_index[name]]

    # --- the task --------------------------------------------------------------------------
    @abstractmethod
    def initial_state(self) -> State:
        """s0 of the task."""

    @abstractmethod
    def reward(self, state: State, action: Action, next_state: State) -> float:
        """R of the task; depends on the state only through ``reward_vars``."""

    @abstractmethod
    def is_terminal(self, state: State) -> bool:
        """Whether an episode ends in ``state``."""

    def is_goal(self, state: State) -> bool:
        """Whether ``state`` achieves the task (counts as success); by default terminal."""
        return self.is_terminal(state)

    # --- the black-box simulator -----------------------------------------------------------
    @abstractmethod
    def applicable_actions(self, state: State) -> Sequence[Action]:
        """The actions an agent may choose in ``state`` (never empty for non-terminal states)."""

    @abstractmethod
    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        """Draw s' ~ T(s, a, ·)."""

    def transition_distribution(self, state: State, action: Action) -> Sequence[Outcome] | None:
        """All outcomes of T(s, a, ·) with probabilities; ``None`` if the simulator can't tell."""
        return None

    def most_likely_next_state(self, state: State, action: Action) -> State:
        """The determinisation used by replanning planners."""
        outcomes = self.transition_distribution(state, action)
        if outcomes is None:
            return self.sample_next_state(state, action, random.Random(0))
        return max(outcomes, key=lambda o: o.probability).state

    def value_count(self, index: int) -> float:
        """How many values state variable ``index`` can take in this task: an upper bound,
        by default its declared domain size (``inf`` for a continuous variable). Domains
        override it where a task pins a variable down (an empty enemy slot never changes),
        so that :func:`~camp_planner.core.camp.log_state_count` measures the task's problem
        rather than the variable declarations."""
        return self.state_vars[index].domain_size

    def value_estimate(self, state: State, steps_left: int | None = None) -> float | None:
        """An optimistic estimate of the discounted return still to be earned from ``state``
        within ``steps_left`` more steps (None: no limit), e.g. the goal reward discounted by
        a relaxed distance to the goal, and 0 when even that distance exceeds the steps left;
        for planners that evaluate search leaves with it instead of random rollouts. None if
        the domain offers none. Planners must stay correct without it: it only guides."""
        return None

    def return_bound(self) -> float | None:
        """An upper bound on the discounted return any plan earns from the initial state
        (e.g. the goal reward); None if the domain offers none. The CAMP runtime caps an
        attempt once its compute costs more than this could repay."""
        return self.value_estimate(self.initial_state())

    def context_value_estimate(self, context: Context) -> ValueEstimate | None:
        """An optimistic estimate like :meth:`value_estimate` that also respects ``context``
        (e.g. the distance to the goal through the rooms the context allows), for the CAMPs
        built under it; None: the CAMP uses :meth:`value_estimate`, which ignores the context
        and leaves the search to discover where the sink lies."""
        return None

    # --- what CSI learning needs -----------------------------------------------------------
    @abstractmethod
    def sample_state(self, rng: random.Random) -> State:
        """A valid state drawn broadly over the state space (not only reachable from s0)."""

    def sample_value(self, index: int, rng: random.Random) -> Hashable:
        """A value of state variable ``index`` to probe dependences with (any value the
        simulator accepts, not only ones s0 can reach); by default from :meth:`sample_state`."""
        return self.sample_state(rng)[index]

    def sample_action(self, state: State, rng: random.Random) -> Action:
        """An action assignment to test dependences with; by default any applicable action."""
        return rng.choice(list(self.applicable_actions(state)))

    def sample_state_action(self, rng: random.Random) -> tuple[State, Action]:
        """A (state, action) pair to test dependences in; by default :meth:`sample_state`
        then :meth:`sample_action`. Domains whose interesting actions are rarely applicable
        in broad samples override this to cover every action."""
        state = self.sample_state(rng)
        return state, self.sample_action(state, rng)

    def candidate_parents(self) -> Mapping[str, frozenset[str]] | None:
        """A known superset of each state variable's parents (e.g. read off a PDDL domain's
        operators), or None. CSI learning then only tests these pairs: which of them hold
        under a context is still learned from the simulator."""
        return None

    def exchangeable_groups(self) -> Sequence[Sequence[tuple[str, ...]]]:
        """Groups of slots that play interchangeable roles in the dynamics (e.g. the boxes of
        one room, each a slot of one variable; the reds of a manipulation task, each a slot
        of its location and pose). A slot is a tuple of state variables, and the slots of a
        group have the same length: swapping two slots swaps their variables position by
        position. CSI learning shares dependencies within a group unless a context mentions
        its members. None by default."""
        return ()

    def csi_strata(self, context: Context) -> Sequence[Callable[[State, Action], bool]] | None:
        """With ``csi.stratify``, the classes of (state, action) samples to spread CSI
        learning's samples evenly over under ``context`` (e.g. one per kind of action the
        context allows), or None: then a disjunction's samples are spread over its terms
        and other contexts are not stratified. None by default."""
        return None

    def assign_state(self, state: State, index: int, value: Hashable) -> State:
        """``state`` with variable ``index`` set to ``value``; domains override this to keep
        derived variables consistent (e.g. a room label that follows from a position)."""
        return state[:index] + (value,) + state[index + 1 :]

    def assign_action(self, action: Action, index: int, value: Hashable) -> Action:
        """``action`` with action variable ``index`` set to ``value``."""
        return action[:index] + (value,) + action[index + 1 :]

    # --- readable output -------------------------------------------------------------------
    def describe_state(self, state: State) -> dict[str, Hashable]:
        return {v.name: state[i] for i, v in enumerate(self.state_vars)}

    def describe_action(self, action: Action) -> str:
        active = [
            f"{v.name}={action[i]}"
            for i, v in enumerate(self.action_vars)
            if action[i] != v.default
        ]
        return ",".join(active) if active else "noop"
