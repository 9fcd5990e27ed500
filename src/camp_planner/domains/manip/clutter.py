"""The cluttered manipulation world (``world.red_cells: any``, issue 64): which drawn layouts
of the left table are kept.

With the reds allowed on every cell of the jittered grid, some draws have no plan at all:
the domain has no skill that moves a blue, and in this work cell a red on an inner cell is
reached past its blue neighbours or not at all. Measured on 80 drawn tasks (training seed 3,
every work pose within the arm's reach, every object present): a fat red on an inner cell,
whose cap rules out a top grasp, had a side grasp in 3 of 26 layouts; a skinny red on the
ring inside the border had a top grasp in 25 of 30 (from one to three poses, IK failing from
the others), on the centre cell of the 5 × 5 grid in none of 5 (out of the top grasp's
reach), where a side grasp past its blues worked in 3; 5 of the 35 skinny reds on inner
cells could not be picked at all. No rule on cells alone says which layout can be solved,
so the simulator does: a draw is kept when every red can be picked, in some grasp style,
from some work pose at its table, with every other object where it stands
(:func:`every_red_graspable`), and drawn again otherwise (``world.generate_task``).

That is the same test the MDP's pick applies (IK, gripper width, collisions of the arm along
the approach with every object), so a kept task has a first pick for each red whatever the
other does; what follows a pick (the regrasp on the staging strip, the bins) is the paper
world's, untouched by the clutter. The test is conservative: a red that only the other red
blocks, which picking that one first would clear, is drawn again too.

Generation then depends on the simulator's answers, which are deterministic (each IK solve
starts from fixed seeds), so a task is still fully given by its seed and settings on this
PyBullet build; a change to the grasp checks can change the cluttered world's tasks, and
bumps ``ManipDomain.version`` as every such change does.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from camp_planner.core.mdp import State
from camp_planner.domains.manip.layout import NONE
from camp_planner.domains.manip.world import (
    ARM_REACH,
    ManipObject,
    ManipSettings,
    ManipTask,
    make_tasks,
)
from camp_planner.sim.tabletop_geometry import STYLES

if TYPE_CHECKING:
    from camp_planner.domains.manip.mdp import ManipMDP


def every_red_graspable(task: ManipTask) -> bool:
    """Whether each red of ``task`` can be picked, top or side, from at least one free work
    pose at the left table whose arm mount lies within the arm's reach (the candidates the
    TAMP refiner tries), by the MDP's own pick with every object present."""
    # The MDP's module loads PyBullet: only for worlds that ask for this test.
    from camp_planner.domains.manip.mdp import ManipMDP

    mdp = ManipMDP.from_task(task)
    try:
        start = mdp.initial_state()
        return all(_pickable(mdp, task, start, red) for red in task.reds)
    finally:
        mdp.close()


def _pickable(mdp: ManipMDP, task: ManipTask, start: State, red: ManipObject) -> bool:
    """Whether some grasp style picks ``red`` from some free left-table pose in reach."""
    mount = task.settings.arm_mount_x
    for name, (px, py, yaw) in mdp.poses.items():
        if not name.startswith("left_") or not task.on_floor((px, py, yaw)):
            continue
        mx, my = px + mount * math.cos(yaw), py + mount * math.sin(yaw)
        if math.hypot(red.x - mx, red.y - my) > ARM_REACH:
            continue
        at = mdp.assign_state(start, 0, name)
        if not mdp.sync(at).base_free((px, py, yaw)):
            continue
        if any(mdp.step(at, ("pick", NONE, red.name, s, NONE))[1] == red.name for s in STYLES):
            return True
    return False


@functools.lru_cache(maxsize=32)
def cluttered_tasks(
    split: str, count: int, seed: int, settings: ManipSettings
) -> tuple[ManipTask, ...]:
    """The tasks of a cluttered world's split, each redrawn until every red is graspable;
    remembered per process (the test takes a simulator query per pose and style, about
    0.1 s a task, and every command asks for the tasks more than once)."""
    return tuple(make_tasks(split, count, seed, settings, accept=every_red_graspable))
