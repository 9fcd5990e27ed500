"""Load and fault test of the ROS layer: many /select_context callers at once, then the
planning worker, the TAMP server and the camp_planner node killed mid-plan, each followed by
a valid scene that must be planned.

Starts `tamp_server` and `camp_planner` as separate processes (own ROS_DOMAIN_ID, loopback
discovery) with the given parameter file. Then:

1. load: ``--clients`` processes call /select_context ``--calls`` times in all, on the test
   tasks' scenes; the round trip's p50/p99 and every failure (no answer, or success=false)
   are counted;
2. faults, each mid-plan, each followed by a valid scene timed from the kill to its plan:
   ``worker`` (SIGKILL of tamp_server's planning worker), ``server`` (SIGKILL of
   tamp_server, then a fresh one started), ``planner`` (SIGKILL of camp_planner, then a
   fresh one started);
3. every process started (and their children) is stopped, and the script checks that none is
   left.

    .venv/bin/python scripts/stress_ros.py [--calls 1000] [--clients 4] [--json out.json]

Exit status 0 when every call was answered, every fault recovered and nothing was left
running; 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

FAULTS = ("worker", "server", "server_stop", "planner")
HARD_TASK = 3  # a test task whose plan takes seconds: long enough to be killed mid-plan
MARKER = "CAMP_STRESS_RUN"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def _scenes(config: Path | None, n: int) -> list[Any]:
    from camp_planner.domains.namo.scene_io import scene_from_task
    from camp_planner.ros.convert import scene_to_msg
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create("namo", config, Path("artifacts"))
    count = max(1, min(n, len(pipe.tasks("test"))))
    return [scene_to_msg(scene_from_task(pipe.task("test", i))) for i in range(count)]


def load_client(config: Path | None, calls: int, name: str) -> int:
    """One caller: ``calls`` requests, one JSON line of round trips (ms) and failures."""
    from camp_planner.ros.client import CampClient, ClientError

    scenes = _scenes(config, 10)
    client = CampClient(name)
    rtt: list[float] = []
    failures: list[str] = []
    try:
        client.select_context(scenes[0], timeout=30.0)  # discovery, not timed
        for i in range(calls):
            t0 = time.perf_counter()
            try:
                answer = client.select_context(scenes[i % len(scenes)], timeout=30.0)
            except ClientError as exc:
                failures.append(str(exc))
                continue
            rtt.append((time.perf_counter() - t0) * 1000)
            if not answer.success:
                failures.append(f"success=false: {answer.error_message}")
    finally:
        client.close()
    print(json.dumps({"rtt_ms": rtt, "failures": failures}), flush=True)
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def marked_processes(marker: str) -> list[int]:
    """Every process whose environment carries ``marker`` (children inherit it)."""
    pids = []
    needle = f"{MARKER}={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


class Rig:
    """The two nodes as processes, a client, and what the faults need to find and restart."""

    def __init__(self, params: Path, marker: str) -> None:
        from camp_planner.ros.client import CampClient

        self.params = params
        self.env = {**os.environ, MARKER: marker}
        self.env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.retired: list[subprocess.Popen[bytes]] = []
        self.managers: list[subprocess.Popen[bytes]] = []
        for name in ("tamp_server", "camp_planner"):
            self.start(name)
        self.client = CampClient("stress_client")

    def start(self, name: str) -> None:
        """Start node ``name`` and a lifecycle manager that configures and activates it (as
        the launch file's does, and again after every restart)."""
        from camp_planner.ros.bringup import manager_command, node_command

        self.procs[name] = subprocess.Popen(node_command(name, self.params), env=self.env)
        self.managers.append(
            subprocess.Popen(
                manager_command([name], node_name=f"stress_manager_{len(self.managers)}"),
                env=self.env,
            )
        )

    def kill(self, name: str, clean: bool = False) -> None:
        proc = self.procs.pop(name)
        if clean:
            from camp_planner.ros.bringup import stop_processes

            stop_processes([proc])
        else:
            proc.kill()
            proc.wait()
        self.retired.append(proc)

    def worker_pid(self) -> int | None:
        server = self.procs["tamp_server"].pid
        for pid in _children(server):
            line = _cmdline(pid)
            if "multiprocessing" in line and "resource_tracker" not in line:
                return pid
        return None

    def plan_scene(self, scene: Any, timeout: float) -> tuple[bool, float, str]:
        """Publish ``scene``; (a plan arrived, seconds to it, the last error status)."""
        plans, statuses = len(self.client.plans), len(self.client.statuses)
        t0 = time.monotonic()
        self.client.publish_scene(scene)
        ok = self.client.wait_for(lambda: len(self.client.plans) > plans, timeout)
        errors = [s.message for s in self.client.statuses[statuses:] if s.level == 2]
        return ok, time.monotonic() - t0, errors[-1] if errors else ""

    def wait_planning(self, timeout: float) -> bool:
        """Wait for camp_planner to report that it sent a goal to the server."""
        seen = len(self.client.statuses)
        return self.client.wait_for(
            lambda: any(
                s.stage == "planning" and "sent the CAMP" in s.message
                for s in self.client.statuses[seen:]
            ),
            timeout,
        )

    def close(self) -> None:
        from camp_planner.ros.bringup import stop_processes

        self.client.close()
        stop_processes([*self.procs.values(), *self.managers])


def run_fault(rig: Rig, fault: str, hard: Any, easy: Any, timeout: float) -> dict[str, Any]:
    plans = len(rig.client.plans)
    seen = len(rig.client.statuses)
    rig.client.publish_scene(hard)
    if not rig.wait_planning(60.0):
        return {"fault": fault, "recovered": False, "note": "the hard scene was never sent"}
    time.sleep(0.1)  # into the plan (a CAMP of the shipped selector takes about 0.4 s)
    mid_plan = len(rig.client.plans) == plans
    t_kill = time.monotonic()
    if fault == "worker":
        pid = rig.worker_pid()
        if pid is None:
            return {"fault": fault, "recovered": False, "note": "no planning worker found"}
        os.kill(pid, signal.SIGKILL)
    elif fault in ("server", "server_stop"):
        rig.kill("tamp_server", clean=fault == "server_stop")
        rig.start("tamp_server")
    else:
        rig.kill("camp_planner")
        rig.start("camp_planner")
    ok, _, error = rig.plan_scene(easy, timeout)
    statuses = [
        {"level": s.level, "code": s.error_code, "message": s.message}
        for s in rig.client.statuses[seen:]
        if s.level > 0
    ]
    return {
        "fault": fault,
        "mid_plan": mid_plan,
        "recovered": ok,
        "recovery_s": time.monotonic() - t_kill,
        "last_error": error,
        "warnings_and_errors": statuses,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=Path, default=Path("config/ros/namo_params.yaml"))
    parser.add_argument("--calls", type=int, default=1000, help="/select_context calls in all")
    parser.add_argument("--clients", type=int, default=4, help="caller processes")
    parser.add_argument(
        "--faults", nargs="*", default=list(FAULTS), choices=FAULTS, help="faults to inject"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="per recovery (s)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--load-client", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--config", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 1))
    if args.load_client is not None:
        return load_client(args.config, args.load_client, f"stress_load_{os.getpid()}")
    if args.calls < 1 or args.clients < 1 or not args.timeout > 0:
        parser.error("--calls and --clients must be ≥ 1, --timeout > 0")

    from camp_planner.ros.bringup import resolve_path

    params = yaml.safe_load(resolve_path(args.params).read_text())
    params.pop("namo_sim", None)
    planner = params["camp_planner"]["ros__parameters"]
    config = resolve_path(planner["config_file"]) if planner.get("config_file") else None
    marker = uuid.uuid4().hex
    t_start = time.monotonic()
    results: dict[str, Any] = {
        "command": "python scripts/stress_ros.py " + " ".join(argv or sys.argv[1:]),
        "host": f"{platform.node()} ({os.cpu_count()} cores)",
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        path.write_text(yaml.safe_dump(params))
        scenes = _scenes(config, HARD_TASK + 5)
        rig = Rig(path, marker)
        try:
            results["load"] = _load(args, config, rig.env)
            results["faults"] = [
                run_fault(rig, fault, scenes[HARD_TASK], scenes[HARD_TASK + 1], args.timeout)
                for fault in args.faults
            ]
            exits = {n: p.poll() for n, p in rig.procs.items() if p.poll() is not None}
            results["unexpected_exits"] = exits
        finally:
            rig.close()
    deadline = time.monotonic() + 10.0
    while marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = marked_processes(marker)
    results["left_running"] = [{"pid": p, "cmdline": _cmdline(p)} for p in left]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    results["wall_s"] = time.monotonic() - t_start
    _report(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    ok = (
        not results["load"]["failures"]
        and all(f["recovered"] for f in results["faults"])
        and not results["left_running"]
        and not results["unexpected_exits"]
    )
    return 0 if ok else 1


def _load(args: argparse.Namespace, config: Path | None, env: dict[str, str]) -> dict[str, Any]:
    share = [
        args.calls // args.clients + (i < args.calls % args.clients) for i in range(args.clients)
    ]
    cmd = [sys.executable, str(Path(__file__).resolve())]
    if config is not None:
        cmd += ["--config", str(config)]
    t0 = time.monotonic()
    procs = [
        subprocess.Popen(
            [*cmd, "--load-client", str(n)], env=env, stdout=subprocess.PIPE, text=True
        )
        for n in share
    ]
    rtt: list[float] = []
    failures: list[str] = []
    for proc in procs:
        out, _ = proc.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            failures.append(f"caller process exited with {proc.returncode}")
            continue
        row = json.loads(lines[-1])
        rtt += row["rtt_ms"]
        failures += row["failures"]
    return {
        "calls": args.calls,
        "clients": args.clients,
        "answered": len(rtt),
        "failures": failures,
        "p50_ms": _percentile(rtt, 0.5),
        "p99_ms": _percentile(rtt, 0.99),
        "wall_s": time.monotonic() - t0,
    }


def _report(results: dict[str, Any]) -> None:
    load = results["load"]
    print(
        f"/select_context: {load['calls']} calls from {load['clients']} processes: "
        f"{load['answered']} answered, {len(load['failures'])} failures; round trip "
        f"p50 {load['p50_ms']:.2f} ms, p99 {load['p99_ms']:.2f} ms"
    )
    for failure in load["failures"][:5]:
        print(f"  failure: {failure}")
    for f in results["faults"]:
        if "recovery_s" not in f:
            print(f"fault {f['fault']:<8}: NOT RUN ({f['note']})")
            continue
        state = "recovered" if f["recovered"] else "NOT RECOVERED"
        where = "mid-plan" if f["mid_plan"] else "after the plan"
        print(
            f"fault {f['fault']:<8} ({where}): {state}, the next scene planned "
            f"{f['recovery_s']:.1f} s after the kill"
        )
        for s in f["warnings_and_errors"]:
            print(f"    status level {s['level']} code {s['code']}: {s['message']}")
    print(f"unexpected node exits: {results['unexpected_exits'] or 'none'}")
    print(f"processes left running: {len(results['left_running'])}")
    print(f"wall time {results['wall_s']:.0f} s on {results['host']}")


if __name__ == "__main__":
    raise SystemExit(main())
