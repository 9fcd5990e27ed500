"""The variables of NAMO's MDP and what their values mean, shared by the MDP, its TAMP
interface and the scene I/O: one slot variable per box slot of every room but the goal room,
the markers a slot or the hand can hold, and the arm's workspace in front of the base."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from camp_planner.core.mdp import Variable
from camp_planner.domains.namo.world import Pose2D

SLOTS_PER_ROOM = 5
ABSENT = "absent"
HELD = "held"
NONE = "none"
OPS = (NONE, "move", "pick", "place")
REACH_MIN, REACH_MAX, REACH_BEARING = 0.3, 0.75, math.radians(60)
N_FIXED = 3  # robot_pose, robot_room, held: the slot variables follow


@dataclass(frozen=True, eq=False)
class NamoLayout:
    """The variables every task of one world (grid size and goal room) shares: a slot
    variable per box slot of every room but the goal room."""

    grid: int
    box_rooms: tuple[int, ...]
    slot_names: tuple[str, ...]
    slot_index: dict[str, int]
    state_vars: tuple[Variable, ...]
    action_vars: tuple[Variable, ...]


def layout(grid: int = 3, goal_room: int | None = None) -> NamoLayout:
    """The variable layout of a ``grid`` × ``grid`` world whose goal room (None: the last,
    as in a drawn world) holds no box slots; one object per world, so MDPs of one world
    share their variables."""
    return _layout(grid, grid * grid - 1 if goal_room is None else goal_room)


@functools.cache
def _layout(grid: int, goal_room: int) -> NamoLayout:
    n_rooms = grid * grid
    box_rooms = tuple(r for r in range(n_rooms) if r != goal_room)
    slots = tuple(f"box_r{room}_{k}" for room in box_rooms for k in range(SLOTS_PER_ROOM))
    state = [
        Variable("robot_pose"),
        Variable("robot_room", tuple(range(n_rooms))),
        Variable("held", (NONE, *slots), default=NONE),
    ]
    state += [Variable(name, None, default=ABSENT) for name in slots]
    action = [
        Variable("op", OPS, default=NONE),
        Variable("target", None, default=None),
        Variable("obj", (NONE, *slots), default=NONE),
    ]
    index = {name: N_FIXED + i for i, name in enumerate(slots)}
    return NamoLayout(grid, box_rooms, slots, index, tuple(state), tuple(action))


# The slots of the paper's 3×3 world (tests name them; code asks the task's own layout).
SLOT_NAMES = layout(3).slot_names


def round_pose(pose: Sequence[float]) -> Pose2D:
    """A pose as states hold it: 4 decimals, the heading wrapped into (-π, π]."""
    yaw = math.atan2(math.sin(pose[2]), math.cos(pose[2]))
    return (round(float(pose[0]), 4), round(float(pose[1]), 4), round(yaw, 4))


def wrap(angle: float) -> float:
    """``angle`` wrapped into (-π, π]."""
    return math.atan2(math.sin(angle), math.cos(angle))


def in_reach(pose: Pose2D, x: float, y: float) -> bool:
    """Whether floor point (x, y) lies in the arm's workspace in front of the base."""
    dx, dy = x - pose[0], y - pose[1]
    dist = math.hypot(dx, dy)
    if not REACH_MIN <= dist <= REACH_MAX:
        return False
    return abs(wrap(math.atan2(dy, dx) - pose[2])) <= REACH_BEARING
