"""What the service answers: selections and plans, as plain data (mirrors ``camp_msgs``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from camp_planner.core.context import Context
from camp_planner.domains.interface.errors import ErrorCode
from camp_planner.domains.interface.plan import PlanStepData
from camp_planner.domains.interface.scene import Pose2
from camp_planner.learning.gate import GateDecision
from camp_planner.runtime.selection import Selection


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
    # The do-no-harm gate's decision (its predicted gain, bound and reason); None for a
    # selection made without the gate.
    gate: GateDecision | None = None
    # The runtime's whole selection: its rule, the candidates with their predicted objectives
    # and bounds, the fallback order and why.
    selection: Selection | None = None


@dataclass
class PlanResult:
    success: bool
    code: ErrorCode
    message: str
    context: Context | None = None
    fallbacks: int = 0
    base_path: list[Pose2] = field(default_factory=list)
    joint_names: tuple[str, ...] = ()  # the domain's arm joints (NAMO: the Panda's seven)
    # (index of the step, joint angles it ends in: NAMO's grasp or put-down pose)
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
    # What the runtime would try, in order (names; "give up" last if it would).
    fallback_order: list[str] = field(default_factory=list)
    # A digest of the executed actions (learning.labels.plan_digest): the same digest
    # through the service, `camp plan` and `camp eval` is the same plan.
    plan_digest: str = ""

    @staticmethod
    def failure(code: ErrorCode, message: str) -> PlanResult:
        return PlanResult(False, code, message)
