"""The named worlds a domain's ROS system can be brought up in (the ``world`` parameter).

A world names a domain configuration and the selector bundle shipped for it; ``""`` is the
domain's default world (NAMO: the paper's 3×3 rooms), with the domain's default
configuration and its shipped bundle. A world may also be the path of a world file (a
``.yaml`` of the user's building, ``docs/your-building.md``): the file is the configuration,
and its bundle is the one ``camp train --world FILE`` wrote beside it
(:func:`camp_planner.config.world_bundle`). This module imports neither rclpy nor torch, so
that ``camp bringup --help`` and the nodes share one table without loading either.
"""

from __future__ import annotations

from pathlib import Path

from camp_planner.config import load_world_file, world_bundle
from camp_planner.core.errors import CampError

DEFAULT_WORLD = ""

# domain -> world -> its configuration file (looked up like any config_file parameter:
# working directory, installed share/camp_planner, source tree). The bundle of world W is
# learning.bundle.shipped_bundle(domain, "tamp", world=W).
WORLDS: dict[str, dict[str, str]] = {
    "namo": {"grid10": "config/namo/grid10.yaml", "grid20": "config/namo/grid20.yaml"},
}


def world_names(domain: str) -> list[str]:
    """The named worlds of ``domain`` (its default world, ``""``, not counted)."""
    return sorted(WORLDS.get(domain, {}))


WORLD_FILE_SUFFIXES = (".yaml", ".yml")


def describe_worlds(domain: str) -> str:
    """The worlds ``domain`` accepts, for help texts and error messages."""
    return ", ".join(["'' (the default world)", *world_names(domain), "a world file (.yaml)"])


def is_world_file(world: str) -> bool:
    """Whether ``world`` names a world file rather than a named world."""
    return world.endswith(WORLD_FILE_SUFFIXES)


def check_world(domain: str, world: str) -> str:
    """``world`` if ``domain`` has it, or if it is a valid world file of ``domain``; else a
    :class:`CampError` naming the known worlds, or what is wrong with the file."""
    if is_world_file(world):
        load_world_file(Path(world), domain)
        return world
    if world != DEFAULT_WORLD and world not in WORLDS.get(domain, {}):
        raise CampError(
            f"unknown world {world!r} for {domain}: choose one of {describe_worlds(domain)}"
        )
    return world


def world_config(domain: str, world: str) -> str:
    """The configuration file of ``domain``'s ``world`` (``""``: the domain's defaults; a
    world file is its own)."""
    check_world(domain, world)
    if is_world_file(world):
        return world
    return WORLDS[domain][world] if world else ""


def world_file_bundle(world: str) -> str:
    """The bundle of world file ``world`` (``""`` for a named world, or when ``camp train
    --world`` has not written one beside the file)."""
    if not is_world_file(world):
        return ""
    bundle = world_bundle(Path(world))
    return str(bundle) if bundle.is_file() else ""
