"""Pure geometry of tabletop grasps, shared by the PyBullet scene and whoever reasons about
grasps without a simulator: the gripper's orientation for a top or a side grasp, the height a
grasp closes at, and the object's width the fingers must span.

Objects are upright bodies of revolution given by their profile, horizontal sections
``(z0, z1, radius)`` up from the bottom. The Panda's fingers close along its hand's y axis and
the gripper points along the hand's z axis; the grasp point is ``panda_grasptarget``, midway
between the fingertips.

Why a fat object has no top grasp but a side grasp (issue 50): a top grasp comes down from
above, so its open fingers pass every section from the object's top down to the grasp height,
and must straddle the widest of them; a side grasp comes in horizontally at the grasp height,
so its fingers straddle only the sections within their pad's height there. A fat red is a
0.07 m stem under a 0.16 m cap: from above the cap is wider than the 0.08 m opening, from the
side the fingers close on the stem below it. Nothing here looks at names or kinds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]
Section = tuple[float, float, float]  # z0, z1 up from the object's bottom, radius

TOP, SIDE = "top", "side"
STYLES = (TOP, SIDE)
TOP_GRIP_DEPTH = 0.03  # a top grasp closes this far below the object's top
# A side grasp comes in pitched this far below horizontal: the Panda's wrist (joint 6 tops out
# at 3.82 rad) cannot hold the gripper level at table height in front of its shoulder, while
# 0.5 rad down works over the whole table (fingers still close horizontally).
SIDE_PITCH = 0.3


def quat_from_axes(x: Vec3, y: Vec3, z: Vec3) -> Quat:
    """The quaternion (x, y, z, w) of the rotation whose columns are the frame's axes."""
    m00, m10, m20 = x
    m01, m11, m21 = y
    m02, m12, m22 = z
    trace = m00 + m11 + m22
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        return ((m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s, 0.25 * s)
    if m00 > m11 and m00 > m22:
        s = 2.0 * math.sqrt(1.0 + m00 - m11 - m22)
        return (0.25 * s, (m01 + m10) / s, (m02 + m20) / s, (m21 - m12) / s)
    if m11 > m22:
        s = 2.0 * math.sqrt(1.0 + m11 - m00 - m22)
        return ((m01 + m10) / s, 0.25 * s, (m12 + m21) / s, (m02 - m20) / s)
    s = 2.0 * math.sqrt(1.0 + m22 - m00 - m11)
    return ((m02 + m20) / s, (m12 + m21) / s, 0.25 * s, (m10 - m01) / s)


def hand_orientation(style: str, yaw: float, flip: bool = False) -> Quat:
    """The gripper's orientation for a grasp of ``style`` at ``yaw``.

    top: pointing down, the hand's x axis along ``yaw`` (the Panda's natural pose), fingers
    closing along the horizontal direction ``yaw - π/2``.
    side: pointing along ``yaw`` (the direction it moves in to grasp), pitched ``SIDE_PITCH``
    down, fingers closing horizontally across it.
    ``flip`` turns the hand half a turn about its pointing axis: the same grasp for the
    symmetric gripper, often another arm configuration for IK."""
    c, s = math.cos(yaw), math.sin(yaw)
    if style == TOP:
        z: Vec3 = (0.0, 0.0, -1.0)
        x: Vec3 = (c, s, 0.0)
    elif style == SIDE:
        cp, sp = math.cos(SIDE_PITCH), math.sin(SIDE_PITCH)
        z = (c * cp, s * cp, -sp)
        x = (c * sp, s * sp, cp)
    else:
        raise ValueError(f"grasp style must be one of {STYLES}, got {style!r}")
    if flip:
        x = (-x[0], -x[1], -x[2])
    y = (z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0])
    return quat_from_axes(x, y, z)


def height(sections: Sequence[Section]) -> float:
    return max(z1 for _, z1, _ in sections)


def grasp_height(style: str, sections: Sequence[Section]) -> float:
    """Where (up from the object's bottom) a grasp of ``style`` closes: a top grasp just below
    the top; a side grasp in the middle of the narrowest section (the lowest of equals), so the
    fingers close where the object is thinnest."""
    if style == TOP:
        return height(sections) - min(TOP_GRIP_DEPTH, height(sections) / 2)
    z0, z1, _ = min(sections, key=lambda sec: (sec[2], sec[0]))
    return (z0 + z1) / 2


def swept_width(style: str, sections: Sequence[Section], z: float, pad: float) -> float:
    """The object's widest extent across the closing direction that the open fingers must pass
    around to close at height ``z`` (up from the bottom), with finger pads ``pad`` tall.

    top: the fingers come down past everything above ``z - pad/2``; side: they come in over
    the band ``[z - pad/2, z + pad/2]``, raised by the descent of the pitched approach across
    the object's widest radius. A body of revolution is as wide across any horizontal
    direction as its diameter."""
    lo, hi = z - pad / 2, z + pad / 2
    if style == TOP:
        hit = [r for _, z1, r in sections if z1 > lo]
    else:
        hi += max(r for _, _, r in sections) * math.tan(SIDE_PITCH)
        hit = [r for z0, z1, r in sections if z1 > lo and z0 < hi]
    return 2 * max(hit, default=0.0)
