"""scene_adapter: scenes for perception that does not speak ``camp_msgs``.

Subscribes to the robot's pose, as ``geometry_msgs/PoseStamped`` (``robot_pose_topic``,
e.g. a localiser's output) or ``nav_msgs/Odometry`` (``odometry_topic``), and to what
perception sees as ``visualization_msgs/MarkerArray`` (``objects_topic``), and publishes the
``camp_msgs/SceneObservation`` they make on ``camp/scene`` for the planner.

A marker is an object: its namespace is the object's class (``wall``, ``box``, ``goal``;
``table``, ``bin``, ``red``, ``blue``, ``green`` in manipulation), its ``text`` the object's id
(else ``<ns>_<id>``), its pose and ``scale`` the object's pose and bounding box. Classes in
``static_classes`` are static, the rest movable; an object of class ``goal`` is the goal.
``ADD``/``MODIFY`` markers add or replace, ``DELETE`` and ``DELETEALL`` remove, so a tracker
may send only what changed. Poses must be in ``frame_id`` (REP 105: the fixed ``map`` frame):
odometry in ``odom`` drifts, and without TF here nothing transforms it, so such a message is
refused with one log line until a pose in the right frame comes.

A scene goes out when both a pose and objects have arrived, and again when either changes,
at most every ``publish_period_s``; the planner's own tolerance decides whether a change is
a new task.
"""

from __future__ import annotations

import threading
from typing import Any

import rclpy
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from visualization_msgs.msg import Marker, MarkerArray

from camp_msgs.msg import ObjectObservation, SceneObservation
from camp_planner.ros.bringup import spin_nodes, start_node
from camp_planner.ros.common import LATCHED, SCENE_STREAM, SCENE_TOPIC

GOAL_CLASS = "goal"


class SceneAdapterNode(Node):
    """Robot pose + object markers in, ``SceneObservation`` out."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("scene_adapter", **kwargs)
        self.declare_parameter("domain", "namo")
        self.declare_parameter("frame_id", "map")
        self.declare_parameter("robot_pose_topic", "camp/robot_pose")
        self.declare_parameter("odometry_topic", "odom")
        self.declare_parameter("objects_topic", "camp/objects")
        self.declare_parameter("static_classes", ["wall", "table", "bin"])
        self.declare_parameter("publish_period_s", 0.5)
        self.frame = str(self.get_parameter("frame_id").value)
        self._lock = threading.Lock()
        self._markers: dict[tuple[str, int], Marker] = {}
        self._robot: Any = None
        self._changed = False
        self._refused = ""
        self.pub_scene = self.create_publisher(SceneObservation, SCENE_TOPIC, LATCHED)
        self.create_subscription(
            PoseStamped,
            str(self.get_parameter("robot_pose_topic").value),
            lambda m: self._on_pose(m.header.frame_id, m.pose),
            SCENE_STREAM,
        )
        self.create_subscription(
            Odometry,
            str(self.get_parameter("odometry_topic").value),
            lambda m: self._on_pose(m.header.frame_id, m.pose.pose),
            SCENE_STREAM,
        )
        self.create_subscription(
            MarkerArray, str(self.get_parameter("objects_topic").value), self._on_markers, 10
        )
        self.create_timer(float(self.get_parameter("publish_period_s").value), self._publish)

    def _refuse(self, why: str) -> None:
        if why != self._refused:  # one line per kind of problem, not one per message
            self._refused = why
            self.get_logger().error(why)

    def _on_pose(self, frame: str, pose: Any) -> None:
        if (frame or self.frame) != self.frame:
            self._refuse(
                f"a robot pose in frame '{frame}', not '{self.frame}': give the localised pose "
                f"(in '{self.frame}'); there is no TF here to transform it"
            )
            return
        with self._lock:
            self._robot, self._changed = pose, True

    def _on_markers(self, msg: MarkerArray) -> None:
        with self._lock:
            for marker in msg.markers:
                key = (str(marker.ns), int(marker.id))
                if marker.action == Marker.DELETEALL:
                    self._markers.clear()
                elif marker.action == Marker.DELETE:
                    self._markers.pop(key, None)
                elif (marker.header.frame_id or self.frame) != self.frame:
                    self._refuse(
                        f"marker {key[0]}/{key[1]} in frame '{marker.header.frame_id}', not "
                        f"'{self.frame}'"
                    )
                else:
                    self._markers[key] = marker
            self._changed = True

    def scene(self) -> SceneObservation | None:
        """The scene the latest pose and markers make (None until both have come)."""
        with self._lock:
            if self._robot is None or not self._markers:
                return None
            robot, markers = self._robot, list(self._markers.values())
        static = {str(c) for c in self.get_parameter("static_classes").value}
        msg = SceneObservation(domain=str(self.get_parameter("domain").value))
        msg.header.frame_id = self.frame
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.robot_pose = robot
        for marker in markers:
            obs = ObjectObservation(
                id=marker.text or f"{marker.ns}_{marker.id}",
                object_class=marker.ns,
                movable=marker.ns not in static,
            )
            obs.pose = marker.pose
            obs.size.x, obs.size.y, obs.size.z = marker.scale.x, marker.scale.y, marker.scale.z
            msg.objects.append(obs)
            if marker.ns == GOAL_CLASS:
                msg.goal_object_id = obs.id
        return msg

    def _publish(self) -> None:
        with self._lock:
            changed, self._changed = self._changed, False
        if not changed:
            return
        scene = self.scene()
        if scene is not None:
            self.pub_scene.publish(scene)


def scene_markers_of(scene: SceneObservation) -> MarkerArray:
    """The markers a perception stack would send for ``scene`` (what the adapter reads back
    as that scene): one cube per object, its class as namespace and its id as text."""
    out = MarkerArray()
    for k, obj in enumerate(scene.objects):
        marker = Marker(ns=obj.object_class, id=k, type=Marker.CUBE, action=Marker.ADD)
        marker.header.frame_id = scene.header.frame_id
        marker.text = obj.id
        marker.pose = obj.pose
        marker.scale.x, marker.scale.y, marker.scale.z = obj.size.x, obj.size.y, obj.size.z
        out.markers.append(marker)
    return out


def main(args: list[str] | None = None) -> None:
    rclpy.init(args=args)
    spin_nodes([start_node(SceneAdapterNode)], kind="single")


if __name__ == "__main__":
    main()
