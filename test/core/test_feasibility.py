"""Screening contexts by region connectivity: exact on small graphs, never too strict."""

from __future__ import annotations

import pytest

from camp_planner.core.context import Context, Term
from camp_planner.core.errors import CampError
from camp_planner.core.feasibility import RegionGraph, screen

# 0 — 1 — 2, and 3 hanging off 1; start in 0, goal in 2.
GRAPH = RegionGraph.from_edges("room", range(4), [(0, 1), (1, 2), (1, 3)], 0, [2])


def rooms(*values: int) -> Context:
    return Context("disjunction", tuple(Term("room", v) for v in values))


def test_a_context_that_cuts_the_only_corridor_cannot_reach_the_goal() -> None:
    assert GRAPH.can_reach_goal(rooms(0, 1, 2))
    assert GRAPH.can_reach_goal(rooms(0, 1, 2, 3))
    assert not GRAPH.can_reach_goal(rooms(0, 2, 3))  # room 1 is the only way through
    assert not GRAPH.can_reach_goal(rooms(1, 2, 3))  # the start itself is forbidden
    assert not GRAPH.can_reach_goal(rooms(0, 1, 3))  # the goal room is forbidden


def test_contexts_that_do_not_confine_the_region_variable_always_pass() -> None:
    assert GRAPH.can_reach_goal(Context.universal())
    assert GRAPH.can_reach_goal(Context("single", (Term("grasp", "top"),)))
    mixed = Context("disjunction", (Term("room", 0), Term("holding", "cup")))
    assert GRAPH.allowed_regions(mixed) is None and GRAPH.can_reach_goal(mixed)
    # A conjunction pins the region to one value: start ≠ goal, so it cannot succeed.
    pinned = Context("conjunction", (Term("room", 0), Term("grasp", "top")))
    assert GRAPH.allowed_regions(pinned) == frozenset({0})
    assert not GRAPH.can_reach_goal(pinned)


def test_screen_keeps_the_ranking_order_and_reports_what_it_dropped() -> None:
    ranked = [(rooms(0, 2, 3), 0.9), (rooms(0, 1, 2), 0.5), (Context.universal(), 0.1)]
    kept, dropped = screen(ranked, GRAPH)
    assert [c for c, _ in kept] == [rooms(0, 1, 2), Context.universal()]
    assert dropped == [rooms(0, 2, 3)]
    assert screen(ranked, None) == (ranked, [])


def test_malformed_graphs_are_rejected_with_the_region_named() -> None:
    with pytest.raises(CampError, match="edge 0–9"):
        RegionGraph.from_edges("room", range(3), [(0, 9)], 0, [2])
    with pytest.raises(CampError, match="start region 7"):
        RegionGraph.from_edges("room", range(3), [(0, 1)], 7, [2])
    with pytest.raises(CampError, match="goal region 5"):
        RegionGraph.from_edges("room", range(3), [(0, 1)], 0, [5])


def test_the_lightest_route_avoids_costly_regions_then_takes_the_fewest() -> None:
    # 0 — 1 — 2 — 5 and 0 — 3 — 4 — 5: the short way costs 3, the long way nothing.
    graph = RegionGraph.from_edges(
        "room", range(6), [(0, 1), (1, 2), (2, 5), (0, 3), (3, 4), (4, 5)], 0, [5]
    )
    assert graph.lightest_route({1: 3.0}) == [0, 3, 4, 5]
    assert graph.lightest_route({3: 1.0, 4: 1.0}) == [0, 1, 2, 5]
    # All free: the fewest regions win; equal costs on both: still the fewest.
    assert len(graph.lightest_route({}) or []) == 4
    detour = RegionGraph.from_edges("room", range(4), [(0, 1), (1, 3), (0, 2), (2, 3)], 0, [3])
    assert detour.lightest_route({1: 2.0, 2: 1.0}) == [0, 2, 3]
    # A goal no chain reaches, and costs that would reward detours, are refused or None.
    cut = RegionGraph.from_edges("room", range(3), [(0, 1)], 0, [2])
    assert cut.lightest_route({}) is None
    with pytest.raises(CampError, match="negative"):
        graph.lightest_route({1: -1.0})
    assert GRAPH.lightest_route({}) == [0, 1, 2]
