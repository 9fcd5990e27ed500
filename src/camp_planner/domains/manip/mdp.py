"""The manipulation task (paper domain D4) as a factored MDP whose transition model is the
PyBullet tabletop scene. The variables are described in :mod:`.layout`.

Dynamics (deterministic; an infeasible action leaves the state unchanged):

* move: the base jumps to the named work pose if the robot (arm stowed, any held red with it)
  stands there free and on the floor. The path between poses is the TAMP planner's business
  (OMPL SE(2) there); the MDP's discrete poses keep CSI learning's probes small.
* pick ``obj`` with grasp ``top``/``side``: needs empty hands and the red on a table (not in a
  bin); :meth:`TabletopScene.check_grasp` decides from the geometry (too wide for the gripper,
  IK from the current base, collisions of the arm along the approach with *every* object in
  the simulated world). Nothing here says which objects can matter: a side grasp meets the
  blues near its approach and a top grasp does not because the geometry says so.
* regrasp: the paper's operator. The held red is put down on the first staging spot where
  the placement works, then picked again from the side (both checked in the scene).
* place into ``bin``: the held red is lowered upright into the bin (:meth:`check_place`; a
  green or another red in the bin is a collision). **Symbolic precondition: the red must be
  held with a side grasp.** The paper states that placing upright needs a side grasp. The
  scene alone would accept a top-held red from a few base poses, so the precondition is
  stated here rather than manufactured by tuning the world.

Reward ``goal_reward`` (1000) when every red stands in a bin, which ends the episode.

CSI learning (``csi.stratify``) spreads its samples over the places into each bin and the
picks of each style a context allows (:meth:`ManipMDP.csi_strata`), and takes each where the
simulator says its outcome can change (:meth:`ManipMDP.sample_state_action`); the blues, and
the reds, are exchangeable over the tasks (:meth:`ManipMDP.exchangeable_groups`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from camp_planner.core.mdp import Action, FactoredMDP, Outcome, State
from camp_planner.domains.manip.layout import (
    ABSENT,
    GREEN,
    HELD,
    N_FIXED,
    NONE,
    STAGING,
    START,
    TABLE,
    ManipLayout,
    bin_loc,
    layout,
)
from camp_planner.domains.manip.tamp import ManipTampInterface, tamp_interface
from camp_planner.domains.manip.world import ManipObject, ManipTask, Pose2D
from camp_planner.planners.tamp import InterfaceSettings
from camp_planner.sim.tabletop_geometry import SIDE, TOP
from camp_planner.sim.tabletop_scene import TabletopScene

if TYPE_CHECKING:
    from camp_planner.core.context import Context

GOAL_REWARD = 1000.0
# How far a probed blue may stand from its own position (each coordinate): within its cell
# of the 0.2 m grid, its radius and a gap from the cell's border.
BLUE_PROBE = 0.06
MEMO_ENTRIES = 50_000
# Cumulative shares of the sampler's draws: picks, then places, then regrasps, then moves.
# With ``csi.stratify`` CSI learning spreads its samples evenly over the classes of
# ``csi_strata``, so these shares only set how many draws it takes to meet each class (a
# place into one given bin is (PLACES - PICKS) / 9 of them).
PICKS, PLACES, REGRASPS = 0.4, 0.85, 0.925
# A work pose can reach an object whose distance from the base centre is within this
# (the arm's 0.97 m reach from the shoulder, mounted 0.1 m forward): for CSI samples only.
SAMPLE_REACH = 1.0
# A place is sampled from one of this many poses whose arm mount is nearest the bin, one from
# which the place into the empty bin works (measured over 10 tasks, both reds, every bin:
# 160, 150 and 114 of 180 such places worked from the nearest, second and third pose).
PLACE_SAMPLE = 3
# Blues that can stand in the way of a red's side pick: a neighbouring cell's (0.2 m pitch,
# jittered) with its probe's offsets.
BLUE_NEAR = 0.35
# The share of side-pick draws with a blue in the way (where one can be: ``_pick_setting``);
# ``csi_strata`` then takes blocked and clear side picks as classes of their own.
BLOCKED = 1 / 2
Vec3 = tuple[float, float, float]
_T = TypeVar("_T")


def task_layout(task: ManipTask) -> ManipLayout:
    st = task.settings
    return layout(
        len(task.reds),
        len(task.distractors),
        st.bins_per_side**2,
        len(task.work_poses("table_left")),
    )


def _r(v: float) -> float:
    return round(float(v), 4)


def _is_action(skill: str, index: int, value: Hashable) -> Callable[[State, Action], bool]:
    """Whether an action is ``skill`` with action variable ``index`` at ``value``."""
    return lambda s, a: a[0] == skill and a[index] == value


@dataclass
class ManipMDP(FactoredMDP):
    """One manipulation task as a factored MDP, simulated in a pooled PyBullet server (opened
    on the first step, so listing tasks never starts PyBullet; :meth:`close` gives it back)."""

    task: ManipTask | None = None
    _scene: TabletopScene | None = field(default=None, repr=False, compare=False)
    _initial: State | None = field(default=None, repr=False, compare=False)
    _memo: dict[tuple[State, Action], State] = field(
        default_factory=dict, repr=False, compare=False
    )
    # The base paths the TAMP planner found, (from pose, to pose) by name -> SE(2) waypoints:
    # a move action names only its goal, and the plan geometry and the sim node follow these.
    base_paths: dict[tuple[str, str], list[Pose2D]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @staticmethod
    def from_task(task: ManipTask, horizon: int = 25, gamma: float = 0.99) -> ManipMDP:
        lay = task_layout(task)
        return ManipMDP(
            name=f"manip-{task.task_id}",
            state_vars=lay.state_vars,
            action_vars=lay.action_vars,
            reward_vars=frozenset(f"{r}_loc" for r in lay.reds),
            horizon=horizon,
            gamma=gamma,
            task=task,
        )

    def __post_init__(self) -> None:
        super().__post_init__()
        assert self.task is not None
        self._task: ManipTask = self.task
        self.layout = task_layout(self._task)
        t = self._task
        self.poses: dict[str, Pose2D] = {START: t.start}
        for side, table in (("left", "table_left"), ("right", "table_right")):
            for i, pose in enumerate(t.work_poses(table)):
                self.poses[f"{side}_{i}"] = pose
        self._bins = t.bins
        # The scene holds a green for every bin, so that a probe may fill any bin; a bin
        # whose occupant is not "green" has its green out of the world.
        g = self._green_template()
        greens = [
            ManipObject(f"green_{b.index}", "green", b.x, b.y, b.floor_z, g.sections, g.rgba)
            for b in self._bins
        ]
        others = [o for o in t.objects if o.kind != "green"]
        self._world = replace(t, objects=(*others, *greens))

    def _green_template(self) -> ManipObject:
        st = self._task.settings
        found = self._task.by_kind("green")
        if found:
            return found[0]
        sec = ((0.0, st.green_height, st.green_radius),)
        return ManipObject("green", "green", 0.0, 0.0, 0.0, sec, (0.09, 0.64, 0.29, 1.0))

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_scene=None, _memo={}, base_paths={})
        return state

    def close(self) -> None:
        """Give the simulator back to the process's pool (it reopens on demand)."""
        if self._scene is not None:
            self._scene.close()
        self._scene = None

    def __del__(self) -> None:
        try:  # noqa: SIM105 - at interpreter shutdown the server may already be gone
            self.close()
        except Exception:
            pass

    # --- the simulator --------------------------------------------------------------------
    def scene(self) -> TabletopScene:
        if self._scene is None:
            self._scene = TabletopScene.open(self._world)
        return self._scene

    def sync(self, state: State) -> TabletopScene:
        """Make the scene show ``state``: every object where the state has it (a few dozen
        cheap resets), the arm stowed, the held red in its canonical grasp."""
        scene = self.scene()
        lay = self.layout
        held, style = str(state[1]), str(state[2])
        if scene.held is not None and (
            scene.held != held or scene.held_grasp is None or scene.held_grasp.style != style
        ):
            scene.detach()
        scene.tuck()
        scene.set_base(self.poses[str(state[0])])
        for red, i in lay.loc_index.items():
            pose = state[i + 1]
            if isinstance(pose, tuple) and red != held:
                scene.place_object(red, float(pose[0]), float(pose[1]), float(pose[2]))
        z = self._task.settings.table_height
        for blue, i in lay.blue_index.items():
            value = state[i]
            if isinstance(value, tuple):
                scene.place_object(blue, float(value[0]), float(value[1]), z)
            else:
                scene.remove_object(blue)
        for j, i in enumerate(lay.bin_index):
            name = f"green_{j}"
            if state[i] == GREEN:
                b = self._bins[j]
                scene.place_object(name, b.x, b.y, b.floor_z)
            else:
                scene.remove_object(name)
        if held != NONE and scene.held is None and style in (TOP, SIDE):
            scene.hold(held, style)
        return scene

    def step(self, state: State, action: Action) -> State:
        """The (deterministic) successor of ``state`` under ``action``."""
        key = (state, action)
        found = self._memo.get(key)
        if found is None:
            found = self._step(state, action)
            if len(self._memo) >= MEMO_ENTRIES:
                self._memo.clear()
            self._memo[key] = found
        return found

    def _step(self, state: State, action: Action) -> State:
        skill, target, obj, grasp, bin_ = action
        if skill == NONE or self.is_terminal(state):
            return state
        held, style = str(state[1]), str(state[2])
        if skill == "move":
            if target not in self.poses or target == state[0]:
                return state
            pose = self.poses[str(target)]
            scene = self.sync(state)
            if not self._task.on_floor(pose) or not scene.base_free(pose):
                return state
            return (target, *state[1:])
        if skill == "pick":
            if held != NONE or obj not in self.layout.loc_index or grasp not in (TOP, SIDE):
                return state
            i = self.layout.loc_index[str(obj)]
            if state[i] not in (TABLE, STAGING) or not isinstance(state[i + 1], tuple):
                return state
            scene = self.sync(state)
            if not scene.check_grasp(scene.grasp(str(obj), str(grasp))).ok:
                return state
            return self._holding(state, str(obj), str(grasp))
        if skill == "place":
            if held == NONE or style != SIDE or bin_ == NONE:
                return state
            assert isinstance(bin_, int)
            b = self._bins[bin_]
            scene = self.sync(state)
            if not scene.check_place(scene.place_pose(b.x, b.y, b.floor_z)).ok:
                return state
            out = list(state)
            out[1] = out[2] = NONE
            i = self.layout.loc_index[held]
            out[i], out[i + 1] = bin_loc(bin_), (_r(b.x), _r(b.y), _r(b.floor_z))
            out[self.layout.bin_index[bin_]] = held
            return tuple(out)
        if skill == "regrasp":
            if held == NONE:
                return state
            return self._regrasp(state, held)
        return state

    def _regrasp(self, state: State, held: str) -> State:
        """Put the held red down on the first staging spot that takes it, then pick it from
        the side; unchanged if no spot allows both from the current base pose."""
        scene = self.sync(state)
        z = self._task.settings.table_height
        try:
            for x, y in self._task.staging_spots():
                if not scene.check_place(scene.place_pose(x, y, z)).ok:
                    continue
                scene.detach()
                scene.place_object(held, x, y, z)
                if scene.check_grasp(scene.grasp(held, SIDE)).ok:
                    return self._holding(state, held, SIDE)
                # Not from here: hold it again as the state says, try the next spot.
                scene.hold(held, str(state[2]))
        finally:
            # The scene may hold the red otherwise than the state: the next sync rebuilds.
            if scene.held is not None:
                scene.detach()
        return state

    def _holding(self, state: State, red: str, style: str) -> State:
        out = list(state)
        out[1], out[2] = red, style
        i = self.layout.loc_index[red]
        out[i], out[i + 1] = HELD, HELD
        for k in self.layout.bin_index:
            if out[k] == red:  # a red leaving a bin frees it
                out[k] = NONE
        return tuple(out)

    def tamp_interface(
        self, state: State, camp: Any, seed: int, settings: InterfaceSettings
    ) -> ManipTampInterface:
        """The task-and-motion planning interface for one planning call from ``state``
        (under ``camp``'s context if given): see :mod:`camp_planner.domains.manip.tamp`."""
        return tamp_interface(self, state, camp, seed, settings)

    # --- FactoredMDP ----------------------------------------------------------------------
    def initial_state(self) -> State:
        if self._initial is None:
            t = self._task
            out: list[Hashable] = [START, t.held or NONE, t.grasp_style or NONE]
            bins: list[Hashable] = [GREEN if occ else NONE for occ in t.occupied]
            for red in self.layout.reds:
                o = t.obj(red)
                if red == t.held:
                    out += [HELD, HELD]
                    continue
                place = t.place_of(o)
                out += [place, (_r(o.x), _r(o.y), _r(o.z))]
                if place.startswith("bin_"):
                    bins[int(place[len("bin_") :])] = red
            present = {o.name: o for o in t.distractors}
            for blue in self.layout.blues:
                b = present.get(blue)
                out.append((_r(b.x), _r(b.y)) if b is not None else ABSENT)
            self._initial = (*out, *bins)
        return self._initial

    def is_terminal(self, state: State) -> bool:
        return all(str(state[i]).startswith("bin_") for i in self.layout.loc_index.values())

    def return_bound(self) -> float | None:
        # Rewards are the goal's alone (less action costs in PDDL), earned at most once.
        return float(GOAL_REWARD)

    def reward(self, state: State, action: Action, next_state: State) -> float:
        if self.is_terminal(next_state) and not self.is_terminal(state):
            return GOAL_REWARD
        return 0.0

    def applicable_actions(self, state: State) -> Sequence[Action]:
        """Every discrete action whose symbolic preconditions hold (the simulator decides
        the rest): moves to the other work poses, picks, regrasp and places."""
        out: list[Action] = [
            ("move", name, NONE, NONE, NONE) for name in self.poses if name != state[0]
        ]
        if state[1] == NONE:
            out += [
                ("pick", NONE, red, style, NONE)
                for red in self.layout.reds
                for style in (TOP, SIDE)
            ]
        else:
            out.append(("regrasp", NONE, NONE, NONE, NONE))
            if state[2] == SIDE:
                out += [("place", NONE, NONE, NONE, j) for j in range(self.layout.n_bins)]
        return out

    def sample_next_state(self, state: State, action: Action, rng: random.Random) -> State:
        return self.step(state, action)

    def transition_distribution(self, state: State, action: Action) -> Sequence[Outcome]:
        return [Outcome(self.step(state, action), 1.0)]

    def most_likely_next_state(self, state: State, action: Action) -> State:
        return self.step(state, action)

    # --- keeping derived variables consistent ---------------------------------------------
    def _loc_of(self, pose: Vec3) -> str:
        for b in self._bins:
            if b.contains(pose[0], pose[1]) and abs(pose[2] - b.floor_z) < 0.02:
                return bin_loc(b.index)
        t = self._task.right_table
        if t.x0 <= pose[0] <= t.x1 and t.y0 <= pose[1] <= t.y1:
            return STAGING
        return TABLE

    def _pose_at(self, red: str, loc: str) -> Vec3:
        """The canonical pose of a red at ``loc``: its own spot on the left table, the first
        staging spot, a bin's centre."""
        if loc.startswith("bin_"):
            b = self._bins[int(loc[4:])]
            return (_r(b.x), _r(b.y), _r(b.floor_z))
        z = self._task.settings.table_height
        if loc == STAGING:
            x, y = self._task.staging_spots()[0]
            return (_r(x), _r(y), _r(z))
        o = self._task.obj(red)
        return (_r(o.x), _r(o.y), _r(o.z))

    def _release(self, out: list[Hashable], red: str) -> None:
        """``red`` back at home on the table if ``out`` says it is held."""
        i = self.layout.loc_index[red]
        if out[i] == HELD:
            out[i], out[i + 1] = TABLE, self._pose_at(red, TABLE)
        if out[1] == red:
            out[1] = out[2] = NONE

    def assign_state(self, state: State, index: int, value: Hashable) -> State:
        out = list(state)
        lay = self.layout
        if index == 1:  # what is held: that red leaves its place, the others go home
            for red in lay.reds:
                if red != value:
                    self._release(out, red)
            if value != NONE:
                i = lay.loc_index[str(value)]
                out[i] = out[i + 1] = HELD
                if out[2] == NONE:
                    out[2] = SIDE
            out[1] = value
            if value == NONE:
                out[2] = NONE
            return tuple(out)
        if index == 2:  # a grasp style only with something held
            if (value == NONE) != (out[1] == NONE):
                return state
            out[2] = value
            return tuple(out)
        for red, i in lay.loc_index.items():
            if index == i:  # a location moves the red to that location's canonical pose
                if value == HELD:
                    return self.assign_state(state, 1, red)
                self._release(out, red)
                out[i], out[i + 1] = value, self._pose_at(red, str(value))
                return tuple(out)
            if index == i + 1:
                if value == HELD:
                    return self.assign_state(state, 1, red)
                assert isinstance(value, tuple)
                self._release(out, red)
                out[i], out[i + 1] = self._loc_of((value[0], value[1], value[2])), value
                return tuple(out)
        return super().assign_state(state, index, value)

    # --- what CSI learning needs ------------------------------------------------------------
    def sample_value(self, index: int, rng: random.Random) -> Hashable:
        lay = self.layout
        var = self.state_vars[index]
        if index >= N_FIXED and var.name in lay.blue_index:
            # A blue anywhere in its own cell, or out of the world.
            home = self.initial_state()[index]
            if not isinstance(home, tuple) or rng.random() < 0.2:
                return ABSENT
            return (
                _r(float(home[0]) + rng.uniform(-BLUE_PROBE, BLUE_PROBE)),
                _r(float(home[1]) + rng.uniform(-BLUE_PROBE, BLUE_PROBE)),
            )
        for red, i in lay.loc_index.items():
            if index == i + 1:
                if rng.random() < 0.15:
                    return HELD
                loc = str(rng.choice(self.state_vars[i].domain or (TABLE,)))
                return HELD if loc == HELD else self._pose_at(red, loc)
        assert var.domain is not None
        return rng.choice(var.domain)

    def sample_state(self, rng: random.Random) -> State:
        """s0 with perturbations: blues moved within their cells or gone, a red held or
        elsewhere, bins' occupants redrawn, the base at any pose."""
        state = self.initial_state()
        lay = self.layout
        for i in lay.blue_index.values():
            if rng.random() < 0.2:
                state = self.assign_state(state, i, self.sample_value(i, rng))
        for i in lay.bin_index:
            if rng.random() < 0.2:
                state = self.assign_state(state, i, rng.choice((NONE, GREEN)))
        for i in lay.loc_index.values():
            if rng.random() < 0.2:
                state = self.assign_state(state, i, self.sample_value(i, rng))
        if rng.random() < 0.3:
            state = self.assign_state(state, 1, rng.choice(lay.reds))
            state = self.assign_state(state, 2, rng.choice((TOP, SIDE)))
        return self.assign_state(state, 0, rng.choice(lay.base_poses))

    def _near(self, pose: Sequence[Hashable]) -> list[str]:
        x, y = float(pose[0]), float(pose[1])  # type: ignore[arg-type]
        return [
            name
            for name, (px, py, _) in self.poses.items()
            if math.hypot(px - x, py - y) <= SAMPLE_REACH
        ]

    def _mount_distance(self, pose: str, x: float, y: float) -> float:
        px, py, yaw = self.poses[pose]
        m = self._task.settings.arm_mount_x
        return math.hypot(x - px - m * math.cos(yaw), y - py - m * math.sin(yaw))

    def _screened(self, key: tuple[Hashable, ...], find: Callable[[], _T]) -> _T:
        """``find()``, computed once per MDP: the screens below are pure functions of the
        task, so caching them changes no sample."""
        cache: dict[tuple[Hashable, ...], Any] = self.__dict__.setdefault("_sample_screens", {})
        if key not in cache:
            cache[key] = find()
        found: _T = cache[key]
        return found

    @staticmethod
    def _apart(a: tuple[Hashable, ...], b: tuple[Hashable, ...]) -> float:
        return math.hypot(float(a[0]) - float(b[0]), float(a[1]) - float(b[1]))  # type: ignore[arg-type]

    def _works(self, state: State, action: Action) -> bool:
        return self.step(state, action) != state

    def _pick_setting(
        self, red: str, style: str
    ) -> tuple[list[str], list[tuple[str, int, Hashable]]]:
        """Work poses for a CSI sample of picking ``red`` (at home, hands empty, in s0): those
        within reach from which the pick works (none, e.g., for a top pick of a red too wide
        for the gripper). For a side pick also the blockers: (pose, blue's index, position)
        where the pick from that pose works in s0 and fails once that blue, one near the
        red, stands at the corner of its probe's square nearest the red. A sample with the
        blue there shows the side pick's dependence on the blues to almost any probe (the
        blue anywhere else, or gone); of the side picks that merely worked, a third showed
        it (11 of 35 in 5 tasks)."""
        s0 = self.initial_state()
        home = s0[self.layout.loc_index[red] + 1]
        assert isinstance(home, tuple)
        rx, ry = float(home[0]), float(home[1])
        action = ("pick", NONE, red, style, NONE)
        works = [p for p in self._near(home) if self._works(self.assign_state(s0, 0, p), action)]
        blockers: list[tuple[str, int, Hashable]] = []
        if style != SIDE:
            return works, blockers
        for i in self.layout.blue_index.values():
            b = s0[i]
            if not isinstance(b, tuple):
                continue
            bx, by = float(b[0]), float(b[1])
            if math.hypot(bx - rx, by - ry) > BLUE_NEAR:
                continue
            dx = max(-BLUE_PROBE, min(BLUE_PROBE, rx - bx))
            dy = max(-BLUE_PROBE, min(BLUE_PROBE, ry - by))
            corner = (_r(bx + dx), _r(by + dy))
            shifted = self.assign_state(s0, i, corner)
            blockers += [
                (p, i, corner)
                for p in works
                if not self._works(self.assign_state(shifted, 0, p), action)
            ]
        return works, blockers

    def _place_setting(self, red: str, k: int) -> tuple[list[str], bool]:
        """Work poses for a CSI sample of placing ``red`` (held from the side) into bin
        ``k``, and whether the other bins must be empty for it: those of the
        ``PLACE_SAMPLE`` poses whose arm mount is nearest the bin from which the place into
        the emptied bin works in s0, else with every other bin emptied too (into the centre
        bin the held red or the arm meets its neighbours' greens: from no pose in 5 of 10
        tasks), else the nearest. From a pose where it cannot work, whatever the bin holds,
        the sample shows no dependence at all."""
        lay = self.layout
        s = self.assign_state(self.initial_state(), 1, red)
        s = self.assign_state(s, 2, SIDE)
        b = self._bins[k]
        right = [n for n in lay.base_poses if n.startswith("right_")]
        ranked = sorted(right, key=lambda n: self._mount_distance(n, b.x, b.y))[:PLACE_SAMPLE]
        action = ("place", NONE, NONE, NONE, k)
        for empty in (False, True):
            t = s
            for j, i in enumerate(lay.bin_index):
                if j == k or empty:
                    t = self.assign_state(t, i, NONE)
            works = [n for n in ranked if self._works(self.assign_state(t, 0, n), action)]
            if works:
                return works, empty
        return [ranked[0]], False

    def _pick_sample(
        self, state: State, red: str, style: str, rng: random.Random
    ) -> tuple[State, Action] | None:
        """A pick of ``red`` from its home in ``state`` (hands emptied, the blues near it
        where s0 has them) of the style drawn, else of the other, whichever can show a
        dependence: a top pick that works from some pose, a side pick that a blue can block
        (from a pose that sees it blocked for ``BLOCKED`` of the samples). None if neither
        can: a side pick that no blue can block shows only what the others show too, and in
        3 of the 10 training tasks it took every side pick of the universal context's 25
        samples, which then dropped every blue."""
        lay = self.layout
        s0 = self.initial_state()
        for chosen in (style, SIDE if style == TOP else TOP):
            poses, blockers = self._screened(
                ("pick", red, chosen), partial(self._pick_setting, red, chosen)
            )
            if not (blockers if chosen == SIDE else poses):
                continue
            state = self.assign_state(state, 1, NONE)
            i = lay.loc_index[red]
            state = self.assign_state(state, i + 1, s0[i + 1])
            home = s0[i + 1]
            assert isinstance(home, tuple)
            for j in lay.blue_index.values():
                b = s0[j]
                if isinstance(b, tuple) and self._apart(b, home) <= BLUE_NEAR:
                    state = self.assign_state(state, j, b)
            if blockers and rng.random() < BLOCKED:
                pose, j, corner = rng.choice(blockers)
                state = self.assign_state(state, j, corner)
            else:
                pose = rng.choice(poses)
            return self.assign_state(state, 0, pose), ("pick", NONE, red, chosen, NONE)
        return None

    def sample_state_action(self, rng: random.Random) -> tuple[State, Action]:
        """Samples built around what happens in this domain: a pick of a red at home on the
        left table (either style), a place of a side-held red into any bin, a regrasp facing
        the bins' table, or a move, each around a perturbed s0 (:meth:`sample_state`).

        Under an action-variable context only the actions it allows are samples, and a
        variable shows its influence only in the few actions whose outcome it decides: a
        bin's occupant only in places into that bin (and its neighbours), the grasp style in
        places, the blues in side picks. At k1 = 25 a plain mix of them missed one or the
        other (bins and the grasp style dropped under bin contexts with a third of the
        samples places, every blue dropped even under the universal context with 60 %
        places). So CSI learning spreads the samples over :meth:`csi_strata`
        (``csi.stratify``), and each sample is taken where its outcome depends on those
        variables: from a work pose from which the action works in s0
        (:meth:`_pick_sample`, :meth:`_place_setting`); for half of the side picks,
        with a blue in the way; for a place, the other bins as the screen had them and its
        own bin empty or holding its green evenly, so that both outcomes get sampled. Picks
        are of reds on the left table only: a red stands on the staging strip only inside
        a regrasp."""
        lay = self.layout
        state = self.sample_state(rng)
        roll = rng.random()
        red = rng.choice(lay.reds)
        if roll < PICKS:
            sample = self._pick_sample(state, red, rng.choice((TOP, SIDE)), rng)
            if sample is not None:
                return sample
            # No pick of this red shows anything here (a fat red, no blue near): a place.
        if roll < PLACES:
            k = rng.randrange(lay.n_bins)
            state = self.assign_state(state, 1, red)
            state = self.assign_state(state, 2, SIDE)
            poses, empty = self._screened(("place", red, k), lambda: self._place_setting(red, k))
            state = self.assign_state(state, 0, rng.choice(poses))
            s0 = self.initial_state()
            for i in lay.bin_index:  # the other bins as the screen had them
                state = self.assign_state(state, i, NONE if empty else s0[i])
            state = self.assign_state(state, lay.bin_index[k], rng.choice((NONE, GREEN)))
            return state, ("place", NONE, NONE, NONE, k)
        if roll < REGRASPS:
            state = self.assign_state(state, 1, red)
            state = self.assign_state(state, 2, rng.choice((TOP, SIDE)))
            right = [n for n in lay.base_poses if n.startswith("right_")]
            state = self.assign_state(state, 0, rng.choice(right))
            return state, ("regrasp", NONE, NONE, NONE, NONE)
        return state, ("move", rng.choice(lay.base_poses), NONE, NONE, NONE)

    def csi_strata(self, context: Context) -> list[Callable[[State, Action], bool]] | None:
        """The classes CSI learning spreads its samples over (``csi.stratify``): a place
        into each bin, a top pick, side picks (two shares), a regrasp and a move, those of
        them the context allows. Each allowed bin's occupant and the blues then get their
        own share of samples whatever else the context allows; rejection sampling at k1 = 25
        left, e.g., one place or none into each of two allowed bins. None for a context over
        other variables (the core then spreads a disjunction's samples over its terms)."""
        if not context.variables <= {"grasp", "bin"}:
            return None
        member = context.compile(self)
        s0 = self.initial_state()
        red = self.layout.reds[0]
        classes: list[tuple[Action, Callable[[State, Action], bool]]] = [
            (("place", NONE, NONE, NONE, k), _is_action("place", 4, k))
            for k in range(self.layout.n_bins)
        ]
        # Side picks twice: with a blue in the way (only they show the blues' influence) and
        # clear (the action's red then lands in the hand, which shows ``obj``'s influence).
        # Drawn as one class, 25 samples of a bin pair with side grasps held eight side
        # picks, every one blocked, and dropped ``obj`` (at 30 distractors, 2 of 12 contexts).
        side = _is_action("pick", 3, SIDE)
        classes += [
            (("pick", NONE, red, TOP, NONE), _is_action("pick", 3, TOP)),
            (("pick", NONE, red, SIDE, NONE), lambda s, a: side(s, a) and self._blocked(s, a)),
            (("pick", NONE, red, SIDE, NONE), lambda s, a: side(s, a) and not self._blocked(s, a)),
        ]
        classes += [
            (("regrasp", NONE, NONE, NONE, NONE), _is_action("regrasp", 0, "regrasp")),
            (("move", START, NONE, NONE, NONE), _is_action("move", 0, "move")),
        ]
        return [test for action, test in classes if member(s0, action)] or None

    def _blocked(self, state: State, action: Action) -> bool:
        """Whether a side-pick sample stands a blue where it blocks the pick
        (:meth:`_pick_setting`'s blockers, screened once per MDP)."""
        red = str(action[2])
        _, blockers = self._screened(("pick", red, SIDE), partial(self._pick_setting, red, SIDE))
        return any(state[0] == pose and state[j] == at for pose, j, at in blockers)

    def exchangeable_groups(self) -> Sequence[Sequence[tuple[str, ...]]]:
        """The blues, and the reds (each a slot of its location and pose). Every task draws
        the blues' cells at random (:func:`.world.generate_task`), so over the tasks each
        ``blue_k`` plays every other's role, as NAMO's box slots do: a side pick meets the
        one or two blues beside its red, so evidence found for them holds for all (without
        it the universal context kept only the few blues its side picks happened to meet, 3
        of 15 in one run). The reds of a task have one size and take outer cells at random:
        a pick of ``red_0`` that shows what the action's ``obj`` does to ``red_0``'s location
        shows it for ``red_1`` too (at 15 distractors the samples of two bin contexts picked
        only one of them, and dropped ``obj`` → the other)."""
        lay = self.layout
        name = [v.name for v in lay.state_vars]
        reds = [(name[lay.loc_index[red]], name[lay.pose_index(red)]) for red in lay.reds]
        return [[(b,) for b in lay.blues], reds]

    def sample_action(self, state: State, rng: random.Random) -> Action:
        return rng.choice(list(self.applicable_actions(state)))

    def describe_action(self, action: Action) -> str:
        skill, target, obj, grasp, bin_ = action
        if skill == "move":
            return f"move to {target}"
        if skill == "pick":
            return f"pick {obj} {grasp}"
        if skill == "place":
            return f"place into bin_{bin_}"
        if skill == "regrasp":
            return "regrasp side"
        return "none"
