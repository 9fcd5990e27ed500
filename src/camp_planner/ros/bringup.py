"""Bring a domain's nodes up without the launch system (ROS 2's manual composition).

``ros2 launch camp_planner namo.launch.py`` needs the ``launch`` packages, which are not
installable from PyPI. This runs the same three nodes (the planner, the TAMP server and the
domain's sim node) with the same parameter file, either
composed in one process on a multi-threaded executor or as one process per node (what the
launch file does), and watches ``camp/status`` and ``camp/execution_report``.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import rclpy
from rclpy.executors import (
    ExternalShutdownException,
    MultiThreadedExecutor,
    SingleThreadedExecutor,
)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node

from camp_msgs.msg import ExecutionReport, Plan, Status
from camp_planner.core.errors import CampError
from camp_planner.ros.common import (
    EVENTS,
    EXECUTION_TOPIC,
    LATCHED,
    PLAN_TOPIC,
    STATUS_TOPIC,
    managed_nodes,
)
from camp_planner.ros.common import resolve_path as resolve_path  # scripts import it from here

RCLError = _rclpy.RCLError  # rclpy raises it, but exports it only from its C extension

# The nodes every system runs; each domain adds its sim node, "<domain>_sim" (sim_node.py).
NODE_MODULES = {
    "tamp_server": "camp_planner.ros.tamp_server_node",
    "camp_planner": "camp_planner.ros.camp_planner_node",
}
SIM_SUFFIX = "_sim"
# The closed loop (``camp bringup DOMAIN --closed-loop``): the executor and the domain's
# simulated robot behind controller actions ("<domain>_robot", robot_sim_node.py) instead of
# the planner node and the plan-executing sim node.
EXECUTOR_MODULE = "camp_planner.ros.executor_node"
ROBOT_SUFFIX = "_robot"
# Brings the managed ones up (the tamp_server and camp_planner lifecycle nodes).
MANAGER_MODULE = "camp_planner.ros.lifecycle_manager"


def system_nodes(domain: str = "namo") -> tuple[str, ...]:
    """The nodes ``camp bringup DOMAIN`` (and ``launch/DOMAIN.launch.py``) starts."""
    return (*NODE_MODULES, f"{domain}{SIM_SUFFIX}")


def closed_loop_nodes(domain: str = "namo") -> tuple[str, ...]:
    """The nodes ``camp bringup DOMAIN --closed-loop`` starts."""
    return ("tamp_server", "camp_executor", f"{domain}{ROBOT_SUFFIX}")


def start_node(factory: Callable[[], Node]) -> Node:
    """Construct a node; a configuration it cannot start with (missing bundle or config file,
    unknown domain or planner) ends the process with one clear line and status 2."""
    enable_stack_dumps()
    try:
        return factory()
    except CampError as exc:
        print(f"camp_planner: cannot start the node: {exc}", file=sys.stderr)
        if rclpy.ok():
            rclpy.shutdown()
        raise SystemExit(2) from None


def enable_stack_dumps() -> None:
    """``kill -USR1 <pid>`` prints every thread's stack to stderr: what a node that does not
    stop is doing (:func:`stop_processes` asks for it before it kills one)."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)


def make_executor(kind: str | None = None, threads: int = 4) -> Any:
    """The executor named by ``$CAMP_ROS_EXECUTOR`` or else ``kind``: ``single`` or
    ``multi`` (the default).

    A single-threaded executor answers a service call faster (about 1 ms less per round trip
    here: no thread hand-off, less GIL contention), so nodes whose long work runs in their own
    threads use it; the TAMP server needs ``multi`` to reject a second goal while one runs.
    rclpy's experimental EventsExecutor is not offered: under Jazzy's wheels it hung on the
    first service call and ignored SIGTERM.
    """
    kind = os.environ.get("CAMP_ROS_EXECUTOR") or kind or "multi"
    if kind == "single":
        return SingleThreadedExecutor()
    if kind != "multi":
        raise ValueError(f"CAMP_ROS_EXECUTOR={kind!r}: choose single or multi")
    return MultiThreadedExecutor(num_threads=threads)


def spin_executor(executor: Any) -> None:
    """``executor.spin()`` that returns quietly when the context is shut down under it
    (also when that happens between its check of the context and its wait: see
    :func:`spin_nodes`)."""
    with contextlib.suppress(KeyboardInterrupt, ExternalShutdownException):
        try:
            executor.spin()
        except RCLError:
            if executor.context.ok():
                raise


def spin_nodes(nodes: Sequence[Node], threads: int = 4, kind: str | None = None) -> None:
    """Spin ``nodes`` until Ctrl-C or shutdown, then tear down in an order that does not
    crash: shutdown → executor → nodes."""
    executor = make_executor(kind, threads)
    for node in nodes:
        executor.add_node(node)
    try:
        # Woken every half second rather than only by a callback: once in CI a node's
        # executor stayed in its wait for 30 s after SIGINT (the wake-up was lost) and had
        # to be killed. A wait that times out returns to Python, where a pending
        # KeyboardInterrupt is raised, or sees that rclpy's handler shut the context down.
        with contextlib.suppress(KeyboardInterrupt, ExternalShutdownException):
            while executor.context.ok():
                try:
                    executor.spin_once(timeout_sec=0.5)
                except RCLError:
                    # SIGINT's handler shut the context down between the check above and
                    # the wait's timer (once in CI: "failed to create timer: the given
                    # context is not valid"); anything else is a real error.
                    if executor.context.ok():
                        raise
                    break
    finally:
        if rclpy.ok():
            rclpy.shutdown()
        # The limit is a request, not a bound: rclpy 9's Executor.shutdown sets its shutdown
        # flag before the check that would wait, and MultiThreadedExecutor then joins its
        # thread pool without one. A node stuck here is diagnosed by stop_processes' stacks.
        executor.shutdown(timeout_sec=10.0)
        for node in nodes:
            node.destroy_node()


