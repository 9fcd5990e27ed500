"""The gridworld as a :class:`Domain`: seeded train/test tasks, features and renders."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.feasibility import RegionGraph
from camp_planner.core.mdp import FactoredMDP
from camp_planner.domains.base import Domain, RenderPanel, paper_selector_settings
from camp_planner.domains.gridworld.mdp import GridworldMDP
from camp_planner.domains.gridworld.world import (
    N_ROOMS,
    GridworldSettings,
    GridworldTask,
    generate_task,
)

# Train and test seeds come from disjoint ranges so no test task is ever trained on.
_SPLIT_OFFSET = {"train": 0, "test": 1_000_000}


class GridworldDomain(Domain):
    """Paper domain D1."""

    name = "gridworld"
    version = "2"
    # The agent is scored by its return alone: not setting out is an episode worth 0.
    may_give_up = True

    def default_config(self) -> dict[str, Any]:
        return {
            "seed": 0,
            "tasks": {"train": 50, "test": 10},
            "mdp": {"horizon": 25, "gamma": 0.99},
            "world": {
                "enemy_rooms": 2,
                "min_enemies_per_room": 1,
                "max_enemies_per_room": 3,
                "extra_door_prob": 0.35,
                "move_prob": 0.9,
                "goal_reward": 100.0,
            },
            "contexts": {
                "variables": ["agent_room"],
                "max_domain_size": 10,
                "include_single": False,
                "min_disjunction_length": 7,
                "max_disjunction_length": 8,
                "max_conjunction_length": 0,
                "max_contexts": None,
                "seed": 0,
            },
            "csi": {"k1": 50, "k2": 50, "tasks": 10, "seed": 0},
            "camp": {"sink_reward": -1000.0, "attempt_budget_s": None},
            "selector": paper_selector_settings(),
            "timeout_s": 60.0,
            "lambda": {"mcts": 0.0, "bfs_replan": 100.0, "vi": 100.0},
            "planners": {
                "mcts": {"time_per_step": 0.25, "leaf": "estimate", "normalise": "open"},
                "bfs_replan": {"replan": "always"},
                "vi": {},
            },
        }

    def make_tasks(self, config: Mapping[str, Any], split: str) -> Sequence[GridworldTask]:
        settings = GridworldSettings(**config["world"])
        # ``tasks.test_seed`` (``camp eval --task-seed``) draws the test split from another
        # seed, for claims on tasks never used in development; training keeps ``seed``.
        seed = (
            config["tasks"].get("test_seed", config["seed"]) if split == "test" else config["seed"]
        )
        base = int(seed) * 10_000 + _SPLIT_OFFSET[split]
        count = int(config["tasks"][split])
        return [generate_task(i, base + i, settings) for i in range(count)]

    def make_mdp(self, task: Any, config: Mapping[str, Any]) -> FactoredMDP:
        assert isinstance(task, GridworldTask)
        return GridworldMDP.from_task(
            task, horizon=int(config["mdp"]["horizon"]), gamma=float(config["mdp"]["gamma"])
        )

    def features(self, task: Any) -> np.ndarray:
        """A top-down image, 4×19×19: walls, enemies, start, goal (cells at odd pixels)."""
        assert isinstance(task, GridworldTask)
        img = np.zeros((4, 19, 19), dtype=np.float32)
        img[0] = 1.0
        for r, c in task.cells():
            img[0, 2 * r + 1, 2 * c + 1] = 0.0
            for dr, dc in ((0, 1), (1, 0)):
                nb = (r + dr, c + dc)
                if nb[0] < task.height and nb[1] < task.width and task.passable((r, c), nb):
                    img[0, 2 * r + 1 + dr, 2 * c + 1 + dc] = 0.0
        for enemy in task.enemies:
            for r, c in enemy.cycle[:1]:
                img[1, 2 * r + 1, 2 * c + 1] += 1.0
        img[2, 2 * task.start[0] + 1, 2 * task.start[1] + 1] = 1.0
        img[3, 2 * task.goal[0] + 1, 2 * task.goal[1] + 1] = 1.0
        return img

    def region_graph(self, task: Any) -> RegionGraph:
        """Rooms joined by doors; the agent starts in its start room, the goal's room ends."""
        assert isinstance(task, GridworldTask)
        edges = {(task.room_of(a), task.room_of(b)) for a, b in task.doors}
        return RegionGraph.from_edges(
            "agent_room",
            range(N_ROOMS),
            edges,
            task.room_of(task.start),
            [task.room_of(task.goal)],
        )

    def render(self, task: Any, panels: Sequence[RenderPanel], path: Path) -> None:
        from camp_planner.domains.gridworld.render import render_panels

        assert isinstance(task, GridworldTask)
        render_panels(task, panels, path)
