"""What the service answers: selections and plans, as plain data (mirrors ``camp_msgs``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from camp_planner.core.context import Context
from camp_planner.service.errors import ErrorCode
from camp_planner.service.scene import Pose2

PANDA_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))


@dataclass(frozen=True)
class PlanStepData:
    action: str  # "move" | "pick" | "place"
    objects: list[str]
    mode: str  # "transit" | "transfer" | "manipulation"
    target: Pose2
    base_path_end: int


@dataclass
class SelectionResult:
    context: Context
    probability: float
    alternatives: list[tuple[Context, float]]
    relevant: list[str]
    dropped: list[str]
    dropped_objects: list[str]
    latency_s: float
    screened: list[Context] = field(default_factory=list)


@dataclass
class PlanResult:
    success: bool
    code: ErrorCode
    message: str
    context: Context | None = None
    fallbacks: int = 0
    base_path: list[Pose2] = field(default_factory=list)
    joint_names: tuple[str, ...] = PANDA_JOINTS
    # (index of the pick/place step, joint angles at the grasp or put-down pose)
    arm_waypoints: list[tuple[int, tuple[float, ...]]] = field(default_factory=list)
    steps: list[PlanStepData] = field(default_factory=list)
    stage_times: dict[str, float] = field(default_factory=dict)
    planning_time: float = 0.0
    expected_return: float = 0.0
    objective: float = 0.0
    lam: float = 0.0
    relevant: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    dropped_objects: list[str] = field(default_factory=list)
    outcome: str = ""
    contexts_tried: list[str] = field(default_factory=list)

    @staticmethod
    def failure(code: ErrorCode, message: str) -> PlanResult:
        return PlanResult(False, code, message)
