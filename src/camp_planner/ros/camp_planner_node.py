"""camp_planner: scenes in; the context, the CAMP, the plan and trajectories out.

Subscribes to ``/scene``; serves ``/select_context``; for every new scene with a goal it
selects a context, builds the CAMP (which variables and objects are dropped), sends a
``PlanTask`` goal to the TAMP server and publishes ``/context``, ``/plan``,
``/plan/base_path`` and ``/plan/arm_trajectory``, and ``/camp_planner/markers`` for RViz (the
allowed rooms, the dropped objects greyed, the base path). Every failure is published on
``/camp_planner/status`` with its named error code; the node keeps serving. A scene that
arrives while a plan is being computed waits (only the newest one is kept). ``/scene`` is
heard whatever QoS perception publishes with (``ros/common.py``), and a scene within the
``replan_tolerance_*`` parameters of the one being planned, or last planned with success,
is that scene again: a perception stream repeating an unchanged world is planned once.

Liveness: the TAMP server sends feedback at least once a second while it plans. When none
comes for ``server_lost_s``, when the server leaves the ROS graph, or when a goal is not even
accepted within 2 s, the server is taken for lost (a killed process announces nothing, and
DDS notices a vanished participant only after its 20 s lease): the node says so
on the status topic (``ERROR_SERVER_LOST``), waits for a server again and re-sends the scene
(up to ``resend_attempts`` times), unless a newer scene has arrived meanwhile. A server busy
with another client's goal is asked again every second until the goal's time is up.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import rclpy
from nav_msgs.msg import Path as PathMsg
from rcl_interfaces.msg import SetParametersResult
from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from camp_msgs.action import PlanTask
from camp_msgs.msg import Context as ContextMsg
from camp_msgs.msg import Plan, SceneObservation, Status
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Scene, SceneTolerance, scene_change
from camp_planner.ros.bringup import spin_nodes, start_node
from camp_planner.ros.common import (
    ARM_TRAJECTORY_TOPIC,
    BASE_PATH_TOPIC,
    CONTEXT_TOPIC,
    EVENTS,
    LATCHED,
    MARKERS_TOPIC,
    PLAN_ACTION,
    PLAN_TOPIC,
    SCENE_TOPIC,
    SELECT_SERVICE,
    STATUS_TOPIC,
    declare_service_params,
    subscribe_scenes,
)
from camp_planner.ros.convert import context_to_msg, scene_from_msg, scene_markers
from camp_planner.ros.selection_node import SelectionNode
from camp_planner.service.limits import MAX_LAMBDA, MAX_TIMEOUT_S
from camp_planner.service.planning import CampService


class CampPlannerNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("camp_planner", **kwargs)
        service_kwargs = declare_service_params(self)
        self.declare_parameter("lambda_cost", 0.0)  # 0: the domain configuration's λ
        self.declare_parameter("timeout_s", 60.0)
        self.declare_parameter("allow_fallback", True)
        self.declare_parameter("plan_on_scene", True)
        self.declare_parameter("server_wait_s", 60.0)
        self.declare_parameter("server_lost_s", 5.0)  # ≤ 0: wait for the result however long
        self.declare_parameter("resend_attempts", 3)
        # A scene within these of the one being planned or last planned is that scene again.
        self.declare_parameter("replan_tolerance_m", 0.05)
        self.declare_parameter("replan_tolerance_rad", 0.1)
        self.declare_parameter("replan_on_robot_motion", True)
        for param in self.get_parameters(list(PARAMETER_RANGES)):
            problem = _out_of_range(param.name, param.value)
            if problem:
                Node.destroy_node(self)
                raise CampError(f"parameter {problem}")
        self.add_on_set_parameters_callback(self._check_parameters)
        self.service = CampService(**service_kwargs)
        if not self.service.has_selector:
            self.get_logger().warning(
                f"no context selector ({self.service.bundle_error}); planning under the "
                "universal context"
            )
        # /select_context is answered by a lean companion node on its own executor thread
        # (see selection_node.py: about 1.5 ms less per call than serving it from here).
        self.selection = SelectionNode(
            self.service, f"{self.get_name()}_selection", None, self.get_namespace()
        )
        self.selection.start()
        self.plans = ActionClient(
            self, PlanTask, PLAN_ACTION, callback_group=ReentrantCallbackGroup()
        )
        self.pub_context = self.create_publisher(ContextMsg, CONTEXT_TOPIC, LATCHED)
        self.pub_plan = self.create_publisher(Plan, PLAN_TOPIC, LATCHED)
        self.pub_path = self.create_publisher(PathMsg, BASE_PATH_TOPIC, LATCHED)
        self.pub_arm = self.create_publisher(JointTrajectory, ARM_TRAJECTORY_TOPIC, LATCHED)
        self.pub_status = self.create_publisher(Status, STATUS_TOPIC, EVENTS)
        self.pub_markers = self.create_publisher(MarkerArray, MARKERS_TOPIC, LATCHED)
        # The newest scene waiting to be planned, as received and as read.
        self._pending: tuple[SceneObservation, Scene] | None = None
        self._wake = threading.Condition()
        self._stop = False
        # The scene being planned, or the last one planned with success: a scene within the
        # tolerances of it is that scene again (a 10 Hz stream, the latched copy), not
        # planned again.
        self._planned_scene: Scene | None = None
        subscribe_scenes(self, SceneObservation, self._on_scene, MutuallyExclusiveCallbackGroup())
        self._thread = threading.Thread(target=self._planning_loop, daemon=True)
        self._thread.start()
        self.get_logger().info(f"camp_planner ready: /{SCENE_TOPIC} in, /{SELECT_SERVICE} served")

    # --- parameters ---------------------------------------------------------------------------
    def _check_parameters(self, params: list[Any]) -> SetParametersResult:
        for param in params:
            problem = _out_of_range(param.name, param.value)
            if problem:
                return SetParametersResult(successful=False, reason=problem)
        return SetParametersResult(successful=True)

    # --- status -------------------------------------------------------------------------------
    def status(
        self, stage: str, message: str, code: int = 0, level: int = Status.LEVEL_INFO
    ) -> None:
        msg = Status(level=level, stage=stage, error_code=int(code), message=message)
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_status.publish(msg)
        # One call site per severity: rclpy refuses a call site that logs at two severities
        # ("Logger severity cannot be changed between calls").
        text = f"[{stage}] {message}"
        if level == Status.LEVEL_ERROR:
            self.get_logger().error(text)
        elif level == Status.LEVEL_WARN:
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)

    # --- scenes → plans ---------------------------------------------------------------------
    def _on_scene(self, msg: SceneObservation) -> None:
        # An exception here would reach the executor and end the process.
        try:
            if not bool(self.get_parameter("plan_on_scene").value):
                return
            scene = scene_from_msg(msg)
            try:
                self.service.task_of(scene)
            except ServiceError:
                refused = True  # always passed on, to be refused with its named error
            else:
                refused = False
            tolerance = SceneTolerance(
                float(self.get_parameter("replan_tolerance_m").value),
                float(self.get_parameter("replan_tolerance_rad").value),
                bool(self.get_parameter("replan_on_robot_motion").value),
            )
            with self._wake:
                replaced = self._pending is not None
                reference = self._pending[1] if self._pending else self._planned_scene
                why = "refused" if refused else scene_change(reference, scene, tolerance)
                if not why:
                    return
                self._pending = (msg, scene)
                self._wake.notify()
            self.get_logger().debug(f"[scene] a new scene: {why}")
            if replaced:
                self.status("scene", "a newer scene replaced one still waiting", 0, 1)
        except Exception as exc:
            self.get_logger().error(f"[scene] {exc.__class__.__name__}: {exc}")

    def _newer_scene(self) -> bool:
        with self._wake:
            return self._pending is not None

    def _planning_loop(self) -> None:
        while True:
            with self._wake:
                while self._pending is None and not self._stop:
                    self._wake.wait(0.5)
                if self._stop or self._pending is None:
                    return
                (msg, scene), self._pending = self._pending, None
                self._planned_scene = scene
            planned = False
            try:
                planned = self.plan_scene(msg)
            except Exception as exc:  # keep serving whatever went wrong
                if not self.context.ok():
                    return
                try:
                    self.status("plan", f"{exc.__class__.__name__}: {exc}", ErrorCode.INTERNAL, 2)
                except Exception as again:  # the loop must outlive its own error report
                    self.get_logger().error(f"[plan] {exc!r}; then {again!r}")
            if not planned:
                # A scene whose plan failed is planned again when it comes again.
                with self._wake:
                    if self._planned_scene is scene:
                        self._planned_scene = None

    def plan_scene(self, msg: SceneObservation) -> bool:
        """Select a context for ``msg``, build its CAMP, plan it on the TAMP server and
        publish the results; whether a plan was published."""
        try:
            scene = scene_from_msg(msg)
            task, _ = self.service.task_of(scene)  # refuse a malformed scene before anything
        except ServiceError as exc:
            self.status("scene", exc.message, exc.code, Status.LEVEL_ERROR)
            return False
        context_id = ""
        if self.service.has_selector:
            try:
                sel = self.service.select(scene)
            except ServiceError as exc:
                self.status("selection", exc.message, exc.code, Status.LEVEL_ERROR)
                return False
            context_id = sel.context.id
            self.pub_context.publish(context_to_msg(sel.context))
            self.publish_markers(msg, task, sel.context, sel.dropped_objects)
            self.status(
                "selection",
                f"context {sel.context.name} (p={sel.probability:.2f}) in "
                f"{sel.latency_s * 1000:.1f} ms; CAMP drops {len(sel.dropped)} variables "
                f"({len(sel.dropped_objects)} objects)"
                + (f"; {sel.selection.reason}" if sel.selection is not None else ""),
            )
        wait = float(self.get_parameter("server_wait_s").value)
        if not self.plans.wait_for_server(timeout_sec=wait):
            said = f"no PlanTask server on /{PLAN_ACTION}"
            self.status("planning", said, ErrorCode.SERVER_LOST, Status.LEVEL_ERROR)
            return False
        goal = PlanTask.Goal()
        goal.scene = msg
        goal.context_id = context_id
        goal.allow_fallback = bool(self.get_parameter("allow_fallback").value)
        goal.lambda_cost = float(self.get_parameter("lambda_cost").value)
        goal.timeout = float(self.get_parameter("timeout_s").value)
        self.status("planning", "sent the CAMP to the TAMP server")
        result = self._call(goal)
        if result is None:
            return False
        plan = result.plan
        if result.success:
            self.pub_plan.publish(plan)
            self.pub_path.publish(plan.base_path)
            self.pub_arm.publish(plan.arm_trajectory)
            if not self.service.has_selector:
                self.pub_context.publish(plan.context)
            try:
                planned = self.service.resolve_context(plan.context.id)
            except ServiceError as exc:
                self.status("markers", exc.message, exc.code, Status.LEVEL_WARN)
            else:
                self.publish_markers(msg, task, planned, list(plan.dropped_objects), plan.base_path)
            times = ", ".join(f"{s.stage} {s.seconds:.2f} s" for s in plan.stage_times)
            self.status(
                "plan",
                f"{len(plan.steps)} steps under {plan.context.description} "
                f"({plan.fallbacks} fallbacks); {times}",
            )
            return True
        self.status("plan", result.error_message, result.error_code, Status.LEVEL_ERROR)
        return False

    def publish_markers(
        self,
        msg: SceneObservation,
        task: Any,
        context: Context,
        dropped: list[str],
        base_path: PathMsg | None = None,
    ) -> None:
        """Show the context, the CAMP and (once planned) the base path in RViz. ``task`` is
        the scene's task, as the service read it."""
        rooms = self.service.allowed_regions(task, context)
        # RViz's text font has no "∈".
        label = f"{context.name.replace('∈', 'in')} ({len(dropped)} objects dropped)"
        self.pub_markers.publish(
            scene_markers(
                msg,
                allowed_rooms=rooms,
                dropped=dropped,
                base_path=base_path,
                label=label,
                stamp=self.get_clock().now().to_msg(),
            )
        )

    def _call(self, goal: PlanTask.Goal) -> Any:
        """The goal's result, or None once a status has said why there is none."""
        limit = (4 if goal.allow_fallback else 1) * goal.timeout + 30.0
        deadline = time.monotonic() + limit
        resends = 0
        said_busy = False
        while True:
            outcome, payload = self._attempt(goal, deadline)
            if outcome == "result" and payload.error_code == PlanTask.Result.ERROR_SERVER_LOST:
                outcome, payload = "lost", payload.error_message
            if outcome == "result":
                if payload.error_code != PlanTask.Result.ERROR_BUSY:
                    return payload
                if time.monotonic() + 1.0 > deadline or self._newer_scene():
                    return payload
                if not said_busy:
                    said_busy = True
                    self.status(
                        "planning",
                        "the TAMP server is busy with another goal; asking again every second",
                        ErrorCode.BUSY,
                        Status.LEVEL_WARN,
                    )
                time.sleep(1.0)
                continue
            if outcome == "rejected":
                self.status("planning", "the TAMP server rejected the goal", ErrorCode.INTERNAL, 2)
            elif outcome == "timeout":
                self.status(
                    "planning",
                    f"the TAMP server did not answer in {limit:.0f} s",
                    ErrorCode.TIMEOUT,
                    2,
                )
            elif self._newer_scene():
                self.status(
                    "planning",
                    f"the TAMP server stopped answering ({payload}); planning the newer scene",
                    ErrorCode.SERVER_LOST,
                    Status.LEVEL_WARN,
                )
            elif resends >= int(self.get_parameter("resend_attempts").value):
                self.status(
                    "planning",
                    f"the TAMP server stopped answering ({payload}); gave up after "
                    f"{resends} re-sends",
                    ErrorCode.SERVER_LOST,
                    Status.LEVEL_ERROR,
                )
            else:
                resends += 1
                wait = float(self.get_parameter("server_wait_s").value)
                self.status(
                    "planning",
                    f"the TAMP server stopped answering ({payload}); re-sending the scene when "
                    f"a server is there (waiting up to {wait:.0f} s)",
                    ErrorCode.SERVER_LOST,
                    Status.LEVEL_WARN,
                )
                if self.plans.wait_for_server(timeout_sec=wait):
                    deadline = time.monotonic() + limit
                    continue
                self.status(
                    "planning",
                    f"no PlanTask server came back on /{PLAN_ACTION} within {wait:.0f} s",
                    ErrorCode.SERVER_LOST,
                    Status.LEVEL_ERROR,
                )
            return None

    def _attempt(self, goal: PlanTask.Goal, deadline: float) -> tuple[str, Any]:
        """Send ``goal`` once: ("result", result), ("rejected", None), ("timeout", None), or
        ("lost", why) when the server has gone silent for ``server_lost_s``, left the ROS
        graph, or not answered the goal within :data:`GOAL_ANSWER_S`."""
        done = threading.Event()
        box: dict[str, Any] = {}
        heard = [time.monotonic()]

        def on_feedback(_: Any) -> None:
            heard[0] = time.monotonic()

        def on_result(future: Any) -> None:
            box["result"] = future.result().result
            done.set()

        def on_goal(future: Any) -> None:
            heard[0] = time.monotonic()
            handle = future.result()
            box["handle"] = handle
            if not handle.accepted:
                box["rejected"] = True
                done.set()
                return
            handle.get_result_async().add_done_callback(on_result)

        self.plans.send_goal_async(goal, feedback_callback=on_feedback).add_done_callback(on_goal)
        lost_s = float(self.get_parameter("server_lost_s").value)
        present = time.monotonic()
        while not done.wait(0.25):
            now = time.monotonic()
            silent = now - heard[0]
            if self.plans.server_is_ready():
                present = now
            # A server that shut down cleanly leaves the graph at once: no need to wait for
            # its silence (a second's grace for discovery's own jitter).
            gone = lost_s > 0 and now - present > min(1.0, lost_s)
            # A goal is answered in milliseconds; one sent to a server that was still being
            # discovered (or to a killed one DDS still lists) is not answered at all.
            unanswered = "handle" not in box and silent > min(GOAL_ANSWER_S, lost_s)
            if now > deadline or (lost_s > 0 and (silent > lost_s or unanswered)) or gone:
                handle = box.get("handle")
                if handle is not None:
                    # A server that is alive but stuck must not keep planning a goal no one
                    # waits for (it would answer the re-sent goal with ERROR_BUSY).
                    handle.cancel_goal_async()
                if now > deadline:
                    return "timeout", None
                if gone:
                    return "lost", "it left the ROS graph"
                what = "no answer to the goal" if handle is None else "no feedback"
                return "lost", f"{what} for {silent:.1f} s"
        if "rejected" in box:
            return "rejected", None
        return "result", box["result"]

    def destroy_node(self) -> None:
        with self._wake:
            self._stop = True
            self._wake.notify()
        self._thread.join(2.0)
        self.selection.destroy_node()
        super().destroy_node()


