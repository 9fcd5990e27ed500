"""Layouts of a 3×3 grid of rooms, shared by the gridworld and NAMO domains.

Rooms are numbered ``row * 3 + col``; room ``r`` neighbours ``r + 1`` (same row) and ``r + 3``
(next row). Both domains draw which neighbouring rooms share a door from the same generator,
so their mazes have the same character: always connected, sometimes with loops.
"""

from __future__ import annotations

import random


def random_door_graph(rng: random.Random, extra_prob: float) -> list[tuple[int, int]]:
    """A random spanning tree over the 3×3 room graph (so every room is reachable) plus extra
    doors, each as a (room, room) pair."""
    edges = [(r, r + 1) for r in range(9) if r % 3 != 2] + [(r, r + 3) for r in range(6)]
    rng.shuffle(edges)
    parent = list(range(9))

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
