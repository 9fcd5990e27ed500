"""Where a floor robot carries a held box, as pure geometry: shared by the PyBullet scene,
which puts the box there, and the scene adapters, which recognise a held box there in a
perceived scene (no simulator needed to read a scene)."""

from __future__ import annotations

import math

HOLD_AHEAD = 0.5  # a held box is carried this far ahead of the base centre, lifted
LIFT = 0.03  # metres between a held box's bottom and the floor


def hold_point(pose: tuple[float, float, float], box_height: float) -> tuple[float, float, float]:
    """The centre (x, y, z) of a box of ``box_height`` held by a robot whose base stands at
    ``pose`` (x, y, yaw); the box turns with the base."""
    x, y, yaw = pose
    return (
        x + HOLD_AHEAD * math.cos(yaw),
        y + HOLD_AHEAD * math.sin(yaw),
        box_height / 2 + LIFT,
    )
