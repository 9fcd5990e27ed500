"""The domain and robot plug-in registries: every domain by name, a plug-in only for the
domains that can be planned from scenes, and a clear refusal for the rest."""

from __future__ import annotations

import pytest

from camp_planner.core.errors import CampError
from camp_planner.domains import (
    domain_names,
    get_domain,
    get_plugin,
    plugin_domains,
    register_plugin,
)
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.manip.plugin import ManipPlugin
from camp_planner.domains.namo.plugin import NamoPlugin


def test_every_domain_is_built_by_name() -> None:
    assert domain_names() == ["dinner", "gridworld", "manip", "namo", "pddl"]
    names = ("dinner", "gridworld", "manip", "namo")
    assert [get_domain(name).name for name in names] == list(names)
    with pytest.raises(CampError, match=r"unknown domain 'chess'.*gridworld"):
        get_domain("chess")


def test_namo_has_the_robot_plug_in_and_a_domain_without_one_is_refused_by_name() -> None:
    assert "namo" in plugin_domains()
    plugin = get_plugin("namo")
    assert isinstance(plugin, NamoPlugin) and plugin.domain == "namo"
    with pytest.raises(ServiceError) as info:
        get_plugin("gridworld")
    assert info.value.code == ErrorCode.UNKNOWN_DOMAIN
    assert "scenes are supported for: manip, namo" in info.value.message


def test_manip_has_the_robot_plug_in_and_its_sim_node() -> None:
    assert plugin_domains() == ["manip", "namo"]
    plugin = get_plugin("manip")
    assert isinstance(plugin, ManipPlugin) and plugin.domain == "manip"
    assert plugin.sim_node == "manip_sim"


def test_a_plug_in_registers_under_its_domain_s_name() -> None:
    register_plugin("namo-copy", "camp_planner.domains.namo.plugin:NamoPlugin")
    try:
        assert "namo-copy" in plugin_domains()
        assert isinstance(get_plugin("namo-copy"), NamoPlugin)
    finally:
        from camp_planner import domains

        del domains._PLUGINS["namo-copy"]
