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

Each pick and place gives the arm an explicit program, with the gripper's actions on the
step (``PlanStepData.gripper``, after a global arm point), from the simulator's own checks
(:meth:`TabletopScene.check_grasp` / :meth:`~TabletopScene.check_place`):

* pick: approach, grasp, *close*, retreat (holding the red);
* place: approach, goal, *open*, retreat (empty-handed);
* regrasp: the put-down's approach, goal, *open*, retreat, then the side pick's approach,
  grasp, *close*, retreat.

Each program starts from the stowed arm and ends stowed, with via points where a straight
joint-space motion would touch something (:func:`_transit`): every base pose of a plan (the
MDP's moves, the TAMP planner's OMPL paths) was checked with the arm stowed, so the base
drives with it stowed, and straight from the stowed pose to an approach the forearm sweeps
through the table's edge.

Retreats (:meth:`TabletopScene.withdrawal`): straight lines out, by IK every 2 cm: up after a
pick; out of a side placement the way the grasp came in, else diagonally, else up. Each is
checked as the grasps are, in joint space with the arm, and a held red, against every body
of the world. The planner's placement checks (:meth:`TabletopScene.check_place`) do not ask
for a way out: where none is clear the executing robot refuses the motion and says why.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from camp_planner.core.mdp import Action, State
from camp_planner.domains.interface.plan import (
    CLOSE,
    OPEN,
    GripperAction,
    PlanGeometry,
    PlanStepData,
)
from camp_planner.domains.interface.scene import Pose, Pose2
from camp_planner.domains.manip.layout import NONE
from camp_planner.domains.manip.mdp import ManipMDP
from camp_planner.domains.manip.world import Pose2D
from camp_planner.sim.tabletop_geometry import SIDE, hand_orientation
from camp_planner.sim.tabletop_scene import (
    STOWED,
    ArmCheck,
    Grasp,
    TabletopScene,
)

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


Joints = tuple[float, ...]
# The arm raised nearly upright above its mount (elbow slightly bent, hand forward): every link
# is above the tallest object of the world, so the first joint can turn the arm there. The
# stowed arm is folded low over the base, and a joint-space motion straight from it to an
# approach over a table sweeps the forearm through the table's edge.
HIGH: Joints = (0.0, 0.0, 0.0, -0.5, 0.0, 1.0, 0.8)
# Metres a transit raises the gripper above an approach before turning the arm, in order of
# preference (IK does not reach every one from every pose).
LIFTS = (0.15, 0.08, 0.25)
# A transit (unlike an approach, which ends touching) keeps this clear of everything: the
# robot samples its motion elsewhere than the check did, and a grazing pass failed there.
CLEARANCE = 0.01


def _high(q0: float) -> Joints:
    return (q0, *HIGH[1:])


def _above(scene: TabletopScene, q: Joints) -> Joints | None:
    """Arm joints with the gripper straight above where ``q`` puts it, in the same
    orientation: the first of :data:`LIFTS` that IK reaches, seeded from ``q`` (the nearby
    solution) or else from its usual seeds (None for the stowed arm, or if IK finds none)."""
    if q == STOWED:
        return None
    before = scene.arm_joints()
    scene.set_arm(q)
    (x, y, z), orientation = scene.gripper_pose()
    scene.set_arm(before)
    for lift in LIFTS:
        for seed in (q, None):
            found = scene.solve_ik((x, y, z + lift), orientation, seed=seed)
            if found is not None:
                return found
    return None


def _transit(scene: TabletopScene, start: Joints, end: Joints) -> list[Joints]:
    """The via points between two arm poses (ends excluded): the first of these chains whose
    every motion is clear: none (straight in joint space); straight up from ``start`` /
    down to ``end`` (:func:`_above`); up to :data:`HIGH` facing ``start``'s way, turned to
    ``end``'s; both. The stowed arm is folded low over the base, and a straight motion from
    it to an approach over a table sweeps the forearm through the table's edge; coming down
    from HIGH straight to a side approach, beside the red at its height, swept the hand
    through the red. The last chain, if none is clear (the executing robot then stops)."""
    up, down = _above(scene, start), _above(scene, end)
    high = [_high(start[0]), _high(end[0])]
    chains: list[list[Joints]] = [
        [],
        [q for q in (up, down) if q is not None],
        high,
        [*high, *([down] if down is not None else [])],
        [*([up] if up is not None else []), *high, *([down] if down is not None else [])],
    ]
    for chain in chains:
        poses = [start, *chain, end]
        if not any(scene.motion_collisions(a, b, CLEARANCE) for a, b in itertools.pairwise(poses)):
            return chain
    return chains[-1]