GOAL_ANSWER_S = 2.0  # seconds a goal may wait to be accepted or rejected before it is re-sent

# Parameter → (lowest, highest, what the bounds mean); checked at start and on every set.
PARAMETER_RANGES: dict[str, tuple[float, float, str]] = {
    "lambda_cost": (0.0, MAX_LAMBDA, "0: the domain configuration's λ"),
    "timeout_s": (0.001, MAX_TIMEOUT_S, "seconds per planning call"),
    "server_wait_s": (0.0, MAX_TIMEOUT_S, "seconds"),
    "server_lost_s": (0.0, MAX_TIMEOUT_S, "seconds; 0: never take the server for lost"),
    "resend_attempts": (0, 100, "re-sends of a scene after the server is lost"),
    "replan_tolerance_m": (0.0, 10.0, "metres an object or the goal may move unplanned"),
    "replan_tolerance_rad": (0.0, math.pi, "radians an object may turn unplanned"),
}


def _out_of_range(name: str, value: Any) -> str:
    """Why ``value`` is not allowed for the parameter ``name`` ("" when it is)."""
    if name not in PARAMETER_RANGES:
        return ""
    low, high, meaning = PARAMETER_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name} must be a number ({meaning}), got {value!r}"
    if not (math.isfinite(value) and low <= value <= high):
        return (
            f"{name} = {value!r} is out of range: give a value in [{low:g}, {high:g}] ({meaning})"
        )
    return ""


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    spin_nodes([start_node(CampPlannerNode)], kind="single")


if __name__ == "__main__":
    main()
