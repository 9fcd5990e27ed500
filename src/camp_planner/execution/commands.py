"""A plan as the commands a robot's controllers take, step by step.

A step's base motion is the stretch of the plan's base path it ends at (for a path-following
controller such as Nav2's ``FollowPath``); its arm motion is the stretch of the arm trajectory
it ends at, cut where the gripper acts (for ``FollowJointTrajectory`` and ``GripperCommand``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.plan import CLOSE, OPEN, PlanStepData
from camp_planner.domains.interface.scene import Pose2, Scene

Joints = tuple[float, ...]


@dataclass(frozen=True)
class ExecutablePlan:
    """What an executor needs of a plan: its id, the scene it was made for, its steps with
    their base path and arm trajectory points (positions only: the executor times them)."""

    plan_id: str
    scene: Scene | None
    steps: list[PlanStepData]
    base_path: list[Pose2]
    joint_names: tuple[str, ...] = ()
    arm_points: list[Joints] = field(default_factory=list)


@dataclass(frozen=True)
class BaseCommand:
    """Drive along ``poses`` (the last is the step's goal)."""

    poses: list[Pose2]


@dataclass(frozen=True)
class ArmCommand:
    """Move the arm through ``points`` (joint angles, in the plan's joint order)."""

    points: list[Joints]


@dataclass(frozen=True)
class GripperCommand:
    """Open or close the gripper (``close``)."""

    close: bool


Command = BaseCommand | ArmCommand | GripperCommand


def step_commands(plan: ExecutablePlan, index: int) -> list[Command]:
    """The controller commands of step ``index``: its base motion, then its arm motion cut at
    each gripper action."""
    step = plan.steps[index]
    base_from = plan.steps[index - 1].base_path_end if index > 0 else 0
    arm_from = plan.steps[index - 1].arm_trajectory_end if index > 0 else 0
    out: list[Command] = []
    if step.base_path_end > base_from:
        out.append(BaseCommand(list(plan.base_path[base_from : step.base_path_end + 1])))
    start = arm_from
    for action in step.gripper:
        if action.after_point >= start:
            out.append(ArmCommand(list(plan.arm_points[start : action.after_point + 1])))
            start = action.after_point + 1
        out.append(GripperCommand(action.command == CLOSE))
    if step.arm_trajectory_end > start:
        out.append(ArmCommand(list(plan.arm_points[start : step.arm_trajectory_end])))
    return out


def check_plan(plan: ExecutablePlan) -> None:
    """A :class:`ServiceError` (INVALID_REQUEST) naming the first index or command of
    ``plan`` that does not fit its path and trajectory: steps must end at non-decreasing
    points inside them, gripper actions inside their step's stretch, every point of the arm's
    joint count."""

    def bad(why: str) -> ServiceError:
        return ServiceError(ErrorCode.INVALID_REQUEST, f"plan '{plan.plan_id}': {why}")

    if plan.steps and not plan.base_path:
        raise bad("it has steps but no base path")
    base, arm = 0, 0
    for i, step in enumerate(plan.steps):
        if not base <= step.base_path_end < max(len(plan.base_path), 1):
            raise bad(
                f"step {i} ends at base pose {step.base_path_end}, outside {base} … "
                f"{len(plan.base_path) - 1}"
            )
        if not arm <= step.arm_trajectory_end <= len(plan.arm_points):
            raise bad(
                f"step {i} ends at arm point {step.arm_trajectory_end}, outside {arm} … "
                f"{len(plan.arm_points)}"
            )
        for action in step.gripper:
            if action.command not in (OPEN, CLOSE):
                raise bad(f"step {i}: gripper command '{action.command}' (open or close)")
            if not arm <= action.after_point + 1 <= step.arm_trajectory_end:
                raise bad(f"step {i}: a gripper action after arm point {action.after_point}")
        base, arm = step.base_path_end, step.arm_trajectory_end
    width = len(plan.joint_names)
    for k, q in enumerate(plan.arm_points):
        if len(q) != width:
            raise bad(f"arm point {k} has {len(q)} joints, not {width}")


def remaining_path(plan: ExecutablePlan, index: int) -> Sequence[Pose2]:
    """The base poses still to be driven through from step ``index`` on."""
    start = plan.steps[index - 1].base_path_end if index > 0 else 0
    return plan.base_path[start:]
