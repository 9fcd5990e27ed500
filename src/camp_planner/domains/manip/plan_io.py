"""Manipulation plans (paper domain D4) as a robot executes them: an executed plan's steps
and geometry for controllers, and plan steps (as a robot receives them) executed in the
simulator.

The steps, with their arguments in the domain's order (objects named by the scene's ids):

* ``move`` (``[work pose name]``; mode ``transit``, or ``transfer`` with a red held): the
  base drives to the named work pose, along the TAMP planner's path
  (:attr:`ManipMDP.base_paths <camp_planner.domains.manip.mdp.ManipMDP.base_paths>`) or, for
  a pair of poses it has none for, straight;
* ``pick`` (``[red, top|side]``), ``regrasp`` (``[red, side]``: put down on a staging spot,
  picked again from the side) and ``place`` (``[red, bin_j]``), all ``manipulation``.

Each pick and place adds the arm's joints at its approach and at its goal to the arm
waypoints (a regrasp four: its put-down, then its side pick), from the simulator's own
checks (:meth:`TabletopScene.check_grasp` / :meth:`~TabletopScene.check_place`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from camp_planner.core.mdp import Action, State
from camp_planner.domains.interface.plan import PlanGeometry, PlanStepData
from camp_planner.domains.interface.scene import Pose, Pose2
from camp_planner.domains.manip.layout import NONE
from camp_planner.domains.manip.mdp import ManipMDP
from camp_planner.domains.manip.world import Pose2D
from camp_planner.sim.tabletop_geometry import SIDE
from camp_planner.sim.tabletop_scene import ArmCheck

# The Panda's arm joints, as the URDF names joints 0-6 (TabletopScene.ARM_JOINTS).
PANDA_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
POSITION_TOLERANCE = 0.02  # metres between a move's target and the work pose it names
YAW_TOLERANCE = 0.05  # radians


def _pose2(p: Sequence[float]) -> Pose2:
    return (float(p[0]), float(p[1]), float(p[2]))


def move_path(mdp: ManipMDP, start: str, goal: str) -> list[Pose2]:
    """The base poses of a move from work pose ``start`` to ``goal``: the TAMP planner's path
    when it left one in ``mdp.base_paths``, else the straight segment; always from the start
    pose to the goal pose."""
    a, b = _pose2(mdp.poses[start]), _pose2(mdp.poses[goal])
    found: Sequence[Pose2D] = mdp.base_paths.get((start, goal)) or ()
    path = [a, *(_pose2(p) for p in found), b]
    out: list[Pose2] = [path[0]]
    for p in path[1:]:
        if math.dist(p, out[-1]) > 1e-9:
            out.append(p)
    return out


def _centre(mdp: ManipMDP, red: str, x: float, y: float, z: float, yaw: float) -> Pose:
    """The pose a scene gives red ``red`` standing with its bottom at (x, y, z): its
    bounding box's centre (see :mod:`.scene_io`)."""
    assert mdp.task is not None
    return Pose.planar(x, y, yaw, z + mdp.task.obj(red).height / 2)


def _waypoints(check: ArmCheck) -> list[tuple[float, ...]]:
    return [q for q in (check.approach_q, check.goal_q) if q is not None]


def _regrasp_checks(
    mdp: ManipMDP, state: State, red: str
) -> tuple[tuple[float, float, float] | None, list[tuple[float, ...]]]:
    """Where the regrasp from ``state`` puts ``red`` down (the first staging spot that takes
    it and lets the arm pick it from the side, as the MDP's regrasp chooses) and the arm's
    joints of the put-down and the pick; (None, []) if none does."""
    assert mdp.task is not None
    scene = mdp.sync(state)
    z = mdp.task.settings.table_height
    try:
        for x, y in mdp.task.staging_spots():
            down = scene.check_place(scene.place_pose(x, y, z))
            if not down.ok:
                continue
            scene.detach()
            scene.place_object(red, x, y, z)
            up = scene.check_grasp(scene.grasp(red, SIDE))
            if up.ok:
                return (x, y, z), [*_waypoints(down), *_waypoints(up)]
            scene.hold(red, str(state[2]))
    finally:
        if scene.held is not None:  # the next sync rebuilds the state's scene
            scene.detach()
    return None, []


