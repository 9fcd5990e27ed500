"""The named worlds a domain's ROS system can be brought up in (the ``world`` parameter).

A world names a domain configuration and the selector bundle shipped for it; ``""`` is the
domain's default world (NAMO: the paper's 3×3 rooms), with the domain's default
configuration and its shipped bundle. This module imports neither rclpy nor torch, so that
``camp bringup --help`` and the nodes share one table without loading either.
"""

from __future__ import annotations

from camp_planner.core.errors import CampError

DEFAULT_WORLD = ""

# domain -> world -> its configuration file (looked up like any config_file parameter:
# working directory, installed share/camp_planner, source tree). The bundle of world W is
# learning.bundle.shipped_bundle(domain, "tamp", world=W).
WORLDS: dict[str, dict[str, str]] = {
    "namo": {"grid10": "config/namo/grid10.yaml"},
}


def world_names(domain: str) -> list[str]:
    """The named worlds of ``domain`` (its default world, ``""``, not counted)."""
    return sorted(WORLDS.get(domain, {}))


def describe_worlds(domain: str) -> str:
    """The worlds ``domain`` accepts, for help texts and error messages."""
    return ", ".join(["'' (the default world)", *world_names(domain)])


def check_world(domain: str, world: str) -> str:
    """``world`` if ``domain`` has it; else a :class:`CampError` naming the known ones."""
    if world != DEFAULT_WORLD and world not in WORLDS.get(domain, {}):
        raise CampError(
            f"unknown world {world!r} for {domain}: choose one of {describe_worlds(domain)}"
        )
    return world


def world_config(domain: str, world: str) -> str:
    """The configuration file of ``domain``'s ``world`` (``""``: the domain's defaults)."""
    check_world(domain, world)
    return WORLDS[domain][world] if world else ""
