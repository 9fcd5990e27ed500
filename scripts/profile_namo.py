"""Where one NAMO task's planning time goes, pure TAMP against its CAMP, function by function.

Runs the TAMP planner once in the full task and once in the CAMP of the task's context (the
same choice as ``scripts/bench_namo.py``: ``--context route`` or ``space``), each under
cProfile, and prints one table: for every function of the package that took at least
``--min-share`` of either run's time, its calls, its cumulative seconds and its milliseconds
per call, pure beside CAMP. It answers "what does the context make cheaper", which the
benchmark's per-stage times do not: at 7×7, pure planning and the CAMP move about as many
boxes, and the difference is in how much each search costs.

cProfile slows Python code (not PyBullet's or OMPL's own), so the times are larger than the
benchmark's; compare the two columns, not a column with the benchmark.

    .venv/bin/python scripts/profile_namo.py --config config/namo-grid7.yaml --task 4 \\
        [--seed 0] [--context route] [--set relaxed=grid] [--min-share 0.03]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path
from typing import Any

import camp_planner
from camp_planner.config import add_settings_argument, settings_or_usage_error
from camp_planner.core.errors import CampError
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

PACKAGE = str(Path(camp_planner.__file__).resolve().parent)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, help="a NAMO configuration (YAML)")
    parser.add_argument("--task", type=int, default=0, help="test task index (default 0)")
    parser.add_argument("--tasks", type=int, default=10, help="test tasks drawn (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="planner seed (default 0)")
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument("--context", choices=("space", "route"), default="route")
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
    if not 0 < args.min_share < 1:
        parser.error("--min-share must lie strictly between 0 and 1")
    overrides = settings_or_usage_error(parser, args.set)
    try:
        return _run(args, overrides)
    except CampError as exc:
        print(f"profile_namo: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, overrides: dict[str, Any]) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_namo import route_context, smallest_reachable_context

    pipe = Pipeline.create("namo", args.config, args.artifacts)
    pipe.config["tasks"]["test"] = args.tasks
    task = pipe.domain.make_tasks(pipe.config, "test")[args.task]
    choose = route_context if args.context == "route" else smallest_reachable_context
    ctx = choose(pipe, task)
    pipe.learn_csis([ctx])  # offline work: not profiled
    print(f"task {args.task}, planner seed {args.seed}, context {ctx.name}", flush=True)
    profiles: dict[str, dict[str, tuple[int, float]]] = {}
    totals: dict[str, float] = {}
    for label, context in (("pure", None), ("CAMP", ctx)):
        profiler = cProfile.Profile()
        profiler.enable()
        result, _ = pipe.run(
            task, "tamp", context, seed=args.seed, timeout_s=args.timeout, overrides=overrides
        )
        profiler.disable()
        picks = sum(1 for a in result.actions if a[0] == "pick")
        print(
            f"{label}: {result.compute_time_s:.2f} s planning (profiled), {result.outcome}, "
            f"{picks} boxes moved",
            flush=True,
        )
        profiles[label] = package_functions(profiler)
        totals[label] = result.compute_time_s
    print(table(profiles, totals, args.min_share))
    return 0


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