def plan_geometry(
    mdp: ManipMDP,
    states: Sequence[State],
    actions: Sequence[Action],
    name_to_id: Mapping[str, str],
) -> PlanGeometry:
    """The steps, base path and arm waypoints of an executed plan (``states[i + 1]`` is
    ``actions[i]``'s outcome), with reds named by the scene's ids (``name_to_id``: model name
    → scene id). An action that changed nothing (a no-op, or one the simulator refused) is
    no step of the plan."""
    assert mdp.task is not None
    task = mdp.task
    path: list[Pose2] = [_pose2(mdp.poses[str(states[0][0])])]
    steps: list[PlanStepData] = []
    arm: list[tuple[int, tuple[float, ...]]] = []
    lay = mdp.layout
    for i, action in enumerate(actions):
        before, after = states[i], states[i + 1]
        if after == before:
            continue
        skill, target, obj, grasp, bin_ = action
        held = str(before[1])
        held_id = name_to_id.get(held, held)
        base = _pose2(mdp.poses[str(after[0])])
        if skill == "move":
            for p in move_path(mdp, str(before[0]), str(after[0]))[1:]:
                path.append(p)
            steps.append(
                PlanStepData(
                    "move",
                    [str(target)],
                    [] if held == NONE else [held_id],
                    "transit" if held == NONE else "transfer",
                    Pose.planar(*base),
                    len(path) - 1,
                    len(arm),
                )
            )
            continue
        index = len(steps)
        if skill == "pick":
            red = str(obj)
            red_id = name_to_id.get(red, red)
            pose = before[lay.pose_index(red)]
            assert isinstance(pose, tuple)
            x, y, z = (float(v) for v in pose)
            scene = mdp.sync(before)
            g = scene.grasp(red, str(grasp))
            arm += [(index, q) for q in _waypoints(scene.check_grasp(g))]
            steps.append(
                PlanStepData(
                    "pick",
                    [red_id, str(grasp)],
                    [red_id],
                    "manipulation",
                    _centre(mdp, red, x, y, z, g.yaw),
                    len(path) - 1,
                    len(arm),
                )
            )
        elif skill == "regrasp":
            spot, joints = _regrasp_checks(mdp, before, held)
            arm += [(index, q) for q in joints]
            x, y, z = spot if spot is not None else (base[0], base[1], task.settings.table_height)
            steps.append(
                PlanStepData(
                    "regrasp",
                    [held_id, SIDE],
                    [held_id],
                    "manipulation",
                    _centre(mdp, held, x, y, z, base[2]),
                    len(path) - 1,
                    len(arm),
                )
            )
        elif skill == "place":
            assert isinstance(bin_, int)
            b = task.bins[bin_]
            scene = mdp.sync(before)
            place = scene.place_pose(b.x, b.y, b.floor_z)
            arm += [(index, q) for q in _waypoints(scene.check_place(place))]
            steps.append(
                PlanStepData(
                    "place",
                    [held_id, f"bin_{bin_}"],
                    [held_id],
                    "manipulation",
                    _centre(mdp, held, b.x, b.y, b.floor_z, place.yaw),
                    len(path) - 1,
                    len(arm),
                )
            )
    return PlanGeometry(steps, path, PANDA_JOINTS, arm)


# --- executing received steps ----------------------------------------------------------------
def _work_pose(mdp: ManipMDP, step: PlanStepData) -> str | None:
    """The work pose a move step names (its argument, if the target agrees with it within
    the tolerances), else the one its target stands at; None if neither."""

    def near(name: str) -> bool:
        x, y, yaw = mdp.poses[name]
        t = step.target
        dyaw = abs(math.remainder(t.yaw - yaw, 2 * math.pi))
        return math.hypot(t.x - x, t.y - y) <= POSITION_TOLERANCE and dyaw <= YAW_TOLERANCE

    if step.arguments:
        name = step.arguments[0]
        return name if name in mdp.poses and near(name) else None
    return next((name for name in mdp.poses if near(name)), None)


def execute_steps(
    mdp: ManipMDP, steps: Sequence[PlanStepData], id_to_name: Mapping[str, str] | None = None
) -> tuple[list[State], int, str]:
    """Execute ``steps`` from ``mdp``'s initial state in its simulator (the task's full world:
    every blue and green present, whatever a CAMP dropped), as a robot would. Objects are
    the scene's ids (``id_to_name`` maps them to the model's names; by default they are the
    model's, as the sim node's scene gives them). Returns (states visited, steps done, why it
    stopped early or "")."""
    names = id_to_name or {}
    state = mdp.initial_state()
    trace = [state]
    lay = mdp.layout
    for i, step in enumerate(steps):
        args = list(step.arguments)
        action: Action
        if step.action == "move":
            pose = _work_pose(mdp, step)
            if pose is None:
                t = step.target
                return (
                    trace,
                    i,
                    f"step {i}: no work pose {' '.join(args)} at ({t.x:.2f}, {t.y:.2f}, yaw "
                    f"{t.yaw:.2f})",
                )
            action = ("move", pose, NONE, NONE, NONE)
            nxt = mdp.step(state, action)
            if nxt[0] != pose:
                return trace, i, f"step {i}: the base cannot stand at {pose} (blocked)"
        elif step.action in ("pick", "regrasp", "place"):
            if len(args) != 2:
                return trace, i, f"step {i}: a {step.action} takes 2 arguments, not {len(args)}"
            red = names.get(args[0], args[0])
            if red not in lay.loc_index:
                return trace, i, f"step {i}: no red '{args[0]}' in the task"
            if step.action == "pick":
                action = ("pick", NONE, red, args[1], NONE)
                nxt = mdp.step(state, action)
                if nxt[1:3] != (red, args[1]):
                    return trace, i, f"step {i}: could not pick '{args[0]}' ({args[1]} grasp)"
            else:
                if state[1] != red:
                    return trace, i, f"step {i}: '{args[0]}' is not held"
                if step.action == "regrasp":
                    nxt = mdp.step(state, ("regrasp", NONE, NONE, NONE, NONE))
                    if nxt[2] != SIDE:
                        return trace, i, f"step {i}: could not regrasp '{args[0]}' from the side"
                else:
                    where = args[1]
                    k = int(where[4:]) if where.startswith("bin_") and where[4:].isdigit() else -1
                    if not 0 <= k < lay.n_bins:
                        return (
                            trace,
                            i,
                            f"step {i}: no bin '{where}' (bin_0 … bin_{lay.n_bins - 1})",
                        )
                    nxt = mdp.step(state, ("place", NONE, NONE, NONE, k))
                    if nxt[lay.loc_index[red]] != where:
                        return trace, i, f"step {i}: could not place '{args[0]}' into {where}"
        else:
            return trace, i, f"step {i}: unknown action '{step.action}'"
        state = nxt
        trace.append(state)
    return trace, len(steps), ""
