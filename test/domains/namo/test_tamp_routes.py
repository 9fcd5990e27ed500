"""Route search on the 5 cm grid (``domains/namo/tamp/grid.py`` and ``routes.py``): paths
through the fewest boxes, and a search on the free cells alone that finds what the whole
grid's search found (same distances, same paths, ties broken alike), so that a CAMP's
smaller world costs it less without changing a plan."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from namo_worlds import open_chain, two_ways
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from camp_planner.core.planner import Deadline, PlanningTimeout
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.domains.namo.tamp.grid import (
    block,
    free_grid_graph,
    open_around,
    whole_grid_graph,
)
from camp_planner.domains.namo.world import Pose2D
from camp_planner.planners.tamp import AttemptCutoff, InterfaceSettings


def _whole_grid_search(free: np.ndarray, cost: np.ndarray, src: int) -> tuple[np.ndarray, ...]:
    """The search as it was: every cell a node, an edge into a blocked cell costs infinity."""
    n_rows, n_cols = free.shape
    rows, cols, weights = [], [], []
    for r in range(n_rows):
        for c in range(n_cols):
            for dr, dc in ((-1, 0), (0, -1), (0, 1), (1, 0)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < n_rows and 0 <= cc < n_cols:
                    rows.append(r * n_cols + c)
                    cols.append(rr * n_cols + cc)
                    weights.append(cost[rr, cc] if free[rr, cc] else np.inf)
    graph = csr_matrix((weights, (rows, cols)), shape=(free.size, free.size))
    graph.sort_indices()
    dist, parent = dijkstra(graph, indices=src, return_predecessors=True)
    return dist, parent


def _path(parent: np.ndarray, src: int, dst: int) -> list[int]:
    out = [dst]
    while out[-1] != src:
        out.append(int(parent[out[-1]]))
    return out[::-1]


@pytest.mark.parametrize("seed", range(6))
def test_the_free_cell_search_matches_the_whole_grid_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    shape = (23, 31)
    free = rng.random(shape) < 0.75
    # The planner's costs: free ground, near a box, under a box (many ties, as in use).
    cost = rng.choice([1.0, 3.0, 50.0], size=shape, p=[0.8, 0.15, 0.05])
    ids, indices, indptr = free_grid_graph(free)
    assert np.array_equal(ids, np.flatnonzero(free))
    assert np.all(np.diff(indptr) <= 4)
    graph = csr_matrix((cost.ravel()[ids][indices], indices, indptr), shape=(len(ids),) * 2)
    for src_node in rng.choice(len(ids), size=5, replace=False):
        src = int(ids[src_node])
        dist, parent = dijkstra(graph, indices=int(src_node), return_predecessors=True)
        ref_dist, ref_parent = _whole_grid_search(free, cost, src)
        assert np.array_equal(dist, ref_dist[ids])
        for dst_node in rng.choice(len(ids), size=8, replace=False):
            dst = int(ids[dst_node])
            if np.isinf(dist[dst_node]):
                continue
            path = [int(ids[k]) for k in _path(parent, int(src_node), int(dst_node))]
            assert path == _path(ref_parent, src, dst)


def test_the_free_cell_graph_joins_exactly_the_free_neighbours() -> None:
    free = np.array([[True, True, False], [False, True, True], [True, False, True]])
    ids, indices, indptr = free_grid_graph(free)
    # Cells 0 1 . / . 4 5 / 6 . 8 become nodes 0 1 - / - 2 3 / 4 - 5.
    assert ids.tolist() == [0, 1, 4, 5, 6, 8]
    neighbours = [indices[indptr[k] : indptr[k + 1]].tolist() for k in range(len(ids))]
    assert neighbours == [[1], [0, 2], [1, 3], [2, 5], [], [3]]


def test_remembered_box_windows_mark_exactly_the_cells_within_the_radius() -> None:
    """``block`` reuses a rectangle's window from earlier searches; what it marks must be
    what measuring every cell's centre marks, first time and again, near the edges too."""
    rng = np.random.default_rng(5)
    cell, n = 0.05, 60
    centres = (np.arange(n) + 0.5) * cell
    for _ in range(60):
        x0, y0 = rng.uniform(-0.3, 3.0, size=2)
        rect = (float(x0), float(y0), float(x0 + rng.uniform(0.0, 0.4)), float(y0 + 0.3))
        radius = float(rng.choice([0.2, 0.3]))
        dx = np.maximum(np.maximum(rect[0] - centres, 0.0), centres - rect[2])[None, :]
        dy = np.maximum(np.maximum(rect[1] - centres, 0.0), centres - rect[3])[:, None]
        expected = dx * dx + dy * dy < radius * radius
        for _again in range(2):
            grid = np.zeros((n, n), dtype=bool)
            block(grid, rect, radius, cell)
            assert np.array_equal(grid, expected)
        # Marking adds to what a grid holds, and never writes into the remembered window.
        grid = np.ones((n, n), dtype=bool)
        block(grid, rect, radius, cell)
        assert grid.all()
        fresh = np.zeros((n, n), dtype=bool)
        block(fresh, rect, radius, cell)
        assert np.array_equal(fresh, expected)


