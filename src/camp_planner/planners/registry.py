"""Planners by name, so configuration files and the command line can choose a solver."""

from __future__ import annotations

import inspect
from typing import Any

from camp_planner.core.planner import Planner
from camp_planner.planners.bfs_replan import BFSReplan
from camp_planner.planners.fast_downward import FastDownward
from camp_planner.planners.mcts import MCTS
from camp_planner.planners.stilman import Stilman
from camp_planner.planners.tamp import TAMP
from camp_planner.planners.value_iteration import ValueIteration

_PLANNERS: dict[str, type[Planner]] = {
    "mcts": MCTS,
    "bfs_replan": BFSReplan,
    "vi": ValueIteration,
    "fast_downward": FastDownward,
    "tamp": TAMP,
    "stilman": Stilman,
}


def planner_names() -> list[str]:
    """The registered planner names, sorted."""
    return sorted(_PLANNERS)


def planner_version(name: str) -> str:
    """The version of planner ``name`` (see :attr:`Planner.version`)."""
    cls = _PLANNERS.get(name)
    if cls is None:
        raise ValueError(f"unknown planner '{name}'; choose one of: {', '.join(planner_names())}")
    return cls.version


def make_planner(name: str, seed: int = 0, **settings: Any) -> Planner:
    """A new planner ``name`` built with ``seed`` and keyword ``settings``.

    Raises :class:`ValueError` for an unknown name or a setting the planner doesn't accept, so
    a typo in a configuration fails loudly instead of being silently ignored.
    """
    cls = _PLANNERS.get(name)
    if cls is None:
        raise ValueError(f"unknown planner '{name}'; choose one of: {', '.join(planner_names())}")
    parameters = inspect.signature(cls.__init__).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        accepted = [
            p.name
            for p in parameters
            if p.name not in ("self", "seed")
            and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        ]
        unknown = sorted(set(settings) - set(accepted))
        if unknown:
            raise ValueError(
                f"unknown setting(s) {', '.join(repr(k) for k in unknown)} for planner "
                f"'{name}'; it accepts: {', '.join(accepted) or 'none'}"
            )
    return cls(seed=seed, **settings)
