"""Sequential manipulation (paper domain D4) as a :class:`Domain`: seeded tasks, the
factored MDP, features (the red radius and the bins' occupancy), contexts over the action's
grasp style and target bin, renders. PyBullet starts only when an MDP is stepped.

The default planner is ``tamp``: Fast Downward over picks, regrasps and placements, refined
by :mod:`camp_planner.domains.manip.tamp` in the simulator (OMPL for the base). The MDP's
actions are discrete and enumerable, so ``bfs_replan`` can step them too (slowly: every
successor is a simulator query).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.mdp import FactoredMDP
from camp_planner.domains.base import Domain, RenderPanel, paper_selector_settings
from camp_planner.domains.manip.world import ManipSettings, ManipTask, make_tasks


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
        settings = ManipSettings(n_distractors=int(config["world"]["n_distractors"]))
        # ``tasks.test_seed`` (``camp eval --task-seed``) draws the test split from another
        # seed, for claims on tasks never used in development; training keeps ``seed``.
        seed = (
            config["tasks"].get("test_seed", config["seed"]) if split == "test" else config["seed"]
        )
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