def _one_search(iface: Any, start: Pose2D, goal: Pose2D) -> list[Pose2D] | None:
    """The fewest-boxes search as it ran before searches were shared: the whole grid, the
    cells around both ends opened, one Dijkstra for this goal alone."""
    from camp_planner.domains.namo.tamp.base import PLAN_MARGIN
    from camp_planner.domains.namo.tamp.routes import BOX_CELL_COST, NEAR_BOX_CELL_COST

    cell, n, radius, static = iface._grid_setup()
    blocked = static.copy()
    under = np.zeros_like(blocked)
    near = np.zeros_like(blocked)
    reach = iface.task.settings.base_half_extent * math.sqrt(2) + PLAN_MARGIN
    for box in iface.task.boxes:
        block(under, iface.task.box_rect(box.x, box.y), radius, cell)
        block(near, iface.task.box_rect(box.x, box.y), reach, cell)
    s, t = iface._cell(start, cell, n), iface._cell(goal, cell, n)
    open_around(blocked, s, t)
    cost = np.where(under, BOX_CELL_COST, np.where(near, NEAR_BOX_CELL_COST, 1.0))
    cost[blocked] = np.inf
    _, indices, indptr = whole_grid_graph(n, n)
    graph = csr_matrix((cost.ravel()[indices], indices, indptr), shape=(n * n, n * n))
    src, dst = s[0] * n + s[1], t[0] * n + t[1]
    dist, parent = dijkstra(graph, indices=src, return_predecessors=True)
    if np.isinf(dist[dst]):
        return None
    cells: list[Pose2D] = iface._cells_to_poses(start, goal, _path(parent, src, dst), n)
    return cells


