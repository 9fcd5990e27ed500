"""The general PDDL path: a domain file and problem files become CAMP-ready tasks.

Every problem is grounded (ground fluents are the state variables, ground operators the
actions, STRIPS semantics the transition model; see :mod:`camp_planner.pddl.mdp`), then
re-indexed onto the union of all problems' fluents so that every task shares one variable
layout, which CSI learning across tasks needs. Task features are the initial state and the
goal as bit vectors over that layout. Context variables default to a seeded sample of
"fluent stays false" terms; name the fluents that matter in ``contexts.variables``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.errors import CampError
from camp_planner.core.mdp import FactoredMDP
from camp_planner.domains.base import Domain, RenderPanel, paper_selector_settings
from camp_planner.pddl.grounding import GroundTask, ground, on_layout
from camp_planner.pddl.mdp import PddlSource, StripsMDP
from camp_planner.pddl.parser import parse_domain, parse_problem


@dataclass(frozen=True)
class PddlFileTask:
    """One problem file of a user's PDDL domain."""

    task_id: int
    problem: str
    domain: str
    layout: tuple[str, ...]  # the fluents shared by every task of the configuration

    def grounded(self) -> GroundTask:
        return on_layout(_ground(self.domain, self.problem), self.layout)


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise CampError(f"cannot read PDDL file {path}: {exc.strerror}") from exc


@lru_cache(maxsize=256)
def _grounded(domain_path: str, problem_path: str, digest: str) -> GroundTask:
    # ``digest`` (of both files' text) keys the cache, so edited files are reground.
    domain = parse_domain(_read(domain_path), Path(domain_path).name)
    problem = parse_problem(_read(problem_path), Path(problem_path).name, domain)
    return ground(domain, problem)


def _ground(domain_path: str, problem_path: str) -> GroundTask:
    digest = hashlib.sha1((_read(domain_path) + "\0" + _read(problem_path)).encode())
    return _grounded(domain_path, problem_path, digest.hexdigest())


@lru_cache(maxsize=16)
def _layout(domain_path: str, problems: tuple[str, ...]) -> tuple[str, ...]:
    fluents: set[str] = set()
    for problem in problems:
        fluents.update(_ground(domain_path, problem).fluents)
    return tuple(sorted(fluents))


class PddlFilesDomain(Domain):
    """Tasks from ``pddl.domain`` and the problem files ``pddl.train`` / ``pddl.test``."""

    name = "pddl"
    default_planner = "fast_downward"
    version = "1"

    def default_config(self) -> dict[str, Any]:
        return {
            "seed": 0,
            "pddl": {"domain": "", "train": [], "test": [], "goal_reward": 0.0},
            "tasks": {"train": 0, "test": 0},
            "mdp": {"horizon": 200},
            "contexts": {
                "variables": None,
                "values": [0],
                "max_domain_size": 4,
                "include_single": True,
                "min_disjunction_length": 2,
                "max_disjunction_length": 0,
                "max_conjunction_length": 0,
                "max_contexts": 20,
                "seed": 0,
            },
            "csi": {"k1": 1000, "k2": 40, "tasks": 5, "seed": 0},
            # Distractor objects are irrelevant under every context, the universal one too.
            "camp": {
                "sink_reward": -1000.0,
                "universal_relevance": "learned",
                "attempt_budget_s": None,
            },
            "selector": paper_selector_settings(),
            "timeout_s": 60.0,
            "lambda": {"fast_downward": 250.0},
            "planners": {"fast_downward": {"search": "astar(lmcut())"}},
        }

    def _files(self, config: Mapping[str, Any]) -> tuple[str, list[str], list[str]]:
        section = config["pddl"]
        domain = str(section["domain"])
        if not domain:
            raise CampError(
                "the pddl domain needs files: --pddl-domain D.pddl --pddl-problems P.pddl … "
                "(or pddl.domain / pddl.train / pddl.test in the config)"
            )
        train = [str(p) for p in section["train"]]
        test = [str(p) for p in section["test"]] or train
        if not train:
            raise CampError("give at least one PDDL problem file")
        return domain, train, test

    def make_tasks(self, config: Mapping[str, Any], split: str) -> Sequence[PddlFileTask]:
        if split == "test" and "test_seed" in config.get("tasks", {}):
            # The test problems are files, not seeded draws: no seed makes them fresh.
            raise CampError(
                "tasks.test_seed (camp eval --task-seed) does not apply to the pddl domain: "
                "its test tasks are the problem files (give new ones with --pddl-test)"
            )
        domain, train, test = self._files(config)
        layout = _layout(domain, tuple(sorted(set(train) | set(test))))
        files = train if split == "train" else test
        return [PddlFileTask(i, path, domain, layout) for i, path in enumerate(files)]

    def make_mdp(self, task: Any, config: Mapping[str, Any]) -> FactoredMDP:
        assert isinstance(task, PddlFileTask)
        return StripsMDP.from_task(
            task.grounded(),
            name=Path(task.problem).stem,
            horizon=int(config["mdp"]["horizon"]),
            goal_reward=float(config["pddl"]["goal_reward"]),
            source=PddlSource(_read(task.domain), _read(task.problem)),
        )

    def features(self, task: Any) -> np.ndarray:
        """θ: the initial state and the goal, as bits over the shared fluent layout."""
        assert isinstance(task, PddlFileTask)
        grounded = task.grounded()
        bits = np.zeros((2, len(task.layout)), dtype=np.float32)
        bits[0, sorted(grounded.init)] = 1.0
        bits[1, sorted(grounded.goal_pos)] = 1.0
        bits[1, sorted(grounded.goal_neg)] = -1.0
        return bits.ravel()

    def render(self, task: Any, panels: Sequence[RenderPanel], path: Path) -> None:
        from camp_planner.domains.pddl_files.render import render_plans

        assert isinstance(task, PddlFileTask)
        render_plans(Path(task.problem).stem, panels, path)
