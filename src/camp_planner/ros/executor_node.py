"""camp_executor: a plan carried out through the controller actions a robot already runs,
watched, and replanned from where the robot is when the world disagrees.

Serves ``execute_plan`` (``camp_msgs/action/ExecutePlan``) and fills the ROS-free
executive's ports (:mod:`camp_planner.execution.executive`):

- **base**: Nav2's ``FollowPath`` (``base_interface: follow_path``) or
  ``NavigateThroughPoses`` (``navigate_through_poses``) on ``base_action``;
- **arm**: ``FollowJointTrajectory`` on ``arm_action``, as ros2_control's
  joint_trajectory_controller serves it, each motion timed from ``arm_max_velocity`` and
  ``arm_max_acceleration`` (scaled by ``arm_limit_scale``) and checked between its samples,
  starting from the arm's position on ``joint_states``;
- **gripper**: ``GripperCommand`` on ``gripper_action`` (``gripper_open_m`` / 0 m);
- **perception**: ``camp/scene``, heard whatever QoS it is published with;
- **replanning**: ``plan_task`` (the TAMP server, which selects a context afresh).

A plan runs at most once (its id is remembered), and a plan made for a scene the world has
left is refused (``ERROR_STALE_PLAN``): nothing is replayed, by a late goal or after a
restart. A cancel reaches the controller goal in progress at once. Every execution ends with a
report on ``camp/execution_report``. For RViz, each plan executed (replans included) is
published on ``camp/plan``, the robot's path so far on ``camp/execution/path``, and the world as
the robot sees it with the plan's base path and the step in progress on
``camp/execution/markers``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rclpy
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory, GripperCommand
from geometry_msgs.msg import PoseStamped
from nav2_msgs.action import FollowPath, NavigateThroughPoses
from nav_msgs.msg import Path as PathMsg
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.lifecycle import LifecycleState, TransitionCallbackReturn
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint
from visualization_msgs.msg import MarkerArray

from camp_msgs.action import ExecutePlan, PlanTask
from camp_msgs.msg import ExecutionReport, Plan, SceneObservation
from camp_planner.core.errors import CampError
from camp_planner.domains import get_plugin
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose2, Scene
from camp_planner.execution.commands import ExecutablePlan, Joints
from camp_planner.execution.executive import (
    ExecError,
    ExecutionResult,
    Executive,
    Feedback,
    Outcome,
)
from camp_planner.execution.monitor import Tolerance
from camp_planner.execution.render import ExecutionPicture, render_execution
from camp_planner.execution.timing import (
    PANDA_MAX_ACCELERATION,
    PANDA_MAX_VELOCITY,
    Limits,
    check_limits,
    time_parametrise,
)
from camp_planner.ros.bringup import spin_nodes, start_node
from camp_planner.ros.common import (
    EXECUTE_ACTION,
    EXECUTION_MARKERS_TOPIC,
    EXECUTION_PATH_TOPIC,
    EXECUTION_TOPIC,
    LATCHED,
    PLAN_ACTION,
    PLAN_TOPIC,
    ActionClient,
    subscribe_scenes,
)
from camp_planner.ros.convert import (
    duration,
    executable_plan,
    pose_of,
    scene_from_msg,
    scene_markers,
    scene_to_msg,
)
from camp_planner.ros.managed import ManagedNode, Ranges, declare

BASE_INTERFACES = ("follow_path", "navigate_through_poses")

PARAMETERS: dict[str, tuple[Any, str]] = {
    "domain": ("namo", "the domain plug-in whose scenes are read (which object is held)"),
    "base_interface": ("follow_path", "follow_path (Nav2 FollowPath) or navigate_through_poses"),
    "base_action": ("follow_path", "the base's path-following action"),
    "arm_action": ("arm_controller/follow_joint_trajectory", "the arm's FollowJointTrajectory"),
    "gripper_action": ("gripper_controller/gripper_cmd", "the gripper's GripperCommand"),
    "controller_id": ("", "FollowPath controller_id (empty: the server's default)"),
    "arm_max_velocity": (list(PANDA_MAX_VELOCITY), "rad/s per arm joint (the Panda's)"),
    "arm_max_acceleration": (list(PANDA_MAX_ACCELERATION), "rad/s² per arm joint (the Panda's)"),
    "arm_limit_scale": (0.5, "the fraction of the joint limits an arm motion may use"),
    "arm_sample_s": (0.1, "seconds between the points of a timed arm trajectory"),
    "gripper_open_m": (0.08, "the gripper opening commanded to open (m)"),
    "gripper_max_effort": (20.0, "the force a closing gripper may use (N)"),
    "server_wait_s": (5.0, "seconds to wait for a controller's action server"),
    "scene_timeout_s": (5.0, "seconds to wait for a scene after a step"),
    "max_replans": (3, "replans per execution when the goal does not say"),
    "replan_timeout_s": (60.0, "seconds the planner may take for a replan"),
    "lambda_cost": (0.0, "λ for replans (0: the planner's default)"),
    "tolerance_robot_m": (0.10, "metres the base may stop from where the plan has it"),
    "tolerance_robot_rad": (0.15, "radians the base may be turned from the plan's heading"),
    "tolerance_object_m": (0.05, "metres an object may be from where the plan expects it"),
    "robot_radius_m": (0.45, "the base's footprint radius: an object this near its path blocks it"),
    "render_dir": ("", "where a picture of each execution is written (empty: none)"),
}
RANGES: Ranges = {
    "arm_limit_scale": (0.01, 1.0, "fraction of the joint limits"),
    "arm_sample_s": (0.001, 1.0, "seconds"),
    "gripper_open_m": (0.0, 1.0, "metres"),
    "gripper_max_effort": (0.0, 1000.0, "newtons"),
    "server_wait_s": (0.0, 600.0, "seconds"),
    "scene_timeout_s": (0.1, 600.0, "seconds"),
    "max_replans": (0, 100, "replans"),
    "replan_timeout_s": (0.1, 3600.0, "seconds"),
    "lambda_cost": (0.0, 1e6, "0: the planner's default"),
    "tolerance_robot_m": (0.0, 10.0, "metres"),
    "tolerance_robot_rad": (0.0, 3.15, "radians"),
    "tolerance_object_m": (0.0, 10.0, "metres"),
    "robot_radius_m": (0.0, 10.0, "metres"),
}
_POLL_S = 0.01
_DRAW_EVERY_S = 0.5  # scenes stream at the robot's rate; RViz needs the world at most this often


class _Scenes:
    """The executive's perception port: the scenes heard on ``camp/scene``, with when."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.last: tuple[float, Scene] | None = None

    def put(self, scene: Scene) -> None:
        with self.cond:
            self.last = (time.monotonic(), scene)
            self.cond.notify_all()

    def latest(self) -> Scene | None:
        with self.cond:
            return self.last[1] if self.last is not None else None

    def after(self, t: float, timeout_s: float) -> Scene | None:
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while self.last is None or self.last[0] < t:
                left = deadline - time.monotonic()
                if left <= 0.0:
                    return None
                self.cond.wait(left)
            return self.last[1]


