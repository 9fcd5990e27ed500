"""What every benchmark domain provides: task generation, the MDP, features and renders."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.feasibility import RegionGraph
from camp_planner.core.mdp import FactoredMDP
from camp_planner.core.objective import EpisodeResult


@dataclass(frozen=True)
class RenderPanel:
    """One picture in a side-by-side render: a labelled episode under a context."""

    title: str
    context: Context
    camp: CAMP | None
    episode: EpisodeResult | None


def paper_selector_settings() -> dict[str, Any]:
    """The selector settings of the paper's appendix (networks, Adam, stopping rule), plus
    ours: multilabel targets, screening, and the model switch (the paper's networks by
    default; see SelectorConfig for the structural model). Domains start from these."""
    return {
        "hidden": [50, 32, 10],
        "conv_channels": 10,
        "conv_kernel": 2,
        "conv_hidden": [32, 10],
        "learning_rate": 1e-4,
        "loss_target": 1e-3,
        "max_iterations": 20000,
        "labels": "multilabel",
        "temperature": 5.0,
        "screen": True,
        "model": "net",
        "structural_hidden": [16, 16],
        "structural_context_bias": True,
        "fallback_labels": False,
        "label_repeats": 1,
        "label_cost": "wall",
    }


class Domain(ABC):
    """A task distribution with a shared factored variable layout."""

    name: str = "domain"
    # Keys every cache of planning results (labels, evaluations) and selector bundles.
    version: str = "0"
    # Keys the learned CSIs, which depend on the transition model and its samples only: a
    # change to a planner alone bumps ``version`` and keeps them. None: the same as version.
    csi_version: str | None = None
    # Domain-specific baseline methods `camp eval` runs by default (e.g. "stilman").
    baselines: tuple[str, ...] = ()
    # The planner the CLI uses when none is named: the one the paper pairs with the domain
    # (BFS-replan cannot plan NAMO's continuous base poses, nor TAMP a gridworld).
    default_planner: str = "bfs_replan"
    # Whether the CAMP runtime may give up on a task (not plan at all, worth 0) when no
    # context is predicted to earn more: an agent scored only by its return may; a robot
    # sent on an errand should not (``camp.selection.give_up`` overrides it).
    may_give_up: bool = False

    def gives_up(self, config: Mapping[str, Any]) -> bool:
        """Whether the runtime may give up on this domain's tasks under ``config``."""
        value = (config.get("camp", {}).get("selection") or {}).get("give_up")
        return self.may_give_up if value is None else bool(value)

    @abstractmethod
    def default_config(self) -> dict[str, Any]:
        """Every setting with its default; config files may only override these keys."""

    @abstractmethod
    def make_tasks(self, config: Mapping[str, Any], split: str) -> Sequence[Any]:
        """The ``train`` or ``test`` tasks (seeded, disjoint between splits)."""

    @abstractmethod
    def make_mdp(self, task: Any, config: Mapping[str, Any]) -> FactoredMDP:
        """The factored MDP of one task."""

    @abstractmethod
    def features(self, task: Any) -> np.ndarray:
        """θ = φ(s0, R): the task features the context selector sees."""

    def task_kind(self, task: Any) -> str | None:
        """A short name for the kind of task (manipulation: ``skinny`` or ``fat`` objects),
        which ``camp train`` breaks its label counts down by; None (the default): one kind."""
        return None

    def region_graph(self, task: Any) -> RegionGraph | None:
        """The task's map of regions (rooms and their doors), if the domain has one; the
        selector uses it to skip contexts that cannot reach the goal."""
        return None

    def world_name(self, config: Mapping[str, Any]) -> str | None:
        """The name of the world ``config`` describes when the package ships a selector for
        it besides the paper's (``shipped_bundle``'s ``world``), else None."""
        return None

    def optional_settings(self) -> Mapping[str, Any]:
        """Settings of this domain that a file may give although its defaults lack them, as
        ``config.OPTIONAL`` (dotted key: the value, or the type, their absence means); kept
        out of the defaults so that the configurations, and the cache keys hashed from them,
        of files that do not give them stay as they were. None by default."""
        return {}

    def check_config(self, config: Mapping[str, Any]) -> None:
        """Raise a :class:`CampError` naming what a merged configuration's settings cannot
        hold together (each setting alone is checked by ``config.py``'s rules); by default,
        nothing."""
        return None

    def is_world_file(self, config: Mapping[str, Any]) -> bool:
        """Whether ``config`` describes a fixed world of the user's (a world file: NAMO's
        floor plan) rather than a distribution of drawn ones; none by default."""
        return False

    def context_templates(self) -> Mapping[str, str]:
        """The template contexts the domain can instantiate (``contexts.templates``), each
        with a one-line description; none by default."""
        return {}

    def instantiate(self, context: Context, task: Any) -> Context:
        """The concrete context ``context`` stands for on ``task``: a template's instance
        (:meth:`context_templates`), any other context itself."""
        if not context.is_template:
            return context
        raise CampError(f"{self.name} has no context templates ({context.name})")

    @abstractmethod
    def render(self, task: Any, panels: Sequence[RenderPanel], path: Path) -> None:
        """Write a PNG of the task with one panel per episode."""
