"""The simulated robot behind closed-loop execution: the controller interfaces a real robot
runs, served by a domain's controller-level simulator
(:class:`~camp_planner.domains.interface.robot.RobotSim`).

It serves, under names a real robot's stack uses:

- ``follow_path`` (``nav2_msgs/action/FollowPath``, as Nav2's controller server): the base
  drives along the path at ``base_speed`` / ``base_turn_rate``, one increment per control
  period, and stops at the first collision (``FAILED_TO_MAKE_PROGRESS``);
- ``arm_controller/follow_joint_trajectory`` (``control_msgs/action/FollowJointTrajectory``,
  as ros2_control's joint_trajectory_controller): positions interpolated over the points'
  ``time_from_start``;
- ``gripper_controller/gripper_cmd`` (``control_msgs/action/GripperCommand``): a position
  at or below ``gripper_closed_m`` closes the gripper, anything wider opens it.

Every goal checks for a cancel before each control period, so a cancel stops the base or
the arm within one period. While it moves it publishes ``joint_states`` and ``odom``
(``nav_msgs/Odometry``; the odom frame is the map frame at start: the simulator does not
drift), and it publishes what a perception stack would see on ``camp/scene`` every
``scene_period_s`` and after every goal. ``disturbances`` (e.g. ``block@base#2``: a box
moved onto the path as the second base goal starts; ``push@…``, ``slip@…``; controllers
``base``, ``arm``, ``gripper``) fire from a generator seeded with ``disturbance_seed``, so a
run replays. ``reject`` names a controller that refuses every goal (fault tests).

Run as ``python -m camp_planner.ros.robot_sim_node DOMAIN --ros-args ...``; the node is named
``<domain>_robot``.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rclpy
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory, GripperCommand
from nav2_msgs.action import FollowPath
from nav_msgs.msg import Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.utilities import remove_ros_args
from sensor_msgs.msg import JointState

from camp_msgs.msg import SceneObservation
from camp_planner.core.errors import CampError
from camp_planner.domains import get_plugin
from camp_planner.domains.interface.robot import RobotSim
from camp_planner.domains.interface.scene import Pose2
from camp_planner.ros.bringup import spin_nodes, start_node
from camp_planner.ros.common import LATCHED, SCENE_TOPIC, declare_world
from camp_planner.ros.convert import pose_from_msg, scene_to_msg
from camp_planner.workflow import Pipeline

BASE_ACTION = "follow_path"
ARM_ACTION = "arm_controller/follow_joint_trajectory"
GRIPPER_ACTION = "gripper_controller/gripper_cmd"
CONTROLLERS = ("base", "arm", "gripper")
DISTURBANCES = ("push", "block", "slip")
_SCHEDULE = re.compile(r"^(push|block|slip)@(base|arm|gripper)#([1-9][0-9]*)$")
FINGER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")
GRIPPER_OPEN_M = 0.08


@dataclass(frozen=True)
class Disturbance:
    kind: str  # push | block | slip
    controller: str  # base | arm | gripper
    goal: int  # fires as this goal (1-based) of the controller starts


def parse_schedule(entries: Sequence[str]) -> list[Disturbance]:
    """The disturbances ``KIND@CONTROLLER#N`` name; a :class:`CampError` naming a bad one."""
    out = []
    for entry in entries:
        found = _SCHEDULE.match(entry.strip())
        if found is None:
            raise CampError(
                f"disturbance '{entry}': write KIND@CONTROLLER#N with KIND one of "
                f"{', '.join(DISTURBANCES)}, CONTROLLER one of {', '.join(CONTROLLERS)} and N "
                "the goal (1, 2, ...) of that controller it fires at"
            )
        out.append(Disturbance(found[1], found[2], int(found[3])))
    return out


def _yaw_step(a: float, b: float) -> float:
    return math.remainder(b - a, 2 * math.pi)


def increments(start: Pose2, goal: Pose2, step_m: float, step_rad: float) -> list[Pose2]:
    """The poses a base passes from ``start`` to ``goal`` moving at most ``step_m`` and
    turning at most ``step_rad`` per control period (``goal`` last)."""
    dist = math.hypot(goal[0] - start[0], goal[1] - start[1])
    turn = _yaw_step(start[2], goal[2])
    n = max(1, math.ceil(max(dist / step_m, abs(turn) / step_rad) - 1e-9))
    return [
        (
            start[0] + (goal[0] - start[0]) * k / n,
            start[1] + (goal[1] - start[1]) * k / n,
            goal[2] if k == n else start[2] + turn * k / n,
        )
        for k in range(1, n + 1)
    ]