class _Controllers:
    """The executive's controller and planner ports, over actions."""

    def __init__(self, node: CampExecutorNode) -> None:
        self.node = node
        self.cancelled: Callable[[], bool] = lambda: False
        group = node.group
        p = node.param
        interface = str(p("base_interface"))
        self.base_type = FollowPath if interface == "follow_path" else NavigateThroughPoses
        self.base = ActionClient(node, self.base_type, str(p("base_action")), callback_group=group)
        self.arm = ActionClient(
            node, FollowJointTrajectory, str(p("arm_action")), callback_group=group
        )
        self.hand = ActionClient(
            node, GripperCommand, str(p("gripper_action")), callback_group=group
        )
        self.planner = ActionClient(node, PlanTask, PLAN_ACTION, callback_group=group)
        self.limits = Limits(
            tuple(float(v) for v in p("arm_max_velocity")),
            tuple(float(v) for v in p("arm_max_acceleration")),
            float(p("arm_limit_scale")),
        )
        self.joint_names: tuple[str, ...] = ()

    def destroy(self) -> None:
        for client in (self.base, self.arm, self.hand, self.planner):
            client.destroy()

    def _wait(self, future: Any, limit_s: float | None = None) -> bool:
        """Wait for ``future`` (False on a cancel or after ``limit_s``)."""
        deadline = None if limit_s is None else time.monotonic() + limit_s
        while not future.done():
            if self.cancelled() or (deadline is not None and time.monotonic() > deadline):
                return False
            time.sleep(_POLL_S)
        return True

    def _run(self, client: Any, goal: Any, what: str) -> tuple[Outcome, Any]:
        """Send ``goal`` and wait for its result, cancelling it on a cancel."""
        wait = float(self.node.param("server_wait_s"))
        if not client.wait_for_server(timeout_sec=wait):
            return Outcome("unavailable", f"no {what} action server on {client._action_name}"), None
        sent = client.send_goal_async(goal)
        if not self._wait(sent, wait + 5.0):
            return Outcome(
                "canceled" if self.cancelled() else "unavailable", f"{what}: no answer"
            ), None
        handle = sent.result()
        if not handle.accepted:
            return Outcome("rejected", f"the {what} controller refused the goal"), None
        done = handle.get_result_async()
        if not self._wait(done):
            handle.cancel_goal_async()
            # The controller stops within its control period; its result says so.
            self._wait_quietly(done, 5.0)
            return Outcome("canceled", f"{what} cancelled"), None
        answer = done.result()
        if answer.status == GoalStatus.STATUS_SUCCEEDED:
            return Outcome("ok"), answer.result
        if answer.status == GoalStatus.STATUS_CANCELED:
            return Outcome("canceled", f"{what} cancelled by its controller"), answer.result
        return Outcome("aborted", f"the {what} stopped"), answer.result

    @staticmethod
    def _wait_quietly(future: Any, limit_s: float) -> None:
        deadline = time.monotonic() + limit_s
        while not future.done() and time.monotonic() < deadline:
            time.sleep(_POLL_S)

    # --- Controllers --------------------------------------------------------------------------
    def drive(self, poses: list[Pose2]) -> Outcome:
        frame = self.node.frame
        stamped = []
        for p in poses:
            ps = PoseStamped()
            ps.header.frame_id = frame
            ps.pose = pose_of(p)
            stamped.append(ps)
        if self.base_type is FollowPath:
            goal = FollowPath.Goal()
            goal.path.header.frame_id = frame
            goal.path.poses = stamped
            goal.controller_id = str(self.node.param("controller_id"))
        else:
            goal = NavigateThroughPoses.Goal()
            goal.poses = stamped
        outcome, result = self._run(self.base, goal, "base")
        if outcome.status == "aborted" and result is not None and result.error_msg:
            return Outcome("aborted", f"base: {result.error_msg}")
        return outcome

    def move_arm(self, points: list[Joints]) -> Outcome:
        start = self.node.joints_now(len(points[0]) if points else 0)
        if start is None:
            return Outcome("aborted", "no joint_states to start the arm motion from")
        try:
            timed = time_parametrise(
                [start, *points], self.limits, float(self.node.param("arm_sample_s"))
            )
        except ValueError as exc:
            return Outcome("aborted", f"arm motion: {exc}")
        bad = check_limits(timed, self.limits)
        if bad:
            return Outcome("aborted", f"arm motion over its limits: {bad}")
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(self.joint_names)
        for tp in timed[1:]:
            point = JointTrajectoryPoint(
                positions=list(tp.positions), velocities=list(tp.velocities)
            )
            point.time_from_start = duration(tp.t)
            goal.trajectory.points.append(point)
        if not goal.trajectory.points:
            return Outcome("ok")  # already there
        outcome, result = self._run(self.arm, goal, "arm")
        if result is not None and outcome.ok and result.error_code != 0:
            return Outcome("aborted", f"arm: {result.error_string or result.error_code}")
        if outcome.status == "aborted" and result is not None and result.error_string:
            return Outcome("aborted", f"arm: {result.error_string}")
        return outcome

    def gripper(self, close: bool) -> Outcome:
        goal = GripperCommand.Goal()
        goal.command.position = 0.0 if close else float(self.node.param("gripper_open_m"))
        goal.command.max_effort = float(self.node.param("gripper_max_effort"))
        outcome, _ = self._run(self.hand, goal, "gripper")
        if outcome.status == "aborted":
            return Outcome(
                "aborted", f"the gripper did not {'close on' if close else 'open from'} an object"
            )
        return outcome

    # --- Replanner ----------------------------------------------------------------------------
    def plan(self, scene: Scene) -> ExecutablePlan:
        goal = PlanTask.Goal()
        goal.scene = scene_to_msg(scene, self.node.get_clock().now().to_msg())
        goal.context_id = ""  # the planner selects afresh for where the robot is now
        goal.allow_fallback = True
        goal.lambda_cost = float(self.node.param("lambda_cost"))
        goal.timeout = float(self.node.param("replan_timeout_s"))
        outcome, result = self._run(self.planner, goal, "planner")
        if result is None:
            raise ServiceError(ErrorCode.SERVER_LOST, outcome.message)
        if not result.success:
            raise ServiceError(ErrorCode(result.error_code), result.error_message)
        self.node.publish_plan(result.plan)
        return executable_plan(result.plan)


