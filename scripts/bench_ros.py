"""Benchmark the ROS layer: /select_context latency, and scene-to-plan latency over ROS for
the learned CAMP (the server selects a context, with fallbacks) vs the universal context.

Starts `camp_planner` and `tamp_server` as separate processes with the given parameter file
(own ROS_DOMAIN_ID, loopback discovery), then from a client node: N calls of
/select_context on the test tasks' scenes (p50/p99 round trip and the selector's own
latency), and one PlanTask goal per test task and method, timed from sending the scene to
receiving the plan. Every plan the server returns has already been executed in its simulator.

    .venv/bin/python scripts/bench_ros.py [--calls 1000] [--tasks 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=Path, default=Path("config/ros/namo_params.yaml"))
    parser.add_argument("--calls", type=int, default=1000, help="/select_context calls")
    parser.add_argument("--tasks", type=int, default=10, help="NAMO test tasks to plan")
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument(
        "--burst", type=int, default=300, help="/select_context requests sent at once (0: none)"
    )
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    args = parser.parse_args(argv)
    if args.calls < 1 or args.tasks < 0 or args.burst < 0 or not args.timeout > 0:
        parser.error("--calls must be ≥ 1, --tasks and --burst ≥ 0, --timeout > 0")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 1))

    from camp_planner.domains.namo.scene_io import scene_from_task
    from camp_planner.ros.bringup import resolve_path, start_processes, stop_processes
    from camp_planner.ros.client import CampClient
    from camp_planner.ros.convert import scene_to_msg
    from camp_planner.ros.profiling import select_cost_breakdown
    from camp_planner.workflow import Pipeline

    params = yaml.safe_load(resolve_path(args.params).read_text())
    planner = params["camp_planner"]["ros__parameters"]
    planner["plan_on_scene"] = False  # the client sends the goals itself
    params.pop("namo_sim", None)
    # "": the domain's defaults, as the nodes read it
    config = resolve_path(planner["config_file"]) if planner.get("config_file") else None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        path.write_text(yaml.safe_dump(params))
        pipe = Pipeline.create("namo", config, Path("artifacts"))
        n_scenes = max(1, min(args.tasks, len(pipe.tasks("test"))))
        tasks = [pipe.task("test", i) for i in range(n_scenes)]
        scenes = [scene_to_msg(scene_from_task(t)) for t in tasks]
        features = [[float(v) for v in pipe.domain.features(t).ravel()] for t in tasks]
        breakdown = select_cost_breakdown(planner, scenes, features)
        t_start = time.perf_counter()
        procs = start_processes(path, ["tamp_server", "camp_planner"])
        floor_server = subprocess.Popen(
            [sys.executable, "-m", "camp_planner.ros.profiling", FLOOR_SERVICE]
        )
        client = CampClient("bench_client")
        floor = CampClient("bench_floor_client", select_service=FLOOR_SERVICE)
        try:
            rows = _run(client, scenes, features, args)
            if args.burst:
                rows["burst"] = client.select_burst(scenes, args.burst)
            rows.update(_floor(floor, scenes, features, args.calls))
        finally:
            floor.close()
            client.close()
            # The nodes must go even if the floor server ignores SIGTERM (it once did, and
            # the benchmark exited leaving both nodes running).
            stop_processes(procs)
            floor_server.terminate()
            try:
                floor_server.wait(10)
            except subprocess.TimeoutExpired:
                floor_server.kill()
                floor_server.wait()
        wall = time.perf_counter() - t_start
    rows["in_process_ms"] = breakdown
    print(
        "in-process cost of the steps of one /select_context call (median ms): "
        + ", ".join(f"{k} {v:.2f}" for k, v in breakdown.items())
    )
    rtt, sel, feat = rows["select_rtt_ms"], rows["selector_ms"], rows["select_features_rtt_ms"]
    n_obj = len(scenes[0].objects)
    print(
        f"/select_context, {len(rtt)} calls with a scene ({n_obj} objects): round trip "
        f"p50 {_percentile(rtt, 0.5):.2f} ms, p99 {_percentile(rtt, 0.99):.2f} ms; "
        f"selector alone p50 {_percentile(sel, 0.5):.2f} ms\n"
        f"/select_context, {len(feat)} calls with task features only: round trip "
        f"p50 {_percentile(feat, 0.5):.2f} ms, p99 {_percentile(feat, 0.99):.2f} ms\n"
        "floor: the same requests answered by a server that does nothing, round trip p50 "
        f"{_percentile(rows['floor_scene_rtt_ms'], 0.5):.2f} ms (scene), "
        f"{_percentile(rows['floor_features_rtt_ms'], 0.5):.2f} ms (features)"
    )
    if "burst" in rows:
        b = rows["burst"]
        print(
            f"/select_context burst: {b['sent']} requests at once from {b['clients']} clients: "
            f"{b['selected']} selected, {b['busy']} refused ERROR_BUSY, {b['other']} other "
            f"answers, {b['unanswered']} unanswered; last answer after {b['last_answer_s']:.2f} s "
            f"(select_deadline_s {planner.get('select_deadline_s', 2.0)})"
        )
    plans = rows["plans"]
    if plans:
        # The whole context name: which rooms the selector allowed is the point of the row.
        print(f"\n{'task':>4} | {'CAMP (the selected context)':<44} | universal")
        for i in range(len(scenes)):
            cells = []
            for method in ("camp", "universal"):
                r = next(p for p in plans if p["task"] == i and p["method"] == method)
                ok = "goal" if r["success"] else r["error"]
                cells.append(f"{r['latency_s']:6.2f} s {ok:<8} {r['context']}")
            print(f"{i:>4} | {cells[0]:<44} | {cells[1]}")
        for method in ("camp", "universal"):
            mine = [p for p in plans if p["method"] == method]
            lat = [p["latency_s"] for p in mine]
            ok = sum(p["success"] for p in mine)
            print(
                f"{method:>9}: median scene-to-plan {statistics.median(lat):.2f} s, "
                f"success {ok}/{len(mine)}, mean objective "
                f"{statistics.mean(p['objective'] for p in mine):.1f}"
            )
    print(f"wall time {wall:.0f} s on {platform.node()} ({os.cpu_count()} cores)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        meta = {"command": "python scripts/bench_ros.py " + " ".join(sys.argv[1:]), "wall_s": wall}
        args.json.write_text(json.dumps({**meta, **rows}, indent=1))
    return 0


FLOOR_SERVICE = "select_context_floor"


def _floor(
    client: Any, scenes: list[Any], features: list[list[float]], calls: int
) -> dict[str, list[float]]:
    """Round trips against camp_planner.ros.profiling's do-nothing server: what rclpy and
    DDS cost for these requests before any planning code runs."""
    client.select_context(scenes[0], timeout=60.0)
    out: dict[str, list[float]] = {"floor_scene_rtt_ms": [], "floor_features_rtt_ms": []}
    for k in range(calls):
        t0 = time.perf_counter()
        client.select_context(scenes[k % len(scenes)], timeout=10.0)
        out["floor_scene_rtt_ms"].append((time.perf_counter() - t0) * 1e3)
    for k in range(calls):
        t0 = time.perf_counter()
        client.select_context(features=features[k % len(features)], timeout=10.0)
        out["floor_features_rtt_ms"].append((time.perf_counter() - t0) * 1e3)
    return out


def _run(
    client: Any, scenes: list[Any], features: list[list[float]], args: argparse.Namespace
) -> dict[str, Any]:
    client.select_context(scenes[0], timeout=60.0)  # discovery and warm-up
    rtt, sel, rtt_features = [], [], []
    for k in range(args.calls):
        t0 = time.perf_counter()
        r = client.select_context(scenes[k % len(scenes)], timeout=10.0)
        rtt.append((time.perf_counter() - t0) * 1e3)
        if not r.success:
            raise SystemExit(f"/select_context failed: {r.error_message}")
        sel.append((r.selector_latency.sec + r.selector_latency.nanosec * 1e-9) * 1e3)
    for k in range(args.calls):  # a perception stack that sends the selector's input itself
        t0 = time.perf_counter()
        r = client.select_context(features=features[k % len(features)], timeout=10.0)
        rtt_features.append((time.perf_counter() - t0) * 1e3)
        if not r.success:
            raise SystemExit(f"/select_context (features) failed: {r.error_message}")
    plans = []
    for i, scene in enumerate(scenes[: args.tasks]):
        for method, context in (("camp", ""), ("universal", "universal")):
            t0 = time.perf_counter()
            result = client.plan(
                scene, context_id=context, allow_fallback=(method == "camp"), timeout=args.timeout
            )
            latency = time.perf_counter() - t0
            plans.append(
                {
                    "task": i,
                    "method": method,
                    "latency_s": latency,
                    "success": bool(result.success),
                    "error": "" if result.success else f"E{result.error_code}",
                    "context": result.plan.context.description or "universal",
                    "fallbacks": result.plan.fallbacks,
                    "planning_time_s": result.plan.planning_time,
                    "objective": result.plan.objective,
                    "stage_times_s": {s.stage: s.seconds for s in result.plan.stage_times},
                }
            )
            print(
                f"task {i} {method:>9}: {latency:6.2f} s, "
                f"{'goal' if result.success else result.error_message[:60]}",
                flush=True,
            )
    return {
        "select_rtt_ms": rtt,
        "selector_ms": sel,
        "select_features_rtt_ms": rtt_features,
        "plans": plans,
    }


if __name__ == "__main__":
    raise SystemExit(main())