def joints_at(points: Sequence[tuple[float, Sequence[float]]], t: float) -> list[float]:
    """Positions at ``t`` seconds along (time, positions) points, linear in between."""
    if t <= points[0][0]:
        return list(points[0][1])
    for (ta, qa), (tb, qb) in itertools.pairwise(points):
        if t <= tb:
            f = (t - ta) / (tb - ta) if tb > ta else 1.0
            return [a + f * (b - a) for a, b in zip(qa, qb, strict=True)]
    return list(points[-1][1])


class RobotSimNode(Node):
    """A domain's robot simulated behind the standard controller actions."""

    def __init__(self, domain: str = "namo", **kwargs: Any) -> None:
        self.plugin = get_plugin(domain)
        super().__init__(f"{domain}_robot", **kwargs)
        p = self.declare_parameter
        p("config_file", "")
        p("split", "test")
        p("task_index", 0)
        p("frame_id", "map")
        p("odom_frame", "odom")
        p("base_frame", "base_link")
        p("control_period_s", 0.05)
        p("real_time_factor", 1.0)  # > 1: the simulated clock runs faster than the wall's
        p("base_speed", 0.5)
        p("base_turn_rate", 1.0)
        p("gripper_time_s", 0.5)
        p("gripper_closed_m", 0.01)
        p("scene_period_s", 0.5)
        p("disturbances", [""])
        p("disturbance_seed", 0)
        p("reject", "")  # a controller (base | arm | gripper) that refuses every goal
        p("base_action", BASE_ACTION)
        p("arm_action", ARM_ACTION)
        p("gripper_action", GRIPPER_ACTION)
        _, config = declare_world(self, domain, str(self.get_parameter("config_file").value))
        self.schedule = parse_schedule(
            [s for s in self.get_parameter("disturbances").value if s.strip()]
        )
        reject = str(self.get_parameter("reject").value)
        if reject and reject not in CONTROLLERS:
            raise CampError(f"reject '{reject}': one of {', '.join(CONTROLLERS)}")
        self.reject = reject
        self.pipe = Pipeline.create(domain, config, Path("artifacts"))
        split = str(self.get_parameter("split").value)
        index = int(self.get_parameter("task_index").value)
        self.robot: RobotSim | None = None
        self.lock = threading.Lock()  # one motion at a time: the physics client is not shared
        self.load(
            self.pipe.task(split, index),
            f"{split} task {index}",
            int(self.get_parameter("disturbance_seed").value),
        )
        self.frame = str(self.get_parameter("frame_id").value)
        self.period = float(self.get_parameter("control_period_s").value)
        self.speedup = float(self.get_parameter("real_time_factor").value)
        # Control periods moved after a cancel was accepted, one entry per cancelled goal:
        # every loop checks for a cancel before it moves, so none is more than 1.
        self.cancelled_ticks: list[int] = []
        self.ticks = 0
        self._cancel_at: dict[bytes, int] = {}
        self.velocity = (0.0, 0.0)
        self.pub_scene = self.create_publisher(SceneObservation, SCENE_TOPIC, LATCHED)
        self.pub_odom = self.create_publisher(Odometry, "odom", 10)
        self.pub_joints = self.create_publisher(JointState, "joint_states", 10)
        group = ReentrantCallbackGroup()
        name = self.get_parameter
        kinds = (
            ("base", FollowPath, "base_action", self._base),
            ("arm", FollowJointTrajectory, "arm_action", self._arm),
            ("gripper", GripperCommand, "gripper_action", self._gripper),
        )
        self.servers = [
            ActionServer(
                self,
                kind,
                str(name(param).value),
                run,
                goal_callback=self._answer(controller),
                cancel_callback=self._on_cancel,
                callback_group=group,
            )
            for controller, kind, param, run in kinds
        ]
        self.create_timer(float(self.get_parameter("scene_period_s").value), self.publish_state)
        self.publish_state()
        self.get_logger().info(
            f"{self.get_name()}: {self.label}; disturbances: "
            + (", ".join(f"{d.kind}@{d.controller}#{d.goal}" for d in self.schedule) or "none")
        )

    def load(
        self, task: Any, label: str, seed: int, schedule: list[Disturbance] | None = None
    ) -> None:
        """Simulate ``task`` from its start, its disturbances (``schedule``, else the
        parameter's) drawn from ``seed`` afresh: a benchmark runs many tasks on one node."""
        with self.lock:
            if schedule is not None:
                self.schedule = schedule
            if self.robot is not None:
                self.sim.close()
            self.robot = self.plugin.robot(self.pipe.domain, self.pipe.config, task)
            self.label = label
            self.rng = random.Random(seed)
            self.goals: Counter[str] = Counter()
            self.fired: list[str] = []  # what disturbed the robot, for tests and the log
            self.opening = GRIPPER_OPEN_M

    @property
    def sim(self) -> RobotSim:
        assert self.robot is not None
        return self.robot

    # --- state out ----------------------------------------------------------------------------
    def publish_state(self) -> None:
        with self.lock:
            scene = self.sim.scene(self.frame)
            pose = self.sim.base_pose()
            q = self.sim.arm_joints()
        now = self.get_clock().now().to_msg()
        self.pub_scene.publish(scene_to_msg(scene, now))
        self._publish_motion(pose, q, now)

    def _publish_motion(self, pose: Pose2, q: Sequence[float], stamp: Any) -> None:
        odom = Odometry()
        odom.header.stamp = stamp
        odom.header.frame_id = str(self.get_parameter("odom_frame").value)
        odom.child_frame_id = str(self.get_parameter("base_frame").value)
        odom.pose.pose.position.x, odom.pose.pose.position.y = pose[0], pose[1]
        odom.pose.pose.orientation.z = math.sin(pose[2] / 2)
        odom.pose.pose.orientation.w = math.cos(pose[2] / 2)
        odom.twist.twist.linear.x, odom.twist.twist.angular.z = self.velocity
        self.pub_odom.publish(odom)
        joints = JointState()
        joints.header.stamp = stamp
        joints.name = [*self.sim.joint_names, *FINGER_JOINTS]
        joints.position = [float(v) for v in q] + [self.opening / 2] * 2
        self.pub_joints.publish(joints)

    def _sleep(self) -> None:
        time.sleep(self.period / self.speedup)

    # --- disturbances ---------------------------------------------------------------------------
    def _start_goal(self, controller: str, path: Sequence[Pose2] = ()) -> None:
        self.goals[controller] += 1
        for d in self.schedule:
            if d.controller != controller or d.goal != self.goals[controller]:
                continue
            with self.lock:
                if d.kind == "push":
                    moved = self.sim.push_object(self.rng)
                elif d.kind == "block":
                    moved = self.sim.block_path(path, self.rng)
                else:
                    moved = self.sim.slip()
            said = f"{d.kind}@{d.controller}#{d.goal}: " + (moved or "nothing to disturb")
            self.fired.append(said)
            self.get_logger().info(f"disturbance {said}")
            self.publish_state()

    # --- controllers ----------------------------------------------------------------------------
    def _answer(self, controller: str) -> Any:
        def answer(_goal: Any) -> GoalResponse:
            if self.reject == controller:
                self.get_logger().warning(f"{controller} goal rejected (reject:={controller})")
                return GoalResponse.REJECT
            return GoalResponse.ACCEPT

        return answer

    def _on_cancel(self, handle: Any) -> CancelResponse:
        self._cancel_at[bytes(handle.goal_id.uuid)] = self.ticks
        return CancelResponse.ACCEPT

    def _moving(self, handle: Any) -> bool:
        """False once a cancel is requested (the goal is then marked cancelled)."""
        if handle.is_cancel_requested:
            at = self._cancel_at.pop(bytes(handle.goal_id.uuid), self.ticks)
            self.cancelled_ticks.append(self.ticks - at)
            handle.canceled()
            return False
        return True

    def _base(self, handle: Any) -> Any:
        result = FollowPath.Result()
        path = [pose_from_msg(p.pose).as_planar() for p in handle.request.path.poses]
        if not path:
            handle.abort()
            result.error_code, result.error_msg = FollowPath.Result.INVALID_PATH, "empty path"
            return result
        self._start_goal("base", path)
        step_m = float(self.get_parameter("base_speed").value) * self.period
        step_rad = float(self.get_parameter("base_turn_rate").value) * self.period
        with self.lock:
            here = self.sim.base_pose()
        for goal in path:
            for pose in increments(here, goal, step_m, step_rad):
                if not self._moving(handle):
                    self.velocity = (0.0, 0.0)
                    self.publish_state()
                    return result
                with self.lock:
                    why = self.sim.drive(pose)
                    here = self.sim.base_pose()
                    q = self.sim.arm_joints()
                self.ticks += 1
                self.velocity = (step_m / self.period, 0.0) if not why else (0.0, 0.0)
                self._publish_motion(here, q, self.get_clock().now().to_msg())
                if why:
                    handle.abort()
                    result.error_code = FollowPath.Result.FAILED_TO_MAKE_PROGRESS
                    result.error_msg = why
                    self.get_logger().info(f"base stopped: {why}")
                    self.publish_state()
                    return result
                feedback = FollowPath.Feedback()
                feedback.distance_to_goal = float(
                    math.hypot(path[-1][0] - here[0], path[-1][1] - here[1])
                )
                feedback.speed = float(self.velocity[0])
                handle.publish_feedback(feedback)
                self._sleep()
        self.velocity = (0.0, 0.0)
        handle.succeed()
        self.publish_state()
        return result

    def _arm(self, handle: Any) -> Any:
        result = FollowJointTrajectory.Result()
        traj = handle.request.trajectory
        names = tuple(traj.joint_names)
        if names != self.sim.joint_names:
            handle.abort()
            result.error_code = FollowJointTrajectory.Result.INVALID_JOINTS
            result.error_string = f"joints {list(names)}; this arm has {list(self.sim.joint_names)}"
            return result
        timed = [(_seconds(p.time_from_start), list(p.positions)) for p in traj.points]
        if (
            not timed
            or any(len(q) != len(names) for _, q in timed)
            or any(tb < ta for (ta, _), (tb, _) in itertools.pairwise(timed))
        ):
            handle.abort()
            result.error_code = FollowJointTrajectory.Result.INVALID_GOAL
            result.error_string = "points must have every joint and times that never go back"
            return result
        self._start_goal("arm")
        with self.lock:
            start = list(self.sim.arm_joints())
        points = [(0.0, start), *timed] if timed[0][0] > 0.0 else timed
        end, t = points[-1][0], 0.0
        while True:
            if not self._moving(handle):
                self.publish_state()
                return result
            t = min(end, t + self.period)
            q = joints_at(points, t)
            with self.lock:
                why = self.sim.set_arm(q)
                pose = self.sim.base_pose()
            self.ticks += 1
            self._publish_motion(pose, q, self.get_clock().now().to_msg())
            if why:
                handle.abort()
                result.error_code = FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
                result.error_string = why
                self.get_logger().info(f"arm stopped: {why}")
                self.publish_state()
                return result
            if t >= end:
                break
            self._sleep()
        handle.succeed()
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        self.publish_state()
        return result

    def _gripper(self, handle: Any) -> Any:
        result = GripperCommand.Result()
        self._start_goal("gripper")
        close = handle.request.command.position <= float(
            self.get_parameter("gripper_closed_m").value
        )
        ticks = max(1, round(float(self.get_parameter("gripper_time_s").value) / self.period))
        for _ in range(ticks):
            if not self._moving(handle):
                return result
            self._sleep()
        with self.lock:
            why = self.sim.gripper(close)
            held = self.sim.held()
        self.opening = 0.0 if close and not held else (0.04 if held else GRIPPER_OPEN_M)
        result.position = self.opening
        result.reached_goal = not why
        result.stalled = bool(held)  # closed on an object, as a real gripper stalls on one
        if why:
            self.get_logger().info(f"gripper: {why}")
            handle.abort()
        else:
            handle.succeed()
        self.publish_state()
        return result

    def destroy_node(self) -> None:
        servers, self.servers = self.servers, []
        for server in servers:
            # As in tamp_server_node: rclpy's ActionServer.destroy() may remove a finished
            # goal's entries a second time (ValueError); the handle is released all the same.
            with contextlib.suppress(ValueError):
                server.destroy()
        with self.lock:
            self.sim.close()
        super().destroy_node()


def _seconds(d: Duration) -> float:
    return float(d.sec) + float(d.nanosec) * 1e-9


def main(args: list[str] | None = None, domain: str | None = None) -> None:
    """Run the simulated robot of ``domain`` (else the first argument before ``--ros-args``)."""
    argv = sys.argv if args is None else args
    if domain is None:
        own = remove_ros_args(argv)[1:]
        if len(own) != 1:
            raise SystemExit(
                "usage: python -m camp_planner.ros.robot_sim_node DOMAIN [--ros-args ...]"
            )
        domain = own[0]
    rclpy.init(args=argv)
    spin_nodes([start_node(lambda: RobotSimNode(domain))])


if __name__ == "__main__":
    main()


def main_namo(args: list[str] | None = None) -> None:
    """The ``namo_robot`` executable."""
    main(args, domain="namo")


def main_manip(args: list[str] | None = None) -> None:
    """The ``manip_robot`` executable."""
    main(args, domain="manip")
