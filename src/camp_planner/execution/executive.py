"""The executive: a plan carried out step by step through controller ports, the world checked
after every step, and a new plan made from where the robot is when the world disagrees.

ROS-free: the controllers (base, arm, gripper), perception and the planner are ports
(:class:`Controllers`, :class:`Perception`, :class:`Replanner`), which the executor node fills
with action clients and a simulation test with fakes. The executive never replays a plan: a
plan id runs at most once, and a plan made for a scene the world has left is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

from camp_planner.domains.interface.errors import ServiceError
from camp_planner.domains.interface.scene import Pose2, Scene
from camp_planner.execution.commands import (
    ArmCommand,
    BaseCommand,
    ExecutablePlan,
    GripperCommand,
    Joints,
    check_plan,
    step_commands,
)
from camp_planner.execution.monitor import (
    Disagreement,
    HeldOf,
    Tolerance,
    compare,
    expectations,
    invalidating,
)


class ExecError(IntEnum):
    """Why an execution ended (mirrors ``camp_msgs/action/ExecutePlan``'s result codes)."""

    NONE = 0
    STALE_PLAN = 1
    NO_SCENE = 2
    CONTROLLER_UNAVAILABLE = 3
    CONTROLLER_REJECTED = 4
    STEP_FAILED = 5
    REPLAN_FAILED = 6
    TOO_MANY_REPLANS = 7
    CANCELED = 8
    BUSY = 9
    INVALID_PLAN = 10
    INACTIVE = 11
    ALREADY_EXECUTED = 12
    INTERNAL = 255


@dataclass(frozen=True)
class Outcome:
    """What a controller did with a goal: ``status`` is "ok", "aborted" (it tried and
    stopped: blocked, a collision), "rejected" (it refused the goal), "unavailable" (no
    server) or "canceled"."""

    status: str
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class Controllers(Protocol):
    def drive(self, poses: list[Pose2]) -> Outcome: ...

    def move_arm(self, points: list[Joints]) -> Outcome: ...

    def gripper(self, close: bool) -> Outcome: ...


class Perception(Protocol):
    def latest(self) -> Scene | None:
        """The last scene observed, or None."""
        ...

    def after(self, t: float, timeout_s: float) -> Scene | None:
        """The first scene observed at or after monotonic time ``t`` (waiting up to
        ``timeout_s``), or None."""
        ...


class Replanner(Protocol):
    def plan(self, scene: Scene) -> ExecutablePlan:
        """A plan for ``scene`` (the runtime selects a context afresh); raises
        :class:`ServiceError` when there is none."""
        ...


@dataclass(frozen=True)
class Feedback:
    plan_id: str
    step: int
    steps_total: int
    action: str
    phase: str  # "base" | "arm" | "gripper" | "checking" | "replanning"
    replans: int


@dataclass
class ExecutionResult:
    goal_reached: bool = False
    code: ExecError = ExecError.NONE
    message: str = ""
    plan_id: str = ""
    steps_executed: int = 0
    replans: int = 0
    replan_seconds: list[float] = field(default_factory=list)
    replan_reasons: list[str] = field(default_factory=list)
    # Disagreements seen that did not stop the plan (a box nudged out of the robot's way).
    tolerated: list[str] = field(default_factory=list)


_CONTROLLER_ERRORS = {
    "rejected": ExecError.CONTROLLER_REJECTED,
    "unavailable": ExecError.CONTROLLER_UNAVAILABLE,
    "canceled": ExecError.CANCELED,
}


@dataclass
class Executive:
    """Carries plans out; remembers the ids it ran so that none runs twice."""

    controllers: Controllers
    perception: Perception
    replanner: Replanner
    held_of: HeldOf
    tolerance: Tolerance = field(default_factory=Tolerance)
    scene_timeout_s: float = 5.0
    clock: Callable[[], float] = time.monotonic
    executed: set[str] = field(default_factory=set)

    def run(
        self,
        plan: ExecutablePlan | None,
        replan: bool = True,
        max_replans: int = 3,
        cancelled: Callable[[], bool] = lambda: False,
        feedback: Callable[[Feedback], None] = lambda f: None,
    ) -> ExecutionResult:
        """Execute ``plan`` (None: plan first, for the next scene observed) to its end."""
        result = ExecutionResult()
        if plan is None:
            # A scene observed from now on: the world as it is when asked, not as it was.
            scene = self.perception.after(self.clock(), self.scene_timeout_s)
            if scene is None:
                return _end(result, ExecError.NO_SCENE, "no scene observed to plan for")
            try:
                plan = self.replanner.plan(scene)
            except ServiceError as exc:
                return _end(result, ExecError.REPLAN_FAILED, f"no plan: {exc.message}")
        else:
            refused = self._refuse(plan)
            if refused is not None:
                return refused
        while True:
            result.plan_id = plan.plan_id
            self.executed.add(plan.plan_id)
            failure = self._execute(plan, result, cancelled, feedback)
            if failure is None:
                result.goal_reached = True
                return result
            if result.code != ExecError.NONE:
                return result
            if not replan:
                return _end(result, ExecError.STEP_FAILED, failure)
            if result.replans >= max_replans:
                return _end(
                    result,
                    ExecError.TOO_MANY_REPLANS,
                    f"{result.replans} replans made and the world disagreed again: {failure}",
                )
            detected = self.clock()
            feedback(Feedback(plan.plan_id, 0, len(plan.steps), "", "replanning", result.replans))
            scene = self.perception.after(detected, self.scene_timeout_s)
            if scene is None:
                return _end(result, ExecError.NO_SCENE, f"no scene after: {failure}")
            try:
                plan = self.replanner.plan(scene)
                check_plan(plan)
            except ServiceError as exc:
                return _end(
                    result, ExecError.REPLAN_FAILED, f"{failure}; no new plan: {exc.message}"
                )
            result.replans += 1
            result.replan_seconds.append(self.clock() - detected)
            result.replan_reasons.append(failure)

    def _refuse(self, plan: ExecutablePlan) -> ExecutionResult | None:
        """A result refusing ``plan`` (ran before, malformed, stale), or None."""
        result = ExecutionResult(plan_id=plan.plan_id)
        if plan.plan_id in self.executed:
            return _end(result, ExecError.ALREADY_EXECUTED, f"plan '{plan.plan_id}' ran before")
        try:
            check_plan(plan)
        except ServiceError as exc:
            return _end(result, ExecError.INVALID_PLAN, exc.message)
        if plan.scene is None:
            return _end(result, ExecError.STALE_PLAN, "the plan carries no scene to check")
        now = self.perception.latest()
        if now is None:
            return _end(result, ExecError.NO_SCENE, "no scene observed to check the plan against")
        stale = invalidating(compare(plan, 0, now, self.held_of, self.tolerance))
        if stale:
            return _end(
                result,
                ExecError.STALE_PLAN,
                f"the world has left the scene plan '{plan.plan_id}' was made for: "
                + "; ".join(map(str, stale)),
            )
        return None

    def _execute(
        self,
        plan: ExecutablePlan,
        result: ExecutionResult,
        cancelled: Callable[[], bool],
        feedback: Callable[[Feedback], None],
    ) -> str | None:
        """Run ``plan``'s steps; None when all ran and the world agreed, else why it
        stopped (with ``result.code`` set when no replan can help)."""
        chain = expectations(plan, self.held_of)
        for i, step in enumerate(plan.steps):
            for cmd in step_commands(plan, i):
                if cancelled():
                    result.code, result.message = ExecError.CANCELED, "cancelled"
                    return result.message
                if isinstance(cmd, BaseCommand):
                    feedback(self._fb(plan, i, "base", result))
                    outcome = self.controllers.drive(cmd.poses)
                elif isinstance(cmd, ArmCommand):
                    feedback(self._fb(plan, i, "arm", result))
                    outcome = self.controllers.move_arm(cmd.points)
                else:
                    assert isinstance(cmd, GripperCommand)
                    feedback(self._fb(plan, i, "gripper", result))
                    outcome = self.controllers.gripper(cmd.close)
                if outcome.ok:
                    continue
                code = _CONTROLLER_ERRORS.get(outcome.status)
                # Counted from 1 of the plan's steps, as the feedback is printed.
                why = (
                    f"step {i + 1}/{len(plan.steps)} ({step.action}): "
                    f"{outcome.message or outcome.status}"
                )
                if code is not None:
                    result.code, result.message = code, why
                return why
            feedback(self._fb(plan, i, "checking", result))
            scene = self.perception.after(self.clock(), self.scene_timeout_s)
            if scene is None:
                result.code = ExecError.NO_SCENE
                result.message = f"step {i + 1}/{len(plan.steps)}: no scene observed after it"
                return result.message
            found = compare(plan, i + 1, scene, self.held_of, self.tolerance, chain)
            stop = invalidating(found)
            result.tolerated += [str(d) for d in found if not d.invalidates]
            result.steps_executed += 1
            if stop:
                return f"after step {i} ({step.action}): " + "; ".join(map(str, stop))
        return None

    def _fb(self, plan: ExecutablePlan, i: int, phase: str, result: ExecutionResult) -> Feedback:
        return Feedback(
            plan.plan_id, i, len(plan.steps), plan.steps[i].action, phase, result.replans
        )


def _end(result: ExecutionResult, code: ExecError, message: str) -> ExecutionResult:
    result.code, result.message = code, message
    return result


__all__ = ["Disagreement", "ExecError", "ExecutionResult", "Executive", "Feedback", "Outcome"]
