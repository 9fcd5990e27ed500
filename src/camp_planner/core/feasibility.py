"""Screening out contexts that cannot reach the goal, before any planning happens.

A context that keeps the robot inside a set of regions (rooms) is useless for a task when no
chain of neighbouring allowed regions joins the start region to a goal region: every plan
that reaches the goal must leave the set, which the CAMP sends to the sink. Planning in such
a CAMP is pure loss: the planner exhausts the reduced problem before it can report failure,
and only then does the fallback start. Whether that is so needs only the task's region graph
(rooms and the doors between them), which a map provides, so this check costs microseconds.

The test is a *necessary* condition: a context that passes may still fail (an enemy or an
obstacle blocks the only door), which the fallback chain handles. It never rejects a context
that could succeed, so screening keeps the planner's completeness. Contexts that do not
constrain the region variable alone (the universal context, contexts over other variables,
disjunctions mixing variables) always pass.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError

T = TypeVar("T")


@dataclass(frozen=True)
class RegionGraph:
    """Which values of a region variable neighbour which, where the robot starts, and which
    regions hold the goal (e.g. rooms joined by doors; the goal room)."""

    variable: str
    adjacency: Mapping[Hashable, frozenset[Hashable]]
    start: Hashable
    goals: frozenset[Hashable]

    def __post_init__(self) -> None:
        if self.start not in self.adjacency:
            raise CampError(f"region graph: start region {self.start!r} is not in the graph")
        unknown = [g for g in self.goals if g not in self.adjacency]
        if unknown:
            raise CampError(f"region graph: goal region {unknown[0]!r} is not in the graph")

    @staticmethod
    def from_edges(
        variable: str,
        regions: Iterable[Hashable],
        edges: Iterable[tuple[Hashable, Hashable]],
        start: Hashable,
        goals: Iterable[Hashable],
    ) -> RegionGraph:
        """An undirected graph from region pairs (e.g. the two rooms a door joins)."""
        adjacency: dict[Hashable, set[Hashable]] = {r: set() for r in regions}
        for a, b in edges:
            if a not in adjacency or b not in adjacency:
                raise CampError(f"region graph: edge {a!r}–{b!r} names an unknown region")
            adjacency[a].add(b)
            adjacency[b].add(a)
        return RegionGraph(
            variable, {r: frozenset(n) for r, n in adjacency.items()}, start, frozenset(goals)
        )

    def allowed_regions(self, context: Context) -> frozenset[Hashable] | None:
        """The regions ``context`` confines the robot to, or None when it does not confine
        the region variable on its own."""
        if context.is_universal or self.variable not in context.variables:
            return None
        values = context.allowed(self.variable)
        if context.kind == "disjunction" and len(context.variables) > 1:
            return None  # "in region A or holding X": leaving A need not violate it
        if context.kind == "conjunction" and len(values) != 1:
            return None
        return frozenset(values)

    def can_reach_goal(self, context: Context) -> bool:
        """Whether some chain of allowed, neighbouring regions joins start and a goal."""
        allowed = self.allowed_regions(context)
        if allowed is None:
            return True
        if self.start not in allowed:
            return False
        seen = {self.start}
        queue = deque([self.start])
        while queue:
            region = queue.popleft()
            if region in self.goals:
                return True
            for nb in self.adjacency[region]:
                if nb in allowed and nb not in seen:
                    seen.add(nb)
                    queue.append(nb)
        return False

    def lightest_route(self, cost: Mapping[Hashable, float]) -> list[Hashable] | None:
        """The chain of neighbouring regions from the start to a goal whose regions' summed
        ``cost`` (missing: 0) is least, each region also costing a tiny amount so that among
        equals the shortest chain wins; None when no goal is reachable. A context allowing
        exactly these regions is the smallest that can still reach the goal with the least
        of what ``cost`` counts (e.g. the boxes a route's rooms hold)."""
        step = 1e-6 * (1.0 + sum(abs(c) for c in cost.values()))
        if any(c < 0 for c in cost.values()):
            raise CampError("region graph: route costs must not be negative")
        tie = itertools.count()  # regions need not be comparable
        first = cost.get(self.start, 0.0) + step
        best: dict[Hashable, float] = {self.start: first}
        parent: dict[Hashable, Hashable] = {}
        heap = [(first, next(tie), self.start)]
        while heap:
            dist, _, region = heapq.heappop(heap)
            if dist > best[region]:
                continue
            if region in self.goals:
                route = [region]
                while route[-1] != self.start:
                    route.append(parent[route[-1]])
                return route[::-1]
            for nb in self.adjacency[region]:
                d = dist + cost.get(nb, 0.0) + step
                if d < best.get(nb, float("inf")):
                    best[nb], parent[nb] = d, region
                    heapq.heappush(heap, (d, next(tie), nb))
        return None


def screen(
    ranked: Sequence[tuple[Context, T]], graph: RegionGraph | None
) -> tuple[list[tuple[Context, T]], list[Context]]:
    """Split a ranked list into the contexts that can reach the goal (order kept) and those
    that cannot. Without a region graph every context is kept."""
    if graph is None:
        return list(ranked), []
    kept: list[tuple[Context, T]] = []
    rejected: list[Context] = []
    for item in ranked:
        if graph.can_reach_goal(item[0]):
            kept.append(item)
        else:
            rejected.append(item[0])
    return kept, rejected
