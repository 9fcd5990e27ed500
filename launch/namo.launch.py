"""Launch the NAMO system: camp_planner, tamp_server and namo_sim with one parameter file.

    ros2 launch camp_planner namo.launch.py
    ros2 launch camp_planner namo.launch.py params_file:=/path/to/namo_params.yaml
    ros2 launch camp_planner namo.launch.py namespace:=robot1 use_sim_time:=true
    ros2 launch camp_planner namo.launch.py rviz:=true   # also RViz2 with config/ros/namo.rviz
    ros2 launch camp_planner namo.launch.py world:=grid10   # 10×10 rooms (config/namo/grid10.yaml)

Without the launch system (e.g. ROS 2 from PyPI wheels), `camp bringup namo --processes
--params config/ros/namo_params.yaml [--world grid10]` starts the same executables with the same
file and override.
"""

from __future__ import annotations

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.launch_context import LaunchContext
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from camp_planner.ros.launch_system import launch_nodes, system_arguments, system_names
from launch import LaunchDescription


def _nodes(context: LaunchContext) -> list[Node]:
    """The system's nodes and its lifecycle manager (``camp_planner.ros.launch_system``),
    with ``world`` over the parameter file only when the argument is given: an empty
    override would hide a ``world`` the file sets."""
    world = LaunchConfiguration("world").perform(context)
    overrides = [{"world": ParameterValue(world, value_type=str)}] if world else []
    return launch_nodes(context, system_names(context, "namo"), overrides)


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("camp_planner")
    actions = [
        DeclareLaunchArgument(
            "params_file",
            default_value=os.path.join(share, "config", "ros", "namo_params.yaml"),
            description="ROS 2 parameter file with a ros__parameters block per node",
        ),
        *system_arguments(),
        DeclareLaunchArgument(
            "world",
            default_value="",
            description="the world of every node (grid10: 10×10 rooms, config/namo/grid10.yaml "
            "and its shipped selector; or the absolute path of a world file, "
            "docs/your-building.md); empty: the parameter file's, else the paper's 3×3",
        ),
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
    actions.append(
        Node(
            package="rviz2",
            executable="rviz2",
            name="rviz2",
            arguments=["-d", os.path.join(share, "config", "ros", "namo.rviz")],
            condition=IfCondition(LaunchConfiguration("rviz")),
        )
    )
    return LaunchDescription(actions)
