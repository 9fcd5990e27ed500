"""The 5 cm grid NAMO's route searches run on: 4-connected graphs of free cells, and the
rasterising of floor rectangles grown by the disc the grid moves.

Plain numpy on boolean grids (rows: y, columns: x); :mod:`.routes` searches them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from camp_planner.domains.namo.tamp.base import START_SLACK

GRID_CELL = 0.05  # metres, for the quick reachability test before motion planning


@dataclass
class GridView:
    """The part of the world's grid a search runs on: the cells from world cell ``origin``
    (row, column) on, ``static`` marking those walls, forbidden rooms and the goal object
    block (as the world's grid marks them), and the region of
    :meth:`~.routes.RouteSearch._search_graph` (built on first use)."""

    origin: tuple[int, int]
    static: np.ndarray
    region: tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None

    def local(self, cell: tuple[int, int]) -> tuple[int, int]:
        """World cell ``cell`` in this view's rows and columns."""
        return cell[0] - self.origin[0], cell[1] - self.origin[1]

    def holds(self, cell: tuple[int, int]) -> bool:
        """Whether world cell ``cell`` lies in this view with every cell
        :func:`open_around` opens around it."""
        k = math.ceil(START_SLACK / GRID_CELL)
        (r, c), (rows, cols) = self.local(cell), self.static.shape
        return bool(k <= r < rows - k and k <= c < cols - k)


@functools.cache
def whole_grid_graph(n_rows: int, n_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph of every cell of an ``n_rows`` × ``n_cols`` grid, built once per shape (read
    only)."""
    graph = free_grid_graph(np.ones((n_rows, n_cols), dtype=bool))
    for array in graph:
        array.flags.writeable = False
    return graph


def free_grid_graph(free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 4-connected graph of the cells ``free`` marks: the flat (row-major) index of each
    node, nodes numbered in that order, and the ``indices`` and ``indptr`` of a CSR
    adjacency matrix, each node's neighbours in ascending order (as in the whole grid's
    graph, so that Dijkstra breaks ties the same way). Built in time linear in the free
    cells, apart from one lookup array over the grid."""
    n_rows, n_cols = free.shape
    ids = np.flatnonzero(free)
    node = np.full(free.size, -1, dtype=np.int64)
    node[ids] = np.arange(len(ids))
    rows, cols = np.divmod(ids, n_cols)
    # Up, left, right, down: ascending flat indices, hence ascending node numbers.
    neighbours = np.empty((len(ids), 4), dtype=np.int64)
    for k, (inside, step) in enumerate(
        ((rows > 0, -n_cols), (cols > 0, -1), (cols < n_cols - 1, 1), (rows < n_rows - 1, n_cols))
    ):
        neighbours[:, k] = np.where(inside, node[np.where(inside, ids + step, 0)], -1)
    edge = neighbours >= 0
    indptr = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum(edge.sum(axis=1), out=indptr[1:])
    return ids, neighbours[edge], indptr


def back_track(parent: np.ndarray, src: int, dst: int) -> list[int]:
    """The nodes of the search tree's path from ``src`` to ``dst`` (``parent``: Dijkstra's
    predecessors), in order."""
    nodes = [dst]
    while nodes[-1] != src:
        nodes.append(int(parent[nodes[-1]]))
    return nodes[::-1]


def around(grid: np.ndarray, cell: tuple[int, int]) -> np.ndarray:
    """The window of ``grid`` that :func:`open_around` opens around ``cell`` (a view)."""
    k = math.ceil(START_SLACK / GRID_CELL)
    r, c = cell
    return grid[max(r - k, 0) : r + k + 1, max(c - k, 0) : c + k + 1]


def open_around(grid: np.ndarray, *cells: tuple[int, int]) -> None:
    """Unblock the cells within ``START_SLACK`` (rounded up) of each cell: there, motion
    planning does not ask for the margin the grid's disc includes."""
    for cell in cells:
        around(grid, cell)[...] = False


def block(
    grid: np.ndarray,
    rect: tuple[float, float, float, float],
    radius: float,
    cell: float,
    origin: tuple[int, int] = (0, 0),
) -> None:
    """Mark the cells of ``grid`` (rows: y, columns: x) whose centre is closer than ``radius``
    to ``rect``; only the window around the rectangle is computed. ``grid`` may be a crop
    of the world's grid whose first cell is the world's cell ``origin`` (row, column): its
    cells are marked exactly as the world's grid marks them."""
    r_org, c_org = origin
    # A rectangle wholly before the crop marks none of it (the window ends before it).
    if (rect[2] + radius) / cell + 1 < c_org or (rect[3] + radius) / cell + 1 < r_org:
        return
    window = block_window(rect, radius, cell, r_org + grid.shape[0], c_org + grid.shape[1])
    if window is None:
        return
    r0, r1, c0, c1, mask = window
    top, left = max(r0, r_org), max(c0, c_org)
    if top < r1 and left < c1:
        grid[top - r_org : r1 - r_org, left - c_org : c1 - c_org] |= mask[top - r0 :, left - c0 :]


@functools.lru_cache(maxsize=4096)
def block_window(
    rect: tuple[float, float, float, float], radius: float, cell: float, n_rows: int, n_cols: int
) -> tuple[int, int, int, int, np.ndarray] | None:
    """The cells of the world's grid below row ``n_rows`` and left of column ``n_cols`` that
    :func:`block` marks, as a window and its mask (read only). Remembered: boxes stand
    still between most grid searches, and every search rasterised each box again (12,000
    windows in ten of the paper's tasks)."""
    x0, y0, x1, y1 = rect
    c0, c1 = max(int((x0 - radius) / cell), 0), min(int((x1 + radius) / cell) + 1, n_cols)
    r0, r1 = max(int((y0 - radius) / cell), 0), min(int((y1 + radius) / cell) + 1, n_rows)
    if c0 >= c1 or r0 >= r1:
        return None
    xs = (np.arange(c0, c1) + 0.5) * cell
    ys = (np.arange(r0, r1) + 0.5) * cell
    dx = np.maximum(np.maximum(x0 - xs, 0.0), xs - x1)[None, :]
    dy = np.maximum(np.maximum(y0 - ys, 0.0), ys - y1)[:, None]
    mask = dx * dx + dy * dy < radius * radius
    mask.flags.writeable = False
    return r0, r1, c0, c1, mask
