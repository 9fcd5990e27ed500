"""camp_msgs ↔ the service's plain data. No node logic here: pure functions."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Hashable, Sequence
from typing import Any

from builtin_interfaces.msg import Duration
from geometry_msgs.msg import Point, Pose, PoseStamped
from nav_msgs.msg import Path as PathMsg
from std_msgs.msg import ColorRGBA, Header
from trajectory_msgs.msg import JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from camp_msgs.msg import Candidate as CandidateMsg
from camp_msgs.msg import Context as ContextMsg
from camp_msgs.msg import (
    ContextTerm,
    GripperAction,
    ObjectObservation,
    PlanStep,
    SceneObservation,
    StageTime,
)
from camp_msgs.msg import Plan as PlanMsg
from camp_planner.core.context import Context, Term
from camp_planner.core.errors import CampError
from camp_planner.core.mdp import freeze
from camp_planner.domains.interface.plan import GripperAction as GripperActionData
from camp_planner.domains.interface.plan import PlanRecord, PlanStepData
from camp_planner.domains.interface.scene import Pose as ScenePose
from camp_planner.domains.interface.scene import Pose2, Scene, SceneObject
from camp_planner.execution.commands import ExecutablePlan
from camp_planner.runtime.selection import Candidate
from camp_planner.service.types import PlanResult, SelectionResult

ARM_SECONDS_PER_MOTION = 2.0  # nominal time to reach a grasp pose from tucked, and back


def pose_of(p: Pose2, z: float = 0.0) -> Pose:
    """The message of a planar pose (x, y, yaw) at height ``z``."""
    return pose_to_msg(ScenePose.planar(float(p[0]), float(p[1]), float(p[2]), float(z)))


def pose_to_msg(pose: ScenePose) -> Pose:
    msg = Pose()
    msg.position.x, msg.position.y, msg.position.z = (float(v) for v in pose.position)
    o = msg.orientation
    o.x, o.y, o.z, o.w = (float(v) for v in pose.orientation)
    return msg


def pose_from_msg(msg: Pose) -> ScenePose:
    """The whole 3-D pose, as given (a domain's adapter decides what it can represent)."""
    p, o = msg.position, msg.orientation
    return ScenePose(
        (float(p.x), float(p.y), float(p.z)), (float(o.x), float(o.y), float(o.z), float(o.w))
    )


def duration(seconds: float) -> Duration:
    whole = math.floor(seconds)
    return Duration(sec=int(whole), nanosec=int((seconds - whole) * 1e9))


# --- scenes ----------------------------------------------------------------------------------
def scene_from_msg(msg: SceneObservation) -> Scene:
    objects = tuple(
        SceneObject(
            o.id,
            o.object_class,
            pose_from_msg(o.pose),
            (float(o.size.x), float(o.size.y), float(o.size.z)),
            bool(o.movable),
            o.room,
        )
        for o in msg.objects
    )
    goal = None
    # A goal pose counts as given when its header names a frame (an empty PoseStamped is
    # "no goal pose"); that frame must be the scene's, which validation checks.
    if not msg.goal_object_id and msg.goal_pose.header.frame_id:
        goal = pose_from_msg(msg.goal_pose.pose)
    return Scene(
        domain=msg.domain,
        robot_pose=pose_from_msg(msg.robot_pose),
        objects=objects,
        goal_object_id=msg.goal_object_id,
        goal_pose=goal,
        task_features=tuple(float(v) for v in msg.task_features),
        frame_id=msg.header.frame_id or "map",
        goal_frame_id=msg.goal_pose.header.frame_id if goal is not None else "",
    )


def scene_to_msg(scene: Scene, stamp: Any = None) -> SceneObservation:
    msg = SceneObservation()
    msg.header = Header(frame_id=scene.frame_id)
    if stamp is not None:
        msg.header.stamp = stamp
    msg.domain = scene.domain
    msg.robot_pose = pose_to_msg(scene.robot_pose)
    for o in scene.objects:
        obs = ObjectObservation()
        obs.id, obs.object_class, obs.movable, obs.room = o.id, o.object_class, o.movable, o.room
        obs.pose = pose_to_msg(o.pose)
        obs.size.x, obs.size.y, obs.size.z = (float(v) for v in o.size)
        msg.objects.append(obs)
    msg.goal_object_id = scene.goal_object_id
    if scene.goal_pose is not None:
        msg.goal_pose.header.frame_id = scene.frame_id
        msg.goal_pose.pose = pose_to_msg(scene.goal_pose)
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
        msg.terms.append(
            ContextTerm(
                variable=variable,
                allowed_values=[str(v) for v in values],
                # As Context.canonical_json encodes them, so the id rebuilds exactly.
                allowed_values_json=[json.dumps(v, default=str) for v in values],
            )
        )
    return msg


def context_from_msg(msg: ContextMsg) -> Context:
    """The context a message carries, exactly (every kind, set conjunctions included): the
    typed values come from ``allowed_values_json``. From a sender that predates that field,
    a value that reads as a whole number is taken as one, anything else as a string. A
    :class:`CampError` when the terms make no context of the kind, or when ``id`` is given
    and is not the rebuilt context's (the sender and receiver would mean different ones)."""
    if msg.is_universal or msg.kind == "universal":
        if msg.terms:
            raise CampError("a universal context message has no terms")
        return Context.universal()
    terms: list[Term] = []
    for t in msg.terms:
        typed = list(t.allowed_values_json)
        if typed and len(typed) != len(t.allowed_values):
            raise CampError(
                f"context term {t.variable!r}: {len(t.allowed_values)} values but "
                f"{len(typed)} in JSON"
            )
        try:
            values = [freeze(json.loads(v)) for v in typed] or [
                _untyped_value(v) for v in t.allowed_values
            ]
        except ValueError as exc:
            raise CampError(f"context term {t.variable!r}: a value is not JSON ({exc})") from None
        if not values:
            raise CampError(f"context term {t.variable!r} allows no value")
        terms.extend(Term(str(t.variable), v) for v in values)
    context = Context(msg.kind, tuple(terms))  # an unknown kind is a CampError there
    if msg.id and msg.id != context.id:
        raise CampError(
            f"context message id {msg.id!r} does not match its terms (they make {context.id}: "
            f"{context.name})"
        )
    return context


def _untyped_value(text: str) -> Hashable:
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    return text


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else float(value)


def selection_to_response(result: SelectionResult, response: Any) -> Any:
    response.success = True
    response.error_code = 0
    response.context = context_to_msg(result.context)
    response.probability = float(result.probability)
    gate = result.gate
    response.proposed = context_to_msg(gate.proposed if gate else result.context)
    response.gate_committed = gate.committed if gate else True
    response.predicted_gain = _or_nan(gate.predicted_gain if gate else None)
    response.gain_lower_bound = _or_nan(gate.lower_bound if gate else None)
    response.reason = gate.reason if gate else "the selector's first choice"
    selection = result.selection
    if selection is not None:
        response.reason = selection.reason
        response.rule = selection.rule
        response.give_up = selection.first is None
        response.candidates = [candidate_to_msg(c) for c in selection.candidates]
        response.fallback_order = selection.fallback_order()
    response.alternatives = [context_to_msg(c) for c, _ in result.alternatives]
    response.alternative_probabilities = [float(p) for _, p in result.alternatives]
    response.relevant_variables = list(result.relevant)
    response.dropped_variables = list(result.dropped)
    response.dropped_objects = list(result.dropped_objects)
    response.selector_latency = duration(result.latency_s)
    return response


def candidate_to_msg(candidate: Candidate) -> Any:
    """One option the runtime weighed, as ``camp_msgs/Candidate``."""
    msg = CandidateMsg()
    msg.give_up = candidate.context is None
    if candidate.context is not None:
        msg.context = context_to_msg(candidate.context)
    msg.name = candidate.name
    msg.probability = _or_nan(candidate.probability)
    msg.predicted_objective = _or_nan(candidate.predicted_objective)
    msg.lower_bound = _or_nan(candidate.lower_bound)
    msg.training_tasks = int(candidate.n)
    return msg


# --- plans -----------------------------------------------------------------------------------
def plan_to_msg(
    result: PlanResult,
    frame_id: str,
    stamp: Any = None,
    plan_id: str = "",
    scene: SceneObservation | None = None,
) -> PlanMsg:
    """The plan message of ``result``, with its id and the scene it was made for."""
    msg = PlanMsg()
    msg.header.frame_id = frame_id
    if stamp is not None:
        msg.header.stamp = stamp
    msg.plan_id = plan_id
    if scene is not None:
        msg.scene = scene
    if result.context is not None:
        msg.context = context_to_msg(result.context)
    msg.fallbacks = int(result.fallbacks)
    msg.fallback_order = list(result.fallback_order)
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
                arguments=list(step.arguments),
                objects=list(step.objects),
                mode=step.mode,
                target=pose_to_msg(step.target),
                base_path_end=int(step.base_path_end),
                arm_trajectory_end=int(step.arm_trajectory_end),
                gripper=[
                    GripperAction(command=g.command, after_point=int(g.after_point))
                    for g in step.gripper
                ],
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


def plan_steps(msg: PlanMsg) -> list[PlanStepData]:
    """The steps of a received plan, for an executor."""
    return [
        PlanStepData(
            s.action,
            list(s.arguments),
            list(s.objects),
            s.mode,
            pose_from_msg(s.target),
            int(s.base_path_end),
            int(s.arm_trajectory_end),
            tuple(GripperActionData(int(g.after_point), g.command) for g in s.gripper),
        )
        for s in msg.steps
    ]


def executable_plan(msg: PlanMsg) -> ExecutablePlan:
    """What an executor needs of a received plan (the scene it was made for is None when the
    message carries none: no objects and a zero stamp)."""
    scene = msg.scene
    carries = bool(scene.objects) or scene.header.stamp.sec != 0 or scene.header.stamp.nanosec
    return ExecutablePlan(
        plan_id=msg.plan_id,
        scene=scene_from_msg(scene) if carries else None,
        steps=plan_steps(msg),
        base_path=[pose_from_msg(p.pose).as_planar() for p in msg.base_path.poses],
        joint_names=tuple(msg.arm_trajectory.joint_names),
        arm_points=[tuple(float(v) for v in p.positions) for p in msg.arm_trajectory.points],
    )


def plan_record(msg: PlanMsg) -> PlanRecord:
    """What a simulator is told about a received plan (its steps, and for a render the
    context and what its CAMP dropped)."""
    return PlanRecord(
        steps=plan_steps(msg),
        context_name=msg.context.description,
        context_terms={t.variable: tuple(t.allowed_values) for t in msg.context.terms},
        dropped_variables=tuple(msg.dropped_variables),
        planning_time=float(msg.planning_time),
    )


# --- RViz markers ----------------------------------------------------------------------------
# The colours of the PNG renders (domains/namo/render.py), so a viewer and a render agree.
MARKER_RGBA = {
    "room": (0.86, 0.92, 1.0, 0.5),
    "wall": (0.12, 0.16, 0.22, 1.0),
    "box": (0.15, 0.39, 0.92, 1.0),
    "dropped": (0.61, 0.64, 0.69, 0.3),
    "goal": (0.86, 0.15, 0.15, 1.0),
    "path": (0.96, 0.62, 0.04, 1.0),
    "label": (0.07, 0.09, 0.15, 1.0),
    "robot": (0.07, 0.09, 0.15, 1.0),
}
FLOOR_M = 0.01  # the allowed rooms' tint, drawn just under the floor so objects stay visible


def _marker(header: Header, ns: str, ident: int, kind: int, rgba: str) -> Marker:
    m = Marker()
    m.header = header
    m.ns, m.id, m.type, m.action = ns, ident, kind, Marker.ADD
    m.pose.orientation.w = 1.0
    r, g, b, a = MARKER_RGBA[rgba]
    m.color = ColorRGBA(r=r, g=g, b=b, a=a)
    return m


def scene_markers(
    scene: SceneObservation,
    *,
    allowed_rooms: Sequence[tuple[int, tuple[float, float, float, float]]] = (),
    dropped: Collection[str] = (),
    base_path: PathMsg | None = None,
    label: str = "",
    stamp: Any = None,
) -> MarkerArray:
    """What the robot planned in, for RViz (`visualization_msgs/MarkerArray`).

    The regions (NAMO: rooms) the context allows tinted on the floor, walls and other static
    objects, movable objects (those the CAMP dropped grey and translucent), the goal, the
    robot's pose as an arrow, the base path and a label with the context. The
    first marker deletes every earlier one, so a latched topic shows only the newest plan."""
    header = Header(frame_id=scene.header.frame_id)
    if stamp is not None:
        header.stamp = stamp
    clear = Marker()
    clear.header, clear.action = header, Marker.DELETEALL
    out = MarkerArray()
    out.markers.append(clear)
    for room, (x0, y0, x1, y1) in allowed_rooms:
        m = _marker(header, "allowed_rooms", room, Marker.CUBE, "room")
        m.pose.position.x, m.pose.position.y = (x0 + x1) / 2, (y0 + y1) / 2
        m.pose.position.z = -FLOOR_M
        m.scale.x, m.scale.y, m.scale.z = x1 - x0, y1 - y0, FLOOR_M
        out.markers.append(m)
    gone = set(dropped)
    for i, o in enumerate(scene.objects):
        if o.object_class == "goal":
            m = _marker(header, "goal", i, Marker.SPHERE, "goal")
        elif o.object_class == "wall":
            m = _marker(header, "walls", i, Marker.CUBE, "wall")
        elif not o.movable:  # a table, a shelf, a bin: drawn like the walls
            m = _marker(header, "static", i, Marker.CUBE, "wall")
        else:
            ns = "dropped" if o.id in gone else "objects"
            m = _marker(header, ns, i, Marker.CUBE, ns if ns == "dropped" else "box")
        m.pose = o.pose
        m.scale.x, m.scale.y, m.scale.z = (
            max(float(v), FLOOR_M) for v in (o.size.x, o.size.y, o.size.z)
        )
        m.text = o.id
        out.markers.append(m)
    if not scene.goal_object_id and scene.goal_pose.header.frame_id:
        m = _marker(header, "goal", len(scene.objects), Marker.SPHERE, "goal")
        m.pose = scene.goal_pose.pose
        m.scale.x = m.scale.y = m.scale.z = 0.25
        out.markers.append(m)
    robot = _marker(header, "robot", 0, Marker.ARROW, "robot")
    robot.pose = scene.robot_pose
    robot.scale.x, robot.scale.y, robot.scale.z = 0.6, 0.12, 0.12
    out.markers.append(robot)
    if base_path is not None and base_path.poses:
        m = _marker(header, "base_path", 0, Marker.LINE_STRIP, "path")
        m.scale.x = 0.05
        m.points = [
            Point(x=p.pose.position.x, y=p.pose.position.y, z=FLOOR_M) for p in base_path.poses
        ]
        out.markers.append(m)
    if label:
        m = _marker(header, "label", 0, Marker.TEXT_VIEW_FACING, "label")
        m.pose.position.x = float(scene.robot_pose.position.x)
        m.pose.position.y = float(scene.robot_pose.position.y)
        m.pose.position.z = 1.5
        m.scale.z = 0.3
        m.text = label
        out.markers.append(m)
    return out
