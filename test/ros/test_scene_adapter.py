"""scene_adapter: a robot pose (PoseStamped or Odometry) and object markers become the
SceneObservation a camp_msgs perception stack would send; a pose in another frame is
refused and the node keeps going."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.pybullet]


def _wait(condition: Callable[[], object], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not condition():
        time.sleep(0.05)
    return bool(condition())


@pytest.mark.parametrize("domain", ["namo", "manip"])
def test_a_pose_and_markers_make_the_scene_they_show(domain: str, tmp_path: Path) -> None:
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter

    from camp_msgs.msg import SceneObservation
    from camp_planner.domains import get_plugin
    from camp_planner.ros.bringup import spin_executor
    from camp_planner.ros.common import LATCHED, SCENE_TOPIC
    from camp_planner.ros.convert import scene_from_msg, scene_to_msg
    from camp_planner.ros.scene_adapter_node import SceneAdapterNode, scene_markers_of
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create(domain, None, tmp_path)
    scene = get_plugin(domain).scene_from_task(pipe.task("test", 2), None, "map")
    statics = sorted({o.object_class for o in scene.objects if not o.movable})
    context = rclpy.Context()
    rclpy.init(context=context)
    adapter = SceneAdapterNode(
        context=context,
        parameter_overrides=[
            Parameter("domain", value=domain),
            Parameter("static_classes", value=statics),
            Parameter("publish_period_s", value=0.1),
        ],
    )
    peer = rclpy.create_node("adapter_test_peer", context=context)
    heard: list[Any] = []
    peer.create_subscription(SceneObservation, SCENE_TOPIC, heard.append, LATCHED)
    poses = peer.create_publisher(PoseStamped, "camp/robot_pose", 10)
    odometry = peer.create_publisher(Odometry, "odom", 10)
    objects = peer.create_publisher(type(scene_markers_of(scene_to_msg(scene))), "camp/objects", 10)
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(adapter)
    executor.add_node(peer)
    thread = threading.Thread(target=spin_executor, args=(executor,), daemon=True)
    thread.start()
    try:
        message = scene_to_msg(scene)
        assert _wait(lambda: objects.get_subscription_count() > 0)
        objects.publish(scene_markers_of(message))
        # Odometry in its own drifting frame is refused; nothing is published without a pose.
        drifting = Odometry()
        drifting.header.frame_id = "odom"
        drifting.pose.pose = message.robot_pose
        odometry.publish(drifting)
        time.sleep(0.5)
        assert not heard and adapter.scene() is None
        stamped = PoseStamped(pose=message.robot_pose)
        stamped.header.frame_id = "map"
        poses.publish(stamped)
        assert _wait(lambda: heard)
        read = scene_from_msg(heard[-1])
        # Markers carry no room label (an optional hint); everything else is the scene's.
        unlabelled = tuple(dataclasses.replace(o, room="") for o in scene.objects)
        assert read == dataclasses.replace(scene, objects=unlabelled)
        assert read.goal_object_id == scene.goal_object_id
        # And the planner's domain reads it as the same task.
        plugin = get_plugin(domain)
        assert plugin.task_from_scene(read, pipe.config, "map")[0] == plugin.task_from_scene(
            scene, pipe.config, "map"
        )[0]
    finally:
        context.try_shutdown()
        thread.join(5.0)
        executor.shutdown()
        adapter.destroy_node()
        peer.destroy_node()
