"""Benchmark: how TAMP's planning time spreads on NAMO, and how often it fails.

The heavy tail of a randomised planner, not its median, decides how noisy every comparison
built on it is: in the 3-seed `camp eval` runs, the same planner on the same task took
0.4 s on one seed and 5.4 s on another. This script runs one planner (pure planning, no
context) on the test tasks of ``--eval-seeds`` task draws (the draws `camp eval` uses for
its seeds 0, 1, ...), ``--repeats`` times each with planner seeds 0, 1, ..., and prints
every run that failed or took more than twice the median, with the planner's own account of
it (the reason it gave up; for TAMP the times it forgot learnt facts, ``restarts``, and
resampled, the attempts it abandoned at a ``restart_s`` cutoff, ``cutoffs``, the attempts
it started over from a loop, ``stucks``, and its replans; for Stilman's algorithm the
placements it undid, ``backtracks``), then the median, mean,
90th percentile and maximum time and the failure rate. A run that returns more than 50 ms
past ``--timeout`` is listed with the stack sampled most often after its timeout
(:class:`camp_planner.diagnostics.OverrunWatch`).

The JSON rows also hold each plan's length in steps, the MDP's horizon and the boxes
picked, so a run cut off by the horizon shows as one (``outcome`` ``horizon``) and a run
close to it can be seen before it is.

``--set key=value`` changes a setting of the planner (e.g. ``--set restart_s=null``).
Every finished run is appended to a checkpoint in ``artifacts/bench/`` as it ends: a killed
run resumes from it when the same command is run again, and a completed run deletes it.

    .venv/bin/python research/bench_tamp_tail.py [--eval-seeds 3] [--tasks 10] [--repeats 3]
        [--planner tamp] [--timeout 60] [--config FILE] [--set key=value ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from camp_planner.config import add_settings_argument, settings_or_usage_error
from camp_planner.core.errors import CampError
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Planner
from camp_planner.diagnostics import OverrunWatch, lateness
from camp_planner.learning.jsonl import RunCheckpoint
from camp_planner.planners import make_planner
from camp_planner.planners.registry import planner_version
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-seeds", type=int, default=3, help="task draws (camp eval seeds)")
    parser.add_argument("--tasks", type=int, default=10, help="test tasks per draw")
    parser.add_argument("--repeats", type=int, default=3, help="planner seeds per task")
    parser.add_argument("--planner", choices=("tamp", "stilman"), default="tamp")
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument("--config", type=Path, help="YAML overriding the NAMO defaults")
    add_settings_argument(
        parser, "a planner setting (repeatable), e.g. restart_s=4 or restart_s=null"
    )
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args(argv)
    if min(args.eval_seeds, args.tasks, args.repeats) < 1 or not args.timeout > 0:
        parser.error("--eval-seeds, --tasks and --repeats must be at least 1, --timeout positive")
    args.overrides = settings_or_usage_error(parser, args.set)
    try:
        return _run(args)
    except CampError as exc:
        print(f"bench_tamp_tail: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    base = Pipeline.create("namo", args.config, DEFAULT_ARTIFACTS)
    try:  # a setting the planner does not take, or a bad value, before any run
        _planner(base, args)
    except (TypeError, ValueError) as exc:
        print(f"bench_tamp_tail: error: --set: {exc}", file=sys.stderr)
        return 2
    # Every finished run is kept, so that a killed benchmark resumes where it stopped.
    checkpoint = RunCheckpoint(
        DEFAULT_ARTIFACTS / "bench",
        "tamp-tail",
        {
            "format": 1,
            "version": base.domain.version,
            "planner": [args.planner, planner_version(args.planner)],
            "config": base.config,
            "tasks": args.tasks,
            "timeout": args.timeout,
            "settings": args.overrides,
        },
    )
    if checkpoint.resuming():
        print(checkpoint.resuming(), flush=True)
    rows: list[dict[str, Any]] = []
    try:
        resumed = _run_all(args, base, checkpoint, rows)
    except KeyboardInterrupt:
        print(f"\n{checkpoint.interrupted()}", file=sys.stderr)
        return 130
    times = sorted(r["compute_time_s"] for r in rows)
    median = statistics.median(times)
    summary = {
        "planner": args.planner,
        "settings": args.overrides,
        "runs": len(rows),
        "failures": sum(not r["success"] for r in rows),
        "median_s": median,
        "mean_s": statistics.fmean(times),
        "p90_s": times[min(len(times) - 1, math.ceil(0.9 * len(times)) - 1)],
        "max_s": times[-1],
        "max_past_timeout_s": max(0.0, times[-1] - args.timeout),
        "over_twice_median": sum(t > 2 * median for t in times),
        # Rows checkpointed before steps were recorded have none.
        "max_steps": max((r["steps"] for r in rows if "steps" in r), default=None),
        "horizon": next((r["horizon"] for r in rows if "horizon" in r), None),
        "wall_time_s": time.perf_counter() - started,
        "runs_finished_earlier": resumed,  # by a run that was interrupted: not in wall time
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }
    print("\nfailed or slower than twice the median:")
    for r in rows:
        if not r["success"] or r["compute_time_s"] > 2 * median:
            print(
                f"  draw {r['draw']} task {r['task']} seed {r['seed']}: "
                f"{r['compute_time_s']:.2f} s, {r['outcome']}, stats {r['stats']}"
                + (f", {'; '.join(r['failures'])}" if r["failures"] else "")
            )
    for r in rows:
        late = lateness(r, args.timeout)
        if late is not None:
            print(f"  draw {r['draw']} task {r['task']} seed {r['seed']}: {late}")
    print(
        f"\n{args.planner} on {len(rows)} runs: median {median:.2f} s, mean "
        f"{summary['mean_s']:.2f} s, 90th percentile {summary['p90_s']:.2f} s, max "
        f"{summary['max_s']:.2f} s ({summary['max_past_timeout_s']:.3f} s past the timeout); "
        f"{summary['over_twice_median']} runs over twice the "
        f"median; {summary['failures']} failed; wall time {summary['wall_time_s']:.0f} s"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    checkpoint.discard()  # complete: the same command measures everything again
    return 0


def _run_all(
    args: argparse.Namespace,
    base: Pipeline,
    checkpoint: RunCheckpoint,
    rows: list[dict[str, Any]],
) -> int:
    """Every (draw, task, planner seed) run into ``rows``, from ``checkpoint`` where an earlier
    run finished it; returns how many came from there."""
    resumed = 0
    for draw in range(args.eval_seeds):
        config = copy.deepcopy(base.config)
        config["seed"] = int(config["seed"]) + draw  # as camp eval's seed `draw` does
        config["tasks"]["test"] = args.tasks
        pipe = Pipeline.from_config("namo", config, DEFAULT_ARTIFACTS)
        tasks = pipe.domain.make_tasks(pipe.config, "test")
        for i, task in enumerate(tasks):
            for seed in range(args.repeats):
                r = checkpoint.get((draw, i, seed))
                earlier = r is not None
                if r is None:
                    r = _one(pipe, args, task, draw, i, seed)
                    checkpoint.add((draw, i, seed), r)
                rows.append(r)
                resumed += earlier
                print(
                    f"draw {draw} task {i} seed {seed}: {r['compute_time_s']:6.2f} s "
                    f"{'goal' if r['success'] else r['outcome']}"
                    f"{'  (finished earlier)' if earlier else ''}",
                    flush=True,
                )
    return resumed


def _planner(pipe: Pipeline, args: argparse.Namespace, seed: int = 0) -> Planner:
    """The planner under test, with the configuration's settings and ``--set``'s on top."""
    settings = {**pipe.planner_settings(args.planner), **args.overrides}
    return make_planner(args.planner, seed=seed, **settings)


def _one(
    pipe: Pipeline, args: argparse.Namespace, task: Any, draw: int, index: int, seed: int
) -> dict[str, Any]:
    """One episode of the planner in the full task, with the planner's statistics."""
    mdp = pipe.domain.make_mdp(task, pipe.config)
    solver = _planner(pipe, args, seed)
    try:
        # Past the timeout the stack is sampled, so a late return names its step.
        with OverrunWatch(args.timeout) as watch:
            result = run_episode(
                mdp,
                solver,
                lam=pipe.lam(args.planner),
                timeout_s=args.timeout,
                rng=random.Random(seed),
            )
    finally:
        mdp.close()  # type: ignore[attr-defined]
    # The counters outlive a failed call; last_stats is written only when a plan was found.
    stats = {
        k: getattr(solver, k)
        for k in ("restarts", "resamples", "cutoffs", "stucks", "backtracks")
        if hasattr(solver, k)
    }
    if "replans" in (getattr(solver, "last_stats", None) or {}):
        stats["replans"] = solver.last_stats["replans"]  # type: ignore[attr-defined]
    return {
        "draw": draw,
        "task": index,
        "seed": seed,
        "compute_time_s": result.compute_time_s,
        "success": result.success,
        "outcome": result.outcome,
        "failures": result.failures,
        # The plan's length against the MDP's horizon, and the boxes it moved.
        "steps": result.steps,
        "horizon": mdp.horizon,
        "picks": sum(1 for a in result.actions if a[0] == "pick"),
        "stats": stats,
        "past_timeout_stacks": watch.top(3),
    }


if __name__ == "__main__":
    sys.exit(main())
