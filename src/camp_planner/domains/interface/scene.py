"""Scenes as a perception stack reports them, as plain data, and their validation.

Mirrors ``camp_msgs/msg/SceneObservation`` without depending on ROS: every pose is a 3-D
pose (position and unit quaternion, as ``geometry_msgs/Pose``) in the scene's frame
(``frame_id``, a goal pose included), sizes are bounding-box extents in metres. What a
domain's model can represent is checked by its adapter (a planar domain such as NAMO reads
x, y and yaw and refuses a tilted pose); this module checks what every scene needs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from camp_planner.domains.interface.errors import ErrorCode, ServiceError

Pose2 = tuple[float, float, float]  # planar (x, y, yaw): what a mobile base drives to


@dataclass(frozen=True)
class Pose:
    """A 3-D pose: ``position`` (x, y, z) in metres and ``orientation`` as a quaternion
    (x, y, z, w), not necessarily of unit length (as a message may carry it)."""

    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    # The yaw a planar pose was made from: the quaternion gives it back only to within a few
    # ulps, and a planar domain's task must start exactly where its scene says. Used only
    # while ``orientation`` is still that yaw's quaternion.
    planar_yaw: float | None = field(default=None, compare=False, repr=False)

    @staticmethod
    def planar(x: float, y: float, yaw: float, z: float = 0.0) -> Pose:
        """The pose at (x, y, z) turned ``yaw`` about the vertical axis."""
        return Pose((x, y, z), _yaw_quaternion(yaw), yaw)

    @property
    def x(self) -> float:
        return self.position[0]

    @property
    def y(self) -> float:
        return self.position[1]

    @property
    def z(self) -> float:
        return self.position[2]

    @property
    def yaw(self) -> float:
        """The heading about the vertical axis (radians)."""
        if self.planar_yaw is not None and self.orientation == _yaw_quaternion(self.planar_yaw):
            return self.planar_yaw
        qx, qy, qz, qw = self.orientation
        return math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))

    def tilt(self) -> float:
        """How far (radians) the pose's own vertical axis leans from the world's: 0 for a
        pose turned about the vertical only (NaN for a zero quaternion, which
        :func:`validate_scene` refuses)."""
        qx, qy, qz, qw = self.orientation
        norm = qx * qx + qy * qy + qz * qz + qw * qw
        if norm == 0.0:
            return math.nan
        cos_tilt = 1.0 - 2.0 * (qx * qx + qy * qy) / norm
        return math.acos(max(-1.0, min(1.0, cos_tilt)))

    def as_planar(self) -> Pose2:
        return (self.x, self.y, self.yaw)

    def values(self) -> tuple[float, ...]:
        return (*self.position, *self.orientation)


def _yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    if not math.isfinite(yaw):  # no turn at all: NaN, which validate_scene refuses
        return (0.0, 0.0, math.nan, math.nan)
    return (0.0, 0.0, math.sin(yaw / 2.0), math.cos(yaw / 2.0))


@dataclass(frozen=True)
class SceneObject:
    id: str
    object_class: str
    pose: Pose
    size: tuple[float, float, float]
    movable: bool
    room: str = ""


@dataclass(frozen=True)
class Scene:
    domain: str
    robot_pose: Pose
    objects: tuple[SceneObject, ...]
    goal_object_id: str = ""
    goal_pose: Pose | None = None
    task_features: tuple[float, ...] = ()
    frame_id: str = "map"
    scene_id: str = field(default="", compare=False)
    goal_frame_id: str = ""  # the frame ``goal_pose`` was given in ("": the scene's)

    def object(self, object_id: str) -> SceneObject:
        for obj in self.objects:
            if obj.id == object_id:
                return obj
        raise ServiceError(ErrorCode.UNKNOWN_OBJECT, f"the scene has no object '{object_id}'")


def _finite(values: Iterable[float], what: str) -> None:
    if not all(math.isfinite(v) for v in values):
        raise ServiceError(ErrorCode.INVALID_SCENE, f"{what} has a NaN or infinite value")


def _pose(pose: Pose, what: str) -> None:
    _finite(pose.values(), what)
    if not any(pose.orientation):
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"{what} has a zero quaternion, which is no orientation (no turn is (0, 0, 0, 1))",
        )


def validate_scene(scene: Scene, need_goal: bool = True, frame_id: str = "map") -> None:
    """Raise :class:`ServiceError` naming the first problem of ``scene``, which must be given
    in frame ``frame_id`` (the planner's map frame).

    An empty frame id is refused too: a scene must say what its poses are relative to (the
    ROS converter reads an empty message header as ``map``; that is the converter's rule)."""
    if scene.frame_id != frame_id:
        given = f"frame '{scene.frame_id}'" if scene.frame_id else "no frame"
        raise ServiceError(
            ErrorCode.INVALID_SCENE,
            f"the scene is given in {given}; the planner works in frame '{frame_id}' "
            "(transform the scene into it)",
        )
    _pose(scene.robot_pose, "the robot pose")
    if not scene.objects:
        raise ServiceError(ErrorCode.EMPTY_SCENE, "the scene has no objects (not even walls)")
    seen: set[str] = set()
    for obj in scene.objects:
        if not obj.id:
            raise ServiceError(ErrorCode.INVALID_SCENE, "an object has an empty id")
        if obj.id in seen:
            raise ServiceError(ErrorCode.INVALID_SCENE, f"object id '{obj.id}' appears twice")
        seen.add(obj.id)
        _finite((*obj.pose.values(), *obj.size), f"object '{obj.id}'")
        _pose(obj.pose, f"object '{obj.id}'")
        if min(obj.size) < 0:
            raise ServiceError(ErrorCode.INVALID_SCENE, f"object '{obj.id}' has a negative size")
    if scene.goal_pose is not None:
        _finite(scene.goal_pose.position, "the goal pose")
        if scene.goal_frame_id not in ("", scene.frame_id):
            raise ServiceError(
                ErrorCode.INVALID_SCENE,
                f"the goal pose is given in frame '{scene.goal_frame_id}', the scene in "
                f"'{scene.frame_id}' (transform the goal into the scene's frame)",
            )
    _finite(scene.task_features, "the task features")
    if need_goal:
        if scene.goal_object_id:
            scene.object(scene.goal_object_id)
        elif scene.goal_pose is None:
            raise ServiceError(
                ErrorCode.MISSING_GOAL, "the scene has neither a goal object nor a goal pose"
            )


@dataclass(frozen=True)
class SceneTolerance:
    """How far a scene may differ from the one a plan was made for and still be that scene
    (perception noise, a stream that repeats the world at 10 Hz): ``position_m`` and
    ``angle_rad`` for the robot, every object and the goal. Without ``robot`` the robot's own
    motion never counts: for a planner beside an executor, which knows whether the robot
    moved as the plan said."""

    position_m: float = 0.05
    angle_rad: float = 0.1
    robot: bool = True


def _turn(a: Pose, b: Pose) -> float:
    """The angle (radians) of the rotation from ``a``'s orientation to ``b``'s."""
    na = math.sqrt(sum(v * v for v in a.orientation)) or 1.0
    nb = math.sqrt(sum(v * v for v in b.orientation)) or 1.0
    dot = abs(sum(x * y for x, y in zip(a.orientation, b.orientation, strict=True))) / (na * nb)
    return 2.0 * math.acos(min(1.0, dot))


def _moved(a: Pose, b: Pose, tol: SceneTolerance) -> str:
    shift = math.dist(a.position, b.position)
    if not shift <= tol.position_m:  # NaN too: a malformed scene is never the same
        return f"moved {shift:.2f} m"
    turn = _turn(a, b)
    if not turn <= tol.angle_rad:
        return f"turned {math.degrees(turn):.0f}°"
    return ""


def _names(ids: Iterable[str], limit: int = 3) -> str:
    ids = sorted(ids)
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def scene_change(planned: Scene | None, scene: Scene, tol: SceneTolerance) -> str:
    """Why ``scene`` needs a plan of its own when the last plan was made for ``planned``:
    "" when it is that scene within ``tol`` (the same objects, goal and frame, each pose
    within the tolerances), else the first difference found, for the log."""
    if planned is None:
        return "the first scene"
    values = [*scene.robot_pose.values(), *scene.task_features]
    values += [v for o in scene.objects for v in (*o.pose.values(), *o.size)]
    if not all(math.isfinite(v) for v in values):
        return "a NaN or infinite value"  # never the planned scene: validation refuses it
    if (planned.domain, planned.frame_id) != (scene.domain, scene.frame_id):
        return "the domain or the frame changed"
    if planned.goal_object_id != scene.goal_object_id or planned.task_features != (
        scene.task_features
    ):
        return "the goal changed"
    if (planned.goal_pose is None) != (scene.goal_pose is None):
        return "the goal changed"
    if (
        planned.goal_pose is not None
        and scene.goal_pose is not None
        and not math.dist(planned.goal_pose.position, scene.goal_pose.position) <= tol.position_m
    ):
        return "the goal pose moved"
    before = {o.id: o for o in planned.objects}
    after = {o.id: o for o in scene.objects}
    if after.keys() - before.keys():
        return f"new objects: {_names(after.keys() - before.keys())}"
    if before.keys() - after.keys():
        return f"objects gone: {_names(before.keys() - after.keys())}"
    for oid, new in after.items():
        old = before[oid]
        if (old.object_class, old.movable, old.room) != (new.object_class, new.movable, new.room):
            return f"object '{oid}' changed class, movability or room"
        if not math.dist(old.size, new.size) <= tol.position_m:
            return f"object '{oid}' changed size"
        moved = _moved(old.pose, new.pose, tol)
        if moved:
            return f"object '{oid}' {moved}"
    if tol.robot:
        moved = _moved(planned.robot_pose, scene.robot_pose, tol)
        if moved:
            return f"the robot {moved}"
    return ""
