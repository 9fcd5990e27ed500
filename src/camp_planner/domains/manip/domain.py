"""Sequential manipulation (paper domain D4) as a :class:`Domain`: seeded tasks, the
factored MDP, features (the red radius and the bins' occupancy), contexts over the action's
grasp style and target bin, renders. PyBullet starts only when an MDP is stepped.

The default planner is ``tamp``: Fast Downward over picks, regrasps and placements, refined
by :mod:`camp_planner.domains.manip.tamp` in the simulator (OMPL for the base). The MDP's
actions are discrete and enumerable, so ``bfs_replan`` can step them too (slowly: every
successor is a simulator query).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.errors import CampError
from camp_planner.core.mdp import FactoredMDP
from camp_planner.domains.base import Domain, RenderPanel, paper_selector_settings
from camp_planner.domains.manip.world import (
    ARM_REACH,
    RED_CELLS,
    ManipSettings,
    ManipTask,
    make_tasks,
    red_cells,
)

# A world file's keys (ManipDomain.optional_settings: absent from the defaults, so that the
# configurations of the paper's world, and every cache key hashed from them, stay as they
# were), each with the ManipSettings field it sets. Either section makes the world a fixed
# work cell of the user's; both tables share one height (the objects' poses assume it).
_TABLE_KEYS = {
    "height": "table_height",
    "left_gap": "left_gap",
    "right_gap": "right_gap",
    "staging_depth": "staging_depth",
}
_BIN_KEYS = {
    "per_side": "bins_per_side",
    "pitch": "bin_pitch",
    "inner": "bin_inner",
    "margin": "bin_margin",
}
_SECTIONS = {"tables": _TABLE_KEYS, "bins": _BIN_KEYS}
# Each size's range (metres), and why: the heights where the Panda, mounted on the 0.3 m
# base, still holds a side grasp; gaps that keep the base clear of both tables as it turns at
# its start (a corner is 0.42 m from its centre); a bin wide enough for a fat red's 0.16 m
# cap; a staging strip that stands one.
_RANGES = {
    "tables.height": (0.5, 0.7),
    "tables.left_gap": (0.45, 1.5),
    "tables.right_gap": (0.45, 1.5),
    "tables.staging_depth": (0.18, 0.5),
    "bins.pitch": (0.1, 0.5),
    "bins.inner": (0.17, 0.3),
    "bins.margin": (0.0, 0.3),
}


def world_settings(config: Mapping[str, Any]) -> ManipSettings:
    """The world a configuration describes (its ``world`` block: the distractors, where the
    reds may stand, and a world file's tables and bins; the defaults without them); a
    :class:`CampError` naming the ``world`` field the work cell cannot hold."""
    world = config.get("world") or {}
    cells = world.get("red_cells", ManipSettings.red_cells)
    if cells not in RED_CELLS:
        raise CampError(f"world.red_cells must be one of {', '.join(RED_CELLS)}, got {cells!r}")
    st = ManipSettings(n_distractors=int(world.get("n_distractors", 15)), red_cells=cells)
    given: dict[str, Any] = {}
    for section, keys in _SECTIONS.items():
        for key, value in (world.get(section) or {}).items():
            given[keys[key]] = _checked(f"{section}.{key}", value)
    if not given:
        return st
    n_bins = given.get("bins_per_side", st.bins_per_side) ** 2
    if n_bins < st.n_reds:
        raise CampError(
            f"world.bins.per_side {given['bins_per_side']} gives {n_bins} "
            f"{'bin' if n_bins == 1 else 'bins'}, too few for the {st.n_reds} reds"
        )
    st = replace(st, **given)
    _check_cell(st, config)
    return st


def _checked(field: str, value: Any) -> float | int:
    """``value`` of ``world.<field>`` if it is in range; else a CampError naming it."""
    if field == "bins.per_side":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise CampError(f"world.bins.per_side must be a whole number of bins, got {value!r}")
        return value
    lo, hi = _RANGES[field]
    if not lo <= value <= hi:
        raise CampError(f"world.{field} must be from {lo:g} to {hi:g} m, got {value!r}")
    return float(value)


def _check_cell(st: ManipSettings, config: Mapping[str, Any]) -> None:
    """A CampError naming the field that makes the work cell ``st`` unusable: bins that
    overlap, more bins than the contexts can name, a table off the floor, a red's cell or a
    bin the arm reaches from no work pose."""
    outer = st.bin_inner + 2 * st.bin_wall
    if st.bin_pitch < outer:
        raise CampError(
            f"world.bins.pitch {st.bin_pitch:g} m is less than a bin's outer width "
            f"{outer:.2f} m (world.bins.inner + its walls): neighbouring bins would overlap"
        )
    n_bins = st.bins_per_side**2
    limit = int(config["contexts"]["max_domain_size"])
    if n_bins + 1 > limit:
        raise CampError(
            f"world.bins.per_side {st.bins_per_side} gives {n_bins} bins: the action's bin "
            f"takes {n_bins + 1} values (none and each bin), more than "
            f"contexts.max_domain_size {limit} lets a context name"
        )
    task = ManipTask(0, 0, False, (), (False,) * n_bins, settings=st)
    hx, hy = st.world_half
    floor = f"the floor ({2 * hx:g} × {2 * hy:g} m, the robot's start in its middle)"
    for table, field in ((task.left_table, "left_gap"), (task.right_table, "right_gap")):
        if table.x0 < -hx or table.x1 > hx or table.y0 < -hy or table.y1 > hy:
            raise CampError(
                f"world.tables.{field} {getattr(st, field):g} m: {table.name} (x from "
                f"{table.x0:.2f} to {table.x1:.2f} m, y from {table.y0:.2f} to {table.y1:.2f} "
                f"m) does not fit on {floor}"
            )
    n = st.cells_per_side
    cx, cy = task.left_table.centre
    reds = [
        (cx + (i - (n - 1) / 2) * st.pitch, cy + (j - (n - 1) / 2) * st.pitch)
        for i, j in red_cells(st)
    ]
    targets = [
        ("table_left", "world.tables.left_gap (a red's place on the left table)", reds),
        ("table_right", "world.bins (a bin)", [(b.x, b.y) for b in task.bins]),
        ("table_right", "world.tables.staging_depth (a staging spot)", task.staging_spots()),
    ]
    for side, what, points in targets:
        mounts = [
            (x + st.arm_mount_x * math.cos(yaw), y + st.arm_mount_x * math.sin(yaw))
            for x, y, yaw in task.work_poses(side, per_side=12)
            if task.on_floor((x, y, yaw))
        ]
        for px, py in points:
            if all(math.hypot(px - mx, py - my) > ARM_REACH for mx, my in mounts):
                raise CampError(
                    f"{what} at ({px:.2f}, {py:.2f}) is out of the arm's reach: no work pose "
                    f"on {floor} puts the arm's mount ({st.arm_mount_x:g} m ahead of the "
                    f"base centre) within {ARM_REACH:g} m of it"
                )


def world_file_defaults() -> dict[str, dict[str, Any]]:
    """The world file's sections with the defaults (the paper's work cell) of their keys."""
    st = ManipSettings()
    return {
        section: {key: getattr(st, name) for key, name in keys.items()}
        for section, keys in _SECTIONS.items()
    }


class ManipDomain(Domain):
    """Paper domain D4: a mobile Panda puts two red objects into free bins."""

    name = "manip"
    # Bump when the simulator, its samples or the planner change behaviour (see NAMO's).
    version = "2"
    # CSI sampling alone changed (blocked and clear side picks as classes, the reds
    # exchangeable): learned CSIs are stale, bundles are not.
    csi_version = "3"
    default_planner = "tamp"

    def default_config(self) -> dict[str, Any]:
        return {
            "seed": 0,
            "tasks": {"train": 50, "test": 10},
            # The scaling row of issue 50 varies the distractors: 15 (5 × 5 grid), 30, 60.
            "world": {"n_distractors": 15},
            "mdp": {"horizon": 25, "gamma": 0.99},
            "contexts": {
                # The action's grasp style and target bin, "none" always allowed (a context
                # without it would forbid moving). Bin pairs as disjunctions
                # ("bin ∈ {none, a, b}", and the grasp's {none, top} / {none, side}), and
                # set conjunctions of both ("bin ∈ {none, 2, 5} ∧ grasp ∈ {none, top}").
                # Single terms forbid every other skill (grasp = top: no move), so none.
                # 48 disjunctions and 90 set conjunctions: a seeded subsample of 119 plus
                # the universal context, as issue 50 sizes the space.
                "variables": ["grasp", "bin"],
                "max_domain_size": 10,
                "required_values": ["none"],
                "include_single": False,
                "min_disjunction_length": 2,
                "max_disjunction_length": 3,
                "max_conjunction_length": 0,
                "max_set_conjunction_variables": 2,
                "max_set_size": 3,
                "max_contexts": 120,
                "seed": 0,
            },
            # Samples spread over the bins and grasps a context allows (ManipMDP.csi_strata):
            # at k1 = k2 = 25 plain rejection sampling left one place or none per allowed bin.
            # Every bin probed at each of its four occupants (complete_domains).
            "csi": {
                "k1": 25,
                "k2": 25,
                "tasks": 10,
                "seed": 0,
                "stratify": True,
                "complete_domains": True,
            },
            "camp": {"sink_reward": -1000.0, "attempt_budget_s": None},
            "selector": paper_selector_settings(),
            "timeout_s": 60.0,
            "lambda": {"tamp": 100.0, "bfs_replan": 100.0},
            "planners": {"bfs_replan": {"replan": "always"}},
        }

    def make_tasks(self, config: Mapping[str, Any], split: str) -> Sequence[ManipTask]:
        settings = world_settings(config)
        # ``tasks.test_seed`` (``camp eval --task-seed``) draws the test split from another
        # seed, for claims on tasks never used in development; training keeps ``seed``.
        seed = (
            config["tasks"].get("test_seed", config["seed"]) if split == "test" else config["seed"]
        )
        if settings.red_cells == "any":
            # The cluttered world keeps only layouts the simulator can pick every red in.
            from camp_planner.domains.manip.clutter import cluttered_tasks

            return list(cluttered_tasks(split, int(config["tasks"][split]), int(seed), settings))
        return make_tasks(split, int(config["tasks"][split]), int(seed), settings)

    def make_mdp(self, task: Any, config: Mapping[str, Any]) -> FactoredMDP:
        # The MDP's module loads PyBullet: only for a command that steps a task.
        from camp_planner.domains.manip.mdp import ManipMDP

        assert isinstance(task, ManipTask)
        return ManipMDP.from_task(
            task, horizon=int(config["mdp"]["horizon"]), gamma=float(config["mdp"]["gamma"])
        )

    def features(self, task: Any) -> np.ndarray:
        """θ: the red radius, then each bin's occupancy (0/1)."""
        assert isinstance(task, ManipTask)
        return np.asarray(task.features(), dtype=np.float32)

    def task_kind(self, task: Any) -> str | None:
        """``fat`` or ``skinny``: the objects a task's contexts are chosen for."""
        assert isinstance(task, ManipTask)
        return "fat" if task.fat else "skinny"

    def world_name(self, config: Mapping[str, Any]) -> str | None:
        # A world file is the user's work cell, and the cluttered world's tasks are not the
        # shipped selector's: nothing ships for either (no file of these names), so neither
        # is planned with a selector trained on the paper world's reds on outer cells.
        if self.is_world_file(config):
            return "workcell"
        return "cluttered" if config["world"].get("red_cells", "outer") == "any" else None

    def optional_settings(self) -> Mapping[str, Any]:
        # ``red_cells`` is absent from the defaults as a world file's sections are: a
        # configuration that does not give it hashes to the cache keys it always had.
        return {
            "world.red_cells": ManipSettings.red_cells,
            **{f"world.{section}": keys for section, keys in world_file_defaults().items()},
        }

    def check_config(self, config: Mapping[str, Any]) -> None:
        world_settings(config)

    def is_world_file(self, config: Mapping[str, Any]) -> bool:
        return any(section in config["world"] for section in _SECTIONS)

    def render(self, task: Any, panels: Sequence[RenderPanel], path: Path) -> None:
        """The task's scene; with panels, one per episode: the bins its context allows
        tinted, the bins its plan placed into outlined, each red's grasp style, the base
        poses it stood at joined in order, and what its CAMP dropped greyed out (a dropped
        bin's green too)."""
        import matplotlib.pyplot as plt  # on demand, as every domain's renderer

        from camp_planner.domains.manip.render import draw_scene

        assert isinstance(task, ManipTask)
        n = max(1, len(panels))
        fig, axes = plt.subplots(1, n, figsize=(7.0 * n, 3.8), squeeze=False)
        for k in range(n):
            panel = panels[k] if panels else None
            kwargs: dict[str, Any] = {}
            if panel is not None:
                kwargs = _episode_drawing(task, panel)
            draw_scene(
                axes[0][k],
                task,
                title=panel.title if panel is not None else f"task {task.task_id}",
                **kwargs,
            )
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)


