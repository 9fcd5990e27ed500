"""``camp bringup`` and ``camp ros ...``: a domain's nodes and a client, without ``ros2``.

``camp bringup namo`` is ``ros2 launch camp_planner namo.launch.py`` for machines without the
launch system; ``camp ros select-context`` / ``camp ros plan`` / ``camp ros publish-scene``
do what ``ros2 service call`` / ``ros2 action send_goal`` / ``ros2 topic pub`` would, for a
task of the configured distribution of a domain with a robot plug-in.

The ``camp`` command imports this module for its parser on every run; rclpy, the nodes and the
domains' simulators are imported inside the functions that run a ROS command, so that the
rest of the CLI neither needs ROS nor pays for loading it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from camp_planner.core.errors import CampError
from camp_planner.domains import get_plugin, plugin_domains
from camp_planner.domains.interface.errors import ServiceError
from camp_planner.ros.worlds import WORLDS, check_world, describe_worlds

PARAMS = "config/ros/{system}_params.yaml"  # a system's ROS parameters (--params' default)
# How long --once waits for the plan once the execution report is in (both are latched, on
# different topics: the report of a quick execution can come first).
PLAN_AFTER_REPORT_S = 10.0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser(
        "bringup",
        help="run a domain's nodes (camp_planner, tamp_server, <domain>_sim) like `ros2 launch`",
        description="Start the three nodes with one ROS parameter file and watch them: a task "
        "is published, a context selected, the CAMP built, TAMP plans, the simulator executes.",
    )
    p.add_argument("system", choices=plugin_domains(), help="the domain to bring up")
    p.add_argument(
        "--params",
        type=Path,
        help=f"ROS 2 parameter file (default: {PARAMS.format(system='<system>')})",
    )
    p.add_argument("--task", type=int, help="override the sim node's task_index")
    p.add_argument(
        "--world",
        help="set every node's `world` parameter, over the file: the world's configuration "
        "(e.g. namo grid10: config/namo/grid10.yaml, 10×10 rooms) and shipped selector become "
        "the defaults of config_file and selector_bundle, which the file may still set; worlds: "
        + "; ".join(f"{d}: {describe_worlds(d)}" for d in sorted(WORLDS)),
    )
    p.add_argument(
        "--namespace",
        default="",
        help="run every node, topic, service and action under this namespace (e.g. robot1: "
        "/robot1/select_context, /robot1/camp/plan), so systems run side by side",
    )
    p.add_argument(
        "--use-sim-time",
        action="store_true",
        help="every node reads time from /clock (use_sim_time), as beside a simulator",
    )
    p.add_argument(
        "--closed-loop",
        action="store_true",
        help="run the closed loop instead: tamp_server, camp_executor and the simulated robot "
        "(<domain>_robot, behind FollowPath / FollowJointTrajectory / GripperCommand); the "
        "executor plans, executes step by step, watches the scene and replans",
    )
    p.add_argument(
        "--disturb",
        action="append",
        metavar="KIND@CONTROLLER#N",
        help="with --closed-loop, over the file's disturbances: e.g. block@base#2 (a box moved "
        "onto the path as the 2nd base goal starts), push@base#1, slip@base#2; 'none' for none",
    )
    p.add_argument("--processes", action="store_true", help="one process per node (as launch does)")
    p.add_argument("--once", action="store_true", help="exit after the first execution report")
    p.add_argument(
        "--wait", type=float, default=600.0, help="with --once: give up after this many seconds"
    )

    p = sub.add_parser("ros", help="client for running nodes: select-context, plan, publish-scene")
    ros = p.add_subparsers(dest="ros_command", required=True)
    for name, text in (
        ("select-context", "call /select_context for a task's scene (or --features)"),
        ("plan", "send a PlanTask goal for a task's scene and print the plan"),
        ("publish-scene", "publish a task's scene on camp/scene (the planner node plans it)"),
    ):
        q = ros.add_parser(name, help=text, description=text)
        q.add_argument(
            "--domain", choices=plugin_domains(), default="namo", help="the scene's domain"
        )
        q.add_argument(
            "--config",
            type=Path,
            help="domain configuration the tasks come from (default: the world's)",
        )
        q.add_argument(
            "--world",
            default="",
            help="the nodes' world, whose configuration the tasks come from (e.g. grid10)",
        )
        q.add_argument("--task", type=int, default=0, help="task index")
        q.add_argument("--split", choices=("train", "test"), default="test")
        q.add_argument(
            "--scene",
            type=Path,
            help="a scene file (`camp scene` writes one; your robot's own) instead of --task",
        )
        q.add_argument("--namespace", default="", help="the nodes' namespace (e.g. robot1)")
        q.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for an answer")
        q.add_argument("--json", action="store_true", help="print JSON")
        if name == "select-context":
            q.add_argument(
                "--features", type=Path, help="JSON list of task features instead of a scene"
            )
        if name == "plan":
            q.add_argument("--context", default="", help="context id (default: the server selects)")
            q.add_argument("--lambda", dest="lam", type=float, default=0.0, help="λ (0: default)")
            q.add_argument("--no-fallback", action="store_true", help="no fallback contexts")
        if name == "publish-scene":
            q.add_argument(
                "--wait-execution",
                action="store_true",
                help="then wait for the sim node's execution report and print it",
            )


def _scene_msg(args: argparse.Namespace) -> Any:
    from camp_planner.ros.common import config_path
    from camp_planner.ros.convert import scene_to_msg
    from camp_planner.workflow import Pipeline

    if getattr(args, "scene", None) is not None:
        from camp_planner.domains.interface.scene_file import read_scene_file

        try:
            return scene_to_msg(read_scene_file(args.scene))
        except ServiceError as exc:
            raise CampError(f"--scene {exc.message}") from None

    config = config_path(args.domain, args.world, str(args.config or ""))
    pipe = Pipeline.create(args.domain, config, Path("artifacts"))
    task = pipe.task(args.split, args.task)
    return scene_to_msg(get_plugin(args.domain).scene_from_task(task, None, "map"))


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if args.command == "bringup":
        return _bringup(args)
    return _ros(args)


def _ros(args: argparse.Namespace) -> int:
    import rclpy

    from camp_planner.ros.client import CampClient, ClientError

    scene = _scene_msg(args)
    if args.namespace:
        rclpy.init(args=["--ros-args", "-r", f"__ns:={_namespace(args.namespace)}"])
    client = CampClient()
    try:
        if args.ros_command == "select-context":
            features: list[float] = []
            if args.features:
                try:
                    features = [float(v) for v in json.loads(args.features.read_text())]
                except (OSError, ValueError, TypeError) as exc:
                    raise CampError(
                        f"--features {args.features}: not a JSON list of numbers ({exc})"
                    ) from exc
            t0 = time.perf_counter()
            r = client.select_context(None if features else scene, features, args.timeout)
            rtt = time.perf_counter() - t0
            out = {
                "success": r.success,
                "error_code": r.error_code,
                "error_message": r.error_message,
                "context": {"id": r.context.id, "description": r.context.description},
                "probability": r.probability,
                "proposed": {"id": r.proposed.id, "description": r.proposed.description},
                "gate_committed": r.gate_committed,
                "predicted_gain": None if math.isnan(r.predicted_gain) else r.predicted_gain,
                "gain_lower_bound": None if math.isnan(r.gain_lower_bound) else r.gain_lower_bound,
                "reason": r.reason,
                "rule": r.rule,
                "give_up": r.give_up,
                "candidates": [
                    {
                        "name": c.name,
                        "context_id": None if c.give_up else c.context.id,
                        "probability": _num(c.probability),
                        "predicted_objective": _num(c.predicted_objective),
                        "lower_bound": _num(c.lower_bound),
                        "training_tasks": c.training_tasks,
                    }
                    for c in r.candidates
                ],
                "fallback_order": list(r.fallback_order),
                "alternatives": [
                    {"id": c.id, "description": c.description, "probability": p}
                    for c, p in zip(r.alternatives, r.alternative_probabilities, strict=False)
                ][:5],
                "dropped_objects": list(r.dropped_objects),
                "selector_latency_ms": (r.selector_latency.sec + r.selector_latency.nanosec * 1e-9)
                * 1e3,
                "round_trip_ms": rtt * 1e3,
            }
            _print(out, args.json)
            return 0 if r.success else 1
        if args.ros_command == "plan":
            r = client.plan(
                scene,
                context_id=args.context,
                allow_fallback=not args.no_fallback,
                lambda_cost=args.lam,
                timeout=args.timeout,
                feedback=None if args.json else (lambda s, t: print(f"  ... {s} ({t:.1f} s)")),
            )
            _print(plan_summary(r), args.json)
            return 0 if r.success else 1
        client.publish_scene(scene)
        what = args.scene or f"{args.split} task {args.task}"
        print(f"published {what} on camp/scene")
        if args.wait_execution:
            report = client.wait_for_execution(args.timeout)
            _print(
                {
                    "goal_reached": report.goal_reached,
                    "steps_executed": report.steps_executed,
                    "steps_total": report.steps_total,
                    "message": report.message,
                },
                args.json,
            )
            return 0 if report.goal_reached else 1
        time.sleep(1.0)  # let the latched message reach subscribers before the node goes
        return 0
    except ClientError as exc:
        raise CampError(str(exc)) from exc
    finally:
        client.close()
        if args.namespace:
            rclpy.try_shutdown()


def plan_summary(result: Any) -> dict[str, Any]:
    plan = result.plan
    return {
        "success": result.success,
        "error_code": result.error_code,
        "error_message": result.error_message,
        "context": plan.context.description,
        "fallbacks": plan.fallbacks,
        "steps": len(plan.steps),
        "base_path_poses": len(plan.base_path.poses),
        "arm_trajectory_points": len(plan.arm_trajectory.points),
        "planning_time_s": round(plan.planning_time, 3),
        "expected_return": plan.expected_return,
        "objective": round(plan.objective, 2),
        "stage_times_s": {s.stage: round(s.seconds, 3) for s in plan.stage_times},
        "dropped_objects": list(plan.dropped_objects),
    }


def _num(value: float) -> float | None:
    """A message's float as JSON: NaN (none) and ±inf (no bound) as null."""
    return float(value) if math.isfinite(value) else None


