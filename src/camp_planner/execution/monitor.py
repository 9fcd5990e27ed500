"""What a plan expects the world to look like after each of its steps, and whether an
observed scene still lets the rest of the plan run.

The expectation starts from the scene the plan was made for and follows the steps' effects:
a move puts the robot at the step's target, a pick makes its object the held one (carried,
so its pose is no longer checked), a place puts it down at the target, and every other
object stays where it was. An observed scene *disagrees* where an object, the robot or the
gripper is not as expected beyond the tolerances; a disagreement *invalidates* the plan only
where the rest of the plan depends on it: the robot or the gripper, an object a remaining
step handles, or an object that now stands within reach of the remaining base path or of a
remaining pick or put-down. Anything else is reported and execution goes on, so a box
nudged in a room the robot never enters costs no replan.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from camp_planner.domains.interface.scene import Pose2, Scene, SceneObject
from camp_planner.execution.commands import ExecutablePlan, remaining_path

HeldOf = Callable[[Scene], str]  # the id of the object a scene shows in the gripper, or ""


@dataclass(frozen=True)
class Tolerance:
    """How far the world may be from the plan's expectation: controllers stop within a goal
    tolerance, perception is noisy."""

    robot_m: float = 0.10
    robot_rad: float = 0.15
    object_m: float = 0.05
    # The robot's footprint radius (with what it carries): an object whose footprint comes
    # this close to the remaining base path blocks it.
    robot_radius_m: float = 0.45


@dataclass(frozen=True)
class Expectation:
    """The world a plan expects after some of its steps."""

    robot: Pose2 | None  # None: not checked (the start, where the plan's scene says it)
    held: str
    # id → expected position of every object not held (x and y are compared)
    positions: dict[str, tuple[float, float, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Disagreement:
    """One way the observed world is not as expected: ``subject`` is an object id,
    ``"robot"`` or ``"gripper"``."""

    subject: str
    what: str
    invalidates: bool = False

    def __str__(self) -> str:
        return f"{self.subject} {self.what}"


def expectations(plan: ExecutablePlan, held_of: HeldOf) -> list[Expectation]:
    """The expectation before the first step (index 0) and after each step (index k + 1)."""
    if plan.scene is None:
        return []
    scene = plan.scene
    held = held_of(scene)
    positions = {o.id: o.pose.position for o in scene.objects if o.id != held}
    start = scene.robot_pose
    now = Expectation((start.x, start.y, start.yaw), held, positions)
    out = [now]
    for step in plan.steps:
        if step.action == "move":
            now = replace(now, robot=step.target.as_planar())
        elif step.action in ("pick", "regrasp") and step.objects:
            moved = {k: v for k, v in now.positions.items() if k != step.objects[0]}
            now = replace(now, held=step.objects[0], positions=moved)
        elif step.action == "place" and step.objects:
            put = dict(now.positions)
            put[step.objects[0]] = step.target.position
            now = replace(now, held="", positions=put)
        out.append(now)
    return out


def _turn(a: float, b: float) -> float:
    return abs(math.remainder(a - b, 2 * math.pi))


def _footprint(obj: SceneObject) -> float:
    return 0.5 * math.hypot(obj.size[0], obj.size[1])


def _segment_distance(p: tuple[float, float], a: Pose2, b: Pose2) -> float:
    ax, ay, bx, by = a[0], a[1], b[0], b[1]
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    t = (
        0.0
        if length2 == 0.0
        else max(0.0, min(1.0, ((p[0] - ax) * dx + (p[1] - ay) * dy) / length2))
    )
    return math.hypot(p[0] - (ax + t * dx), p[1] - (ay + t * dy))


def _path_distance(p: tuple[float, float], path: Sequence[Pose2]) -> float:
    if len(path) == 1:
        return math.hypot(p[0] - path[0][0], p[1] - path[0][1])
    return min(
        (_segment_distance(p, a, b) for a, b in itertools.pairwise(path)),
        default=math.inf,
    )


def compare(
    plan: ExecutablePlan,
    done: int,
    observed: Scene,
    held_of: HeldOf,
    tol: Tolerance = Tolerance(),
    expected: Sequence[Expectation] | None = None,
) -> list[Disagreement]:
    """How ``observed`` disagrees with what ``plan`` expects after its first ``done`` steps,
    each marked whether it invalidates the steps still to run."""
    chain = list(expected) if expected is not None else expectations(plan, held_of)
    if not chain:
        return []
    want = chain[done]
    rest = plan.steps[done:]
    involved = {o for s in rest for o in s.objects}
    out: list[Disagreement] = []
    pose = observed.robot_pose
    if want.robot is not None:
        off = math.hypot(pose.x - want.robot[0], pose.y - want.robot[1])
        if off > tol.robot_m:
            out.append(Disagreement("robot", f"is {off:.2f} m from where the plan has it", True))
        elif _turn(pose.yaw, want.robot[2]) > tol.robot_rad:
            out.append(
                Disagreement("robot", f"is turned {_turn(pose.yaw, want.robot[2]):.2f} rad", True)
            )
    held = held_of(observed)
    if held != want.held:
        what = (
            f"holds '{held}'" if held else "holds nothing"
        ) + f" where the plan has {repr(want.held) if want.held else 'nothing'}"
        out.append(Disagreement("gripper", what, True))
    path = remaining_path(plan, done) if rest else []
    targets = [s.target for s in rest if s.action in ("pick", "place", "regrasp")]
    seen = {o.id: o for o in observed.objects}
    for oid, xyz in want.positions.items():
        obj = seen.get(oid)
        if obj is None:
            out.append(Disagreement(oid, "is not seen any more", oid in involved))
            continue
        if oid == held:
            continue
        # On the floor (a plan's put-down target is where the object stands, a scene's pose its
        # centre): lifting is what the gripper check is for.
        shift = math.hypot(obj.pose.x - xyz[0], obj.pose.y - xyz[1])
        if shift <= tol.object_m:
            continue
        at = (obj.pose.x, obj.pose.y)
        reach = _footprint(obj) + tol.robot_radius_m
        blocks = bool(path) and _path_distance(at, path) < reach
        crowds = any(
            math.hypot(at[0] - t.x, at[1] - t.y) < _footprint(obj) + tol.object_m for t in targets
        )
        why = f"moved {shift:.2f} m"
        if oid in involved:
            why += ", and the plan still handles it"
        elif blocks:
            why += ", into the robot's way"
        elif crowds:
            why += ", onto a spot the plan still uses"
        out.append(Disagreement(oid, why, oid in involved or blocks or crowds))
    return out


def invalidating(found: Sequence[Disagreement]) -> list[Disagreement]:
    """The disagreements that stop the plan."""
    return [d for d in found if d.invalidates]
