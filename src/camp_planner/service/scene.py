"""Scenes as a perception stack reports them, as plain data, and their validation.

Mirrors ``camp_msgs/msg/SceneObservation`` without depending on ROS: poses are planar
(x, y, yaw) in the scene's frame (``frame_id``, a goal pose included), sizes are bounding-box
extents in metres. What a domain's model can represent is checked by its adapter (NAMO:
:func:`camp_planner.domains.namo.scene_io.task_from_scene`); this module checks what every
scene needs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from camp_planner.service.errors import ErrorCode, ServiceError

Pose2 = tuple[float, float, float]


@dataclass(frozen=True)
class SceneObject:
    id: str
    object_class: str
    pose: Pose2
    size: tuple[float, float, float]
    movable: bool
    room: str = ""


@dataclass(frozen=True)
class Scene:
    domain: str
    robot_pose: Pose2
    objects: tuple[SceneObject, ...]
    goal_object_id: str = ""
    goal_xy: tuple[float, float] | None = None
    task_features: tuple[float, ...] = ()
    frame_id: str = "map"
    scene_id: str = field(default="", compare=False)
    goal_frame_id: str = ""  # the frame ``goal_xy`` was given in ("": the scene's)

    def object(self, object_id: str) -> SceneObject:
        for obj in self.objects:
            if obj.id == object_id:
                return obj
        raise ServiceError(ErrorCode.UNKNOWN_OBJECT, f"the scene has no object '{object_id}'")


def _finite(values: Iterable[float], what: str) -> None:
    if not all(math.isfinite(v) for v in values):
        raise ServiceError(ErrorCode.INVALID_SCENE, f"{what} has a NaN or infinite value")


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
    _finite(scene.robot_pose, "the robot pose")
    if not scene.objects:
        raise ServiceError(ErrorCode.EMPTY_SCENE, "the scene has no objects (not even walls)")
    seen: set[str] = set()
    for obj in scene.objects:
        if not obj.id:
            raise ServiceError(ErrorCode.INVALID_SCENE, "an object has an empty id")
        if obj.id in seen:
            raise ServiceError(ErrorCode.INVALID_SCENE, f"object id '{obj.id}' appears twice")
        seen.add(obj.id)
        _finite((*obj.pose, *obj.size), f"object '{obj.id}'")
        if min(obj.size) < 0:
            raise ServiceError(ErrorCode.INVALID_SCENE, f"object '{obj.id}' has a negative size")
    if scene.goal_xy is not None:
        _finite(scene.goal_xy, "the goal pose")
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
        elif scene.goal_xy is None:
            raise ServiceError(
                ErrorCode.MISSING_GOAL, "the scene has neither a goal object nor a goal pose"
            )
