"""The NAMO task as a factored MDP whose transition model is the PyBullet simulator.

State variables: ``robot_pose`` (x, y, yaw), ``robot_room`` (0–8, follows from the pose),
``held`` (a slot name or ``"none"``), and one variable per box slot ``box_r{room}_{k}`` holding
the box's (x, y), ``"held"`` while carried, or ``"absent"`` when the task has no box in that
slot (also the value a CAMP fills in for a dropped box, which takes it out of the world).
Action variables: ``op`` (none, move, pick, place), ``target`` (a base pose for move, a floor
point for place) and ``obj`` (the slot to pick).

Dynamics (deterministic):
* move: the base drives the straight segment to ``target``, checked pose by pose against
  walls, the goal object and every box (a held box included); it stops at the last free pose.
* pick: needs empty hands and the box within reach in front of the base (inverse kinematics to
  the box's top); the box is lifted ahead of the base, if that spot is free.
* place: the held box is put down at ``target`` if the arm reaches it and it overlaps nothing.
Reaching the goal object earns ``goal_reward`` and ends the episode.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State
from camp_planner.domains.namo.layout import (
    ABSENT,
    HELD,
    N_FIXED,
    NONE,
    SLOT_NAMES,
    SLOTS_PER_ROOM,
    in_reach,
    layout,
    round_pose,
    wrap,
)
from camp_planner.domains.namo.tamp import NamoTampInterface, tamp_interface
from camp_planner.domains.namo.world import NamoTask, Pose2D
from camp_planner.planners.tamp import InterfaceSettings
from camp_planner.sim.floor_scene import FloorScene, warm_up

# The layout's names, importable from here as before (the scene I/O and the ROS nodes use
# them with the MDP).
__all__ = [
    "ABSENT",
    "HELD",
    "NONE",
    "SLOTS_PER_ROOM",
    "SLOT_NAMES",
    "NamoMDP",
    "in_reach",
    "layout",
]

MOVE_STEP, TURN_STEP = 0.05, 0.1
FREE_SAMPLE_TRIES = 20  # draws per CSI sample until the robot stands free
# The step memo holds at most this many state elements (keys and successors), so that its
# memory stays flat as the world grows: a fixed count of entries (200,000 once) took over
# 10 GB across the 50 training tasks of a 10×10 world, whose states have 500 elements.
MEMO_ELEMENTS = 2_000_000
# How far from the floor points of a step (the base's start, a move's target) a box can be
# and still be felt by it (csi_footprint): the robot carrying a box reaches about 0.72 m from
# its centre (the box 0.5 m ahead, test_namo_mdp checks the measured radius), a box's
# corner 0.22 m from its own, and a place's or pick's spot lies within the arm's 0.75 m.
FOOTPRINT_MARGIN = 1.25


@dataclass
class NamoMDP(FactoredMDP):
    """One NAMO task as a factored MDP, simulated in a PyBullet server of the process's pool
    (one server per MDP while it is open)."""

    task: NamoTask | None = None
    _scene: FloorScene | None = field(default=None, repr=False, compare=False)
    _synced: tuple[Hashable, ...] | None = field(default=None, repr=False, compare=False)
    _slots: list[str | None] | None = field(default=None, repr=False, compare=False)
    _initial: State | None = field(default=None, repr=False, compare=False)
    _memo: dict[tuple[State, Action], State] = field(
        default_factory=dict, repr=False, compare=False
    )
    _room_slots: dict[int, tuple[int, ...]] | None = field(default=None, repr=False, compare=False)

    @staticmethod
    def from_task(task: NamoTask, horizon: int = 200, gamma: float = 1.0) -> NamoMDP:
        vars_ = layout(task.settings.grid, task.settings.goal_room)
        return NamoMDP(
            name=f"namo-{task.task_id}",
            state_vars=vars_.state_vars,
            action_vars=vars_.action_vars,
            reward_vars=frozenset({"robot_pose"}),
            horizon=horizon,
            gamma=gamma,
            task=task,
        )

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.task is not None
        self._task = self.task
        self.layout = layout(self._task.settings.grid, self._task.settings.goal_room)
        present = {b.name for b in self._task.boxes}
        unknown = present - set(self.layout.slot_names)
        if unknown:
            raise ValueError(f"boxes {sorted(unknown)} have no slot variable")
        # The robot's URDF is parsed with the MDP, so that the first planning call of a
        # process does not pay for it in its measured time.
        warm_up()

    # PyBullet servers are per process: a pickled MDP (e.g. sent to a scoring worker) opens
    # its own on first use.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_scene=None, _synced=None, _slots=None, _memo={})
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        warm_up()

    def close(self) -> None:
        """Give the simulator back to the process's pool (it reopens on demand)."""
        if self._scene is not None:
            self._scene.close()
        self._scene = self._synced = self._slots = None

    def __del__(self) -> None:
        # At interpreter shutdown the server may already be gone with the process, and module
        # globals may already be None: nothing but builtins here.
        try:  # noqa: SIM105
            self.close()
        except Exception:
            pass

    # --- the simulator ------------------------------------------------------------------------
    def scene(self) -> FloorScene:
        """The PyBullet scene of the task with every box (opened lazily)."""
        if self._scene is None:
            self._scene = FloorScene.open(self._task)
            self._synced = self._slots = None
        return self._scene

    def sync(self, state: State) -> FloorScene:
        """Make the scene show ``state`` (only what changed since the last call is moved)."""
        scene = self.scene()
        last = self._synced
        held = str(state[2])
        if scene.held is not None and scene.held != held:
            scene.let_go()
        if self._slots is None:
            # The scene's boxes, by slot position: fixed while the scene is open.
            self._slots = [name if name in scene.boxes else None for name in self.layout.slot_names]
        slots = state[N_FIXED:]
        # A CSI sample's variants share all but one element with the state synced before
        # them, object for object: the identity test settles most slots without comparing.
        if last is None:
            changed: Iterable[tuple[str | None, Hashable]] = zip(self._slots, slots, strict=True)
        else:
            changed = [
                (name, value)
                for name, value, was in zip(self._slots, slots, last[N_FIXED:], strict=True)
                if value is not was and value != was
            ]
        for name, value in changed:
            if name is None or value == HELD:
                continue
            if value == ABSENT:
                scene.remove_box(name)
            else:
                assert isinstance(value, tuple)
                scene.place_box(name, float(value[0]), float(value[1]))
        pose = state[0]
        assert isinstance(pose, tuple)
        scene.set_base(pose)
        if held != NONE and scene.held != held and held in scene.boxes:
            scene.grasp(held)
        self._remember(state, scene.held)
        return scene

    def _remember(self, state: State, off: str | None) -> None:
        """Remember that the scene shows ``state``, except for box ``off`` (carried, or let
        go where it was carried), whose slot is remembered as held: a held slot is never
        taken as in sync, so the next sync puts that box where its state has it. (A state
        may also say a box is held and give its slot a floor position, as a CSI variant
        does when it probes the slot: the scene holds the box all the same.)"""
        synced = list(state)
        if off is not None and off in self.layout.slot_index:
            synced[self.layout.slot_index[off]] = HELD
        self._synced = tuple(synced)

    def step(self, state: State, action: Action) -> State:
        """The (deterministic) successor of ``state`` under ``action``."""
        if self._scene is not None and self._scene._zones:
            # Planning-only keep-out zones change what blocks a move: don't remember those.
            return self._step(state, action)
        key = (state, action)
        found = self._memo.get(key)
        if found is not None:
            return found
        nxt = self._step(state, action)
        if len(self._memo) * 2 * len(state) > MEMO_ELEMENTS:
            self._memo.clear()
        self._memo[key] = nxt
        return nxt

    def _step(self, state: State, action: Action) -> State:
        if action[0] == NONE or self.is_terminal(state):
            return state
        return self.simulate(state, action)

    def simulate(self, state: State, action: Action) -> State:
        """The world's successor of ``state`` under ``action``, whether or not the episode
        has ended in ``state``: a robot driven by its controllers (:mod:`.robot`) keeps
        moving once it is within reach of the goal, where :meth:`step` stops the episode.
        Not remembered: a robot's states rarely repeat."""
        op, target, obj = action
        if op == NONE:
            return state
        scene = self.sync(state)
        pose = state[0]
        assert isinstance(pose, tuple)
        held = str(state[2])
        if op == "move":
            if not (isinstance(target, tuple) and len(target) == 3):
                return state
            return self._with_pose(state, self._drive(scene, pose, target))
        if op == "pick":
            if held != NONE or obj not in self.layout.slot_index:
                return state
            value = state[self.layout.slot_index[str(obj)]]
            if not isinstance(value, tuple) or str(obj) not in scene.boxes:
                return state
            bx, by = float(value[0]), float(value[1])
            top = self._task.settings.box_size[2] + 0.02
            if not (in_reach(pose, bx, by) and scene.arm_reaches(bx, by, top)):
                return state
            scene.grasp(str(obj))
            blocked = scene.collisions()
            # The scene now shows the box carried, whatever the state says: remember its
            # slot as held, so that the next sync puts it back where that state has it.
            # Forgetting the whole sync instead moved every box of the world again on the
            # next step: at 10x10 (250 boxes) that was most of CSI learning's time.
            self._remember(state, str(obj))
            if blocked:
                return state
            out = list(state)
            out[2] = str(obj)
            out[self.layout.slot_index[str(obj)]] = HELD
            return tuple(out)
        if op == "place":
            if held == NONE or not (isinstance(target, tuple) and len(target) == 2):
                return state
            x, y = float(target[0]), float(target[1])
            top = self._task.settings.box_size[2] + 0.02
            if not (in_reach(pose, x, y) and scene.arm_reaches(x, y, top)):
                return state
            scene.let_go()  # check the box on the floor, as a box, not as part of the robot
            # Axis-aligned, as the state (a box's x, y) and every resync show it: checked at
            # the robot's heading instead, a box could be put down clear of the robot and
            # then overlap it once the scene was rebuilt from the state.
            hits = scene.box_collisions(held, x, y, 0.0)
            # The box is let go wherever it was carried: the next sync puts it down or
            # grasps it again, and leaves the other boxes alone.
            self._remember(state, held)
            if hits:
                return state
            out = list(state)
            out[2] = NONE
            out[self.layout.slot_index[held]] = (round(x, 4), round(y, 4))
            return tuple(out)
        return state

    def _drive(self, scene: Any, start: Pose2D, target: tuple[Any, ...]) -> Pose2D:
        """The last collision-free pose on the straight segment from ``start`` to ``target``."""
        tx, ty, tyaw = float(target[0]), float(target[1]), float(target[2])
        dyaw = wrap(tyaw - start[2])
        dist = math.hypot(tx - start[0], ty - start[1])
        n = max(1, math.ceil(max(dist / MOVE_STEP, abs(dyaw) / TURN_STEP)))
        last = start
        for k in range(1, n + 1):
            f = k / n
            pose = (
                start[0] + f * (tx - start[0]),
                start[1] + f * (ty - start[1]),
                start[2] + f * dyaw,
            )
            if scene.collisions(pose):
                break
            last = pose
        return round_pose(last)

    def _with_pose(self, state: State, pose: Pose2D) -> State:
        return (pose, self._task.room_of(pose[0], pose[1]), *state[2:])

    # --- FactoredMDP ------------------------------------------------------------------------
    def initial_state(self) -> State:
        # Built once: CSI learning's sampler starts every draw from it.
        if self._initial is None:
            slots: list[Hashable] = [ABSENT] * len(self.layout.slot_names)
            for box in self._task.boxes:
                at = (round(box.x, 4), round(box.y, 4))
                slots[self.layout.slot_index[box.name] - N_FIXED] = at
            held = self._task.held or NONE
            if self._task.held:
                slots[self.layout.slot_index[held] - N_FIXED] = HELD
            pose = round_pose(self._task.start)
            self._initial = (pose, self._task.room_of(pose[0], pose[1]), held, *slots)
        return self._initial

    def return_bound(self) -> float | None:
        # Rewards are the goal's alone (less action costs in PDDL), earned at most once.
        return float(self._task.settings.goal_reward)

    def reward(self, state: State, action: Action, next_state: State) -> float:
        if self.is_terminal(next_state) and not self.is_terminal(state):
            return self._task.settings.goal_reward
        return 0.0

    def is_terminal(self, state: State) -> bool:
        pose = state[0]
        return isinstance(pose, tuple) and self._task.reached(float(pose[0]), float(pose[1]))

    def applicable_actions(self, state: State) -> Sequence[Action]:
        # Continuous actions: only the no-op can be enumerated. Planners for this domain
        # (TAMP, Stilman) construct their actions themselves.
        return [(NONE, None, NONE)]

    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        return self.step(state, action)

    def transition_distribution(self, state: State, action: Action) -> Sequence[Outcome]:
        return [Outcome(self.step(state, action), 1.0)]

    def most_likely_next_state(self, state: State, action: Action) -> State:
        return self.step(state, action)

    def assign_state(self, state: State, index: int, value: Hashable) -> State:
        if index == 0:  # the room label follows the position
            assert isinstance(value, tuple)
            return self._with_pose(state, round_pose(value))
        if index == 2:  # holding a box means that box is off the floor
            out = list(state)
            if value != NONE and value in self.layout.slot_index:
                out[self.layout.slot_index[str(value)]] = HELD
            for name, i in self.layout.slot_index.items():
                if out[i] == HELD and name != value:
                    out[i] = self._home(name)
            out[2] = value
            return tuple(out)
        return super().assign_state(state, index, value)

    def _home(self, name: str) -> Hashable:
        for box in self._task.boxes:
            if box.name == name:
                return (round(box.x, 4), round(box.y, 4))
        return ABSENT

    # --- what CSI learning needs --------------------------------------------------------------
    def _random_pose(self, rng: random.Random, room: int) -> Pose2D:
        x0, y0, x1, y1 = self._task.room_rect(room)
        m = self._task.settings.base_half_extent + 0.1
        return round_pose(
            (
                rng.uniform(x0 + m, x1 - m),
                rng.uniform(y0 + m, y1 - m),
                rng.uniform(-math.pi, math.pi),
            )
        )

    def sample_state(self, rng: random.Random) -> State:
        state = self.initial_state()
        out = list(state)
        for box in self._task.boxes:
            if rng.random() < 0.2:
                out[self.layout.slot_index[box.name]] = self.sample_value(
                    self.layout.slot_index[box.name], rng
                )
        # Half the samples put the robot next to a box, where picks and collisions happen.
        present = [
            (str(n), v) for n, i in self.layout.slot_index.items() if isinstance(v := out[i], tuple)
        ]
        if present and rng.random() < 0.5:
            _, (bx, by) = rng.choice(present)
            heading = rng.uniform(-math.pi, math.pi)
            d = rng.uniform(0.45, 0.7)
            pose = round_pose(
                (float(bx) - d * math.cos(heading), float(by) - d * math.sin(heading), heading)
            )
        else:
            pose = self._random_pose(rng, rng.randrange(self._task.settings.n_rooms))
        return self._with_pose(tuple(out), pose)

    def sample_value(self, index: int, rng: random.Random) -> Hashable:
        if index == 0:
            return self._random_pose(rng, rng.randrange(self._task.settings.n_rooms))
        if index in (1, 2):
            return super().sample_value(index, rng)
        # A box of slot box_r{room}_k anywhere in its own room, or no box at all.
        if rng.random() < 0.2:
            return ABSENT
        room = int(self.layout.slot_names[index - N_FIXED].split("_")[1][1:])
        x0, y0, x1, y1 = self._task.room_rect(room)
        m = 0.25
        return (round(rng.uniform(x0 + m, x1 - m), 4), round(rng.uniform(y0 + m, y1 - m), 4))

    def sample_state_action(self, rng: random.Random) -> tuple[State, Action]:
        """Every sample is built around one box B (with the robot facing it): pick B, drive
        across B, or drive across B carrying another box. A small budget then sees each
        kind of interaction, in every room that has boxes.

        The robot (with what it carries) must stand free. From a pose inside a wall or a
        box a move goes nowhere, whatever the other boxes do, so such a sample tells CSI
        learning nothing. Near walls and in cluttered rooms that was a third of the
        samples or more. In worlds with 80 % of the slots filled, the boxes of the start
        room then went undetected for 32 of 50 room contexts (together with too few samples
        per room: ``csi.stratify``), and their CAMPs drove through them."""
        sample = self._sample_at_box(rng)
        for _ in range(FREE_SAMPLE_TRIES - 1):
            state = sample[0]
            pose = state[0]
            assert isinstance(pose, tuple)
            if self.sync(state).is_free(pose):
                break
            sample = self._sample_at_box(rng)
        return sample

    def _sample_at_box(self, rng: random.Random) -> tuple[State, Action]:
        state = self.sample_state(rng)
        present = [
            (n, v) for n, i in self.layout.slot_index.items() if isinstance(v := state[i], tuple)
        ]
        if not present:
            return state, self.sample_action(state, rng)
        name, value = rng.choice(present)
        bx, by = float(value[0]), float(value[1])
        heading = rng.uniform(-math.pi, math.pi)
        roll = rng.random()
        d = rng.uniform(0.45, 0.55) if roll < 0.35 else rng.uniform(0.5, 1.0)
        pose = (bx - d * math.cos(heading), by - d * math.sin(heading), heading)
        state = self.assign_state(state, 0, pose)
        if roll < 0.35:
            return state, ("pick", None, name)
        if roll < 0.6:
            others = [n for n, _ in present if n != name]
            if others:
                state = self.assign_state(state, 2, rng.choice(others))
        beyond = d + rng.uniform(0.4, 1.2)
        target = (
            bx - d * math.cos(heading) + beyond * math.cos(heading),
            by - d * math.sin(heading) + beyond * math.sin(heading),
            rng.uniform(-math.pi, math.pi),
        )
        return state, ("move", round_pose(target), NONE)

    def sample_action(self, state: State, rng: random.Random) -> Action:
        pose = state[0]
        assert isinstance(pose, tuple)
        x, y, yaw = (float(v) for v in pose)
        roll = rng.random()
        if roll < 0.25:
            near = [
                n
                for n, i in self.layout.slot_index.items()
                if isinstance(v := state[i], tuple)
                and math.hypot(float(v[0]) - x, float(v[1]) - y) < 1.0
            ]
            if near and state[2] == NONE:
                return ("pick", None, rng.choice(near))
        if roll < 0.5 and state[2] != NONE:
            d, b = rng.uniform(0.4, 0.7), rng.uniform(-0.8, 0.8)
            return (
                "place",
                (round(x + d * math.cos(yaw + b), 4), round(y + d * math.sin(yaw + b), 4)),
                NONE,
            )
        d, heading = rng.uniform(0.2, 2.0), rng.uniform(-math.pi, math.pi)
        target = (
            x + d * math.cos(heading),
            y + d * math.sin(heading),
            rng.uniform(-math.pi, math.pi),
        )
        return ("move", round_pose(target), NONE)

    def tamp_interface(
        self, state: State, camp: Any, seed: int, settings: InterfaceSettings
    ) -> NamoTampInterface:
        """The task-and-motion planning interface for one planning call from ``state``
        (under ``camp``'s context if given): see :mod:`camp_planner.domains.namo.tamp`."""
        return tamp_interface(self, state, camp, seed, settings)

    def exchangeable_groups(self) -> Sequence[Sequence[tuple[str, ...]]]:
        """The box slots of one room: same sampling region, same dynamics."""
        return [
            [(f"box_r{room}_{k}",) for k in range(SLOTS_PER_ROOM)] for room in self.layout.box_rooms
        ]

    def csi_footprint(self, state: State, action: Action) -> frozenset[int] | None:
        """The state variables one step from (``state``, ``action``) can feel, for
        ``csi.local_probes`` (:class:`camp_planner.core.csi.LocalDynamics`): the robot's
        pose, room and hand, the held box and the box to pick, and every box slot whose room
        (where its probe values lie) or whose box comes within ``FOOTPRINT_MARGIN`` of the
        floor points the step uses: the base's start and, for a move, the straight segment
        to its target (a place's target lies within reach, as does a pick's box). Any other
        box neither blocks the base or what it carries, nor the box picked or placed, and
        its slot's value is copied to the successor unchanged, so changing it changes the
        successor in that slot only."""
        fixed = frozenset(range(N_FIXED))
        op, target, obj = action
        if op == NONE or self.is_terminal(state):
            return fixed  # the successor is the state itself
        pose = state[0]
        assert isinstance(pose, tuple)
        xs, ys = [float(pose[0])], [float(pose[1])]
        if isinstance(target, tuple) and len(target) >= 2:
            xs.append(float(target[0]))
            ys.append(float(target[1]))
        m = FOOTPRINT_MARGIN
        x0, x1, y0, y1 = min(xs) - m, max(xs) + m, min(ys) - m, max(ys) + m
        felt = set(fixed)
        for name in (state[2], obj):
            if name in self.layout.slot_index:
                felt.add(self.layout.slot_index[str(name)])
        size, grid = self._task.settings.room_size, self._task.settings.grid
        c0, c1 = max(int(x0 // size), 0), min(int(x1 // size), grid - 1)
        r0, r1 = max(int(y0 // size), 0), min(int(y1 // size), grid - 1)
        by_room = self._slots_by_room()
        for row in range(r0, r1 + 1):
            for col in range(c0, c1 + 1):
                felt.update(by_room.get(row * grid + col, ()))
        # A box standing outside its own room (placed there) is felt where it stands.
        for i in range(N_FIXED, len(state)):
            v = state[i]
            if isinstance(v, tuple) and i not in felt:
                bx, by = float(v[0]), float(v[1])
                if x0 <= bx <= x1 and y0 <= by <= y1:
                    felt.add(i)
        return frozenset(felt)

    def sample_state_action_where(
        self, index: int, value: Hashable, rng: random.Random
    ) -> tuple[State, Action] | None:
        """A draw of :meth:`sample_state_action` with the robot in room ``value`` (``index``
        1, ``robot_room``; for ``csi.shared_terms``), or None when this draw missed. As
        there, the sample is built around a box B the robot faces from 0.45-1.0 m away, but
        B is drawn among the boxes within 1.0 m of the room (no other box can put the robot
        in it), and a draw that puts the robot elsewhere or not free is a miss: the
        sampler's distribution given the room, without the draws a 10×10 world's rejection
        sampling wastes (99 in 100, each moving a quarter of the boxes)."""
        if index != 1 or not isinstance(value, int):
            return None
        if not 0 <= value < self._task.settings.n_rooms:
            return None
        x0, y0, x1, y1 = self._task.room_rect(value)
        state = self.sample_state(rng)
        near = []
        for name, i in self.layout.slot_index.items():
            v = state[i]
            if isinstance(v, tuple):
                bx, by = float(v[0]), float(v[1])
                dx = max(x0 - bx, 0.0, bx - x1)
                dy = max(y0 - by, 0.0, by - y1)
                if dx * dx + dy * dy <= 1.0:
                    near.append((name, bx, by))
        if not near:
            return None
        name, bx, by = rng.choice(near)
        heading = rng.uniform(-math.pi, math.pi)
        roll = rng.random()
        d = rng.uniform(0.45, 0.55) if roll < 0.35 else rng.uniform(0.5, 1.0)
        pose = (bx - d * math.cos(heading), by - d * math.sin(heading), heading)
        state = self.assign_state(state, 0, pose)
        if state[1] != value:
            return None
        if roll < 0.35:
            action: Action = ("pick", None, name)
        else:
            if roll < 0.6:
                others = [
                    n
                    for n, i in self.layout.slot_index.items()
                    if n != name and isinstance(state[i], tuple)
                ]
                if others:
                    state = self.assign_state(state, 2, rng.choice(others))
            beyond = d + rng.uniform(0.4, 1.2)
            target = (
                bx - d * math.cos(heading) + beyond * math.cos(heading),
                by - d * math.sin(heading) + beyond * math.sin(heading),
                rng.uniform(-math.pi, math.pi),
            )
            action = ("move", round_pose(target), NONE)
        placed = state[0]
        assert isinstance(placed, tuple)
        if not self.sync(state).is_free(placed):
            return None
        return state, action

    def _slots_by_room(self) -> dict[int, tuple[int, ...]]:
        found = self._room_slots
        if found is None:
            rooms: dict[int, list[int]] = {}
            for name, i in self.layout.slot_index.items():
                rooms.setdefault(int(name.split("_")[1][1:]), []).append(i)
            found = self._room_slots = {r: tuple(v) for r, v in rooms.items()}
        return found

    def csi_context_roles(self, context: Context) -> Mapping[str, Sequence[tuple[str, ...]]]:
        """Under a room context (a disjunction over ``robot_room``), for ``csi.context_ties``
        and role relevance: the box slots of the allowed rooms (``inside``) and those of the
        rooms next to them (``beside``: sharing a wall, where a door may join them in any
        task). A box's role under the context is how its room relates to the allowed ones:
        inside, the robot drives among the boxes; next door, the robot's body or the box it
        carries can reach a box through a doorway; farther away, never
        (``csi_footprint``)."""
        if context.kind != "disjunction" or {t.variable for t in context.terms} != {"robot_room"}:
            return {}
        grid = self._task.settings.grid
        allowed = {t.value for t in context.terms}
        by_room = self._slots_by_room()
        names = self.layout.slot_names
        inside = [r for r in sorted(by_room) if r in allowed]
        beside = []
        for r in sorted(by_room):
            if r in allowed:
                continue
            row, col = divmod(r, grid)
            around = [(row - 1, col), (row + 1, col), (row, col - 1), (row, col + 1)]
            if any(0 <= a < grid and 0 <= b < grid and a * grid + b in allowed for a, b in around):
                beside.append(r)
        return {
            role: [(names[i - N_FIXED],) for r in rooms for i in by_room[r]]
            for role, rooms in (("inside", inside), ("beside", beside))
        }

    def describe_action(self, action: Action) -> str:
        op, target, obj = action
        if op == "move":
            return f"move to {target}"
        if op == "pick":
            return f"pick {obj}"
        if op == "place":
            return f"place at {target}"
        return "none"
