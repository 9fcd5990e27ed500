"""``camp bringup DOMAIN --closed-loop``: perception, the planner, the executor and the
simulated robot, run to the goal with disturbances on.

The simulated robot (``<domain>_robot``) publishes what it sees on ``camp/scene`` and serves
the controller actions; ``camp_executor`` is sent one ``ExecutePlan`` goal without a plan, so
it plans for the scene it sees (the TAMP server selects the context), executes the plan step
by step through the controllers, checks the scene after each step and replans from where
the robot is when the world disagrees. Each step and each replan is printed as it happens.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter

from camp_planner.core.errors import CampError
from camp_planner.execution.executive import ExecError
from camp_planner.ros.bringup import (
    closed_loop_nodes,
    start_processes,
    stop_processes,
)
from camp_planner.ros.client import CampClient
from camp_planner.ros.common import MANAGED_NODES


def run_closed_loop(
    system: str, ros_args: list[str], processes: bool, once: bool, wait_s: float
) -> int:
    """Bring the closed loop of ``system`` up with ``ros_args`` (``--ros-args`` and the
    parameter file), execute to the goal and report; 0 if the goal was reached."""
    from camp_planner.ros.lifecycle_manager import LifecycleManager

    names = closed_loop_nodes(system)
    rclpy.init(args=ros_args)
    executor = MultiThreadedExecutor(num_threads=8)
    manager = LifecycleManager(
        parameter_overrides=[
            Parameter("autostart", value=False),
            Parameter("node_names", value=[n for n in names if n in MANAGED_NODES]),
        ]
    )
    executor.add_node(manager)
    nodes: list[Any] = []
    procs: list[Any] = []
    client: CampClient | None = None
    try:
        if processes:
            params = Path(ros_args[ros_args.index("--params-file") + 1])
            overrides = [a for a in ros_args[1:] if a not in ("--params-file", str(params))]
            procs = start_processes(params, names, overrides, manage=False)
        else:
            from camp_planner.ros.executor_node import CampExecutorNode
            from camp_planner.ros.robot_sim_node import RobotSimNode
            from camp_planner.ros.tamp_server_node import TampServerNode

            print(f"[closed-loop] starting {', '.join(names)}")
            nodes = [TampServerNode(), CampExecutorNode(), RobotSimNode(system)]
            for node in nodes:
                executor.add_node(node)
        threading.Thread(target=executor.spin, daemon=True).start()
        up, why = manager.startup()
        if not up:
            print(f"camp_planner: cannot bring the system up: {why}", file=sys.stderr)
            return 2
        client = CampClient("camp_closed_loop")
        robot = next((n for n in nodes if n.get_name().endswith("_robot")), None)
        result = execute_and_report(client, wait_s)
        if robot is not None:
            print(f"[closed-loop] disturbances: {'; '.join(robot.fired) or 'none fired'}")
            print(f"[closed-loop] {robot.get_name()}: goal reached: {robot.robot.goal_reached()}")
        if not once:
            print("[closed-loop] done; still running (Ctrl-C to stop)")
            while rclpy.ok():
                time.sleep(0.5)
        return 0 if result.goal_reached else 1
    except KeyboardInterrupt:
        return 130
    finally:
        if client is not None:
            client.close()
        stop_processes(procs)
        if rclpy.ok():
            rclpy.shutdown()
        executor.shutdown()
        for node in [*nodes, manager]:
            node.destroy_node()


def execute_and_report(client: CampClient, wait_s: float) -> Any:
    """One ``ExecutePlan`` goal without a plan, its steps and replans printed as they come;
    the result."""
    seen: list[tuple[str, int, str]] = []

    def on_feedback(f: Any) -> None:
        key = (f.plan_id, int(f.step), f.phase)
        if f.phase in ("base", "replanning") and key not in seen:
            seen.append(key)
            if f.phase == "replanning":
                print(f"[closed-loop] the world disagrees with plan {f.plan_id}: replanning")
            else:
                print(f"[closed-loop] {f.plan_id} step {f.step + 1}/{f.steps_total}: {f.action}")

    t0 = time.monotonic()
    try:
        result = client.execute(None, timeout=wait_s, feedback=on_feedback)
    except Exception as exc:
        raise CampError(f"execution: {exc}") from None
    took = time.monotonic() - t0
    print(
        f"[closed-loop] {'goal reached' if result.goal_reached else 'goal NOT reached'} in "
        f"{took:.1f} s: {result.steps_executed} steps, {result.replans} replans"
        + ("" if result.error_code == 0 else f"; {_code(result.error_code)}")
        + (f": {result.error_message}" if result.error_message else "")
    )
    for k, (why, secs) in enumerate(
        zip(result.replan_reasons, result.replan_seconds, strict=False)
    ):
        print(f"[closed-loop] replan {k + 1}: {why} (new plan {secs:.2f} s after noticing)")
    return result


def _code(value: int) -> str:
    try:
        return ExecError(value).name.lower().replace("_", " ")
    except ValueError:
        return f"error {value}"
