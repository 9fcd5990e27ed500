"""Launch the manipulation system (paper domain D4): camp_planner, tamp_server and manip_sim
with one parameter file.

    ros2 launch camp_planner manip.launch.py
    ros2 launch camp_planner manip.launch.py params_file:=/path/to/manip_params.yaml
    ros2 launch camp_planner manip.launch.py namespace:=robot1 use_sim_time:=true
    ros2 launch camp_planner manip.launch.py rviz:=true   # also RViz2, with config/ros/manip.rviz

Without the launch system (e.g. ROS 2 from PyPI wheels), `camp bringup manip --processes
--params config/ros/manip_params.yaml` starts the same executables with the same file.
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_context import LaunchContext
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from camp_planner.ros.launch_system import launch_nodes, system_arguments, system_names
from launch import LaunchDescription


def _nodes(context: LaunchContext) -> list[Node]:
    """The system's nodes and its lifecycle manager (``camp_planner.ros.launch_system``)."""
    return launch_nodes(context, system_names(context, "manip"))


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("camp_planner")
    actions = [
        DeclareLaunchArgument(
            "params_file",
            default_value=os.path.join(share, "config", "ros", "manip_params.yaml"),
            description="ROS 2 parameter file with a ros__parameters block per node",
        ),
        *system_arguments(),
        OpaqueFunction(function=_nodes),
    ]
    actions.append(
        DeclareLaunchArgument(
            "rviz",
            default_value="false",
            description="also start RViz2 showing the context, the CAMP and the base path",
        )
    )
    # RViz2 is not a dependency of the package: install it (ros-$ROS_DISTRO-rviz2) to use it.
    # NAMO's view serves: a top-down view of camp/markers and the base path in `map`.
    actions.append(
        Node(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            arguments=["-d", os.path.join(share, "config", "ros", "manip.rviz")],
            condition=IfCondition(LaunchConfiguration("rviz")),
        )
    )
    return LaunchDescription(actions)
