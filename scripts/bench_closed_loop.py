"""Benchmark: closed-loop execution over ROS on fresh disturbed tasks, replanning with the CAMP
beside replanning with pure planning.

Two TAMP servers run side by side in one process: one with the selector bundle the package
ships (the CAMP runtime selects a context for every plan and replan), one without a selector
(pure planning: the universal context). Each has its own ``camp_executor`` driving one
simulated robot (``<domain>_robot``) through FollowPath, FollowJointTrajectory and
GripperCommand. For every fresh test task (``--task-seed``: seeds never used in development)
both methods run from the same start with the same seeded disturbance, in a seeded shuffled
order per task. Recorded per run: whether the robot reached the goal (the simulator's own
check), the replans, and for each replan the time from noticing the disagreement to the new
plan. Every run is appended to ``--out`` (JSON lines) as it ends, and ``--resume`` skips the
runs already there.

    .venv/bin/python scripts/bench_closed_loop.py --domain namo [--tasks 50] [--task-seed 9300]
        [--disturb block@base#3] [--out artifacts/bench/closed_loop_namo.jsonl] [--resume]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from camp_planner.config import with_test_seed
from camp_planner.core.errors import CampError
from camp_planner.eval.paired import bootstrap_interval, paired_difference
from camp_planner.progress import progress_bar

METHODS = ("camp", "pure")
DEFAULT_DISTURBANCE = {"namo": "block@base#3", "manip": "slip@base#2"}


def run_one(rig: Any, task: Any, index: int, method: str, seed: int) -> dict[str, Any]:
    """Execute fresh task ``index`` from its start with ``method``'s system."""
    robot = rig.robot
    robot.load(task, f"fresh task {index}", seed)
    t0 = time.monotonic()
    result = rig.run(None, method, max_replans=5)
    return {
        "task": index,
        "method": method,
        "reached": bool(robot.sim.goal_reached()),
        "error_code": int(result.error_code),
        "error": result.error_message,
        "steps": int(result.steps_executed),
        "replans": int(result.replans),
        "replan_seconds": [float(v) for v in result.replan_seconds],
        "replan_reasons": list(result.replan_reasons),
        "disturbed": list(robot.fired),
        "wall_s": time.monotonic() - t0,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        times = [r["replan_seconds"][0] for r in mine if r["replan_seconds"]]
        out[method] = {
            "runs": len(mine),
            "success": sum(r["reached"] for r in mine) / max(1, len(mine)),
            "replans_per_task": statistics.fmean(r["replans"] for r in mine) if mine else 0.0,
            "disturbed": sum(
                bool(r["disturbed"]) and "nothing" not in r["disturbed"][0] for r in mine
            ),
            "first_replan_median_s": statistics.median(times) if times else None,
            "first_replan_ci": bootstrap_interval(times, "median") if len(times) > 1 else None,
        }
    by_task: dict[int, dict[str, dict[str, Any]]] = {}
    for r in rows:
        by_task.setdefault(r["task"], {})[r["method"]] = r
    pairs = [
        (t["camp"]["replan_seconds"][0], t["pure"]["replan_seconds"][0])
        for t in by_task.values()
        if all(m in t and t[m]["replan_seconds"] for m in METHODS)
    ]
    if pairs:
        out["paired_first_replan_s"] = paired_difference(
            [a for a, _ in pairs], [b for _, b in pairs]
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", choices=sorted(DEFAULT_DISTURBANCE), default="namo")
    parser.add_argument("--tasks", type=int, default=50, help="fresh test tasks")
    parser.add_argument("--task-seed", type=int, default=9300, help="seed of the fresh tasks")
    parser.add_argument("--disturb", help="KIND@CONTROLLER#N (default: the domain's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of disturbances and order")
    parser.add_argument("--out", type=Path, help="JSON lines, one per run")
    parser.add_argument("--resume", action="store_true", help="skip the runs already in --out")
    args = parser.parse_args(argv)
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    os.environ.setdefault("ROS_DOMAIN_ID", str(os.getpid() % 100 + 1))
    out = args.out or Path(f"artifacts/bench/closed_loop_{args.domain}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    if args.resume and out.exists():
        rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    elif out.exists():
        out.unlink()
    done = {(r["task"], r["method"]) for r in rows}
    disturbance = args.disturb or DEFAULT_DISTURBANCE[args.domain]
    try:
        from camp_planner.workflow import Pipeline

        pipe = Pipeline.create(args.domain, None, Path("artifacts"))
        pipe.config = with_test_seed(pipe.config, args.task_seed)
        pipe.config["tasks"]["test"] = args.tasks
        tasks = pipe.tasks("test")
        from camp_planner.ros.closed_loop import LoopRig

        rig = LoopRig(args.domain, {"disturbances": [disturbance]}, systems=METHODS)
    except CampError as exc:
        print(f"bench_closed_loop: {exc}", file=sys.stderr)
        return 2
    order = random.Random(args.seed)
    bar = progress_bar(2 * args.tasks, f"{args.domain} closed loop", initial=len(done))
    try:
        with out.open("a") as sink:
            for index in range(args.tasks):
                methods = list(METHODS)
                order.shuffle(methods)  # drawn for every task, so a resumed run keeps the order
                for method in methods:
                    if (index, method) in done:
                        continue
                    row = run_one(rig, tasks[index], index, method, args.seed + index)
                    rows.append(row)
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                    bar.update(1)
    finally:
        bar.close()
        rig.close()
    summary = summarise(rows)
    print(json.dumps({"domain": args.domain, "disturbance": disturbance, **summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