class CampExecutorNode(ManagedNode):
    """Executes plans through controller actions; see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("camp_executor", **kwargs)
        for name, (default, what) in PARAMETERS.items():
            declare(self, name, default, what, ranges=RANGES, read_only=True)
        self.declare_parameter("frame_id", "map")
        self.frame = str(self.get_parameter("frame_id").value)
        self.group = ReentrantCallbackGroup()
        self.scenes = _Scenes()
        self.joints: dict[str, float] = {}
        self.joint_lock = threading.Lock()
        self.busy = threading.Lock()
        self.ports: _Controllers | None = None
        self.executive: Executive | None = None
        self.server: ActionServer | None = None
        self.pub_report = self.create_publisher(ExecutionReport, EXECUTION_TOPIC, LATCHED)
        self.pub_plan = self.create_publisher(Plan, PLAN_TOPIC, LATCHED)
        self.pub_path = self.create_publisher(PathMsg, EXECUTION_PATH_TOPIC, LATCHED)
        self.pub_markers = self.create_publisher(MarkerArray, EXECUTION_MARKERS_TOPIC, LATCHED)
        self.travelled = PathMsg()
        # What the progress markers draw: the newest scene, plan and step, under one lock.
        self.draw_lock = threading.Lock()
        self.seen: SceneObservation | None = None
        self.executing: Plan | None = None
        self.progress = ""
        self.drawn_at = 0.0
        self.picture: ExecutionPicture | None = None  # the execution under way, to render
        self.executions = 0
        subscribe_scenes(self, SceneObservation, self._on_scene, self.group)
        self.create_subscription(JointState, "joint_states", self._on_joints, 10)

    def param(self, name: str) -> Any:
        return self.get_parameter(name).value

    # --- lifecycle ----------------------------------------------------------------------------
    def load(self) -> None:
        interface = str(self.param("base_interface"))
        if interface not in BASE_INTERFACES:
            raise CampError(f"base_interface '{interface}': one of {', '.join(BASE_INTERFACES)}")
        plugin = get_plugin(str(self.param("domain")))
        velocity, accel = self.param("arm_max_velocity"), self.param("arm_max_acceleration")
        try:
            Limits(tuple(velocity), tuple(accel), float(self.param("arm_limit_scale")))
        except ValueError as exc:
            raise CampError(f"arm limits: {exc}") from None
        self.ports = _Controllers(self)
        self.executive = Executive(
            self.ports,
            self.scenes,
            self.ports,
            plugin.held_object,
            Tolerance(
                float(self.param("tolerance_robot_m")),
                float(self.param("tolerance_robot_rad")),
                float(self.param("tolerance_object_m")),
                float(self.param("robot_radius_m")),
            ),
            scene_timeout_s=float(self.param("scene_timeout_s")),
        )
        self.facts["domain"] = plugin.domain
        self.facts["base"] = f"{interface} on {self.param('base_action')}"

    def release(self) -> None:
        if self.ports is not None:
            self.ports.destroy()
        self.ports, self.executive = None, None

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.server = ActionServer(
            self,
            ExecutePlan,
            EXECUTE_ACTION,
            self._execute,
            goal_callback=lambda _: GoalResponse.ACCEPT,
            cancel_callback=lambda _: CancelResponse.ACCEPT,
            callback_group=self.group,
        )
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._withdraw()
        return super().on_deactivate(state)

    def _withdraw(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            with contextlib.suppress(ValueError):  # as tamp_server_node's _withdraw says
                server.destroy()

    # --- inputs -------------------------------------------------------------------------------
    def _on_scene(self, msg: SceneObservation) -> None:
        try:
            scene = scene_from_msg(msg)
        except Exception as exc:  # a malformed scene must not end the node
            self.errors["scene"] += 1
            self.get_logger().warning(f"scene refused: {exc}")
            return
        self.scenes.put(scene)
        with self.draw_lock:
            self.seen = msg
            if self.picture is not None:
                self.picture.path.append(scene.robot_pose.as_planar())
        if time.monotonic() - self.drawn_at >= _DRAW_EVERY_S:
            self.draw()
        pose = PoseStamped()
        pose.header = msg.header
        pose.pose = pose_of(scene.robot_pose.as_planar())
        last = self.travelled.poses[-1].pose.position if self.travelled.poses else None
        if (
            last is None
            or abs(last.x - pose.pose.position.x) + abs(last.y - pose.pose.position.y) > 0.01
        ):
            self.travelled.header = msg.header
            self.travelled.poses.append(pose)
            self.pub_path.publish(self.travelled)

    def _on_joints(self, msg: JointState) -> None:
        with self.joint_lock:
            for name, value in zip(msg.name, msg.position, strict=False):
                self.joints[name] = float(value)

    def joints_now(self, width: int) -> Joints | None:
        """The arm joints' positions now, in the plan's joint order (None if unknown)."""
        assert self.ports is not None
        with self.joint_lock:
            try:
                return tuple(self.joints[n] for n in self.ports.joint_names[:width])
            except KeyError:
                return None

    def publish_plan(self, plan: Plan) -> None:
        self.pub_plan.publish(plan)
        with self.draw_lock:
            self.executing = plan
        self.draw()

    def show_progress(self, label: str) -> None:
        with self.draw_lock:
            self.progress = label
        self.draw()

    def draw(self) -> None:
        """Publish the progress markers: the newest scene as the robot sees it, with the
        executing plan's dropped objects greyed, its base path and the step label."""
        with self.draw_lock:
            scene, plan, label = self.seen, self.executing, self.progress
            self.drawn_at = time.monotonic()
        if scene is None:
            return
        self.pub_markers.publish(
            scene_markers(
                scene,
                dropped=list(plan.dropped_objects) if plan is not None else (),
                base_path=plan.base_path if plan is not None else None,
                label=label,
                stamp=self.get_clock().now().to_msg(),
            )
        )

    # --- ExecutePlan --------------------------------------------------------------------------
    def _execute(self, handle: Any) -> Any:
        out = ExecutePlan.Result()
        if not self.active or self.executive is None or self.ports is None:
            return self._end(
                handle, out, ExecError.INACTIVE, f"camp_executor is {self.state_label}"
            )
        if not self.busy.acquire(blocking=False):
            return self._end(handle, out, ExecError.BUSY, "another plan is executing")
        try:
            return self._run(handle, out)
        except Exception as exc:  # the node outlives whatever went wrong
            self.get_logger().error(f"execution failed: {exc!r}")
            return self._end(handle, out, ExecError.INTERNAL, f"{exc.__class__.__name__}: {exc}")
        finally:
            self.busy.release()

    def _run(self, handle: Any, out: Any) -> Any:
        assert self.executive is not None and self.ports is not None
        goal = handle.request
        plan = None
        if goal.plan.steps:
            plan = executable_plan(goal.plan)
            self.ports.joint_names = plan.joint_names
            self.publish_plan(goal.plan)
        ports = self.ports
        ports.cancelled = lambda: bool(handle.is_cancel_requested)

        start = self.scenes.latest()
        with self.draw_lock:
            self.picture = None
            if start is not None:
                self.picture = ExecutionPicture(start, path=[start.robot_pose.as_planar()])
        replanned_at: list[Pose2] = []

        def feedback(f: Feedback) -> None:
            if f.phase == "replanning":
                now = self.scenes.latest()
                if now is not None:
                    replanned_at.append(now.robot_pose.as_planar())
            msg = ExecutePlan.Feedback(
                plan_id=f.plan_id,
                step=f.step,
                steps_total=f.steps_total,
                action=f.action,
                phase=f.phase,
                replans=f.replans,
            )
            handle.publish_feedback(msg)
            self.show_progress(progress_label(f))

        class _Planner:
            # The arm's joint names come with each new plan.
            def plan(self, scene: Scene) -> ExecutablePlan:
                made = ports.plan(scene)
                ports.joint_names = made.joint_names
                return made

        self.executive.replanner = _Planner()
        limit = int(goal.max_replans) or int(self.param("max_replans"))
        t0 = time.monotonic()
        result = self.executive.run(plan, bool(goal.replan), limit, ports.cancelled, feedback)
        took = time.monotonic() - t0
        self._fill(out, result)
        self._report(result)
        self._render(result, replanned_at)
        self.show_progress(
            f"goal reached, {result.replans} replans"
            if result.goal_reached
            else f"stopped: {result.code.name.lower()}"
        )
        self.get_logger().info(
            f"execution {'reached the goal' if result.goal_reached else 'ended'} in {took:.1f} s: "
            f"{result.steps_executed} steps, {result.replans} replans"
            + (f"; {result.message}" if result.message else "")
        )
        if result.code == ExecError.CANCELED and handle.is_cancel_requested:
            handle.canceled()
        elif result.goal_reached:
            handle.succeed()
        else:
            self.errors[result.code.name.lower()] += 1
            handle.abort()
        self.facts["last_outcome"] = "goal reached" if result.goal_reached else result.code.name
        return out

    def _render(self, result: ExecutionResult, replanned_at: list[Pose2]) -> None:
        """Write the picture of the execution that ended into ``render_dir``, if set."""
        with self.draw_lock:
            picture, self.picture = self.picture, None
        folder = str(self.param("render_dir"))
        if not folder or picture is None:
            return
        picture.end = self.scenes.latest()
        picture.replans = list(zip(replanned_at, result.replan_reasons, strict=False))
        outcome = "goal reached" if result.goal_reached else f"stopped: {result.message}"
        picture.title = (
            f"{result.plan_id}: {outcome} ({result.steps_executed} steps, {result.replans} replans)"
        )
        self.executions += 1
        path = Path(folder) / f"{picture.start.domain}_closed_loop_{self.executions}.png"
        try:
            render_execution(picture, path)
        except (OSError, ValueError) as exc:  # a picture never costs the execution
            self.errors["render"] += 1
            self.get_logger().warning(f"execution picture not written: {exc}")
            return
        self.get_logger().info(f"execution picture: {path}")

    def _end(self, handle: Any, out: Any, code: ExecError, message: str) -> Any:
        out.error_code, out.error_message = int(code), message
        self.errors[code.name.lower()] += 1
        self.get_logger().warning(f"execute_plan refused: {message}")
        handle.abort()
        return out

    @staticmethod
    def _fill(out: Any, result: ExecutionResult) -> None:
        out.goal_reached = result.goal_reached
        out.error_code = int(result.code)
        out.error_message = result.message
        out.plan_id = result.plan_id
        out.steps_executed = result.steps_executed
        out.replans = result.replans
        out.replan_seconds = [float(v) for v in result.replan_seconds]
        out.replan_reasons = list(result.replan_reasons)

    def _report(self, result: ExecutionResult) -> None:
        report = ExecutionReport(
            plan_id=result.plan_id,
            replans=result.replans,
            goal_reached=result.goal_reached,
            steps_executed=result.steps_executed,
            message=result.message or "reached the goal",
        )
        report.header.frame_id = self.frame
        report.header.stamp = self.get_clock().now().to_msg()
        latest = self.scenes.latest()
        if latest is not None:
            report.scene = scene_to_msg(latest, report.header.stamp)
        self.pub_report.publish(report)

    def destroy_node(self) -> None:
        self._withdraw()
        self.release()
        super().destroy_node()


def progress_label(f: Feedback) -> str:
    """The label RViz shows above the robot while a plan executes."""
    if f.phase == "replanning":
        return f"replanning from here (replan {f.replans + 1})"
    return f"step {f.step + 1}/{f.steps_total} {f.action} ({f.phase})" + (
        f", {f.replans} replans" if f.replans else ""
    )


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    spin_nodes([start_node(CampExecutorNode)])


if __name__ == "__main__":
    main()
