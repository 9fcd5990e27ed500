"""The nodes ``launch/namo.launch.py`` and ``launch/manip.launch.py`` start, for the launch
system (``ros2 launch``): imported only by those files, as it needs the ``launch`` packages
(not installable from PyPI; ``camp bringup`` is their stand-in here).

Every node runs in the launch's ``namespace`` and reads ``use_sim_time``; the lifecycle
manager beside them configures and activates the managed ones. Under a namespace the nodes
read a copy of the parameter file keyed by their namespaced names, as a bare node name
matches only at the root (:func:`camp_planner.ros.common.params_for_namespace`).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from launch.actions import DeclareLaunchArgument
from launch.launch_context import LaunchContext
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from camp_planner.ros.common import managed_nodes, params_for_namespace
from camp_planner.ros.lifecycle_manager import NAME


def system_arguments() -> list[DeclareLaunchArgument]:
    """The launch arguments :func:`launch_nodes` reads besides ``params_file``."""
    return [
        DeclareLaunchArgument(
            "namespace",
            default_value="",
            description="run the system under this namespace (e.g. robot1), beside others",
        ),
        DeclareLaunchArgument(
            "use_sim_time", default_value="false", description="read time from /clock"
        ),
        DeclareLaunchArgument(
            "closed_loop",
            default_value="",
            description="empty: the planner and the plan-executing sim node; sim: tamp_server, "
            "camp_executor and the simulated robot behind controller actions; robot: "
            "tamp_server and camp_executor, driving your robot's Nav2 and ros2_control",
        ),
    ]


def system_names(context: LaunchContext, domain: str) -> tuple[str, ...]:
    """The nodes the ``closed_loop`` argument asks for."""
    from camp_planner.ros.bringup import closed_loop_nodes, system_nodes

    mode = LaunchConfiguration("closed_loop").perform(context)
    if mode == "sim":
        return closed_loop_nodes(domain)
    if mode == "robot":
        return closed_loop_nodes(domain)[:2]
    if mode:
        raise ValueError(f"closed_loop:={mode}: give sim, robot or nothing")
    return system_nodes(domain)


def launch_nodes(
    context: LaunchContext, names: Sequence[str], overrides: Sequence[dict[str, Any]] = ()
) -> list[Node]:
    """The nodes ``names`` (with ``overrides`` over the parameter file) and the lifecycle
    manager, for an ``OpaqueFunction``."""
    namespace = LaunchConfiguration("namespace").perform(context)
    given = Path(LaunchConfiguration("params_file").perform(context))
    params = str(params_for_namespace(given, namespace, Path(tempfile.mkdtemp())))
    sim_time = {
        "use_sim_time": ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    }
    nodes = [
        Node(
            package="camp_planner",
            executable=name,
            name=name,
            namespace=namespace,
            parameters=[params, sim_time, *overrides],
            output="screen",
            emulate_tty=True,
        )
        for name in names
    ]
    managed = managed_nodes(names)
    manager = Node(
        package="camp_planner",
        executable=NAME,
        name=NAME,
        namespace=namespace,
        parameters=[{"node_names": managed, "autostart": True}, sim_time],
        output="screen",
    )
    return [*nodes, manager]
