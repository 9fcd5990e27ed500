"""Layouts of a square grid of rooms (3×3 unless asked), shared by the gridworld and NAMO.

Rooms are numbered ``row * G + col`` for ``G`` rooms per side; room ``r`` neighbours ``r + 1``
(same row) and ``r + G`` (next row). Both domains draw which neighbouring rooms share a door
from the same generator, so their mazes have the same character: always connected, sometimes
with loops.
"""

from __future__ import annotations

import random


def random_door_graph(
    rng: random.Random, extra_prob: float, grid: int = 3
) -> list[tuple[int, int]]:
    """A random spanning tree over the ``grid`` × ``grid`` room graph (so every room is
    reachable) plus extra doors, each as a (room, room) pair."""
    n = grid * grid
    edges = [(r, r + 1) for r in range(n) if r % grid != grid - 1]
    edges += [(r, r + grid) for r in range(n - grid)]
    rng.shuffle(edges)
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    chosen = []
    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
            chosen.append((a, b))
        elif rng.random() < extra_prob:
            chosen.append((a, b))
    return chosen
