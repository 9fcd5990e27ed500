"""Scene files: a :class:`~camp_planner.domains.interface.scene.Scene` as YAML, laid out as
the ``camp_msgs/SceneObservation`` message is (its field names, nesting and units).

One layout for every way a user hands over a scene: ``camp ros select-context --scene FILE``
and ``camp ros plan --scene FILE`` read it, ``camp scene`` writes it, and the same text
under a ``scene:`` key is the request ``ros2 service call /select_context
camp_msgs/srv/SelectContext`` takes. A field that is missing takes the message's default;
one of the wrong type or shape is a :class:`ServiceError` (``INVALID_SCENE``) naming its
path in the file (``objects[3].pose.position.x``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose, Scene, SceneObject


def _bad(where: str, what: str) -> ServiceError:
    return ServiceError(ErrorCode.INVALID_SCENE, f"scene file: {where}: {what}")


def _map(data: Any, where: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise _bad(where, f"expected a mapping with {', '.join(keys)}, got {data!r}")
    unknown = sorted(set(map(str, data)) - set(keys))
    if unknown:
        raise _bad(where, f"unknown field {unknown[0]!r} (fields: {', '.join(keys)})")
    return data


def _number(data: Mapping[str, Any], key: str, where: str, default: float = 0.0) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"{where}.{key}", f"expected a number, got {value!r}")
    return float(value)


def _text(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise _bad(f"{where}.{key}", f"expected text, got {value!r}")
    return value


def _xyz(data: Any, where: str) -> tuple[float, float, float]:
    xyz = _map(data, where, ("x", "y", "z"))
    return (_number(xyz, "x", where), _number(xyz, "y", where), _number(xyz, "z", where))


def _pose(data: Any, where: str) -> Pose:
    pose = _map(data, where, ("position", "orientation"))
    at = f"{where}.orientation"
    q = _map(pose.get("orientation"), at, ("x", "y", "z", "w"))
    return Pose(
        _xyz(pose.get("position"), f"{where}.position"),
        (_number(q, "x", at), _number(q, "y", at), _number(q, "z", at), _number(q, "w", at, 1.0)),
    )


def _object(data: Any, where: str) -> SceneObject:
    fields = ("id", "object_class", "pose", "size", "movable", "room")
    obj = _map(data, where, fields)
    movable = obj.get("movable", False)
    if not isinstance(movable, bool):
        raise _bad(f"{where}.movable", f"expected true or false, got {movable!r}")
    return SceneObject(
        _text(obj, "id", where),
        _text(obj, "object_class", where),
        _pose(obj.get("pose"), f"{where}.pose"),
        _xyz(obj.get("size"), f"{where}.size"),
        movable,
        _text(obj, "room", where),
    )


SCENE_FIELDS = (
    "header",
    "domain",
    "robot_pose",
    "objects",
    "goal_object_id",
    "goal_pose",
    "task_features",
)


def scene_from_dict(data: Any) -> Scene:
    """The scene a ``SceneObservation``-shaped mapping describes (a :class:`ServiceError`
    naming the first field that is not)."""
    top = _map(data, "the file", SCENE_FIELDS)
    header = _map(top.get("header"), "header", ("frame_id", "stamp"))
    objects = top.get("objects") or []
    if not isinstance(objects, list):
        raise _bad("objects", f"expected a list, got {objects!r}")
    goal = None
    goal_frame = ""
    stamped = _map(top.get("goal_pose"), "goal_pose", ("header", "pose"))
    goal_header = _map(stamped.get("header"), "goal_pose.header", ("frame_id", "stamp"))
    if not top.get("goal_object_id") and goal_header.get("frame_id"):
        goal = _pose(stamped.get("pose"), "goal_pose.pose")
        goal_frame = _text(goal_header, "frame_id", "goal_pose.header")
    features = top.get("task_features") or []
    if not isinstance(features, list):
        raise _bad("task_features", f"expected a list of numbers, got {features!r}")
    values = tuple(_number({"v": v}, "v", f"task_features[{i}]") for i, v in enumerate(features))
    return Scene(
        domain=_text(top, "domain", "the file"),
        robot_pose=_pose(top.get("robot_pose"), "robot_pose"),
        objects=tuple(_object(o, f"objects[{i}]") for i, o in enumerate(objects)),
        goal_object_id=_text(top, "goal_object_id", "the file"),
        goal_pose=goal,
        task_features=values,
        frame_id=_text(header, "frame_id", "header") or "map",
        goal_frame_id=goal_frame,
    )


def _pose_dict(pose: Pose) -> dict[str, Any]:
    return {
        "position": dict(zip("xyz", map(float, pose.position), strict=True)),
        "orientation": dict(zip("xyzw", map(float, pose.orientation), strict=True)),
    }


def scene_to_dict(scene: Scene) -> dict[str, Any]:
    """``scene`` as a ``SceneObservation``-shaped mapping (what :func:`scene_from_dict` reads)."""
    out: dict[str, Any] = {
        "header": {"frame_id": scene.frame_id},
        "domain": scene.domain,
        "robot_pose": _pose_dict(scene.robot_pose),
        "objects": [
            {
                "id": o.id,
                "object_class": o.object_class,
                "pose": _pose_dict(o.pose),
                "size": dict(zip("xyz", map(float, o.size), strict=True)),
                "movable": o.movable,
                "room": o.room,
            }
            for o in scene.objects
        ],
        "goal_object_id": scene.goal_object_id,
    }
    if scene.goal_pose is not None:
        out["goal_pose"] = {
            "header": {"frame_id": scene.goal_frame_id or scene.frame_id},
            "pose": _pose_dict(scene.goal_pose),
        }
    if scene.task_features:
        out["task_features"] = [float(v) for v in scene.task_features]
    return out


def read_scene_file(path: Path) -> Scene:
    """The scene in ``path``: a scene file, or a ``select_context`` request file holding it
    under ``scene:``. A :class:`ServiceError` (``INVALID_SCENE``) says what is wrong."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ServiceError(ErrorCode.INVALID_SCENE, f"cannot read {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ServiceError(ErrorCode.INVALID_SCENE, f"{path}: not valid YAML ({exc})") from None
    if isinstance(data, Mapping) and set(data) <= {"scene", "task_features", "stamp"} and data:
        data = data.get("scene")
    try:
        return scene_from_dict(data)
    except ServiceError as exc:
        raise ServiceError(exc.code, f"{path}: {exc.message}") from None


def scene_yaml(scene: Scene, request: bool = False) -> str:
    """``scene`` as the text of a scene file, or with ``request`` as a ``select_context``
    request (``scene:`` on top), which ``ros2 service call`` takes as it is."""
    data = scene_to_dict(scene)
    return yaml.safe_dump({"scene": data} if request else data, sort_keys=False)