def _retreat(scene: TabletopScene, goal: Grasp, check: ArmCheck, holding: bool) -> list[Joints]:
    """The arm's points as it withdraws from ``check``'s goal (:meth:`TabletopScene.withdrawal`),
    with the scene set up as after the gripper acted there. If no way out is clear, the
    approach: the executing robot then refuses the motion and says why."""
    assert check.approach_q is not None
    found, _ = scene.withdrawal(goal, check, holding)
    return list(found) if found else [check.approach_q]


def _program(
    scene: TabletopScene, start: Joints, goal: Grasp, check: ArmCheck, pick: bool
) -> tuple[list[Joints], int]:
    """One grasp's or placement's arm points from arm pose ``start``: the via points to its
    approach, the approach, the goal, then (after the gripper acted at the goal, whose index
    is returned too) the retreat. The scene is left as after it: a picked red held, a placed
    one standing."""
    assert check.goal_q is not None and check.approach_q is not None
    st = scene.world.settings
    if pick:
        scene.set_arm(start, st.gripper_max_opening)
    points = [*_transit(scene, start, check.approach_q), check.approach_q, check.goal_q]
    if pick:
        scene.set_arm(check.goal_q, goal.width)
        scene.attach(goal.obj)
        scene.held_grasp = goal
    else:
        scene.set_arm(check.goal_q)
        red = scene.detach()
        x, y, z = goal.position
        scene.place_object(red, x, y, z - goal.height)
        scene.set_arm(check.goal_q, st.gripper_max_opening)
    gripper_at = len(points) - 1
    points += _retreat(scene, goal, check, holding=pick)
    return points, gripper_at


def _stow(scene: TabletopScene, last: Joints) -> list[Joints]:
    """The arm's points from ``last`` back to :data:`STOWED`, where the base drives with it
    (every base pose of a plan was checked with the arm stowed)."""
    return [*_transit(scene, last, STOWED), STOWED]


def _manipulation(
    mdp: ManipMDP, state: State, moves: Sequence[tuple[Grasp, ArmCheck, bool]], flip: bool
) -> tuple[list[Joints], list[int]]:
    """The arm points of grasps and placements done in turn from ``state`` (each ``(goal,
    check, pick)``; a held red as taken with the hand orientation ``flip``), from the stowed
    arm back to it, and the index of each goal point (the gripper acts after it); the scene
    is synced to ``state`` first and left to be rebuilt."""
    scene = _holding(mdp, state, flip)
    points: list[Joints] = []
    acts: list[int] = []
    try:
        last: Joints = STOWED
        for goal, check, pick in moves:
            found, k = _program(scene, last, goal, check, pick)
            acts.append(len(points) + k)
            points += found
            last = found[-1]
        points += _stow(scene, last)
    finally:
        if scene.held is not None:  # the next sync rebuilds the state's scene
            scene.detach()
        scene.set_arm(STOWED)
    return points, acts


def flipped(check: ArmCheck, goal: Grasp) -> bool:
    """Whether the hand reached ``goal`` turned half a turn about its axis (the second of its
    two orientations, :func:`hand_orientation`)."""
    if check.orientation is None:
        return False
    turned = hand_orientation(goal.style, goal.yaw, True)
    return abs(sum(a * b for a, b in zip(check.orientation, turned, strict=True))) > 0.999


def _holding(mdp: ManipMDP, state: State, flip: bool) -> TabletopScene:
    """``state``'s scene with its held red in the hand as the pick before took it (``flip``):
    a side-held red taken by the turned hand stands upright only where the hand is turned
    again, which the MDP, holding every red canonically, does not tell apart."""
    scene = mdp.sync(state)
    if flip and scene.held is not None and scene.held_grasp is not None:
        red, style = scene.held, scene.held_grasp.style
        scene.detach()
        scene.hold(red, style, flip)
    return scene