def _print(record: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(record))
        return
    for key, value in record.items():
        print(f"{key:>22}: {value}")


def _bringup(args: argparse.Namespace) -> int:
    import rclpy

    from camp_planner.ros.bringup import (
        monitor,
        start_processes,
        stop_processes,
        system_nodes,
    )
    from camp_planner.ros.common import managed_nodes, params_for_namespace, resolve_path

    given = args.params if args.params is not None else Path(PARAMS.format(system=args.system))
    params = resolve_path(given)
    if not params.is_file():
        raise CampError(f"no parameter file {given}")
    _check_params(params)
    names = system_nodes(args.system)
    sim = names[-1]
    if args.disturb and not args.closed_loop:
        raise CampError("--disturb needs --closed-loop")
    # A global -p: every node of the system reads it (and wins over the file's value).
    overrides = (
        [] if args.world is None else ["-p", f"world:='{check_world(args.system, args.world)}'"]
    )
    # Global rules, so every node of the system and this process's own nodes move together.
    if args.namespace:
        overrides += ["-r", f"__ns:={_namespace(args.namespace)}"]
    if args.use_sim_time:
        overrides += ["-p", "use_sim_time:=true"]
    if args.namespace:
        params = params_for_namespace(params, args.namespace, Path(tempfile.mkdtemp()))
    ros_args = ["--ros-args", "--params-file", str(params), *overrides]
    if args.closed_loop:
        sim = f"{args.system}_robot"
    if args.task is not None:
        ros_args += ["-p", f"{sim}:task_index:={args.task}"]
    os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 1))
    print(
        f"[bringup] ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']}, discovery "
        f"{os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE']}, params {params}"
        + ("" if args.world is None else f", world {args.world or 'default'}")
        + (f", namespace {_namespace(args.namespace)}" if args.namespace else "")
    )
    if args.closed_loop:
        from camp_planner.ros.closed_loop import run_closed_loop

        if args.disturb:
            given = [d for d in args.disturb if d != "none"] or [""]
            ros_args += ["-p", f"{sim}:disturbances:={_yaml_list(given)}"]
        return run_closed_loop(args.system, ros_args, args.processes, args.once, args.wait)
    rclpy.init(args=ros_args)
    procs: list[Any] = []
    nodes: list[Any] = []
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter

    from camp_planner.ros.lifecycle_manager import LifecycleManager

    executor = MultiThreadedExecutor(num_threads=6)
    watcher = Node("camp_bringup_monitor")
    # The nodes log every status themselves (one line per event); the monitor only watches.
    watch = monitor(watcher)
    executor.add_node(watcher)
    # Driven from here rather than at its start, so a node that cannot configure ends the
    # bring-up with the node's own reason and status 2.
    manager = LifecycleManager(
        parameter_overrides=[
            Parameter("autostart", value=False),
            Parameter("node_names", value=managed_nodes(names)),
        ]
    )
    executor.add_node(manager)
    try:
        if args.processes:
            if args.task is not None:
                raise CampError(f"--task with --processes: set {sim}.task_index in the file")
            procs = start_processes(params, names, overrides, manage=False)
        else:
            from camp_planner.ros.camp_planner_node import CampPlannerNode
            from camp_planner.ros.sim_node import SimNode
            from camp_planner.ros.tamp_server_node import TampServerNode

            print(f"[bringup] starting tamp_server (warm planning worker), camp_planner, {sim}")
            nodes = [TampServerNode(), CampPlannerNode(), SimNode(args.system)]
            for node in nodes:
                executor.add_node(node)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()
        up, why = manager.startup()
        if not up:
            print(f"camp_planner: cannot bring the system up: {why}", file=sys.stderr)
            return 2
        if not args.once:
            print(
                "[bringup] running; Ctrl-C to stop. To watch it: "
                f"rviz2 -d config/ros/{args.system}.rviz (the CAMP on camp/markers)"
            )
            while rclpy.ok():
                time.sleep(0.5)
            return 0
        if not watch.done.wait(args.wait):
            raise CampError(f"no execution report within {args.wait:.0f} s")
        if watch.report is not None:
            watch.planned.wait(PLAN_AFTER_REPORT_S)
        return _report(watch, nodes, sim)
    except KeyboardInterrupt:
        return 130
    finally:
        stop_processes(procs)
        if rclpy.ok():
            rclpy.shutdown()
        executor.shutdown()
        for node in [*nodes, watcher, manager]:
            node.destroy_node()


