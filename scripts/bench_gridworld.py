"""Benchmark: planning time and return of pure planning vs a CAMP with a good context.

For each gridworld test task, a good context is chosen in hindsight: every context's CAMP is
solved with BFS-replan, and among the contexts that reach the best return, the one whose CAMP
keeps the fewest state variables wins (the smallest abstraction that loses no return; a
structural choice, so timing noise cannot pick it). Then BFS-replan and value iteration each
run once in the full MDP and once in that CAMP, in the same process. Prints a per-task table
and the ratio of total planning time (pure ÷ CAMP). Every finished (task, planner) pair is
appended to a checkpoint in ``<artifacts>/bench/``: a killed run resumes from it when the same
command is run again, and a completed run deletes it.

    .venv/bin/python scripts/bench_gridworld.py [--tasks 10] [--timeout 60] [--json out.json]
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

import yaml

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.learning.jsonl import RunCheckpoint
from camp_planner.planners.registry import planner_version
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10, help="number of test tasks")
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument(
        "--planners",
        nargs="+",
        default=["bfs_replan", "bfs_replan:determinization=all_outcomes", "vi"],
        help="planner names, optionally with settings: name:key=value,key=value",
    )
    parser.add_argument("--config", type=Path)
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    parser.add_argument("--plot", type=Path, help="also write a pure-vs-CAMP time plot (PNG)")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except CampError as exc:
        print(f"bench_gridworld: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    pipe = Pipeline.create("gridworld", args.config, args.artifacts)
    pipe.config["tasks"]["test"] = max(args.tasks, 1)
    tasks = pipe.domain.make_tasks(pipe.config, "test")
    pipe.learn_csis()  # offline work: before timing anything
    # Every finished (task, planner) pair is kept, so that a killed run resumes where it stopped.
    checkpoint = RunCheckpoint(
        args.artifacts / "bench",
        "gridworld",
        {
            "format": 1,
            "version": pipe.domain.version,
            "config": pipe.config,
            "timeout": args.timeout,
            "planners": {
                name: planner_version(name) for name in {_parse_spec(p)[0] for p in args.planners}
            },
        },
    )
    if checkpoint.resuming():
        print(checkpoint.resuming(), flush=True)
    rows: list[dict[str, Any]] = []
    print(
        f"{'task':>4} {'context':<30} {'planner':<11} {'pure s':>8} {'camp s':>8} "
        f"{'ratio':>7} {'pure R':>7} {'camp R':>7}"
    )
    try:
        for i, task in enumerate(tasks):
            context: Context | None = None
            for planner in args.planners:
                row = checkpoint.get((i, planner))
                earlier = row is not None
                if row is None:
                    if context is None:  # offline work, and only for a task still to measure
                        context = _good_context(pipe, task, args.timeout)
                    row = _measure(pipe, args, i, task, planner, context)
                    checkpoint.add((i, planner), row)
                rows.append(row)
                ratio = row["pure_time_s"] / max(row["camp_time_s"], 1e-9)
                print(
                    f"{i:>4} {row['context']:<30} {_short(planner):<11} "
                    f"{row['pure_time_s']:8.3f} {row['camp_time_s']:8.3f} {ratio:6.1f}× "
                    f"{row['pure_return']:7.2f} {row['camp_return']:7.2f}"
                    f"{'  (finished earlier)' if earlier else ''}",
                    flush=True,
                )
    except KeyboardInterrupt:
        print(f"\n{checkpoint.interrupted()}", file=sys.stderr)
        return 130
    print()
    print("summary (one run, same process):")
    for planner in args.planners:
        sel = [r for r in rows if r["planner"] == planner]
        pure_t = sum(r["pure_time_s"] for r in sel)
        camp_t = sum(r["camp_time_s"] for r in sel)
        ratios = [r["pure_time_s"] / max(r["camp_time_s"], 1e-9) for r in sel]
        pure_r = statistics.fmean(r["pure_return"] for r in sel)
        camp_r = statistics.fmean(r["camp_return"] for r in sel)
        timeouts = sum(r["pure_outcome"] == "timeout" for r in sel)
        print(
            f"  {_short(planner):<11} planning time pure {pure_t:8.2f} s, CAMP {camp_t:7.2f} s "
            f"-> {pure_t / max(camp_t, 1e-9):5.1f}× faster (median per task "
            f"{statistics.median(ratios):.1f}×); mean return pure {pure_r:.2f}, "
            f"CAMP {camp_r:.2f}; pure timeouts {timeouts}/{len(sel)}"
        )
    print(
        f"machine: {platform.processor() or platform.machine()}, "
        f"python {platform.python_version()}; wall time {time.perf_counter() - started:.0f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.plot:
        _plot(rows, args.plot)
    checkpoint.discard()  # complete: the same command measures everything again
    return 0


def _measure(
    pipe: Pipeline, args: argparse.Namespace, index: int, task: Any, planner: str, context: Context
) -> dict[str, Any]:
    """Planner spec ``planner`` once in the full task and once in the CAMP of ``context``."""
    name, settings = _parse_spec(planner)
    pure, _ = pipe.run(task, name, None, timeout_s=args.timeout, overrides=settings)
    camp, _ = pipe.run(task, name, context, timeout_s=args.timeout, overrides=settings)
    return {
        "task": index,
        "context": context.name,
        "planner": planner,
        "pure_time_s": pure.compute_time_s,
        "camp_time_s": camp.compute_time_s,
        "pure_return": pure.discounted_return,
        "camp_return": camp.discounted_return,
        "pure_outcome": pure.outcome,
        "camp_outcome": camp.outcome,
    }


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Log–log scatter of per-task planning time, pure (x) vs CAMP (y), one colour per planner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    times = [r[k] for r in rows for k in ("pure_time_s", "camp_time_s")]
    lo, hi = min(times) / 2, max(times) * 2
    for factor, style in ((1, "-"), (5, "--"), (100, ":")):
        ax.plot([lo, hi], [lo / factor, hi / factor], style, color="#9ca3af", lw=1)
        ax.text(hi, hi / factor, f" {factor}×", fontsize=8, color="#6b7280", va="center")
    for planner, colour in (("bfs_replan", "#2563eb"), ("vi", "#dc2626"), ("mcts", "#16a34a")):
        sel = [r for r in rows if r["planner"] == planner]
        if sel:
            ax.scatter(
                [r["pure_time_s"] for r in sel],
                [r["camp_time_s"] for r in sel],
                label=planner,
                color=colour,
                s=28,
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi * 3)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("pure planning: compute time per episode (s)")
    ax.set_ylabel("CAMP (good context): compute time (s)")
    ax.set_title("Gridworld test tasks: below the lines = faster", fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _short(spec: str) -> str:
    return "bfs_all_out" if "all_outcomes" in spec else spec


def _parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"bfs_replan:determinization=all_outcomes"`` -> name and settings."""
    name, _, rest = spec.partition(":")
    settings: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise CampError(f"planner setting '{item}' in '{spec}' is not key=value")
        settings[key] = _literal(value)
    return name, settings


def _literal(text: str) -> Any:
    """A setting's value as YAML reads it (``0.05`` a float, ``true`` a bool, words strings)."""
    value = yaml.safe_load(text)
    return text if value is None else value


def _good_context(pipe: Pipeline, task: Any, timeout: float) -> Context:
    mdp = pipe.domain.make_mdp(task, pipe.config)
    scored = pipe.score_contexts(task, "bfs_replan", timeout_s=timeout)
    best_return = max(r.discounted_return for _, r in scored)
    candidates = [c for c, r in scored if r.discounted_return >= best_return - 1e-9]
    return min(candidates, key=lambda c: len(pipe.build_camp(mdp, c).state_vars))


if __name__ == "__main__":
    raise SystemExit(main())