def _episode_drawing(task: ManipTask, panel: RenderPanel) -> dict[str, Any]:
    """What :func:`draw_scene` shows of one panel's context, CAMP and episode."""
    context = panel.context
    allowed = None
    if "bin" in context.variables:
        allowed = [v for v in context.allowed("bin") if isinstance(v, int)]
    dropped: set[str] = set()
    if panel.camp is not None:
        for name in panel.camp.dropped_variables:
            dropped.add(f"green_{name[4:]}" if name.startswith("bin_") else name)
    grasps: dict[str, str] = {}
    grasp_poses: dict[str, tuple[float, float, float]] = {}
    chosen: list[int] = []
    poses = [task.start]
    if panel.episode is not None:
        for action in panel.episode.actions:
            skill, target, obj, grasp, bin_ = action
            if skill == "pick":
                grasps[str(obj)] = str(grasp)
                grasp_poses[str(obj)] = poses[-1]
            elif skill == "regrasp":
                held = next((o for o, s in grasps.items() if s == "top"), None)
                if held is not None:
                    grasps[held] = "top+side"
            elif skill == "place" and isinstance(bin_, int):
                chosen.append(bin_)
            elif skill == "move":
                pose = _work_pose(task, str(target))
                if pose is not None:
                    poses.append(pose)
    return {
        "dropped": dropped,
        "allowed_bins": allowed,
        "chosen_bins": chosen,
        "grasps": {o: s.split("+")[0] for o, s in grasps.items()},
        "grasp_poses": grasp_poses,
        "base_poses": poses,
        "base_path": poses,
    }


def _work_pose(task: ManipTask, name: str) -> tuple[float, float, float] | None:
    side, _, index = name.partition("_")
    table = {"left": "table_left", "right": "table_right"}.get(side)
    if table is None or not index.isdigit():
        return None
    return task.work_poses(table)[int(index)]
