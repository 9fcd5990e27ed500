"""camp_msgs ↔ the service's plain data. No node logic here: pure functions."""

from __future__ import annotations

import math
from typing import Any

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Pose, PoseStamped
from std_msgs.msg import Header
from trajectory_msgs.msg import JointTrajectoryPoint

from camp_msgs.msg import Context as ContextMsg
from camp_msgs.msg import ContextTerm, ObjectObservation, PlanStep, SceneObservation, StageTime
from camp_msgs.msg import Plan as PlanMsg
from camp_planner.core.context import Context
from camp_planner.service.scene import Pose2, Scene, SceneObject
from camp_planner.service.types import PlanResult, SelectionResult

ARM_SECONDS_PER_MOTION = 2.0  # nominal time to reach a grasp pose from tucked, and back


def yaw_of(pose: Pose) -> float:
    q = pose.orientation
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


def pose_of(p: Pose2, z: float = 0.0) -> Pose:
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = float(p[0]), float(p[1]), float(z)
    msg.orientation.z = math.sin(p[2] / 2.0)
    msg.orientation.w = math.cos(p[2] / 2.0)
    return msg


def planar(pose: Pose) -> Pose2:
    return (float(pose.position.x), float(pose.position.y), yaw_of(pose))


def duration(seconds: float) -> Duration:
    whole = math.floor(seconds)
    return Duration(sec=int(whole), nanosec=int((seconds - whole) * 1e9))


# --- scenes ----------------------------------------------------------------------------------
def scene_from_msg(msg: SceneObservation) -> Scene:
    objects = tuple(
        SceneObject(
            o.id,
            o.object_class,
            planar(o.pose),
            (float(o.size.x), float(o.size.y), float(o.size.z)),
            bool(o.movable),
            o.room,
        )
        for o in msg.objects
    )
    goal_xy = None
    if not msg.goal_object_id and msg.goal_pose.header.frame_id:
        goal_xy = (float(msg.goal_pose.pose.position.x), float(msg.goal_pose.pose.position.y))
    return Scene(
        domain=msg.domain,
        robot_pose=planar(msg.robot_pose),
        objects=objects,
        goal_object_id=msg.goal_object_id,
        goal_xy=goal_xy,
        task_features=tuple(float(v) for v in msg.task_features),
        frame_id=msg.header.frame_id or "map",
    )


def scene_to_msg(scene: Scene, stamp: Any = None) -> SceneObservation:
    msg = SceneObservation()
    msg.header = Header(frame_id=scene.frame_id)
    if stamp is not None:
        msg.header.stamp = stamp
    msg.domain = scene.domain
    msg.robot_pose = pose_of(scene.robot_pose)
    for o in scene.objects:
        obs = ObjectObservation()
        obs.id, obs.object_class, obs.movable, obs.room = o.id, o.object_class, o.movable, o.room
        obs.pose = pose_of(o.pose, o.size[2] / 2)
        obs.size.x, obs.size.y, obs.size.z = (float(v) for v in o.size)
        msg.objects.append(obs)
    msg.goal_object_id = scene.goal_object_id
    if scene.goal_xy is not None:
        msg.goal_pose.header.frame_id = scene.frame_id
        msg.goal_pose.pose = pose_of((*scene.goal_xy, 0.0))
    msg.task_features = [float(v) for v in scene.task_features]
    return msg


# --- contexts --------------------------------------------------------------------------------
_CONTEXT_MSGS: dict[str, ContextMsg] = {}


def context_to_msg(context: Context) -> ContextMsg:
    """The message of ``context``, built once per context id and shared afterwards (a
    response ranks every context; building 16 of them per call cost 1 ms). Callers must not
    mutate the returned message."""
    msg = _CONTEXT_MSGS.get(context.id)
    if msg is None:
        msg = _CONTEXT_MSGS[context.id] = _build_context_msg(context)
    return msg


def _build_context_msg(context: Context) -> ContextMsg:
    msg = ContextMsg()
    msg.id, msg.description = context.id, context.name
    msg.is_universal, msg.kind = context.is_universal, context.kind
    for variable, values in sorted(context.allowed_values().items()):
        msg.terms.append(ContextTerm(variable=variable, allowed_values=[str(v) for v in values]))
    return msg


def selection_to_response(result: SelectionResult, response: Any) -> Any:
    response.success = True
    response.error_code = 0
    response.context = context_to_msg(result.context)
    response.probability = float(result.probability)
    response.alternatives = [context_to_msg(c) for c, _ in result.alternatives]
    response.alternative_probabilities = [float(p) for _, p in result.alternatives]
    response.relevant_variables = list(result.relevant)
    response.dropped_variables = list(result.dropped)
    response.dropped_objects = list(result.dropped_objects)
    response.selector_latency = duration(result.latency_s)
    return response


# --- plans -----------------------------------------------------------------------------------
def plan_to_msg(result: PlanResult, frame_id: str, stamp: Any = None) -> PlanMsg:
    msg = PlanMsg()
    msg.header.frame_id = frame_id
    if stamp is not None:
        msg.header.stamp = stamp
    if result.context is not None:
        msg.context = context_to_msg(result.context)
    msg.fallbacks = int(result.fallbacks)
    msg.base_path.header = msg.header
    for p in result.base_path:
        ps = PoseStamped()
        ps.header = msg.header
        ps.pose = pose_of(p)
        msg.base_path.poses.append(ps)
    traj = msg.arm_trajectory
    traj.header = msg.header
    traj.joint_names = list(result.joint_names)
    t = 0.0
    for _, joints in result.arm_waypoints:
        t += ARM_SECONDS_PER_MOTION
        point = JointTrajectoryPoint(positions=[float(v) for v in joints])
        point.time_from_start = duration(t)
        traj.points.append(point)
    for step in result.steps:
        msg.steps.append(
            PlanStep(
                action=step.action,
                objects=list(step.objects),
                mode=step.mode,
                target=pose_of(step.target),
                base_path_end=int(step.base_path_end),
            )
        )
    msg.stage_times = [StageTime(stage=k, seconds=float(v)) for k, v in result.stage_times.items()]
    msg.planning_time = float(result.planning_time)
    msg.expected_return = float(result.expected_return)
    msg.objective = float(result.objective)
    msg.lambda_cost = float(result.lam)
    msg.relevant_variables = list(result.relevant)
    msg.dropped_variables = list(result.dropped)
    msg.dropped_objects = list(result.dropped_objects)
    return msg


def plan_steps(msg: PlanMsg) -> list[tuple[str, list[str], Pose2]]:
    """(action, object ids, target) per step of a received plan, for an executor."""
    return [(s.action, list(s.objects), planar(s.target)) for s in msg.steps]
