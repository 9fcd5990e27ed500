"""The benchmark domains and their robot plug-ins, looked up by name.

Both registries map a name to ``"module:attribute"`` and import the module on first use: a
domain's module loads its simulator (PyBullet, OMPL), which a command about another domain
must not pay for. A new domain adds one line to each (or calls :func:`register_domain` and
:func:`register_plugin` from its own package); ``docs/adding-a-domain.md`` lists the rest.
"""

from __future__ import annotations

import importlib

from camp_planner.core.errors import CampError
from camp_planner.domains.base import Domain
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.plugin import DomainPlugin

_DOMAINS: dict[str, str] = {
    "dinner": "camp_planner.domains.dinner.domain:DinnerDomain",
    "gridworld": "camp_planner.domains.gridworld.domain:GridworldDomain",
    "manip": "camp_planner.domains.manip.domain:ManipDomain",
    "namo": "camp_planner.domains.namo.domain:NamoDomain",
    "pddl": "camp_planner.domains.pddl_files.domain:PddlFilesDomain",
}
# Domains that can be planned from perceived scenes (the service and the ROS nodes).
_PLUGINS: dict[str, str] = {
    "manip": "camp_planner.domains.manip.plugin:ManipPlugin",
    "namo": "camp_planner.domains.namo.plugin:NamoPlugin",
}


def _load(target: str) -> object:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def register_domain(name: str, target: str) -> None:
    """Make ``get_domain(name)`` build ``target`` (``"package.module:DomainClass"``)."""
    _DOMAINS[name] = target


def register_plugin(name: str, target: str) -> None:
    """Make ``get_plugin(name)`` build ``target`` (``"package.module:PluginClass"``)."""
    _PLUGINS[name] = target


def domain_names() -> list[str]:
    return sorted(_DOMAINS)


def plugin_domains() -> list[str]:
    """The domains with a robot plug-in (a scene adapter, plan geometry and simulator)."""
    return sorted(_PLUGINS)


def get_domain(name: str) -> Domain:
    """The domain called ``name``; a clear error lists the known ones otherwise."""
    if name not in _DOMAINS:
        raise CampError(f"unknown domain '{name}'; choose one of: {', '.join(domain_names())}")
    domain = _load(_DOMAINS[name])
    assert isinstance(domain, type) and issubclass(domain, Domain)
    return domain()


def get_plugin(name: str) -> DomainPlugin:
    """The robot plug-in of domain ``name``, or an ``UNKNOWN_DOMAIN`` refusal naming the
    domains that have one."""
    if name not in _PLUGINS:
        raise ServiceError(
            ErrorCode.UNKNOWN_DOMAIN,
            f"domain '{name}' has no scene adapter; scenes are supported for: "
            + ", ".join(plugin_domains()),
        )
    plugin = _load(_PLUGINS[name])
    assert isinstance(plugin, type) and issubclass(plugin, DomainPlugin)
    return plugin()
