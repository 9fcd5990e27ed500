"""A grid index of bodies' floor rectangles, for broadphase queries of a disc on the floor.

Scenes whose bodies all stand on the floor (walls, boxes, a mobile robot) can answer "what
comes within r of this point" from the bodies' floor rectangles alone, without asking
PyBullet's broadphase. The index knows bodies only as ids, names and rectangles.
"""

from __future__ import annotations

import math

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1

INDEX_CELL = 0.25  # metres


class FloorIndex:
    """Named bodies' floor rectangles on a grid of ``INDEX_CELL`` squares: each cell lists
    every body whose rectangle comes within ``reach`` of some point of the cell, so a disc
    of radius up to ``reach`` centred in the cell can only meet the bodies listed there.

    A cell maps body to (name, rectangle), in the order the bodies were put there, so that
    moving a box costs a deletion per cell it leaves. CSI learning moves a box or two
    between a handful of checks; with a list per cell, filtering the box out of every cell
    was most of its time in a 10×10 world."""

    def __init__(self, world_size: float, reach: float) -> None:
        self.reach = reach
        self.n = math.ceil(world_size / INDEX_CELL)
        self.cells: list[dict[int, tuple[str, Rect]]] = [{} for _ in range(self.n * self.n)]
        self._where: dict[int, tuple[Rect, list[int]]] = {}

    def cell_of(self, x: float, y: float) -> int:
        """The cell holding (x, y), or -1 outside the grid."""
        col, row = math.floor(x / INDEX_CELL), math.floor(y / INDEX_CELL)
        if 0 <= col < self.n and 0 <= row < self.n:
            return row * self.n + col
        return -1

    def put(self, body: int, name: str, rect: Rect | None) -> None:
        """List ``body`` (as ``name``) in the cells ``rect`` reaches, and in no other; None
        takes it out."""
        old = self._where.get(body)
        if old is not None and old[0] == rect:
            return  # put back where it stood (a box tried elsewhere and returned)
        if old is not None:
            for cell in old[1]:
                del self.cells[cell][body]
            del self._where[body]
        if rect is None:
            return
        self._where[body] = (rect, self.cells_within(rect))
        entry = (name, rect)
        for cell in self._where[body][1]:
            self.cells[cell][body] = entry

    def cells_within(self, rect: Rect) -> list[int]:
        """The cells whose centres lie within ``reach`` plus half a cell's diagonal of
        ``rect`` (a cell's points lie within half its diagonal of its centre), row by row:
        in each row, the columns whose centres lie within the half-width the row's distance
        from the rectangle leaves."""
        c, n = INDEX_CELL, self.n
        grow = self.reach + c * math.sqrt(2) / 2
        x0, y0, x1, y1 = rect
        cells: list[int] = []
        for row in range(
            max(math.floor((y0 - grow) / c), 0), min(math.floor((y1 + grow) / c) + 1, n)
        ):
            cy = (row + 0.5) * c
            dy = y0 - cy if cy < y0 else (cy - y1 if cy > y1 else 0.0)
            left = grow * grow - dy * dy
            if left < 0:
                continue
            half = math.sqrt(left)
            lo = max(math.ceil((x0 - half) / c - 0.5), 0)
            hi = min(math.floor((x1 + half) / c - 0.5), n - 1)
            cells.extend(range(row * n + lo, row * n + hi + 1))
        return cells


def rect_dist2(rect: Rect, x: float, y: float) -> float:
    """Squared distance from (x, y) to the floor rectangle (x0, y0, x1, y1); 0 inside."""
    # Comparisons, not max(): called about 60,000 times per second of planning.
    x0, y0, x1, y1 = rect
    dx = x0 - x if x < x0 else (x - x1 if x > x1 else 0.0)
    dy = y0 - y if y < y0 else (y - y1 if y > y1 else 0.0)
    return dx * dx + dy * dy
