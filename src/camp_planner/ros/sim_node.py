"""The sim node of any domain with a robot plug-in: a task simulated, over ROS.

Publishes the task's scene on ``camp/scene`` (latched), executes every ``camp/plan`` it receives
step by step in the domain's simulator (:class:`camp_planner.domains.interface.plugin.Simulator`:
NAMO's checks base motions against every box and wall and picks and places through IK) and
reports on ``camp/execution_report`` how far it got, whether the goal was reached and the scene
afterwards; optionally renders each execution. The node is named after the domain's
simulator (``namo_sim``), so one parameter file configures it whatever runs it.

Run as ``python -m camp_planner.ros.sim_node DOMAIN --ros-args ...``; NAMO's executable
``namo_sim`` is this node for ``namo``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import rclpy
from rclpy.node import Node
from rclpy.utilities import remove_ros_args

from camp_msgs.msg import ExecutionReport, Plan, SceneObservation
from camp_planner.domains import get_plugin
from camp_planner.domains.interface.plugin import DomainPlugin
from camp_planner.ros.bringup import spin_nodes, start_node
from camp_planner.ros.common import (
    EXECUTION_TOPIC,
    LATCHED,
    PLAN_TOPIC,
    SCENE_TOPIC,
    declare_world,
)
from camp_planner.ros.convert import plan_record, scene_to_msg
from camp_planner.workflow import Pipeline


class SimNode(Node):
    """The simulator of ``domain``'s plug-in behind ``camp/scene``, ``camp/plan`` and
    ``camp/execution_report``."""

    def __init__(self, domain: str = "namo", **kwargs: Any) -> None:
        self.plugin: DomainPlugin = get_plugin(domain)
        super().__init__(self.plugin.sim_node, **kwargs)
        self.declare_parameter("config_file", "")
        self.declare_parameter("split", "test")
        self.declare_parameter("task_index", 0)
        self.declare_parameter("frame_id", "map")
        self.declare_parameter("render_dir", "")
        # The world's configuration draws the scenes (10×10 rooms for NAMO's grid10), as
        # the planner nodes load it: they must agree on the world.
        _, config = declare_world(self, domain, str(self.get_parameter("config_file").value))
        pipe = Pipeline.create(domain, config, Path("artifacts"))
        split = str(self.get_parameter("split").value)
        index = int(self.get_parameter("task_index").value)
        self.task = pipe.task(split, index)
        self.label = f"{split} task {index}"
        self.sim = self.plugin.simulator(pipe.domain, pipe.config, self.task)
        self.frame = str(self.get_parameter("frame_id").value)
        self.pub_scene = self.create_publisher(SceneObservation, SCENE_TOPIC, LATCHED)
        self.pub_report = self.create_publisher(ExecutionReport, EXECUTION_TOPIC, LATCHED)
        self.create_subscription(Plan, PLAN_TOPIC, self._on_plan, LATCHED)
        self.executions = 0
        self.last_render: Path | None = None
        self.publish_scene()
        self.get_logger().info(f"{self.get_name()}: {self.label} on /{SCENE_TOPIC}")

    def scene_msg(self) -> Any:
        return scene_to_msg(self.sim.scene(self.frame), self.get_clock().now().to_msg())

    def publish_scene(self) -> None:
        self.pub_scene.publish(self.scene_msg())

    def _on_plan(self, plan: Plan) -> None:
        try:
            record = plan_record(plan)
            done, why = self.sim.execute(record.steps)
        except Exception as exc:  # a bad plan must not take the simulator down
            done, why = 0, f"execution failed: {exc.__class__.__name__}: {exc}"
            record = None
        reached = self.sim.goal_reached()
        report = ExecutionReport(
            goal_reached=bool(reached),
            steps_executed=done,
            steps_total=len(plan.steps),
            message=why or ("reached the goal" if reached else "the plan ended short of the goal"),
        )
        report.header.frame_id = self.frame
        report.header.stamp = self.get_clock().now().to_msg()
        report.scene = self.scene_msg()
        self.executions += 1
        render = str(self.get_parameter("render_dir").value)
        if render and record is not None:
            path = Path(render) / f"{self.plugin.domain}_execution_{self.executions}.png"
            if self.sim.render(path, record, reached, self.label):
                self.last_render = path
                # The only trace of the render with one process per node.
                self.get_logger().info(f"wrote {path}")
        self.pub_report.publish(report)
        self.get_logger().info(f"executed {done}/{len(plan.steps)} steps: {report.message}")

    def destroy_node(self) -> None:
        self.sim.close()
        super().destroy_node()


def main(args: list[str] | None = None, domain: str | None = None) -> None:
    """Run the sim node of ``domain`` (else the first argument before ``--ros-args``)."""
    argv = sys.argv if args is None else args
    if domain is None:
        own = remove_ros_args(argv)[1:]
        if len(own) != 1:
            raise SystemExit("usage: python -m camp_planner.ros.sim_node DOMAIN [--ros-args ...]")
        domain = own[0]
    rclpy.init(args=argv)
    spin_nodes([start_node(lambda: SimNode(domain))])


if __name__ == "__main__":
    main()
