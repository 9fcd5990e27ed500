"""Benchmark: context racing in NAMO, no racing against races of K = 1, 2, 3 on the same tasks.

The planning service runs as ``tamp_server`` runs it, in warm worker processes
(:mod:`camp_planner.service.race`), with the selector bundle (``--bundle``, default: the one
the package ships for NAMO and TAMP). For each NAMO test task (``--task-seed S``: drawn from
seed S, tasks never used in development) it plans once with no racing (``K = 0``: one
worker, the selector's context and its fallbacks, as ``CampService.plan``) and once per race
of ``K`` (``--ks``, default 1 2 3: the selector's top K contexts and the universal one, one
worker each, the first plan verified in the simulator wins). Before each run every worker is
loaded (a race's losers load again in the background), so no run pays for a start.

Per (task, K) it records the wall-clock seconds (ranking and planning: what the objective
charges), the CPU seconds of all workers, the return, the objective (return − λ·wall-clock),
the winner and each worker's outcome; it prints them and, per K, the medians of wall-clock,
CPU and objective, the mean objective and the success rate. ``--json`` also writes the rows
and the summary.

Every finished (task, K) row is appended to a checkpoint in ``<artifacts>/bench/`` as it
ends. A run that is killed (or stopped with Ctrl-C) resumes from it when the same command is
run again; a run that completes deletes it. On a machine with fewer cores than K + 1 the
workers of a race share them (each worker's timeout is stretched to match).

    .venv/bin/python scripts/bench_race.py [--tasks 10] [--task-seed S] [--ks 1 2 3]
        [--timeout 60] [--config C.yaml] [--bundle B.pt] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError
from camp_planner.domains import get_plugin
from camp_planner.learning.jsonl import RunCheckpoint
from camp_planner.planners.registry import planner_version
from camp_planner.service.race import RacePool, RaceResult, usable_cores, worker_timeout
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

GRACE_S = 10.0  # past the timeouts, as tamp_server's timeout_grace_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10, help="number of test tasks")
    parser.add_argument(
        "--task-seed",
        type=int,
        help="draw the test tasks from this seed (default: the configuration's test split)",
    )
    parser.add_argument(
        "--ks", type=int, nargs="+", default=[1, 2, 3], help="race sizes K (≥ 1) besides K = 0"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument("--config", type=Path, help="a NAMO configuration (YAML)")
    parser.add_argument("--bundle", type=Path, help="selector bundle (default: the shipped one)")
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--json", type=Path, help="also write the rows and summary here")
    args = parser.parse_args(argv)
    if args.tasks < 1 or not args.timeout > 0 or any(k < 1 for k in args.ks):
        parser.error("--tasks must be at least 1, --timeout positive and every --ks at least 1")
    if args.task_seed is not None and args.task_seed < 0:
        parser.error("--task-seed must be non-negative")
    try:
        return _run(args)
    except CampError as exc:
        print(f"bench_race: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from camp_planner.learning.bundle import shipped_bundle

    started = time.perf_counter()
    pipe = Pipeline.create("namo", args.config, args.artifacts)
    pipe.config["tasks"]["test"] = args.tasks
    if args.task_seed is not None:
        pipe.config["tasks"]["test_seed"] = args.task_seed
    tasks = pipe.domain.make_tasks(pipe.config, "test")
    plugin = get_plugin("namo")
    scenes = [plugin.scene_from_task(t, None, "map") for t in tasks]
    bundle = args.bundle or shipped_bundle("namo", "tamp")
    if bundle is None or not Path(bundle).is_file():
        raise CampError(f"no selector bundle at {bundle}: give one with --bundle")
    ks = [0, *sorted(set(args.ks))]
    lam = pipe.lam("tamp")
    checkpoint = RunCheckpoint(
        args.artifacts / "bench",
        "race",
        {
            "format": 1,
            "version": pipe.domain.version,
            "planner": planner_version("tamp"),
            "config": pipe.config,
            "bundle": str(Path(bundle).resolve()),
            "bundle_bytes": Path(bundle).stat().st_size,
            "timeout": args.timeout,
            "ks": ks,
        },
    )
    if checkpoint.resuming():
        print(checkpoint.resuming(), flush=True)
    service = {
        "domain": "namo",
        "config_path": args.config,
        "bundle_path": Path(bundle),
        "artifacts": args.artifacts,
        "planner": "tamp",
    }
    rows: list[dict[str, Any]] = []
    print(
        f"{'task':>4} {'K':>2} {'wall s':>8} {'CPU s':>8} {'objective':>10} {'ok':>3}  winner",
        flush=True,
    )
    # K + 1 workers for the largest race; a race of K uses the first K + 1 of them.
    with RacePool(service, max(ks) + 1) as pool:
        try:
            for i, scene in enumerate(scenes):
                for k in ks:
                    row = checkpoint.get((i, k))
                    earlier = row is not None
                    if row is None:
                        pool.start()  # every worker loaded: no run pays for a start
                        row = _row(i, k, _measure(pool, scene, k, lam, args.timeout), lam)
                        checkpoint.add((i, k), row)
                    rows.append(row)
                    print(
                        f"{i:>4} {k:>2} {row['wall_s']:>8.2f} {row['cpu_s']:>8.2f} "
                        f"{row['objective']:>10.1f} {'y' if row['success'] else 'n':>3}  "
                        f"{row['winner'] or '-'}{'  (finished earlier)' if earlier else ''}",
                        flush=True,
                    )
        except KeyboardInterrupt:
            print(f"\n{checkpoint.interrupted()}", file=sys.stderr)
            return 130
    summary: dict[str, Any] = {
        "tasks": args.tasks,
        "task_seed": args.task_seed,
        "timeout_s": args.timeout,
        "lambda": lam,
        "bundle": str(bundle),
        "cores": usable_cores(),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "per_k": {},
    }
    print(f"\nper K over {args.tasks} tasks (objective = return − {lam:g} × wall-clock s):")
    print(
        f"{'K':>2} {'median wall s':>14} {'median CPU s':>13} {'median objective':>17} "
        f"{'mean objective':>15} {'success':>8}"
    )
    for k in ks:
        of_k = [r for r in rows if r["k"] == k]
        stats = {
            "median_wall_s": statistics.median(r["wall_s"] for r in of_k),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in of_k),
            "median_objective": statistics.median(r["objective"] for r in of_k),
            "mean_objective": statistics.fmean(r["objective"] for r in of_k),
            "success": sum(r["success"] for r in of_k) / len(of_k),
        }
        summary["per_k"][str(k)] = stats
        print(
            f"{k:>2} {stats['median_wall_s']:>14.2f} {stats['median_cpu_s']:>13.2f} "
            f"{stats['median_objective']:>17.1f} {stats['mean_objective']:>15.1f} "
            f"{stats['success']:>8.0%}"
        )
    summary["wall_time_s"] = time.perf_counter() - started
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    checkpoint.discard()  # complete: the same command measures everything again
    return 0


def _measure(pool: RacePool, scene: Any, k: int, lam: float, timeout: float) -> RaceResult:
    """One run: no racing (``k`` = 0: the selector's context, then its fallbacks) or a race."""
    if k == 0:
        # As tamp_server bounds a goal with fallbacks: four planning calls and a grace.
        return pool.single(scene, lam, timeout, limit_s=4 * timeout + GRACE_S)
    limit = worker_timeout(timeout, k + 1) + GRACE_S
    return pool.plan(scene, k, lam, timeout, limit_s=limit)


def _row(index: int, k: int, race: RaceResult, lam: float) -> dict[str, Any]:
    result = race.result
    return {
        "task": index,
        "k": k,
        "wall_s": race.wall_s,
        "cpu_s": race.cpu_s,
        "success": result.success,
        "return": result.expected_return,
        "objective": result.expected_return - lam * race.wall_s,
        "winner": race.winner.name if race.winner is not None else None,
        "outcome": result.outcome or result.code.name.lower(),
        "fallbacks": result.fallbacks,
        "note": race.note,
        "workers": [
            {
                "context": w.context_name,
                "outcome": w.outcome,
                "code": w.code.name,
                "wall_s": w.wall_s,
                "cpu_s": w.cpu_s,
            }
            for w in race.workers
        ],
    }


if __name__ == "__main__":
    sys.exit(main())
