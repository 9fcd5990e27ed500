"""How long one NAMO planner takes on the first few test tasks, run one at a time.

Plans each of the first ``--tasks`` test tasks with each of ``--seeds`` planner seeds, with
pure TAMP, Stilman's algorithm or the CAMP method (``--planner camp``: the selector bundle's
pick, its CAMP and TAMP in it, with fallbacks; ``--bundle``, default the one the package
ships; its CSIs come with it, so nothing is learned first), and prints each run's planning
time, the planner's count of its work (nominal seconds, the same for the same plan on any
machine), success, boxes picked and time per stage, then the totals and the wall-clock
seconds per second of work. It is for
comparing two versions of the code on the same machine in the same hour, when a benchmark
has to be compared with one run on another day: on this machine the same code has taken up
to 1.8× as long on different days, moving as many boxes. For another checkout's code,
point ``PYTHONPATH`` at its ``src``:

    .venv/bin/python research/time_planning_runs.py --config config/namo/grid10.yaml
    PYTHONPATH=/tmp/old/src .venv/bin/python research/time_planning_runs.py \\
        --config config/namo/grid10.yaml

Runs that picked different numbers of boxes made different plans, so compare runs that
picked as many boxes, or many runs (each run's ``plan`` column is a digest of its actions).
Where two versions make the same plans, the difference in wall-clock time per second of
work is what one version's code around the counted work costs more than the other's. The
planners' budgets count work, so the same command makes the same plans on any machine and
at any load; ``--set key=value`` changes any setting of the planner.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from camp_planner.config import add_settings_argument, settings_or_usage_error
from camp_planner.core.errors import CampError
from camp_planner.core.objective import EpisodeResult
from camp_planner.eval.methods import bundled_camp_method
from camp_planner.learning.labels import plan_digest
from camp_planner.workflow import Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, help="a NAMO configuration (YAML)")
    parser.add_argument("--tasks", type=int, default=4, help="first test tasks (default 4)")
    parser.add_argument("--seeds", type=int, default=2, help="planner seeds 0.. (default 2)")
    parser.add_argument(
        "--planner",
        choices=("tamp", "stilman", "camp"),
        default="tamp",
        help="pure TAMP (default), Stilman's algorithm, or the CAMP method with TAMP",
    )
    parser.add_argument(
        "--bundle",
        type=Path,
        help="--planner camp: the selector bundle (default: the one the package ships)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="per run (s, default 60)")
    add_settings_argument(parser, "change a planner setting (repeatable), e.g. restart_s=4")
    parser.add_argument("--json", type=Path, help="also write the runs here")
    args = parser.parse_args(argv)
    overrides = settings_or_usage_error(parser, args.set)
    if args.tasks < 1 or args.seeds < 1:
        parser.error("--tasks and --seeds must be positive")
    if not args.timeout > 0:
        parser.error("--timeout must be positive")
    if args.bundle is not None and args.planner != "camp":
        parser.error("--bundle is for --planner camp")
    try:
        result = _run(args, overrides)
    except CampError as exc:  # a config that cannot be read or used: no traceback
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


def _run(args: argparse.Namespace, overrides: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        pipe = Pipeline.create("namo", args.config, Path(scratch) / "artifacts")
        pipe.config["tasks"]["test"] = args.tasks  # task i is the same whatever the count
        tasks = pipe.tasks("test")
        plan = _planner(args, pipe, overrides)
        runs: list[dict[str, Any]] = []
        print(
            f"{'task':>4} {'seed':>4} {'seconds':>8} {'work s':>7} {'ok':>3} {'picks':>5} "
            f"{'plan':>12}  {'context, ' if args.planner == 'camp' else ''}stages (s)"
        )
        for index, task in enumerate(tasks):
            for seed in range(args.seeds):
                result, context = plan(task, seed)
                run = {
                    "task": index,
                    "seed": seed,
                    "seconds": result.compute_time_s,
                    "work_s": result.work_s,
                    "success": result.success,
                    "picks": sum(1 for a in result.actions if a[0] == "pick"),
                    "plan": plan_digest(result.actions),
                    "context": context,
                    "stage_times_s": result.stage_times_s,
                }
                runs.append(run)
                stages = ", ".join(
                    f"{k} {v:.2f}" for k, v in result.stage_times_s.items() if v >= 0.005
                )
                work = "–" if result.work_s is None else f"{result.work_s:.3f}"
                print(
                    f"{index:>4} {seed:>4} {run['seconds']:>8.3f} {work:>7} "
                    f"{'y' if run['success'] else 'n':>3} {run['picks']:>5} {run['plan']:>12}"
                    f"  {context + ', ' if context else ''}{stages}",
                    flush=True,
                )
    return {"summary": _summary(args, overrides, runs, started), "runs": runs}


Plan = Callable[[Any, int], tuple[EpisodeResult, str | None]]


def _planner(args: argparse.Namespace, pipe: Pipeline, overrides: dict[str, Any]) -> Plan:
    """One run of the chosen planner on a task with a seed: (its episode, the context the
    CAMP method tried first, or None)."""
    if args.planner != "camp":

        def plain(task: Any, seed: int) -> tuple[EpisodeResult, str | None]:
            result, _ = pipe.run(
                task, args.planner, None, seed=seed, timeout_s=args.timeout, overrides=overrides
            )
            return result, None

        return plain
    method = bundled_camp_method(pipe, "tamp", args.bundle, overrides, args.timeout)

    def camp(task: Any, seed: int) -> tuple[EpisodeResult, str | None]:
        run = method.runtime(pipe, "tamp").run(task, seed)
        return run.result, run.selection.winner

    return camp


def _summary(
    args: argparse.Namespace, overrides: dict[str, Any], runs: list[dict[str, Any]], started: float
) -> dict[str, Any]:
    times = [r["seconds"] for r in runs]
    works = [r["work_s"] for r in runs]
    total_work = None if any(w is None for w in works) else float(sum(works))
    summary = {
        "config": None if args.config is None else str(args.config),
        "planner": args.planner,
        "bundle": None if args.bundle is None else str(args.bundle),
        "settings": overrides,
        "runs": len(runs),
        "total_s": sum(times),
        "median_s": statistics.median(times),
        "total_work_s": total_work,
        # Wall-clock seconds per nominal second of work: what the code around the counted
        # work costs, comparable between two versions that make the same plans.
        "seconds_per_work_s": None if not total_work else sum(times) / total_work,
        "successes": sum(1 for r in runs if r["success"]),
        "wall_time_s": time.perf_counter() - started,
    }
    per_work = summary["seconds_per_work_s"]
    print(
        f"{args.planner}: {len(runs)} runs, total {summary['total_s']:.2f} s, "
        f"median {summary['median_s']:.2f} s, {summary['successes']} reached the goal"
        + ("" if per_work is None else f"; work {total_work:.2f} s, {per_work:.3f} s per s of work")
    )
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
