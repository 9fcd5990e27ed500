"""Route search on NAMO's 5 cm grid: whether a base path can exist at all, and relaxed
paths that cross as few movable boxes as they can (a minimum constraint removal path, after
Hauser's MCR).

The grid moves the disc inscribed in the base, grown by the planning margin, so a gap the
grid blocks is one no base path passes; the relaxed paths name the boxes in the way, guide
OMPL through doorways (:mod:`.motion`) and mark the corridors placements keep off.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np
from scipy import ndimage
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.tamp.base import PLAN_MARGIN, START_SLACK, InterfaceBase
from camp_planner.domains.namo.tamp.grid import (
    GRID_CELL,
    GridView,
    around,
    back_track,
    block,
    free_grid_graph,
    open_around,
    whole_grid_graph,
)
from camp_planner.domains.namo.world import Pose2D

# The base is holonomic: near a path's ends the relaxed path keeps the end's heading (it
# slides out of a tight spot) rather than turning in place into a box beside it, which would
# name that box as an obstruction the real motion never meets.
HOLD_HEADING = 0.3  # metres
# Relaxed grid searches run on the cells within this distance of a statically free cell
# (wide enough that the cells opened around a motion's ends almost always lie inside).
REGION_SLACK = 0.3
# A grid cell under a box costs this many free cells: a box (about 15 cells across, with the
# disc's radius around it) outweighs any detour in a 180 x 180 grid.
BOX_CELL_COST = 1000.0
NEAR_BOX_CELL_COST = 10.0


class RouteSearch(InterfaceBase):
    """Grid searches over the current state's boxes, counted as work (``grid_nodes``,
    ``grid_cells``).

    Under a CAMP the searches run on the crop of the grid around the allowed rooms
    (:meth:`_scope`): every cell outside it lies in a forbidden room, blocked in every
    search, so the crop finds what the whole grid finds (the same components, and the same
    paths, ties included, since its cells keep their order) at the size of the task's
    rooms, not the world's. A search with an end outside the crop runs on the whole grid."""

    def _grid_setup(self) -> tuple[float, int, float, np.ndarray]:
        """Cell size, cells per side, the radius of the disc the grid moves, and the cells
        of the whole grid that walls, forbidden rooms and the goal object block.

        Every pose a motion plan visits keeps ``PLAN_MARGIN`` from everything, so the disc
        inscribed in the base, grown by that margin, must pass wherever the base does. A
        point of a continuous path lies within half a cell diagonal of its cell's centre, so
        shrinking the disc by that much keeps the grid from blocking any gap the disc can
        pass (a cell a path enters is left open)."""
        n, radius = self._grid_shape()
        return GRID_CELL, n, radius, self._view(scoped=False).static

    def _view(self, scoped: bool) -> GridView:
        """The crop around the allowed rooms (``scoped``, the whole grid without a context)
        or the whole grid; their blocked cells never move: computed once per call."""
        scoped = scoped and self.allowed is not None
        view = self._grid_views.get(scoped)
        if view is None:
            cell = GRID_CELL
            n, radius = self._grid_shape()
            r0, c0, r1, c1 = self._scope(cell, n) if scoped else (0, 0, n, n)
            static = np.zeros((r1 - r0, c1 - c0), dtype=bool)
            gx, gy = self.task.goal
            g = self.task.settings.goal_radius
            for rect in [*self.task.walls(), *self._forbidden, (gx - g, gy - g, gx + g, gy + g)]:
                block(static, rect, radius, cell, (r0, c0))
            view = self._grid_views[scoped] = GridView((r0, c0), static)
        return view

    def _scope(self, cell: float, n: int) -> tuple[int, int, int, int]:
        """The crop (first row, first column, end row, end column) around the allowed rooms:
        their bounding box grown by the cells the region reaches past a free cell and those
        opened around an end, so the region and the opened cells of every end it holds lie
        inside."""
        assert self.allowed is not None
        rects = [self.task.room_rect(room) for room in self.allowed]
        pad = math.ceil(REGION_SLACK / cell) + math.ceil(START_SLACK / cell) + 2
        return (
            max(int(min(r[1] for r in rects) / cell) - pad, 0),
            max(int(min(r[0] for r in rects) / cell) - pad, 0),
            min(math.ceil(max(r[3] for r in rects) / cell) + pad, n),
            min(math.ceil(max(r[2] for r in rects) / cell) + pad, n),
        )

    def _view_for(self, *cells: tuple[int, int]) -> GridView:
        """The crop if it holds every one of ``cells`` (world cells), else the whole grid."""
        view = self._view(scoped=True)
        return view if all(view.holds(c) for c in cells) else self._view(scoped=False)

    def _search_graph(
        self, view: GridView, *ends: tuple[int, int]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The graph of ``view`` a relaxed search runs on (as :func:`~.grid.free_grid_graph`
        returns it): the cells within ``REGION_SLACK`` of a cell walls, forbidden rooms and
        the goal object leave free (built once), or all of the view's cells when the cells
        opened around one of ``ends`` (the view's cells) reach beyond those. Every other
        cell is blocked in every search, so leaving it out changes no path."""
        if self._in_region(view, *ends):
            assert view.region is not None
            return view.region[1]
        return whole_grid_graph(*view.static.shape)

    def _in_region(self, view: GridView, *ends: tuple[int, int]) -> bool:
        """Whether the cells opened around each of ``ends`` (the view's cells) lie in the
        region :meth:`_search_graph` searches (built here the first time)."""
        if view.region is None:
            grow = math.ceil(REGION_SLACK / GRID_CELL)
            region = ndimage.binary_dilation(~view.static, iterations=grow)
            view.region = region, free_grid_graph(region)
        return all(around(view.region[0], end).all() for end in ends)

    def _cell(self, p: Pose2D, cell: float, n: int) -> tuple[int, int]:
        """The world grid's cell (row, column) of pose ``p``, clamped to the grid."""
        return (min(max(int(p[1] / cell), 0), n - 1), min(max(int(p[0] / cell), 0), n - 1))

    def _connected(self, start: Pose2D, goal: Pose2D, ignore_boxes: bool, solid: str) -> bool:
        """A necessary condition for a base path: on a 5 cm grid, the centre of the disc
        inscribed in the base can get from start to goal without that disc overlapping a wall,
        a forbidden room, the goal object or a (non-ignored) box. The robot contains the disc,
        so when this fails no path exists."""
        t0 = time.perf_counter()
        cell, n, radius = GRID_CELL, *self._grid_shape()
        s, t = self._cell(start, cell, n), self._cell(goal, cell, n)
        view = self._view_for(s, t)
        blocked = view.static.copy()
        for name in self.slot_names:
            value = self._value(name)
            if isinstance(value, tuple) and (not ignore_boxes or name == solid):
                rect = self.task.box_rect(float(value[0]), float(value[1]))
                block(blocked, rect, radius, cell, view.origin)
        s, t = view.local(s), view.local(t)
        open_around(blocked, s, t)  # both poses were checked exactly by the caller
        # 4-connected components of the free cells (ndimage's default structure).
        labels, _ = ndimage.label(~blocked)
        self.grid_cells += blocked.size
        self._timed("route_search", t0)
        return s == t or bool(labels[s] != 0 and labels[s] == labels[t])

    def _grid_shape(self) -> tuple[int, float]:
        """Cells per side of the world's grid, and the radius of the disc it moves."""
        n = math.ceil(self.task.settings.world_size / GRID_CELL)
        radius = self.task.settings.base_half_extent + PLAN_MARGIN - GRID_CELL * math.sqrt(2) / 2
        return n, radius

    def _fewest_boxes_path(
        self, start: Pose2D, goal: Pose2D, solid: str, boxes: str = "costly"
    ) -> list[Pose2D] | None:
        """A relaxed path that runs through as few movable boxes as it can (a minimum
        constraint removal path on the 5 cm grid, after Hauser's MCR): Dijkstra where a cell
        under a box costs far more than a free one, so the path crosses the fewest box cells
        first and is the shortest such path second. Walls, forbidden rooms, the goal object
        and ``solid`` stay impassable. Poses follow the cells, heading along the path; None
        if even this relaxation has no path.

        A random relaxed motion plan names whichever boxes its path happens to cross, and
        the conjunction of such facts over several locations can make the symbolic problem
        unsolvable (A must go before B's way is free, and B before A's); the fewest-boxes
        path names only obstructions no way around avoids. Headings follow the path, except
        within ``HOLD_HEADING`` of either end. ``boxes="solid"`` makes every box
        impassable: the shortest way around them all, keeping clear of them where it can.
        ``boxes="ignored"`` makes every box but ``solid`` free ground: the shortest way
        whatever it crosses, which is the route of a motion plan that ignores movable boxes."""
        return self._fewest_boxes_paths(start, [goal], solid, boxes)[0]

    def _fewest_boxes_paths(
        self,
        start: Pose2D,
        goals: Sequence[Pose2D],
        solid: str,
        boxes: str = "costly",
        deadline: Deadline | None = None,
    ) -> list[list[Pose2D] | None]:
        """:meth:`_fewest_boxes_path` from ``start`` to each of ``goals``, the same paths,
        with as few searches as that allows.

        Dijkstra from one cell finds the way to every cell, so goals that would search the
        same graph share one search. Each goal's search opens the cells around it (see
        :func:`~.grid.open_around`) and runs on the region or the whole grid (see
        :meth:`_search_graph`); goals whose opening frees nothing the start's did not, and
        that pick the same graph, search the same graph with the same costs, hence find the
        same paths, ties included. Any other goal searches alone. With ``deadline``, its
        planning call's deadline is checked before each search (PlanningTimeout).
        :meth:`~.place.PlaceRefiner._ways_ahead` asks for a path to every box still in the
        way: one search per box was a third of pure planning's time at 7×7."""
        t0 = time.perf_counter()
        cell, n, radius = GRID_CELL, *self._grid_shape()
        s = self._cell(start, cell, n)
        ends = [self._cell(goal, cell, n) for goal in goals]
        first = self._view_for(s)
        crop = first is self._grid_views.get(True)
        held = [not crop or first.holds(t) for t in ends]
        out: list[list[Pose2D] | None] = [None] * len(goals)
        for inside in (True, False):
            members = [k for k in range(len(goals)) if held[k] == inside]
            if members:
                # The whole grid is built only for a goal outside the crop.
                view = first if inside else self._view(scoped=False)
                found = self._paths_in(
                    view,
                    start,
                    s,
                    [goals[k] for k in members],
                    [ends[k] for k in members],
                    solid,
                    boxes,
                    deadline,
                    radius,
                )
                for k, path in zip(members, found, strict=True):
                    out[k] = path
        self._timed("route_search", t0)
        return out

    def _paths_in(
        self,
        view: GridView,
        start: Pose2D,
        s: tuple[int, int],
        goals: list[Pose2D],
        ends: list[tuple[int, int]],
        solid: str,
        boxes: str,
        deadline: Deadline | None,
        radius: float,
    ) -> list[list[Pose2D] | None]:
        """:meth:`_fewest_boxes_paths` on ``view``, which holds ``s`` and every one of
        ``ends`` (world cells of ``start`` and ``goals``)."""
        cell = GRID_CELL
        blocked = view.static.copy()
        under_box = np.zeros_like(blocked)
        near_box = np.zeros_like(blocked)
        # Beyond the inscribed disc the base's corners (and the tucked arm) may still touch
        # a box, depending on the heading: cells there cost a little, so that a path keeps
        # clear of boxes where it can rather than grazing (and so naming) them.
        reach = self.task.settings.base_half_extent * math.sqrt(2) + PLAN_MARGIN
        for name in self.slot_names:
            value = self._value(name)
            if not isinstance(value, tuple) or (boxes == "ignored" and name != solid):
                continue
            rect = self.task.box_rect(float(value[0]), float(value[1]))
            hard = boxes == "solid" or name == solid
            block(blocked if hard else under_box, rect, radius, cell, view.origin)
            block(near_box, rect, reach, cell, view.origin)
        s = view.local(s)
        ends = [view.local(t) for t in ends]
        opened = blocked.copy()
        open_around(opened, s)
        # Goals grouped by the graph they search: None for one of their own.
        groups: dict[bool | None, list[int]] = {}
        for k, t in enumerate(ends):
            shared = not around(opened, t).any()
            groups.setdefault(self._in_region(view, s, t) if shared else None, []).append(k)
        out: list[list[Pose2D] | None] = [None] * len(goals)
        for key, members in groups.items():
            for batch in [members] if key is not None else [[k] for k in members]:
                if deadline is not None:
                    deadline.call.check()
                grid = opened
                if key is None:
                    grid = opened.copy()
                    open_around(grid, ends[batch[0]])
                found = self._grid_paths(
                    start,
                    [goals[k] for k in batch],
                    s,
                    [ends[k] for k in batch],
                    (grid, under_box, near_box),
                    view,
                )
                for k, path in zip(batch, found, strict=True):
                    out[k] = path
        return out

    def _grid_paths(
        self,
        start: Pose2D,
        goals: list[Pose2D],
        s: tuple[int, int],
        ends: list[tuple[int, int]],
        grids: tuple[np.ndarray, np.ndarray, np.ndarray],
        view: GridView,
    ) -> list[list[Pose2D] | None]:
        """One Dijkstra search from cell ``s`` and the path (as poses) to each of ``goals``,
        whose cells are ``ends`` (the cells of ``view``); ``grids`` are the view's cells
        blocked, under a box and near one."""
        blocked, under_box, near_box = grids
        cols = blocked.shape[1]
        # The search runs on the region's cells only: a context's forbidden rooms lie
        # outside it, so a CAMP's graph is the size of its allowed rooms, not the world's.
        ids, indices, indptr = self._search_graph(view, s, *ends)
        # Entering a cell costs the cell's cost; blocked cells cost infinity (no way in).
        node_cost = np.ones(len(ids))
        node_cost[near_box.ravel()[ids]] = NEAR_BOX_CELL_COST
        node_cost[under_box.ravel()[ids]] = BOX_CELL_COST
        node_cost[blocked.ravel()[ids]] = np.inf
        src = int(np.searchsorted(ids, s[0] * cols + s[1]))
        graph = csr_matrix((node_cost[indices], indices, indptr), shape=(len(ids), len(ids)))
        dist, parent = dijkstra(graph, indices=src, return_predecessors=True)
        self.grid_nodes += len(ids)
        out: list[list[Pose2D] | None] = []
        for goal, t in zip(goals, ends, strict=True):
            dst = int(np.searchsorted(ids, t[0] * cols + t[1]))
            if math.isinf(dist[dst]):
                out.append(None)
                continue
            cells = [int(ids[k]) for k in back_track(parent, src, dst)]
            out.append(self._cells_to_poses(start, goal, cells, cols, view.origin))
        return out

    @staticmethod
    def _cells_to_poses(
        start: Pose2D,
        goal: Pose2D,
        cells: list[int],
        cols: int,
        origin: tuple[int, int] = (0, 0),
    ) -> list[Pose2D]:
        """A grid path's cells (flat indices of a view ``cols`` wide whose first cell is the
        world's cell ``origin``) as poses from ``start`` to ``goal``, each heading along the
        path except within ``HOLD_HEADING`` of either end."""
        cell, (r0, c0) = GRID_CELL, origin
        points = [
            ((c0 + i % cols + 0.5) * cell, (r0 + i // cols + 0.5) * cell) for i in cells[1:-1]
        ]
        poses: list[Pose2D] = [start]
        for k, (x, y) in enumerate(points):
            if math.hypot(x - start[0], y - start[1]) < HOLD_HEADING:
                heading = start[2]
            elif math.hypot(x - goal[0], y - goal[1]) < HOLD_HEADING:
                heading = goal[2]
            else:
                nx, ny = points[k + 1] if k + 1 < len(points) else (goal[0], goal[1])
                heading = math.atan2(ny - y, nx - x)
            poses.append((x, y, heading))
        poses.append(goal)
        return poses
