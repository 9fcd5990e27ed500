"""NAMO plans as a robot executes them: an executed plan's steps and geometry for
controllers, and plan steps (as a robot receives them) executed in the simulator.

A step's objects are named by the scene's ids (:mod:`.scene_io` maps them to and from the
model's box slots); NAMO's actions are ``move`` (no arguments: the target pose is the
geometry), ``pick`` and ``place`` (the box's id).
"""

from __future__ import annotations

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
from camp_planner.domains.namo.layout import N_FIXED, NONE, layout
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.domains.namo.world import NamoSettings, NamoTask
from camp_planner.sim.floor_scene import TUCKED

PANDA_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))


def plan_geometry(
    mdp: NamoMDP, states: Sequence[State], actions: Sequence[Action], slot_to_id: Mapping[str, str]
) -> PlanGeometry:
    """The steps (``move`` with no arguments, ``pick`` / ``place`` with the box's scene id),
    base poses and arm waypoints (step index, Panda joint angles) of an executed plan, with
    objects named by the scene's ids. A pick's arm goes to its grasp joints, where the
    gripper closes (the step's :class:`GripperAction`), then back to tucked; a place's
    likewise to its put-down joints, where the gripper opens."""
    st = mdp.task.settings if mdp.task is not None else NamoSettings()
    top = st.box_size[2] + 0.02
    pose0 = states[0][0]
    assert isinstance(pose0, tuple)
    path: list[Pose2] = [(float(pose0[0]), float(pose0[1]), float(pose0[2]))]
    steps: list[PlanStepData] = []
    arm: list[tuple[int, tuple[float, ...]]] = []
    for i, (op, target, obj) in enumerate(actions):
        before, after = states[i], states[i + 1]
        pose = after[0]
        assert isinstance(pose, tuple)
        base: Pose2 = (float(pose[0]), float(pose[1]), float(pose[2]))
        held = str(before[2])
        name = slot_to_id.get(held, held)
        if op == "move":
            if base != path[-1]:
                path.append(base)
            mode = "transit" if held == NONE else "transfer"
            objects = [] if held == NONE else [name]
            steps.append(
                PlanStepData("move", [], objects, mode, Pose.planar(*base), len(path) - 1, len(arm))
            )
        elif op in ("pick", "place"):
            if op == "pick":
                value = before[mdp.layout.slot_index[str(obj)]]
                assert isinstance(value, tuple)
                xy = (float(value[0]), float(value[1]))
                objects = [slot_to_id.get(str(obj), str(obj))]
            else:
                assert isinstance(target, tuple)
                xy = (float(target[0]), float(target[1]))
                objects = [name]
            scene = mdp.sync(before)
            joints = scene.precise_arm_solution(xy[0], xy[1], top)
            if joints is not None:
                arm.append((len(steps), joints))
            elif not arm:
                # No solution (the executed step had one, so only for states the MDP did not
                # produce): the gripper acts where the arm already is, which must be a point
                # of the trajectory for the action to name it; before any motion, tucked.
                arm.append((len(steps), TUCKED))
            # The gripper acts at the grasp (or put-down) point, then the arm tucks again for
            # driving: the simulator checks every drive with the arm tucked.
            acts = GripperAction(len(arm) - 1, CLOSE if op == "pick" else OPEN)
            if joints is not None:
                arm.append((len(steps), TUCKED))
            steps.append(
                PlanStepData(
                    str(op),
                    list(objects),
                    objects,
                    "manipulation",
                    Pose.planar(xy[0], xy[1], base[2]),
                    len(path) - 1,
                    len(arm),
                    (acts,),
                )
            )
    return PlanGeometry(steps, path, PANDA_JOINTS, arm)


POSITION_TOLERANCE = 0.02  # metres between a move's target and where the base stopped
YAW_TOLERANCE = 0.05  # radians


def execute_steps(mdp: NamoMDP, steps: Sequence[PlanStepData]) -> tuple[list[State], int, str]:
    """Execute ``steps`` from ``mdp``'s initial state in its simulator, as a robot would: a
    move drives straight to its target's (x, y, yaw) and stops at the first collision with
    any wall or box; a pick takes the step's one object, a place puts the held box down at
    the target. Returns (states visited, steps done, why it stopped early or "")."""
    state = mdp.initial_state()
    trace = [state]
    for i, step in enumerate(steps):
        action, objects = step.action, step.objects
        target = step.target.as_planar()
        if action == "move":
            nxt = mdp.step(state, ("move", target, NONE))
            pose = nxt[0]
            assert isinstance(pose, tuple)
            off = math.hypot(float(pose[0]) - target[0], float(pose[1]) - target[1])
            dyaw = abs((float(pose[2]) - target[2] + math.pi) % (2 * math.pi) - math.pi)
            if off > POSITION_TOLERANCE or dyaw > YAW_TOLERANCE:
                trace.append(nxt)
                return (
                    trace,
                    i,
                    (
                        f"step {i}: the base was blocked {off:.2f} m short of "
                        f"({target[0]:.2f}, {target[1]:.2f})"
                    ),
                )
        elif action == "pick":
            if len(objects) != 1:
                return trace, i, f"step {i}: a pick names {len(objects)} objects"
            nxt = mdp.step(state, ("pick", None, objects[0]))
            if nxt[2] != objects[0]:
                return trace, i, f"step {i}: could not pick '{objects[0]}'"
        elif action == "place":
            nxt = mdp.step(state, ("place", (target[0], target[1]), NONE))
            if nxt[2] != NONE:
                return (
                    trace,
                    i,
                    (f"step {i}: could not put the box down at ({target[0]:.2f}, {target[1]:.2f})"),
                )
        else:
            return trace, i, f"step {i}: unknown action '{action}'"
        state = nxt
        trace.append(state)
    return trace, len(steps), ""


def moved_boxes(task: NamoTask, state: State) -> dict[str, tuple[float, float]]:
    """Slot name → (x, y) of every box of ``task`` that ``state`` has somewhere else (more
    than 1 mm away in x and y together) than where it started."""
    moved: dict[str, tuple[float, float]] = {}
    for k, name in enumerate(layout(task.settings.grid, task.settings.goal_room).slot_names):
        value = state[N_FIXED + k]
        box = next((b for b in task.boxes if b.name == name), None)
        if (
            box is not None
            and isinstance(value, tuple)
            and abs(float(value[0]) - box.x) + abs(float(value[1]) - box.y) > 1e-3
        ):
            moved[name] = (float(value[0]), float(value[1]))
    return moved
