"""Where one NAMO task's planning time goes, pure TAMP against its CAMP, function by function.

Runs the TAMP planner once in the full task and once in the CAMP of the task's context (the
same choice as ``scripts/bench_namo.py``: ``--context route`` or ``space``), each under
cProfile, and prints one table: for every function of the package that took at least
``--min-share`` of either run's time, its calls, its cumulative seconds and its milliseconds
per call, pure beside CAMP. It answers "what does the context make cheaper", which the
benchmark's per-stage times do not: at 7×7, pure planning and the CAMP move about as many
boxes, and the difference is in how much each search costs.

``--context selector`` plans the CAMP side as ``camp eval``'s CAMP method does: the shipped
selector's pick (or ``--bundle``'s), with its fallbacks and the bundle's CSIs. ``--all-tasks``
profiles every test task and ``--seeds K`` K planner seeds each, into one profile per side.
Under the table, each side's totals: planning and work seconds, the time inside OMPL's
queries and outside them, and OMPL's validity checks with the time per check. They split a
difference in wall-clock time per second of work into what a side's searches cost per check
and what the rest of the planner costs.

cProfile slows Python code (not PyBullet's or OMPL's own), so the times are larger than the
benchmark's; compare the two columns, not a column with the benchmark.

    .venv/bin/python research/profile_namo.py --config research/config/namo-grid7.yaml --task 4 \\
        [--seed 0] [--context route] [--set relaxed=grid] [--min-share 0.03]
    .venv/bin/python research/profile_namo.py --context selector --all-tasks --seeds 2
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import camp_planner
from camp_planner.config import add_settings_argument, settings_or_usage_error
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.objective import EpisodeResult
from camp_planner.eval.methods import bundled_camp_method
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

PACKAGE = str(Path(camp_planner.__file__).resolve().parent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, help="a NAMO configuration (YAML)")
    parser.add_argument("--task", type=int, default=0, help="test task index (default 0)")
    parser.add_argument("--tasks", type=int, default=10, help="test tasks drawn (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="planner seed (default 0)")
    parser.add_argument(
        "--seeds", type=int, default=1, help="planner seeds from --seed on (default 1)"
    )
    parser.add_argument(
        "--all-tasks", action="store_true", help="profile every test task, not only --task"
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument(
        "--context",
        choices=("space", "route", "selector"),
        default="route",
        help="the CAMP's context: the smallest that reaches the goal (space), the lightest "
        "route's rooms (route, default), or the selector bundle's pick with fallbacks "
        "(selector)",
    )
    parser.add_argument(
        "--bundle", type=Path, help="--context selector: the bundle (default: the shipped one)"
    )
    add_settings_argument(parser, "a planner setting")
    parser.add_argument(
        "--min-share",
        type=float,
        default=0.03,
        help="list functions taking at least this share of either run (default 0.03)",
    )
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    args = parser.parse_args(argv)
    if not 0 <= args.task < args.tasks or args.seed < 0 or not args.timeout > 0:
        parser.error("--task must lie in [0, --tasks), --seed be non-negative, --timeout positive")
    if args.seeds < 1:
        parser.error("--seeds must be positive")
    if args.bundle is not None and args.context != "selector":
        parser.error("--bundle is for --context selector")
    if not 0 < args.min_share < 1:
        parser.error("--min-share must lie strictly between 0 and 1")
    overrides = settings_or_usage_error(parser, args.set)
    try:
        return _run(args, overrides)
    except CampError as exc:
        print(f"profile_namo: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, overrides: dict[str, Any]) -> int:
    pipe = Pipeline.create("namo", args.config, args.artifacts)
    pipe.config["tasks"]["test"] = args.tasks
    tasks = pipe.domain.make_tasks(pipe.config, "test")
    indices = range(args.tasks) if args.all_tasks else [args.task]
    seeds = range(args.seed, args.seed + args.seeds)
    plan_camp = _camp_planner(args, pipe, overrides, [tasks[i] for i in indices])
    profilers = {"pure": cProfile.Profile(), "CAMP": cProfile.Profile()}
    totals = {side: {"runs": 0, "planning_s": 0.0, "work_s": 0.0} for side in profilers}
    for index in indices:
        task = tasks[index]
        for seed in seeds:
            for label in ("pure", "CAMP"):
                profiler = profilers[label]
                profiler.enable()
                if label == "pure":
                    result, _ = pipe.run(
                        task, "tamp", None, seed=seed, timeout_s=args.timeout, overrides=overrides
                    )
                    context = "universal"
                else:
                    result, context = plan_camp(task, seed)
                profiler.disable()
                picks = sum(1 for a in result.actions if a[0] == "pick")
                print(
                    f"task {index}, planner seed {seed}, {label} ({context}): "
                    f"{result.compute_time_s:.2f} s planning (profiled), {result.outcome}, "
                    f"{picks} boxes moved",
                    flush=True,
                )
                side = totals[label]
                side["runs"] += 1
                side["planning_s"] += result.compute_time_s
                side["work_s"] += result.work_s or 0.0
    profiles = {label: package_functions(p) for label, p in profilers.items()}
    print(table(profiles, {k: v["planning_s"] for k, v in totals.items()}, args.min_share))
    print(split_at_ompl(profiles, totals))
    return 0


def _camp_planner(
    args: argparse.Namespace, pipe: Pipeline, overrides: dict[str, Any], tasks: list[Any]
) -> Callable[[Any, int], tuple[EpisodeResult, str]]:
    """One CAMP run on one of ``tasks`` with a planner seed: (its episode, the name of the
    context tried first)."""
    if args.context == "selector":
        method = bundled_camp_method(pipe, "tamp", args.bundle, overrides, args.timeout)

        def selected(task: Any, seed: int) -> tuple[EpisodeResult, str]:
            run = method.runtime(pipe, "tamp").run(task, seed)
            return run.result, run.selection.winner

        return selected
    # The benchmark's contexts, so the profile is of the runs bench_namo.py times.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_namo import route_context, smallest_reachable_context

    choose = route_context if args.context == "route" else smallest_reachable_context
    chosen: dict[int, Context] = {task.task_id: choose(pipe, task) for task in tasks}
    pipe.learn_csis(list(chosen.values()))  # offline work: learned before any profiling

    def fixed(task: Any, seed: int) -> tuple[EpisodeResult, str]:
        ctx = chosen[task.task_id]
        result, _ = pipe.run(
            task, "tamp", ctx, seed=seed, timeout_s=args.timeout, overrides=overrides
        )
        return result, ctx.name

    return fixed


OMPL_QUERY = "motion/ompl_se2.py:_attempt"
OMPL_CHECK = "motion/ompl_se2.py:valid"


def split_at_ompl(
    profiles: dict[str, dict[str, tuple[int, float]]], totals: dict[str, dict[str, float]]
) -> str:
    """Each side's planning time inside OMPL's queries and outside them, its work, and
    OMPL's validity checks with the (profiled) time per check inside the queries."""
    lines = [
        "",
        "| side | runs | planning s | work s | planning s per work s | inside OMPL's queries s "
        "| outside s | validity checks | µs per check inside |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, side in totals.items():
        _, inside = profiles[label].get(OMPL_QUERY, (0, 0.0))
        checks, _ = profiles[label].get(OMPL_CHECK, (0, 0.0))
        per_work = f"{side['planning_s'] / side['work_s']:.2f}" if side["work_s"] else "–"
        per_check = f"{1e6 * inside / checks:.1f}" if checks else "–"
        lines.append(
            f"| {label} | {side['runs']:.0f} | {side['planning_s']:.2f} | {side['work_s']:.2f} "
            f"| {per_work} | {inside:.2f} | {side['planning_s'] - inside:.2f} | {checks} "
            f"| {per_check} |"
        )
    return "\n".join(lines)


def package_functions(profiler: cProfile.Profile) -> dict[str, tuple[int, float]]:
    """``folder/module.py:function`` (within the package) -> (calls, cumulative seconds)."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    out: dict[str, tuple[int, float]] = {}
    for (path, _line, name), (_cc, calls, _tt, cumulative, _callers) in stats.items():
        if path.startswith(PACKAGE):
            key = f"{Path(path).relative_to(PACKAGE).as_posix()}:{name}"
            before = out.get(key, (0, 0.0))
            out[key] = (before[0] + calls, before[1] + cumulative)
    return out


def table(
    profiles: dict[str, dict[str, tuple[int, float]]], totals: dict[str, float], share: float
) -> str:
    """Markdown: the functions above ``share`` of either run, by the pure run's seconds."""
    pure, camp = profiles["pure"], profiles["CAMP"]
    keep = [
        key
        for key in {*pure, *camp}
        if pure.get(key, (0, 0.0))[1] >= share * totals["pure"]
        or camp.get(key, (0, 0.0))[1] >= share * totals["CAMP"]
    ]
    keep.sort(key=lambda k: -max(pure.get(k, (0, 0.0))[1], camp.get(k, (0, 0.0))[1]))
    lines = [
        "| function | pure calls | pure s | pure ms/call | CAMP calls | CAMP s | CAMP ms/call |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in keep:
        cells = []
        for side in (pure, camp):
            calls, seconds = side.get(key, (0, 0.0))
            per = f"{1000 * seconds / calls:.2f}" if calls else "–"
            cells.append(f"{calls} | {seconds:.2f} | {per}")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
