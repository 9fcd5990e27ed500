"""The benchmark domains, looked up by name."""

from __future__ import annotations

from camp_planner.core.errors import CampError
from camp_planner.domains.base import Domain


def domain_names() -> list[str]:
    return ["dinner", "gridworld", "namo", "pddl"]


def get_domain(name: str) -> Domain:
    """The domain called ``name``; a clear error lists the known ones otherwise."""
    if name == "gridworld":
        from camp_planner.domains.gridworld.domain import GridworldDomain

        return GridworldDomain()
    if name == "dinner":
        from camp_planner.domains.dinner.domain import DinnerDomain

        return DinnerDomain()
    if name == "namo":
        from camp_planner.domains.namo.domain import NamoDomain

        return NamoDomain()
    if name == "pddl":
        from camp_planner.domains.pddl_files.domain import PddlFilesDomain

        return PddlFilesDomain()
    raise CampError(f"unknown domain '{name}'; choose one of: {', '.join(domain_names())}")
