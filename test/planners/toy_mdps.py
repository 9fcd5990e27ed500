"""Small grid worlds for planner tests: a goal, traps, walls and a slip probability."""

from __future__ import annotations

import random
from collections.abc import Sequence

from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State, Variable
from camp_planner.core.planner import Deadline, Planner

MOVES: dict[str, tuple[int, int]] = {
    "up": (0, -1),
    "down": (0, 1),
    "left": (-1, 0),
    "right": (1, 0),
}
# A slip sends the agent sideways relative to its intended direction.
_SIDEWAYS: dict[str, tuple[str, str]] = {
    "up": ("left", "right"),
    "down": ("left", "right"),
    "left": ("up", "down"),
    "right": ("up", "down"),
}
UP, DOWN, LEFT, RIGHT = (("up",), ("down",), ("left",), ("right",))
_ACTIONS: tuple[Action, ...] = (UP, DOWN, LEFT, RIGHT)


class GridMDP(FactoredMDP):
    """A grid drawn as strings: ``S`` start, ``G`` goal, ``T`` trap, ``#`` wall, ``.`` floor.

    States are ``(x, y)``. A move goes the intended way with probability ``1 - slip`` and to
    each side with ``slip / 2``; moves into walls or off the grid stay put. Entering ``G``
    earns ``goal_reward`` and entering ``T`` earns ``trap_reward``; both are terminal. With
    ``enumerable=False`` the simulator only samples.
    """

    def __init__(
        self,
        layout: Sequence[str],
        *,
        slip: float = 0.0,
        goal_reward: float = 1.0,
        trap_reward: float = -1.0,
        step_reward: float = 0.0,
        horizon: int = 25,
        gamma: float = 0.95,
        enumerable: bool = True,
    ) -> None:
        self.layout = tuple(layout)
        self.width = len(self.layout[0])
        self.height = len(self.layout)
        super().__init__(
            name="grid",
            state_vars=(
                Variable("x", tuple(range(self.width))),
                Variable("y", tuple(range(self.height))),
            ),
            action_vars=(Variable("move", ("noop", *MOVES), default="noop"),),
            reward_vars=frozenset({"x", "y"}),
            horizon=horizon,
            gamma=gamma,
        )
        self.slip = slip
        self.goal_reward = goal_reward
        self.trap_reward = trap_reward
        self.step_reward = step_reward
        self.enumerable = enumerable
        self.cells = [
            (x, y) for y in range(self.height) for x in range(self.width) if self.at(x, y) != "#"
        ]
        self.start = self._find("S")
        self.goals = {c for c in self.cells if self.at(*c) == "G"}
        self.traps = {c for c in self.cells if self.at(*c) == "T"}

    def at(self, x: int, y: int) -> str:
        return self.layout[y][x]

    def _find(self, char: str) -> State:
        return next(c for c in self.cells if self.at(*c) == char)

    def _move(self, state: State, direction: str) -> State:
        x, y = state
        assert isinstance(x, int) and isinstance(y, int)
        dx, dy = MOVES[direction]
        nx, ny = x + dx, y + dy
        if 0 <= nx < self.width and 0 <= ny < self.height and self.at(nx, ny) != "#":
            return (nx, ny)
        return state

    def initial_state(self) -> State:
        return self.start

    def reward(self, state: State, action: Action, next_state: State) -> float:
        if next_state in self.goals:
            return self.goal_reward
        if next_state in self.traps:
            return self.trap_reward
        return self.step_reward

    def is_terminal(self, state: State) -> bool:
        return state in self.goals or state in self.traps

    def applicable_actions(self, state: State) -> Sequence[Action]:
        return _ACTIONS

    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        direction = str(action[0])
        u = rng.random()
        if u < 1.0 - self.slip:
            return self._move(state, direction)
        side_a, side_b = _SIDEWAYS[direction]
        return self._move(state, side_a if u < 1.0 - self.slip / 2 else side_b)

    def transition_distribution(self, state: State, action: Action) -> Sequence[Outcome] | None:
        if not self.enumerable:
            return None
        direction = str(action[0])
        probabilities: dict[State, float] = {}
        side_a, side_b = _SIDEWAYS[direction]
        for move, p in (
            (direction, 1.0 - self.slip),
            (side_a, self.slip / 2),
            (side_b, self.slip / 2),
        ):
            if p > 0:
                successor = self._move(state, move)
                probabilities[successor] = probabilities.get(successor, 0.0) + p
        return [Outcome(s, p) for s, p in probabilities.items()]

    def sample_state(self, rng: random.Random) -> State:
        return rng.choice(self.cells)


def run_episode(planner: Planner, mdp: GridMDP, rng: random.Random) -> list[State]:
    """The states visited by ``planner`` (already prepared) from s0 until terminal or horizon."""
    state = mdp.initial_state()
    visited = [state]
    for _ in range(mdp.horizon):
        if mdp.is_terminal(state):
            break
        state = mdp.sample_next_state(state, planner.act(state, Deadline(None)), rng)
        visited.append(state)
    return visited


class ScriptedInterface:
    """The parts of a TAMP interface that scripted tests share: the goal is reached once
    ``done`` is set, nothing is learnt and nothing can be forgotten (override as needed)."""

    def __init__(self) -> None:
        self.done = False
        self.stage_times: dict[str, float] = {}

    def learn(self, facts: list[str]) -> None:
        pass

    def forget(self) -> bool:
        return False

    def at_goal(self) -> bool:
        return self.done

    def close(self) -> None:
        pass


class ScriptedMDP(GridMDP):
    """A one-row grid world whose TAMP interface is ``interface``, for every planning call."""

    def __init__(self, interface: object) -> None:
        super().__init__(("S.G",))
        self.interface = interface

    def tamp_interface(self, state: State, camp: object, seed: int, settings: object) -> object:
        return self.interface


class FakeClock:
    """A clock tests set by hand (``now``), for deadlines and budgets without sleeping."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