def _yaml_list(values: list[str]) -> str:
    return "[" + ",".join(f"'{v}'" for v in values) + "]"


def _namespace(given: str) -> str:
    """``given`` as an absolute ROS namespace; a :class:`CampError` if it is not one."""
    ns = "/" + given.strip("/")
    if not all(
        part and part[0].isalpha() and part.replace("_", "").isalnum() for part in ns[1:].split("/")
    ):
        raise CampError(
            f"--namespace {given!r}: give names of letters, digits and underscores, each "
            "starting with a letter, separated by / (e.g. robot1 or fleet/robot1)"
        )
    return ns


def _check_params(path: Path) -> None:
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise CampError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and "ros__parameters" in v for v in data.values()
    ):
        raise CampError(f"{path}: expected `<node>: {{ros__parameters: {{...}}}}` blocks")


def _report(watch: Any, nodes: list[Any], sim: str = "namo_sim") -> int:
    report, plan = watch.report, watch.plan
    if report is None:
        print("[bringup] planning failed; see the status lines above", file=sys.stderr)
        return 1
    if plan is not None:
        print(
            f"[bringup] context: {plan.context.description or 'universal'} ({plan.context.id}),"
            f" {plan.fallbacks} fallbacks"
        )
        print(
            f"[bringup] dropped objects ({len(plan.dropped_objects)}): "
            f"{', '.join(plan.dropped_objects) or 'none'}"
        )
        for s in plan.stage_times:
            print(f"[bringup]   {s.stage:<18} {s.seconds * 1000:9.1f} ms")
        print(
            f"[bringup] plan: {len(plan.steps)} steps, {len(plan.base_path.poses)} base poses, "
            f"{len(plan.arm_trajectory.points)} arm waypoints; expected return "
            f"{plan.expected_return:.0f}, objective {plan.objective:.1f}"
        )
    print(
        f"[bringup] {sim} executed {report.steps_executed}/{report.steps_total} steps: "
        f"{report.message}; goal reached: {report.goal_reached}"
    )
    for node in nodes:
        render = getattr(node, "last_render", None)
        if render is not None:
            print(f"[bringup] wrote {render}")
    return 0 if report.goal_reached else 1
