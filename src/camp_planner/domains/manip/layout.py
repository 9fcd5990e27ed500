"""The variables of the manipulation MDP (paper domain D4) and what their values mean.

State variables, in this order:

* ``base``: the robot's base pose, by name: ``start`` or one of the task's discrete work
  poses (``left_i`` facing the left table, ``right_i`` facing the bins' table);
* ``held``: ``none`` or the held red's name; ``grasp_style``: ``none``, ``top`` or ``side``
  (``none`` exactly when nothing is held);
* per red ``red_k``: ``red_k_loc`` (``table``, ``staging``, ``bin_j`` or ``held``) and
  ``red_k_pose`` (the bottom's centre (x, y, z), or ``held``): the location is the symbolic
  reading of the pose, kept in step with it;
* per distractor ``blue_k``: its (x, y) on the left table, default ``absent`` (a dropped or
  missing blue leaves the simulated world);
* per bin ``bin_j``: its occupant, ``none``, ``green`` or a red's name (default ``none``: a
  dropped bin's green leaves the simulated world, as a blue does).

Action variables (all discrete): ``skill`` (none, move, pick, place, regrasp), ``target`` (a
base pose name, for move), ``obj`` (a red, for pick), ``grasp`` (none, top, side: the style
of a pick) and ``bin`` (none or 0-8: the bin a place puts the held red into). Every default
(``none``) means "this part does nothing", as a CAMP's right inverse requires.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from camp_planner.core.mdp import Variable

NONE = "none"
ABSENT = "absent"
HELD = "held"
GREEN = "green"
TABLE = "table"
STAGING = "staging"
START = "start"
SKILLS = (NONE, "move", "pick", "place", "regrasp")
GRASPS = (NONE, "top", "side")
N_FIXED = 3  # base, held, grasp_style: the per-object variables follow


def bin_loc(index: int) -> str:
    """The location value of a red standing in bin ``index``."""
    return f"bin_{index}"


@dataclass(frozen=True, eq=False)
class ManipLayout:
    """The variables every task with these counts shares, and where each one sits."""

    reds: tuple[str, ...]
    blues: tuple[str, ...]
    n_bins: int
    base_poses: tuple[str, ...]  # start, left_0.., right_0..
    state_vars: tuple[Variable, ...]
    action_vars: tuple[Variable, ...]
    loc_index: dict[str, int]  # red name -> index of red_k_loc (its pose follows it)
    blue_index: dict[str, int]
    bin_index: tuple[int, ...]  # bin j -> index of bin_j

    def pose_index(self, red: str) -> int:
        return self.loc_index[red] + 1


@functools.cache
def layout(
    n_reds: int = 2, n_blues: int = 15, n_bins: int = 9, poses_per_table: int = 24
) -> ManipLayout:
    """The layout for these counts (one object per combination, so MDPs share variables)."""
    reds = tuple(f"red_{k}" for k in range(n_reds))
    blues = tuple(f"blue_{k}" for k in range(n_blues))
    base = (
        START,
        *(f"left_{i}" for i in range(poses_per_table)),
        *(f"right_{i}" for i in range(poses_per_table)),
    )
    locs = (TABLE, STAGING, *(bin_loc(j) for j in range(n_bins)), HELD)
    state = [
        Variable("base", base, default=START),
        Variable("held", (NONE, *reds), default=NONE),
        Variable("grasp_style", GRASPS, default=NONE),
    ]
    loc_index: dict[str, int] = {}
    for red in reds:
        loc_index[red] = len(state)
        # No default: a CAMP that dropped a red (the reward reads every red's location, so
        # none does) would fill in the red's initial location and pose, which agree.
        state.append(Variable(f"{red}_loc", locs))
        state.append(Variable(f"{red}_pose", None))
    blue_index: dict[str, int] = {}
    for blue in blues:
        blue_index[blue] = len(state)
        state.append(Variable(blue, None, default=ABSENT))
    bins: list[int] = []
    for j in range(n_bins):
        bins.append(len(state))
        state.append(Variable(f"bin_{j}", (NONE, GREEN, *reds), default=NONE))
    action = (
        Variable("skill", SKILLS, default=NONE),
        Variable("target", (NONE, *base), default=NONE),
        Variable("obj", (NONE, *reds), default=NONE),
        Variable("grasp", GRASPS, default=NONE),
        Variable("bin", (NONE, *range(n_bins)), default=NONE),
    )
    return ManipLayout(
        reds, blues, n_bins, base, tuple(state), action, loc_index, blue_index, tuple(bins)
    )
