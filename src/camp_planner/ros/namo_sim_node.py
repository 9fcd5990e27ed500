"""namo_sim: a NAMO task simulated in PyBullet, over ROS.

Publishes the task's scene on ``/scene`` (latched), executes every ``/plan`` it receives step
by step in its own simulator (base motions checked for collisions against every box and
wall, picks and places through IK) and reports on ``/execution_report`` how far it got,
whether the goal was reached and the scene afterwards; optionally renders each execution.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import rclpy
from rclpy.node import Node

from camp_msgs.msg import ExecutionReport, Plan, SceneObservation
from camp_planner.domains.namo.mdp import NamoMDP
from camp_planner.domains.namo.scene_io import execute_steps, scene_from_task
from camp_planner.ros.common import EXECUTION_TOPIC, LATCHED, PLAN_TOPIC, SCENE_TOPIC
from camp_planner.ros.convert import plan_steps, scene_to_msg
from camp_planner.workflow import Pipeline


class NamoSimNode(Node):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__("namo_sim", **kwargs)
        self.declare_parameter("config_file", "")
        self.declare_parameter("split", "test")
        self.declare_parameter("task_index", 0)
        self.declare_parameter("frame_id", "map")
        self.declare_parameter("render_dir", "")
        config = str(self.get_parameter("config_file").value)
        pipe = Pipeline.create("namo", Path(config) if config else None, Path("artifacts"))
        split = str(self.get_parameter("split").value)
        index = int(self.get_parameter("task_index").value)
        self.task = pipe.task(split, index)
        self.label = f"{split} task {index}"
        mdp = pipe.domain.make_mdp(self.task, pipe.config)
        assert isinstance(mdp, NamoMDP)
        self.mdp: NamoMDP = mdp
        self.state = self.mdp.initial_state()
        self.frame = str(self.get_parameter("frame_id").value)
        self.pub_scene = self.create_publisher(SceneObservation, SCENE_TOPIC, LATCHED)
        self.pub_report = self.create_publisher(ExecutionReport, EXECUTION_TOPIC, LATCHED)
        self.create_subscription(Plan, PLAN_TOPIC, self._on_plan, LATCHED)
        self.executions = 0
        self.publish_scene()
        self.get_logger().info(f"namo_sim: {self.label} on /{SCENE_TOPIC}")

    def scene_msg(self) -> Any:
        scene = scene_from_task(self.task, self.state, self.frame)
        return scene_to_msg(scene, self.get_clock().now().to_msg())

    def publish_scene(self) -> None:
        self.pub_scene.publish(self.scene_msg())

    def execute(self, plan: Plan) -> tuple[int, str]:
        """Run ``plan`` from the initial state; (steps executed, why it stopped or "")."""
        self.trace, done, why = execute_steps(self.mdp, plan_steps(plan))
        self.state = self.trace[-1]
        return done, why

    def _on_plan(self, plan: Plan) -> None:
        try:
            done, why = self.execute(plan)
        except Exception as exc:  # a bad plan must not take the simulator down
            done, why = 0, f"execution failed: {exc.__class__.__name__}: {exc}"
        reached = self.mdp.is_terminal(self.state)
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
        if render:
            self._render(Path(render) / f"namo_execution_{self.executions}.png", plan, reached)
        self.pub_report.publish(report)
        self.get_logger().info(f"executed {done}/{len(plan.steps)} steps: {report.message}")

    def _render(self, path: Path, plan: Plan, reached: bool) -> None:
        from camp_planner.domains.namo.mdp import layout
        from camp_planner.domains.namo.render import render_scene

        allowed = None
        for term in plan.context.terms:
            if term.variable == "robot_room":
                allowed = {int(v) for v in term.allowed_values}
        path_poses = [_pose(s[0]) for s in self.trace]
        moved: dict[str, tuple[float, float]] = {}
        for k, name in enumerate(layout(self.task.settings.grid).slot_names):
            value = self.state[3 + k]
            box = next((b for b in self.task.boxes if b.name == name), None)
            if (
                box is not None
                and isinstance(value, tuple)
                and abs(float(value[0]) - box.x) + abs(float(value[1]) - box.y) > 1e-3
            ):
                moved[name] = (float(value[0]), float(value[1]))
        title = (
            f"{self.label}: {plan.context.description or 'universal'}\n"
            f"{'goal reached' if reached else 'goal NOT reached'}, "
            f"planning {plan.planning_time:.2f} s, {len(moved)} boxes moved"
        )
        render_scene(
            self.task,
            path,
            allowed_rooms=allowed,
            dropped=set(plan.dropped_variables),
            base_path=path_poses,
            moved=moved,
            title=title,
        )
        self.last_render = path
        self.get_logger().info(f"wrote {path}")  # the only trace of it with one process per node

    def destroy_node(self) -> None:
        self.mdp.close()
        super().destroy_node()


def _pose(value: Any) -> tuple[float, float, float]:
    return (float(value[0]), float(value[1]), float(value[2]))


def main(args: list[str] | None = None) -> None:
    from camp_planner.ros.bringup import spin_nodes, start_node

    rclpy.init(args=args)
    spin_nodes([start_node(NamoSimNode)])


if __name__ == "__main__":
    main()