def _place_check(scene: TabletopScene, place: Grasp, flip: bool) -> ArmCheck:
    """The placement in the hand orientation the red was taken in, else (IK or a collision
    there) in either, as the MDP checked it: the executing robot then says what went wrong."""
    check = scene.check_place(place, (flip,))
    return check if check.ok else scene.check_place(place)


def _regrasp_checks(
    mdp: ManipMDP, state: State, red: str, flip: bool
) -> tuple[tuple[float, float, float] | None, list[tuple[Grasp, ArmCheck, bool]]]:
    """Where the regrasp from ``state`` puts ``red`` down (the first staging spot that takes
    it and lets the arm pick it from the side, as the MDP's regrasp chooses), and its
    put-down (in the hand orientation ``flip`` it was taken in) and side pick with their
    checks; (None, []) if none does."""
    assert mdp.task is not None
    scene = _holding(mdp, state, flip)
    style = str(state[2])
    z = mdp.task.settings.table_height
    try:
        for x, y in mdp.task.staging_spots():
            place = scene.place_pose(x, y, z)
            down = _place_check(scene, place, flip)
            if not down.ok:
                continue
            scene.detach()
            scene.place_object(red, x, y, z)
            grasp = scene.grasp(red, SIDE)
            up = scene.check_grasp(grasp)
            if up.ok:
                return (x, y, z), [(place, down, False), (grasp, up, True)]
            scene.hold(red, style, flip)
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
    no step of the plan. Each pick, place and regrasp gives the arm its program from the
    stowed arm back to it, with the gripper's actions (see the module's docstring)."""
    assert mdp.task is not None
    task = mdp.task
    path: list[Pose2] = [_pose2(mdp.poses[str(states[0][0])])]
    steps: list[PlanStepData] = []
    arm: list[tuple[int, Joints]] = []
    lay = mdp.layout
    flip = False  # the hand orientation the held red was taken in

    def add(
        index: int, points: Sequence[Joints], acts: Sequence[tuple[int, str]]
    ) -> tuple[GripperAction, ...]:
        start = len(arm)
        arm.extend((index, q) for q in points)
        return tuple(GripperAction(start + k, c) for k, c in acts)

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
            check = scene.check_grasp(g)
            if check.ok:
                points, at = _manipulation(mdp, before, [(g, check, True)], flip)
                gripper = add(index, points, [(at[0], CLOSE)])
                flip = flipped(check, g)
            else:  # not from the MDP's trace: its checks' joints, no program
                gripper = add(index, _waypoints(check), [])
            steps.append(
                PlanStepData(
                    "pick",
                    [red_id, str(grasp)],
                    [red_id],
                    "manipulation",
                    _centre(mdp, red, x, y, z, g.yaw),
                    len(path) - 1,
                    len(arm),
                    gripper,
                )
            )
        elif skill == "regrasp":
            spot, moves = _regrasp_checks(mdp, before, held, flip)
            points, at = _manipulation(mdp, before, moves, flip) if moves else ([], [])
            if moves:
                flip = flipped(moves[-1][1], moves[-1][0])
            gripper = add(index, points, list(zip(at, (OPEN, CLOSE), strict=False)))
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
                    gripper,
                )
            )
        elif skill == "place":
            assert isinstance(bin_, int)
            b = task.bins[bin_]
            scene = _holding(mdp, before, flip)
            place = scene.place_pose(b.x, b.y, b.floor_z)
            check = _place_check(scene, place, flip)
            if scene.held is not None:  # the next sync holds it as the MDP does
                scene.detach()
            if check.ok:
                points, at = _manipulation(mdp, before, [(place, check, False)], flip)
                gripper = add(index, points, [(at[0], OPEN)])
            else:
                gripper = add(index, _waypoints(check), [])
            steps.append(
                PlanStepData(
                    "place",
                    [held_id, f"bin_{bin_}"],
                    [held_id],
                    "manipulation",
                    _centre(mdp, held, b.x, b.y, b.floor_z, place.yaw),
                    len(path) - 1,
                    len(arm),
                    gripper,
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
