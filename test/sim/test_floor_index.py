"""The floor index of bodies' rectangles (``camp_planner.sim.floor_index``)."""

import math
import random

from camp_planner.sim.floor_index import INDEX_CELL, FloorIndex, rect_dist2


def test_the_floor_index_puts_a_rectangle_in_the_cells_a_per_cell_test_finds() -> None:
    """The index finds a rectangle's cells row by row; every cell whose centre lies within
    reach plus half a cell's diagonal of the rectangle, and no other, as a test of every
    cell of the grid finds them (near the world's edges too)."""
    rng = random.Random(2)
    for _ in range(300):
        index = FloorIndex(9.0, rng.uniform(0.2, 1.2))
        x, y = rng.uniform(-0.5, 9.5), rng.uniform(-0.5, 9.5)
        rect = (x, y, x + rng.uniform(0.0, 3.0), y + rng.uniform(0.0, 0.6))
        grow = index.reach + INDEX_CELL * math.sqrt(2) / 2
        c, n = INDEX_CELL, index.n
        brute = [
            row * n + col
            for row in range(n)
            for col in range(n)
            if rect_dist2(rect, (col + 0.5) * c, (row + 0.5) * c) <= grow * grow
        ]
        assert index.cells_within(rect) == brute
        index.put(7, "box", rect)
        assert [k for k, cell in enumerate(index.cells) if 7 in cell] == brute
        index.put(7, "box", None)
        assert not any(index.cells)
