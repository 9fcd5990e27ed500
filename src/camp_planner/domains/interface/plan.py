"""Executable plans as plain data: symbolic steps with their geometry (mirrors
``camp_msgs/msg/PlanStep`` and the trajectories of ``camp_msgs/msg/Plan``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from camp_planner.domains.interface.scene import Pose, Pose2

MODES = ("transit", "transfer", "manipulation")
OPEN, CLOSE = "open", "close"  # gripper commands


@dataclass(frozen=True)
class GripperAction:
    """The gripper opens or closes (``command``: :data:`OPEN` or :data:`CLOSE`) once the arm
    has reached point ``after_point`` of the plan's arm trajectory (a global index)."""

    after_point: int
    command: str


@dataclass(frozen=True)
class PlanStepData:
    """One step: the action's name and symbolic arguments in the domain's order (NAMO:
    ``pick`` / ``place`` with the object's scene id, ``move`` with none; a manipulation
    domain: ``pick red_0 side``, ``regrasp red_0 side``, ``place red_0 bin_5``), the scene
    objects it involves, its mode, the pose it ends in, and where it ends in the plan's base
    path and arm trajectory."""

    action: str
    arguments: list[str]
    objects: list[str]
    mode: str  # one of MODES
    target: Pose  # move: the base pose reached; pick/place: where the object is taken or put
    base_path_end: int  # index of the base pose this step ends at
    arm_trajectory_end: int = 0  # arm trajectory points up to and including this step
    # What the gripper does during the step, in order: explicit, so that no executor has to
    # infer it from the action's name (a pick closes after its grasp point, a place opens).
    gripper: tuple[GripperAction, ...] = ()


@dataclass
class PlanGeometry:
    """What a plan executed in a domain's simulator gives a robot's controllers."""

    steps: list[PlanStepData] = field(default_factory=list)
    base_path: list[Pose2] = field(default_factory=list)
    joint_names: tuple[str, ...] = ()
    # (index of the step, joint angles it ends in), one per arm motion, in order
    arm_waypoints: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)


@dataclass(frozen=True)
class PlanRecord:
    """What a simulator is told about a plan it executes: its steps, and for a render the
    context it was made under and what its CAMP left out."""

    steps: list[PlanStepData]
    context_name: str = ""
    # The context's constraint, variable → allowed values (empty: the universal context).
    context_terms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    dropped_variables: tuple[str, ...] = ()
    planning_time: float = 0.0
