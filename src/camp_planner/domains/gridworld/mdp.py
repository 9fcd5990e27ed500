"""The gridworld task as a factored MDP with a black-box simulator.

State variables: ``agent_pos`` (global cell), ``agent_room`` (0–8, follows from the position),
and one variable per enemy slot ``enemy_r{room}_{k}`` holding the enemy's cell *local to its
room* (so the variable means the same thing in every task), ``removed``, or ``absent`` when
the task has no enemy in that slot. Action variables: ``move`` and one ``remove_r{room}_{k}``
flag per slot. Any joint action assignment is simulated (removals first, then the move), which
lets CSI learning vary one action variable at a time.

Dynamics: enemies advance along their patrol loop with probability ``move_prob``. The agent
collides with an enemy of the room it occupied at the start of the step when both end in the
same cell or swap cells; a collision sends it back to its start. Stepping through a door into
a new room is safe for that one step (the enemies there have not reacted yet), which is what
makes a room's enemies irrelevant to an agent that never occupies that room.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from camp_planner.core.context import Context
from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State, ValueEstimate, Variable
from camp_planner.domains.gridworld.world import (
    ENEMY_ROOMS,
    SLOTS_PER_ROOM,
    Cell,
    GridworldTask,
)

REMOVED = "removed"
ABSENT = "absent"
MOVES: dict[str, Cell] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
SLOT_NAMES = tuple(f"r{room}_{k}" for room in ENEMY_ROOMS for k in range(SLOTS_PER_ROOM))
_LOCAL_CELLS: tuple[Hashable, ...] = tuple((r, c) for r in range(3) for c in range(3))


def _variables() -> tuple[tuple[Variable, ...], tuple[Variable, ...]]:
    cells = tuple((r, c) for r in range(9) for c in range(9))
    state = [
        Variable("agent_pos", cells),
        Variable("agent_room", tuple(range(9))),
    ]
    state += [
        Variable(f"enemy_{s}", (*_LOCAL_CELLS, REMOVED, ABSENT), default=REMOVED)
        for s in SLOT_NAMES
    ]
    action = [Variable("move", ("none", *MOVES), default="none")]
    action += [Variable(f"remove_{s}", (0, 1), default=0) for s in SLOT_NAMES]
    return tuple(state), tuple(action)


STATE_VARS, ACTION_VARS = _variables()
_N_SLOTS = len(SLOT_NAMES)


@dataclass
class GridworldMDP(FactoredMDP):
    """One gridworld task as a factored MDP."""

    task: GridworldTask | None = None
    _slot_room: list[int] = field(default_factory=list, repr=False)
    _cycles: dict[int, tuple[Cell, ...]] = field(default_factory=dict, repr=False)
    _dirs: dict[int, int] = field(default_factory=dict, repr=False)

    @staticmethod
    def from_task(task: GridworldTask, horizon: int = 25, gamma: float = 0.99) -> GridworldMDP:
        return GridworldMDP(
            name=f"gridworld-{task.task_id}",
            state_vars=STATE_VARS,
            action_vars=ACTION_VARS,
            reward_vars=frozenset({"agent_pos"}),
            horizon=horizon,
            gamma=gamma,
            task=task,
        )

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.task is not None
        self._task = self.task
        self._slot_room = [int(s[1 : s.index("_")]) for s in SLOT_NAMES]
        for enemy in self._task.enemies:
            k = SLOT_NAMES.index(f"r{enemy.room}_{enemy.slot}")
            self._cycles[k] = enemy.cycle
            self._dirs[k] = enemy.direction
        self._index = {cell: i for k, cyc in self._cycles.items() for i, cell in enumerate(cyc)}
        self._move_prob = self._task.settings.move_prob
        self._room_slots = {
            room: [k for k, r in enumerate(self._slot_room) if r == room] for room in range(9)
        }
        self._goal_distance = self._distances_to_goal()
        self._goal_distance_within: dict[frozenset[int], dict[Cell, int]] = {}

    def value_count(self, index: int) -> float:
        """An enemy slot takes the cells of its patrol loop or ``removed``; an empty slot
        is ``absent`` for the whole task."""
        if index < 2:
            return super().value_count(index)
        cycle = self._cycles.get(index - 2)
        return 1.0 if cycle is None else float(len(cycle) + 1)

    # --- helpers ---------------------------------------------------------------------------
    def _distances_to_goal(self, rooms: frozenset[int] | None = None) -> dict[Cell, int]:
        """Maze distance of every cell to the goal, ignoring enemies (a relaxation); with
        ``rooms``, through the cells of those rooms only (empty if the goal is outside)."""
        task = self._task
        if rooms is not None and task.room_of(task.goal) not in rooms:
            return {}
        dist = {task.goal: 0}
        frontier = [task.goal]
        while frontier:
            nxt: list[Cell] = []
            for cell in frontier:
                for dr, dc in MOVES.values():
                    other = (cell[0] + dr, cell[1] + dc)
                    inside = 0 <= other[0] < task.height and 0 <= other[1] < task.width
                    if rooms is not None and inside and task.room_of(other) not in rooms:
                        continue
                    if inside and other not in dist and task.passable(other, cell):
                        dist[other] = dist[cell] + 1
                        nxt.append(other)
            frontier = nxt
        return dist

    def enemy_cell(self, slot: int, value: Hashable) -> Cell | None:
        """Global cell of an enemy slot's value, or None if removed/absent."""
        if value in (REMOVED, ABSENT):
            return None
        assert isinstance(value, tuple)
        return self._task.to_global(self._slot_room[slot], (int(value[0]), int(value[1])))

    def _advance(self, slot: int, value: Hashable) -> Hashable:
        cell = self.enemy_cell(slot, value)
        if cell is None:
            return value
        cycle = self._cycles.get(slot)
        if cycle is None or cell not in cycle:
            return value  # an enemy placed off its loop (only in CSI samples) stays put
        nxt = cycle[(cycle.index(cell) + self._dirs[slot]) % len(cycle)]
        return self._task.to_local(nxt)

    def _pre_step(self, state: State, action: Action) -> tuple[list[Hashable], Cell, Cell, int]:
        """Apply removals and the agent's move; return enemies, old and new cell, old room."""
        enemies = list(state[2:])
        pos = state[0]
        assert isinstance(pos, tuple)
        old: Cell = (int(pos[0]), int(pos[1]))
        flags = action[1:]
        for k in range(_N_SLOTS) if 1 in flags else ():
            if flags[k] == 1:
                cell = self.enemy_cell(k, enemies[k])
                if cell is not None and abs(cell[0] - old[0]) + abs(cell[1] - old[1]) <= 1:
                    enemies[k] = REMOVED
        new = old
        delta = MOVES.get(str(action[0]))
        if delta is not None:
            target = (old[0] + delta[0], old[1] + delta[1])
            if self._task.passable(old, target):
                new = target
        # The room label (not the position) decides whose enemies can hit the agent, so the
        # label is a real parent of the dynamics, as the paper's factorisation has it.
        return enemies, old, new, int(str(state[1]))

    def _finish(
        self,
        enemies: Sequence[Hashable],
        before: Sequence[Hashable],
        old: Cell,
        new: Cell,
        room: int,
    ) -> State:
        for k in self._room_slots.get(room, ()):
            cell = self.enemy_cell(k, enemies[k])
            if cell is None:
                continue
            if cell == new or (cell == old and self.enemy_cell(k, before[k]) == new):
                new = self._task.start
                break
        return (new, self._task.room_of(new), *enemies)

    # --- FactoredMDP -----------------------------------------------------------------------
    def initial_state(self) -> State:
        enemies: list[Hashable] = [ABSENT] * _N_SLOTS
        for k, cycle in self._cycles.items():
            enemies[k] = self._task.to_local(cycle[0])
        start = self._task.start
        return (start, self._task.room_of(start), *enemies)

    def reward(self, state: State, action: Action, next_state: State) -> float:
        if next_state[0] == self._task.goal and state[0] != self._task.goal:
            return self._task.settings.goal_reward
        return 0.0

    def is_terminal(self, state: State) -> bool:
        return state[0] == self._task.goal

    def value_estimate(self, state: State, steps_left: int | None = None) -> float | None:
        # Enemies can only delay the agent, so the goal reward discounted by the maze
        # distance bounds the value from above.
        return self._estimate(self._goal_distance, state, steps_left)

    def context_value_estimate(self, context: Context) -> ValueEstimate | None:
        """Under ``agent_room ∈ R`` the agent can only use the cells of rooms in R (one step
        into another room ends in the sink), so the maze distance through R alone is still
        an upper bound on the CAMP's value, and a far tighter one when R forces a detour."""
        rooms = context.allowed_values().get("agent_room")
        if context.kind != "disjunction" or rooms is None or len(context.variables) != 1:
            return None
        allowed = frozenset(int(str(r)) for r in rooms)
        distances = self._goal_distance_within.get(allowed)
        if distances is None:
            distances = self._goal_distance_within[allowed] = self._distances_to_goal(allowed)
        return lambda state, steps_left: self._estimate(distances, state, steps_left)

    def _estimate(self, distances: dict[Cell, int], state: State, steps_left: int | None) -> float:
        pos = state[0]
        assert isinstance(pos, tuple)
        d = distances.get((int(pos[0]), int(pos[1])))
        if not d or (steps_left is not None and d > steps_left):
            return 0.0  # unreachable (in time), or already at the goal (terminal)
        return float(self._task.settings.goal_reward * self.gamma ** (d - 1))

    def applicable_actions(self, state: State) -> Sequence[Action]:
        noop = [0] * _N_SLOTS
        actions: list[Action] = [(m, *noop) for m in MOVES]
        pos = state[0]
        assert isinstance(pos, tuple)
        for k in range(_N_SLOTS):
            cell = self.enemy_cell(k, state[2 + k])
            if cell is not None and abs(cell[0] - pos[0]) + abs(cell[1] - pos[1]) <= 1:
                flags = list(noop)
                flags[k] = 1
                actions.append(("none", *flags))
        return actions

    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        enemies, old, new, room = self._pre_step(state, action)
        before = list(enemies)
        for k in self._cycles:
            if rng.random() < self._move_prob:
                enemies[k] = self._advance(k, enemies[k])
        return self._finish(enemies, before, old, new, room)

    def transition_distribution(self, state: State, action: Action) -> Sequence[Outcome]:
        enemies, old, new, room = self._pre_step(state, action)
        movers = [k for k in self._cycles if self.enemy_cell(k, enemies[k]) is not None]
        advanced = {k: self._advance(k, enemies[k]) for k in movers}
        p = self._move_prob
        merged: dict[State, float] = {}
        for pattern in itertools.product((True, False), repeat=len(movers)):
            nxt = list(enemies)
            prob = 1.0
            for k, moved in zip(movers, pattern, strict=True):
                if moved:
                    nxt[k] = advanced[k]
                    prob *= p
                else:
                    prob *= 1.0 - p
            s2 = self._finish(nxt, enemies, old, new, room)
            merged[s2] = merged.get(s2, 0.0) + prob
        return [Outcome(s, q) for s, q in merged.items()]

    def most_likely_next_state(self, state: State, action: Action) -> State:
        enemies, old, new, room = self._pre_step(state, action)
        before = list(enemies)
        if self._move_prob >= 0.5:
            for k in self._cycles:
                enemies[k] = self._advance(k, enemies[k])
        return self._finish(enemies, before, old, new, room)

    def sample_state(self, rng: random.Random) -> State:
        enemies: list[Hashable] = [ABSENT] * _N_SLOTS
        for k, cycle in self._cycles.items():
            enemies[k] = REMOVED if rng.random() < 0.2 else self._task.to_local(rng.choice(cycle))
        present = [self.enemy_cell(k, enemies[k]) for k in self._cycles]
        near = [c for c in present if c is not None]
        # Half the samples put the agent next to an enemy: interactions are what CSI learning
        # must observe, and uniform positions would rarely produce one.
        if near and rng.random() < 0.5:
            er, ec = rng.choice(near)
            dr, dc = rng.choice(tuple(MOVES.values()))
            pos = (
                min(max(er + dr, 0), self._task.height - 1),
                min(max(ec + dc, 0), self._task.width - 1),
            )
        else:
            pos = rng.choice(self._task.cells())
        return (pos, self._task.room_of(pos), *enemies)

    def sample_value(self, index: int, rng: random.Random) -> Hashable:
        if index < 2:
            return super().sample_value(index, rng)
        # Any cell of the slot's room (the task need not have that enemy): this probes what an
        # enemy there would do, which is what CSIs shared across tasks are about.
        if rng.random() < 0.2:
            return REMOVED
        h, w = self._task.room_shape(self._slot_room[index - 2])
        return (rng.randrange(h), rng.randrange(w))

    def sample_action(self, state: State, rng: random.Random) -> Action:
        return rng.choice(list(self.applicable_actions(state)))

    def assign_state(self, state: State, index: int, value: Hashable) -> State:
        if index == 0:  # keep the derived room label consistent with the position
            assert isinstance(value, tuple)
            return (value, self._task.room_of((int(value[0]), int(value[1]))), *state[2:])
        return super().assign_state(state, index, value)