@dataclass
class Watch:
    """What the monitor saw: status lines, the plan, the execution report."""

    statuses: list[Any] = field(default_factory=list)
    plan: Any = None
    report: Any = None
    done: threading.Event = field(default_factory=threading.Event)
    # Set when the plan arrives: the plan and the report come on different topics, and the
    # report of a quick execution can be delivered first.
    planned: threading.Event = field(default_factory=threading.Event)


def monitor(node: Node, echo: Callable[[str], None] | None = None) -> Watch:
    """Subscribe ``node`` to the status, plan and execution topics; ``done`` is set when an
    execution report or an error status arrives."""
    watch = Watch()
    say = echo or (lambda line: None)

    def on_status(msg: Status) -> None:
        watch.statuses.append(msg)
        say(f"[{msg.stage}] {msg.message}")
        if msg.level == Status.LEVEL_ERROR and msg.stage in (
            "scene",
            "selection",
            "planning",
            "plan",
        ):
            watch.done.set()

    def on_plan(msg: Plan) -> None:
        watch.plan = msg
        watch.planned.set()

    def on_report(msg: ExecutionReport) -> None:
        watch.report = msg
        watch.done.set()

    node.create_subscription(Status, STATUS_TOPIC, on_status, EVENTS)
    node.create_subscription(Plan, PLAN_TOPIC, on_plan, LATCHED)
    node.create_subscription(ExecutionReport, EXECUTION_TOPIC, on_report, LATCHED)
    return watch


def node_command(name: str, params: Path, overrides: Sequence[str] = ()) -> list[str]:
    """The command that runs node ``name`` (of :func:`system_nodes`) with ``params``, then
    ``overrides`` (``--ros-args`` arguments such as ``-p world:=grid10``, which win over the
    file)."""
    if name in NODE_MODULES:
        target = [NODE_MODULES[name]]
    elif name == "camp_executor":
        target = [EXECUTOR_MODULE]
    elif name.endswith(SIM_SUFFIX):
        target = ["camp_planner.ros.sim_node", name.removesuffix(SIM_SUFFIX)]
    elif name.endswith(ROBOT_SUFFIX):
        target = ["camp_planner.ros.robot_sim_node", name.removesuffix(ROBOT_SUFFIX)]
    else:
        known = sorted({*system_nodes(), *closed_loop_nodes()})
        raise CampError(f"unknown node '{name}': choose one of {', '.join(known)}")
    return [sys.executable, "-m", *target, "--ros-args", "--params-file", str(params), *overrides]


def start_processes(
    params: Path,
    names: Sequence[str] = system_nodes(),
    overrides: Sequence[str] = (),
    manage: bool = True,
) -> list[subprocess.Popen[bytes]]:
    """One process per node, as the launch file starts them (inherits the environment, so
    ``ROS_DOMAIN_ID`` and the discovery range carry over); ``overrides`` as in
    :func:`node_command`. With ``manage``, a ``camp_lifecycle_manager`` process too, which
    configures and activates the managed nodes among ``names``, as the launch file's does."""
    env = dict(os.environ)
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    commands = [node_command(n, params, overrides) for n in names]
    managed = managed_nodes(names)
    if manage and managed:
        commands.append(manager_command(managed, overrides))
    return [subprocess.Popen(command, env=env) for command in commands]


def manager_command(
    names: Sequence[str], overrides: Sequence[str] = (), node_name: str = ""
) -> list[str]:
    """The command of a ``camp_lifecycle_manager`` that brings up the managed nodes
    ``names`` (as ``node_name``, when several run at once)."""
    rename = ["-r", f"__node:={node_name}"] if node_name else []
    return [
        sys.executable,
        "-m",
        MANAGER_MODULE,
        "--ros-args",
        *overrides,
        *rename,
        "-p",
        f"node_names:=[{','.join(names)}]",
    ]


def stop_processes(procs: Sequence[subprocess.Popen[bytes]], grace_s: float = 30.0) -> None:
    """SIGINT every process (the nodes' own clean shutdown); one still running ``grace_s``
    later prints its threads' stacks (SIGUSR1, see :func:`enable_stack_dumps`) and is
    killed. 30 s by default: a node mid-render on a loaded machine needs a while."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            print(
                f"camp_planner: process {p.pid} ({p.args!r}) did not stop on SIGINT; its threads:",
                file=sys.stderr,
                flush=True,
            )
            p.send_signal(signal.SIGUSR1)
            time.sleep(2.0)
            p.kill()
            p.wait()
