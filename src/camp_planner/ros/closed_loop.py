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
from camp_planner.ros.common import managed_nodes


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
            Parameter("node_names", value=managed_nodes(names)),
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
            print(f"[closed-loop] {robot.get_name()}: goal reached: {robot.sim.goal_reached()}")
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
    seen: set[tuple[str, int, bool]] = set()

    def on_feedback(f: Any) -> None:
        # Each step once, when its first controller goal goes out; each replan once.
        key = (f.plan_id, int(f.step), f.phase == "replanning")
        if f.phase == "checking" or key in seen:
            return
        seen.add(key)
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


# Systems a rig can run side by side: name → (selector_bundle, suffix of node and action names).
SYSTEMS = {"camp": ("", ""), "pure": ("none", "_pure")}


class LoopRig:
    """The closed loop in one context spun in the background, for tests and benchmarks: per
    system of :data:`SYSTEMS` (``camp`` replans with the shipped selector, ``pure`` with none,
    side by side under names of their own) a TAMP server and, with ``executor``, a
    ``camp_executor``; one simulated robot all of them drive; and a peer node that sends
    ``ExecutePlan`` and ``PlanTask`` goals."""

    def __init__(
        self,
        domain: str,
        robot: dict[str, Any],
        systems: tuple[str, ...] = ("camp",),
        executor: bool = True,
        artifacts: Path = Path("artifacts"),
    ) -> None:
        from camp_msgs.action import ExecutePlan, PlanTask
        from camp_planner.ros.bringup import spin_executor
        from camp_planner.ros.common import ActionClient
        from camp_planner.ros.executor_node import CampExecutorNode
        from camp_planner.ros.lifecycle_manager import LifecycleManager
        from camp_planner.ros.robot_sim_node import RobotSimNode
        from camp_planner.ros.tamp_server_node import TampServerNode

        def params(**given: Any) -> list[Parameter]:
            return [Parameter(k, value=v) for k, v in given.items()]

        def names(suffix: str, *rules: str) -> dict[str, Any]:
            if not suffix:
                return {}
            return {"cli_args": ["--ros-args", *(x for r in rules for x in ("-r", r))]}

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        ctx = {"context": self.context}
        self.nodes: list[Any] = []
        managed: list[str] = []
        self.execute: dict[str, Any] = {}
        self.plan_task: dict[str, Any] = {}
        self.peer = rclpy.create_node("closed_loop_rig", context=self.context)
        for system in systems:
            bundle, sfx = SYSTEMS[system]
            plan_rule = f"plan_task:=plan_task{sfx}"
            tamp = TampServerNode(
                **ctx,
                parameter_overrides=params(
                    domain=domain, artifacts=str(artifacts), selector_bundle=bundle
                ),
                **names(sfx, f"__node:=tamp_server{sfx}", plan_rule),
            )
            self.nodes.append(tamp)
            managed.append(f"tamp_server{sfx}")
            self.plan_task[system] = ActionClient(self.peer, PlanTask, f"plan_task{sfx}")
            if executor:
                self.nodes.append(
                    CampExecutorNode(
                        **ctx,
                        parameter_overrides=params(domain=domain, scene_timeout_s=10.0),
                        **names(
                            sfx,
                            f"__node:=camp_executor{sfx}",
                            plan_rule,
                            f"execute_plan:=execute_plan{sfx}",
                        ),
                    )
                )
                managed.append(f"camp_executor{sfx}")
            # Also without an executor here: one may run in a process of its own.
            self.execute[system] = ActionClient(self.peer, ExecutePlan, f"execute_plan{sfx}")
        fast = {"real_time_factor": 20.0, "scene_period_s": 0.1, **robot}
        self.robot = RobotSimNode(domain, **ctx, parameter_overrides=params(**fast))
        self.nodes.append(self.robot)
        self.manager = LifecycleManager(
            **ctx, parameter_overrides=params(node_names=managed, autostart=False)
        )
        self.spinner = MultiThreadedExecutor(num_threads=12, context=self.context)
        for node in [*self.nodes, self.manager, self.peer]:
            self.spinner.add_node(node)
        self._thread = threading.Thread(target=spin_executor, args=(self.spinner,), daemon=True)
        self._thread.start()
        self.feedback: list[Any] = []
        up, why = self.manager.startup()
        if not up:
            self.close()
            raise CampError(f"cannot bring the closed loop up: {why}")

    def node(self, name: str) -> Any:
        return next(n for n in self.nodes if n.get_name() == name)

    def send(self, plan: Any = None, system: str = "camp", **goal: Any) -> Any:
        """Send an ``ExecutePlan`` goal (``plan`` None: plan first); its goal handle."""
        from camp_msgs.action import ExecutePlan

        client = self.execute[system]
        if not client.wait_for_server(timeout_sec=30.0):
            raise CampError(f"no {system} execute_plan server")
        msg = ExecutePlan.Goal(replan=True, **goal)
        if plan is not None:
            msg.plan = plan
        sent = client.send_goal_async(msg, feedback_callback=self._on_feedback)
        return _done(sent, 30.0, "the ExecutePlan goal")

    def _on_feedback(self, msg: Any) -> None:
        self.feedback.append(msg.feedback)

    def result(self, handle: Any, timeout_s: float = 900.0) -> Any:
        return _done(handle.get_result_async(), timeout_s, "the ExecutePlan result").result

    def run(self, plan: Any = None, system: str = "camp", **goal: Any) -> Any:
        """Execute (``plan`` None: plan first) and wait for the ``ExecutePlan.Result``."""
        handle = self.send(plan, system, **goal)
        if not handle.accepted:
            raise CampError("the ExecutePlan goal was refused")
        return self.result(handle)

    def plan(self, system: str = "camp") -> Any:
        """A plan from the TAMP server for the scene the robot is in now."""
        from camp_msgs.action import PlanTask
        from camp_planner.ros.convert import scene_to_msg

        stamp = self.peer.get_clock().now().to_msg()
        goal = PlanTask.Goal(scene=scene_to_msg(self.robot.sim.scene("map"), stamp))
        goal.allow_fallback = True
        client = self.plan_task[system]
        if not client.wait_for_server(timeout_sec=30.0):
            raise CampError(f"no {system} plan_task server")
        handle = _done(client.send_goal_async(goal), 30.0, "the PlanTask goal")
        result = _done(handle.get_result_async(), 900.0, "the PlanTask result").result
        if not result.success:
            raise CampError(f"no plan: {result.error_message}")
        return result.plan

    def close(self) -> None:
        """Shut the rig down (again: nothing)."""
        if not self.context.ok():
            return
        self.context.try_shutdown()
        self._thread.join(5.0)
        self.spinner.shutdown()
        for node in [*self.nodes, self.manager, self.peer]:
            node.destroy_node()


def _done(future: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while not future.done():
        if time.monotonic() > deadline:
            raise CampError(f"{what}: no answer within {timeout_s:.0f} s")
        time.sleep(0.01)
    return future.result()