@pytest.mark.pybullet
@pytest.mark.parametrize("allowed", [None, frozenset({0, 1, 2, 5, 8})])
def test_ways_to_many_goals_share_searches_and_match_one_search_per_goal(
    allowed: frozenset[int] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``_ways_ahead`` asks for the ways to every box still in the way at once: the goals
    that can share a Dijkstra search do, and every path is the one a search for that goal
    alone finds (ties included), on the region or the whole grid, context or none."""
    from camp_planner.core.planner import Deadline, PlanningTimeout
    from camp_planner.domains.namo.mdp import NamoMDP
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.domains.namo.world import generate_task

    task = generate_task(0, seed=3)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(
        mdp, mdp.initial_state(), allowed, seed=0, settings=InterfaceSettings()
    )
    rng = np.random.default_rng(0)
    goals: list[Pose2D] = [(box.x, box.y, 0.0) for box in task.boxes]
    goals += [(float(x), float(y), 0.0) for x, y in rng.uniform(0.2, 8.8, size=(12, 2))]
    searches: list[int] = []
    grid_paths = NamoTampInterface._grid_paths

    def counted(self: Any, start: Pose2D, batch: list[Pose2D], *rest: Any) -> Any:
        searches.append(len(batch))
        return grid_paths(self, start, batch, *rest)

    monkeypatch.setattr(NamoTampInterface, "_grid_paths", counted)
    for start in (task.start, (4.4, 1.6, 1.0)):
        searches.clear()
        paths = iface._fewest_boxes_paths(start, goals, "")
        # Some goals shared a search, and some (boxes along walls) needed their own.
        assert max(searches) > 1 and searches.count(1) >= 1
        assert sum(searches) == len(goals) and len(searches) < len(goals) - 10
        for goal, path in zip(goals, paths, strict=True):
            assert path == _one_search(iface, start, goal), goal
        found = sum(path is not None for path in paths)
        # Goals in forbidden rooms have no way; most others do.
        assert found >= len(goals) // 3
        assert (found <= len(goals) - 3) == (allowed is not None)
    # A planning call whose deadline has passed does not start a search.
    now = [0.0]
    late = Deadline(1.0, clock=lambda: now[0])
    now[0] = 2.0
    searches.clear()
    with pytest.raises(PlanningTimeout):
        iface._fewest_boxes_paths(task.start, goals, "", deadline=late)
    assert searches == []
    iface.close()
    mdp.close()


@pytest.mark.pybullet
@pytest.mark.parametrize(
    ("round_boxes", "allowed", "expected"),
    [
        (True, None, {"box_r1_0"}),  # one box straight on beats two round about
        (False, None, set()),  # a clear way round beats any box
        (False, frozenset({0, 1, 2, 5, 8}), {"box_r1_0"}),  # ...unless the context forbids it
    ],
)
def test_relaxed_path_runs_through_the_fewest_boxes(
    round_boxes: bool, allowed: frozenset[int] | None, expected: set[str]
) -> None:
    from camp_planner.domains.namo.tamp import NamoTampInterface

    task = two_ways(round_boxes)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(
        mdp, mdp.initial_state(), allowed, seed=0, settings=InterfaceSettings()
    )
    goal = (4.5, 1.5, 0.0)
    path = iface._fewest_boxes_path(task.start, goal, "")
    assert path is not None and path[0] == task.start and path[-1] == goal
    assert max(math.dist(a[:2], b[:2]) for a, b in itertools.pairwise(path)) < 0.08
    assert iface._boxes_on(path, Deadline(None)) == expected
    if allowed is not None:
        assert all(task.room_of(x, y) in allowed for x, y, _ in path)
    # Once the planning call's deadline has passed (not only an attempt's), checking the
    # path stops: nothing found now could be used.
    now = [0.0]
    call = Deadline(60.0, clock=lambda: now[0])
    attempt = AttemptCutoff(120.0, call, lambda: 0.0)
    now[0] = 61.0
    assert attempt.call is call
    with pytest.raises(PlanningTimeout):
        iface._boxes_on(path, attempt)
    # The box to be picked can be made solid: then no relaxed way through it exists here.
    if allowed is not None:
        assert iface._fewest_boxes_path(task.start, goal, "box_r1_0") is None
    iface.close()
    mdp.close()


@pytest.mark.pybullet
def test_the_grid_never_blocks_a_gap_a_planned_base_path_passes() -> None:
    # The grid's disc must be a necessary condition: every pose of a path OMPL finds with the
    # planning's validity check (the margin, relaxed near the start) lies on an open cell.
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.motion.ompl_se2 import plan_base_path

    task = two_ways(round_boxes=False)
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    cell, n, radius, static = iface._grid_setup()
    grid = static.copy()
    for box in task.boxes:
        block(grid, task.box_rect(box.x, box.y), radius, cell)
    open_around(grid, iface._cell(task.start, cell, n))
    valid = iface._valid(iface._scene(), False, "", task.start).tested
    found = 0
    for goal in ((4.5, 1.5, 0.0), (4.5, 4.5, 1.0), (1.5, 4.5, -2.0), (2.45, 1.5, 0.0)):
        result = plan_base_path(task.start, goal, (0.0, 0.0, 9.0, 9.0), valid, timeout_s=10)
        if result.path is None:
            continue
        found += 1
        for pose in result.path:
            assert not grid[iface._cell(pose, cell, n)], pose
    assert found >= 3
    iface.close()
    mdp.close()


@pytest.mark.pybullet
def test_a_relaxed_path_keeps_its_ends_headings_near_its_ends() -> None:
    # The base is holonomic: beside a box it slides away rather than turning into it, so a
    # relaxed path must not name that box for a turn the real motion never makes.
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.domains.namo.tamp.routes import HOLD_HEADING

    task = open_chain()
    mdp = NamoMDP.from_task(task)
    iface = NamoTampInterface(mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings())
    start, goal = (1.5, 1.5, 1.0), (4.5, 1.5, -0.5)
    path = iface._fewest_boxes_path(start, goal, "")
    assert path is not None
    for x, y, heading in path:
        if math.hypot(x - start[0], y - start[1]) < HOLD_HEADING:
            assert heading == start[2]
        elif math.hypot(x - goal[0], y - goal[1]) < HOLD_HEADING:
            assert heading == goal[2]
    assert any(abs(h) < 0.2 for _, _, h in path)  # between the ends: along the way (+x)
    iface.close()
    mdp.close()


@pytest.mark.pybullet
def test_a_camps_crop_of_the_grid_finds_what_the_whole_grid_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under a context the route searches run on the crop around the allowed rooms: the
    same reachability and the same fewest-boxes paths (ties included) as on the whole grid,
    for ends inside the allowed rooms and outside them, on far fewer cells."""
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.domains.namo.world import generate_task

    task = generate_task(0, seed=3)
    mdp = NamoMDP.from_task(task)
    allowed = frozenset({0, 1, 4})
    iface = NamoTampInterface(
        mdp, mdp.initial_state(), allowed, seed=0, settings=InterfaceSettings()
    )
    rng = np.random.default_rng(1)
    inside = [(float(x), float(y), 0.0) for x, y in rng.uniform(0.3, 2.7, size=(6, 2))]
    inside += [(x + 3.0, y, h) for x, y, h in inside[:3]] + [(4.5, 4.5, 0.0)]
    goals: list[Pose2D] = inside + [(box.x, box.y, 0.0) for box in task.boxes]
    starts = [task.start, inside[4], inside[-1]]

    def searched() -> tuple[list[Any], list[bool], int]:
        before = iface.grid_cells
        paths = [iface._fewest_boxes_paths(start, goals, "") for start in starts]
        reach = [iface._connected(s, g, False, "") for s in starts for g in goals]
        return paths, reach, iface.grid_cells - before

    paths, reach, cells = searched()
    crop = iface._view(scoped=True)
    whole = iface._view(scoped=False)
    assert crop is not whole and crop.static.size < whole.static.size * 0.6
    monkeypatch.setattr(iface, "_view_for", lambda *cells: whole)
    whole_paths, whole_reach, whole_cells = searched()
    assert paths == whole_paths
    assert reach == whole_reach
    assert any(reach) and not all(reach)
    assert cells < whole_cells
    iface.close()
    mdp.close()
