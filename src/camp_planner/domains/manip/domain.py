"""Sequential manipulation (paper domain D4) as a :class:`Domain`: seeded tasks, the
factored MDP, features (the red radius and the bins' occupancy), contexts over the action's
grasp style and target bin, renders. PyBullet starts only when an MDP is stepped.

The default planner is ``bfs_replan`` for now: the MDP's actions are discrete and
enumerable, so it can step them, and ``camp contexts`` and ``camp csi`` never plan at all.
The paper pairs D4 with the TAMP planner of NAMO; ``default_planner`` becomes ``"tamp"`` once
the manipulation TAMP interface (symbolic model and refiners) exists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.mdp import FactoredMDP
from camp_planner.domains.base import Domain, RenderPanel, paper_selector_settings
from camp_planner.domains.manip.world import ManipTask, make_tasks


class ManipDomain(Domain):
    """Paper domain D4: a mobile Panda puts two red objects into free bins."""

    name = "manip"
    # Bump when the simulator, its samples or the planner change behaviour (see NAMO's).
    version = "1"
    default_planner = "bfs_replan"

    def default_config(self) -> dict[str, Any]:
        return {
            "seed": 0,
            "tasks": {"train": 50, "test": 10},
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
            "csi": {"k1": 25, "k2": 25, "tasks": 10, "seed": 0},
            "camp": {"sink_reward": -1000.0, "attempt_budget_s": None},
            "selector": paper_selector_settings(),
            "timeout_s": 60.0,
            "lambda": {"tamp": 100.0, "bfs_replan": 100.0},
            "planners": {"bfs_replan": {"replan": "always"}},
        }

    def make_tasks(self, config: Mapping[str, Any], split: str) -> Sequence[ManipTask]:
        return make_tasks(split, int(config["tasks"][split]), int(config["seed"]))

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

    def render(self, task: Any, panels: Sequence[RenderPanel], path: Path) -> None:
        """The task's scene; with panels, one per episode, the bins each context allows
        tinted (the panels' plans are drawn once the TAMP plan geometry exists)."""
        import matplotlib.pyplot as plt  # on demand, as every domain's renderer

        from camp_planner.domains.manip.render import draw_scene

        assert isinstance(task, ManipTask)
        n = max(1, len(panels))
        fig, axes = plt.subplots(1, n, figsize=(7.0 * n, 3.8), squeeze=False)
        for k in range(n):
            panel = panels[k] if panels else None
            allowed = None
            if panel is not None and "bin" in panel.context.variables:
                allowed = [v for v in panel.context.allowed("bin") if isinstance(v, int)]
            draw_scene(
                axes[0][k],
                task,
                allowed_bins=allowed,
                title=panel.title if panel is not None else f"task {task.task_id}",
            )
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
