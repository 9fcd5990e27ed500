"""camp_planner: scenes in; the context, the CAMP, the plan and trajectories out.

A managed (lifecycle) node (``ros/managed.py``): *configure* loads the selector bundle and the
domain configuration, *activate* starts serving, *deactivate* stops, *cleanup* releases them.
While active it subscribes to ``camp/scene``, serves ``select_context``, and for every new
scene with a goal selects a context, builds the CAMP (which variables and objects are
dropped), sends a ``PlanTask`` goal to the TAMP server and publishes ``camp/context``,
``camp/plan``, ``camp/plan/base_path`` and ``camp/plan/arm_trajectory``, and ``camp/markers``
for RViz (the allowed rooms, the dropped objects greyed, the base path). Every failure is
published on ``camp/status`` with its named error code; the node keeps serving. A scene that
arrives while a plan is being computed waits (only the newest one is kept). ``camp/scene`` is
heard whatever QoS perception publishes with (``ros/common.py``), and a scene within the
``replan_tolerance_*`` parameters of the one being planned, or last planned with success,
is that scene again: a perception stream repeating an unchanged world is planned once.

``select_context`` is served by this node, on a callback group of its own. Its request queue
keeps every request (none is overwritten by a burst), and a request whose ``stamp`` is older
than ``select_deadline_s`` when its turn comes is refused at once with ``ERROR_BUSY``: a
burst of any size is answered or refused in about ``select_deadline_s`` plus a fraction of a
millisecond per refused request.

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
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from rclpy.node import Node
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from camp_msgs.action import PlanTask
from camp_msgs.msg import Context as ContextMsg
from camp_msgs.msg import Plan, SceneObservation, Status
from camp_msgs.srv import SelectContext
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
    SELECT_QOS,
    SELECT_SERVICE,
    STATUS_TOPIC,
    ActionClient,
    declare_service_params,
    service_params,
    subscribe_scenes,
)
from camp_planner.ros.convert import (
    context_to_msg,
    scene_from_msg,
    scene_markers,
    selection_to_response,
)
from camp_planner.ros.managed import ManagedNode, Ranges, declare, out_of_range
from camp_planner.service.limits import MAX_LAMBDA, MAX_TIMEOUT_S
from camp_planner.service.planning import CampService


class CampPlannerNode(ManagedNode):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("camp_planner", **kwargs)
        try:
            declare_service_params(self)
            for name, (default, what) in PARAMETERS.items():
                declare(self, name, default, what, ranges=PARAMETER_RANGES)
        except CampError:
            Node.destroy_node(self)
            raise
        self.add_on_set_parameters_callback(self._check_parameters)
        self.service: CampService | None = None
        self.plans = ActionClient(
            self, PlanTask, PLAN_ACTION, callback_group=ReentrantCallbackGroup()
        )
        self.pub_context = self.create_lifecycle_publisher(ContextMsg, CONTEXT_TOPIC, LATCHED)
        self.pub_plan = self.create_lifecycle_publisher(Plan, PLAN_TOPIC, LATCHED)
        self.pub_path = self.create_lifecycle_publisher(PathMsg, BASE_PATH_TOPIC, LATCHED)
        self.pub_arm = self.create_lifecycle_publisher(
            JointTrajectory, ARM_TRAJECTORY_TOPIC, LATCHED
        )
        self.pub_status = self.create_lifecycle_publisher(Status, STATUS_TOPIC, EVENTS)
        self.pub_markers = self.create_lifecycle_publisher(MarkerArray, MARKERS_TOPIC, LATCHED)
        # The newest scene waiting to be planned, as received and as read.
        self._pending: tuple[SceneObservation, Scene] | None = None
        self._wake = threading.Condition()
        self._stop = False
        # The scene being planned, or the last one planned with success: a scene within the
        # tolerances of it is that scene again (a 10 Hz stream, the latched copy), not
        # planned again.
        self._planned_scene: Scene | None = None
        self._scene_group = MutuallyExclusiveCallbackGroup()
        self._scene_subs: list[Any] = []
        self._select_group = MutuallyExclusiveCallbackGroup()
        self._select_server: Any = None
        self._thread = threading.Thread(target=self._planning_loop, daemon=True)
        self._thread.start()

    # --- lifecycle ----------------------------------------------------------------------------
    def load(self) -> None:
        kwargs = service_params(self)
        service = CampService(**kwargs)
        self.service = service
        self.facts.update(
            domain=str(kwargs["domain"]),
            world=str(self.get_parameter("world").value) or "default",
            bundle=str(kwargs["bundle_path"] or "none"),
        )
        if kwargs["bundle_path"] is not None and not service.has_selector:
            # A bundle the node was given (or the world ships) and cannot load is a
            # configuration error, not a reason to plan quietly without a selector.
            raise CampError(f"selector bundle: {service.bundle_error}")
        if not service.has_selector:
            self.get_logger().warning(
                f"no context selector ({service.bundle_error}); planning under the "
                "universal context"
            )

    def release(self) -> None:
        with self._wake:
            self._pending = None
            self._planned_scene = None
        self.service = None

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        result = super().on_activate(state)
        # Offered only while active, so a client's wait_for_service means "ready". Every
        # request is kept until its turn; select_deadline_s bounds how long a burst takes.
        # Subscribed on activation, so a latched scene published while the node was
        # inactive is delivered now.
        self._scene_subs = subscribe_scenes(
            self, SceneObservation, self._on_scene, self._scene_group
        )
        self._select_server = self.create_service(
            SelectContext,
            SELECT_SERVICE,
            self._select,
            qos_profile=SELECT_QOS,
            callback_group=self._select_group,
        )
        self.get_logger().info(f"serving: {SCENE_TOPIC} in, {SELECT_SERVICE} served")
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._withdraw()
        with self._wake:
            self._pending = None
        return super().on_deactivate(state)

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._withdraw()
        return super().on_shutdown(state)

    def _withdraw(self) -> None:
        server, self._select_server = self._select_server, None
        if server is not None:
            self.destroy_service(server)
        subs, self._scene_subs = self._scene_subs, []
        for sub in subs:
            self.destroy_subscription(sub)

    def _service(self) -> CampService:
        """The loaded service; an :class:`ServiceError` (``INACTIVE``) when the node does
        not serve."""
        service = self.service
        if service is None or not self.active:
            raise ServiceError(
                ErrorCode.INACTIVE,
                f"camp_planner is {self.state_label}: configure and activate it "
                "(lifecycle_msgs/srv/ChangeState)",
            )
        return service

    # --- select_context -----------------------------------------------------------------------
    def _select(self, request: Any, response: Any) -> Any:
        try:
            service = self._service()
            stamp = request.stamp.sec + request.stamp.nanosec * 1e-9
            if stamp > 0:
                waited = self.get_clock().now().nanoseconds * 1e-9 - stamp
                deadline = float(self.get_parameter("select_deadline_s").value)
                if waited > deadline:
                    raise ServiceError(
                        ErrorCode.BUSY,
                        f"the request waited {waited:.2f} s for its turn, over "
                        f"select_deadline_s = {deadline:g} s; ask again",
                    )
            scene = None
            if request.scene.objects or not len(request.task_features):
                scene = scene_from_msg(request.scene)
            features = request.task_features if len(request.task_features) else None
            return selection_to_response(service.select(scene, features), response)
        except ServiceError as exc:
            response.success, response.error_code = False, int(exc.code)
            response.error_message = exc.message
        except CampError as exc:
            response.success, response.error_code = False, int(ErrorCode.INTERNAL)
            response.error_message = str(exc)
        except Exception as exc:  # a bug must not take the service down
            response.success, response.error_code = False, int(ErrorCode.INTERNAL)
            response.error_message = f"{exc.__class__.__name__}: {exc}"
        if not response.success:
            self.errors[f"select_{ErrorCode(response.error_code).name.lower()}"] += 1
        return response

    # --- parameters ---------------------------------------------------------------------------
    def _check_parameters(self, params: list[Any]) -> SetParametersResult:
        for param in params:
            problem = out_of_range(PARAMETER_RANGES, param.name, param.value)
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
            name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
            self.errors[name.lower()] += 1
            self.facts["last_outcome"] = f"{name} ({stage}): {message}"
            self.get_logger().error(text)
        elif level == Status.LEVEL_WARN:
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)

    # --- scenes → plans ---------------------------------------------------------------------
    def _on_scene(self, msg: SceneObservation) -> None:
        # An exception here would reach the executor and end the process.
        try:
            service = self.service
            if not self.active or service is None:
                return
            if not bool(self.get_parameter("plan_on_scene").value):
                return
            scene = scene_from_msg(msg)
            try:
                service.task_of(scene)
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
            service = self._service()
            scene = scene_from_msg(msg)
            task, _ = service.task_of(scene)  # refuse a malformed scene before anything
        except ServiceError as exc:
            self.status("scene", exc.message, exc.code, Status.LEVEL_ERROR)
            return False
        context_id = ""
        if service.has_selector:
            try:
                sel = service.select(scene)
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
            if not service.has_selector:
                self.pub_context.publish(plan.context)
            try:
                planned = service.resolve_context(plan.context.id)
            except ServiceError as exc:
                self.status("markers", exc.message, exc.code, Status.LEVEL_WARN)
            else:
                self.publish_markers(msg, task, planned, list(plan.dropped_objects), plan.base_path)
            times = ", ".join(f"{s.stage} {s.seconds:.2f} s" for s in plan.stage_times)
            self.facts["last_outcome"] = f"OK: {len(plan.steps)} steps under {plan.context.id}"
            self.facts["stage_times"] = times
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
        rooms = self._service().allowed_regions(task, context)
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
        super().destroy_node()


GOAL_ANSWER_S = 2.0  # seconds a goal may wait to be accepted or rejected before it is re-sent

# Parameter → (default, what it is); ranges below. All may be set while the node runs.
PARAMETERS: dict[str, tuple[Any, str]] = {
    "lambda_cost": (0.0, "λ, the price of a second of planning"),
    "timeout_s": (60.0, "seconds per planning call"),
    "allow_fallback": (True, "try the next contexts when the first fails"),
    "plan_on_scene": (True, "plan every new scene on camp/scene"),
    "server_wait_s": (60.0, "seconds to wait for a PlanTask server"),
    "server_lost_s": (5.0, "seconds without feedback before the server is taken for lost"),
    "resend_attempts": (3, "re-sends of a scene after the server is lost"),
    "replan_tolerance_m": (0.05, "metres an object or the goal may move and be the same scene"),
    "replan_tolerance_rad": (0.1, "radians an object may turn and be the same scene"),
    "replan_on_robot_motion": (True, "whether the robot's own motion makes a new scene"),
    "select_deadline_s": (2.0, "seconds a select_context request may wait for its turn"),
}

# Parameter → (lowest, highest, what the bounds mean); checked at start and on every set.
PARAMETER_RANGES: Ranges = {
    "lambda_cost": (0.0, MAX_LAMBDA, "0: the domain configuration's λ"),
    "timeout_s": (0.001, MAX_TIMEOUT_S, "seconds per planning call"),
    "server_wait_s": (0.0, MAX_TIMEOUT_S, "seconds"),
    "server_lost_s": (0.0, MAX_TIMEOUT_S, "seconds; 0: never take the server for lost"),
    "resend_attempts": (0, 100, "re-sends of a scene after the server is lost"),
    "replan_tolerance_m": (0.0, 10.0, "metres an object or the goal may move unplanned"),
    "replan_tolerance_rad": (0.0, math.pi, "radians an object may turn unplanned"),
    "select_deadline_s": (0.01, MAX_TIMEOUT_S, "seconds"),
}


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    spin_nodes([start_node(CampPlannerNode)], kind="single")


if __name__ == "__main__":
    main()
