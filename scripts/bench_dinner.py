"""Benchmark: how Fast Downward's planning time grows with irrelevant objects, pure vs CAMP.

The dinner world grows by ``--sizes`` distractor products in the store (plus one extra room
off the hall, with its own items, per 50 products). For each size and each of ``--tasks``
test tasks, every context's CAMP is solved once and the best context is chosen in hindsight
(among the contexts reaching pure planning's optimal return, the one whose CAMP keeps the
fewest fluents: a structural choice, so timing noise cannot pick it). Then pure planning
(Fast Downward on the original lifted PDDL) and planning in that CAMP (Fast Downward on the
CAMP's ground PDDL, construction included) are timed ``--repeats`` times each, alternating,
and the medians are reported with the problem sizes each planner saw. Every finished
(size, task) row is appended to a checkpoint in ``<artifacts>/bench/``: a killed run resumes
from it when the same command is run again, and a completed run deletes it.

    .venv/bin/python scripts/bench_dinner.py [--sizes 0 50 100 200 400] [--tasks 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.objective import run_episode
from camp_planner.learning.jsonl import RunCheckpoint
from camp_planner.pddl.export import export
from camp_planner.pddl.mdp import StripsMDP
from camp_planner.planners.fast_downward import FastDownward
from camp_planner.planners.registry import planner_version
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 50, 100, 200, 400])
    parser.add_argument("--tasks", type=int, default=5, help="test tasks per size")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per planner")
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument(
        "--mode",
        choices=("driver", "resident"),
        default="driver",
        help="Fast Downward through its driver, or with the translator kept resident",
    )
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    parser.add_argument("--plot", type=Path, help="also write objects vs time (PNG)")
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.repeats < 1 or any(n < 0 for n in args.sizes):
        print("bench_dinner: error: --tasks and --repeats ≥ 1, sizes ≥ 0", file=sys.stderr)
        return 2
    try:
        return _run(args)
    except CampError as exc:
        print(f"bench_dinner: error: {exc}", file=sys.stderr)
        return 2


def _pipeline(size: int, args: argparse.Namespace) -> Pipeline:
    pipe = Pipeline.create("dinner", None, args.artifacts)
    pipe.config["world"].update({"extra_items": size, "extra_rooms": size // 50})
    pipe.config["tasks"]["test"] = args.tasks
    # Samples are drawn operator by operator: keep several per operator as the world grows.
    pipe.config["csi"]["k1"] = 1000 + 10 * size
    # Distractors are irrelevant under every context: let the universal CAMP drop them too
    # (pure planning still gets the user's lifted files, untouched).
    pipe.config["camp"]["universal_relevance"] = "learned"
    return Pipeline.from_config("dinner", pipe.config, args.artifacts)


def _episode(
    pipe: Pipeline, mdp: StripsMDP, context: Context | None, timeout: float, mode: str
) -> Any:
    started = time.perf_counter()
    camp = pipe.build_camp(mdp, context) if context is not None else None
    setup = time.perf_counter() - started
    return run_episode(
        mdp,
        FastDownward(mode=mode),
        lam=0.0,
        timeout_s=timeout,
        rng=random.Random(0),
        camp=camp,
        setup_time_s=setup,
    )


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    smallest = _pipeline(0, args)  # each size's configuration follows from it and the size
    # Every finished (size, task) row is kept, so that a killed run resumes where it stopped.
    checkpoint = RunCheckpoint(
        args.artifacts / "bench",
        "dinner",
        {
            "format": 1,
            "config": smallest.config,
            "version": smallest.domain.version,
            "planner": planner_version("fast_downward"),
            "repeats": args.repeats,
            "timeout": args.timeout,
            "mode": args.mode,
        },
    )
    if checkpoint.resuming():
        print(checkpoint.resuming(), flush=True)
    rows: list[dict[str, Any]] = []
    print(
        "| products | objects | task | context | pure: fluents / ops | CAMP: fluents / ops "
        "| pure s | CAMP s | ratio | return pure | return CAMP |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    try:
        for size in args.sizes:
            pipe = _pipeline(size, args)
            for t, task in enumerate(pipe.tasks("test")):
                row = checkpoint.get((size, t))
                if row is None:
                    row = _measure(pipe, args, size, t, task)
                    checkpoint.add((size, t), row)
                rows.append(row)
                print(
                    f"| {size} | {row['objects']} | {t} | {row['context']} | "
                    f"{row['pure_fluents']} / {row['pure_operators']} | "
                    f"{row['camp_fluents']} / {row['camp_operators']} | {row['pure_s']:.3f} | "
                    f"{row['camp_s']:.3f} | {row['pure_s'] / row['camp_s']:.1f}× | "
                    f"{row['pure_return']:.0f} | {row['camp_return']:.0f} |",
                    flush=True,
                )
    except KeyboardInterrupt:
        print(f"\n{checkpoint.interrupted()}", file=sys.stderr)
        return 130
    wall = time.perf_counter() - started
    print(f"\nwall time {wall:.0f} s on {platform.machine()} / Python {platform.python_version()}")
    summary = _summary(rows)
    for line in summary:
        print(line)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "wall_time_s": wall}, indent=1))
    if args.plot:
        _plot(rows, args.plot)
    checkpoint.discard()  # complete: the same command measures everything again
    return 0


def _measure(
    pipe: Pipeline, args: argparse.Namespace, size: int, t: int, task: Any
) -> dict[str, Any]:
    """Task ``t`` of world size ``size``: the best context in hindsight, then pure planning
    and its CAMP timed ``args.repeats`` times each, alternating."""
    pipe.learn_csis()  # offline work, never timed (cached after the first task)
    mdp = pipe.domain.make_mdp(task, pipe.config)
    assert isinstance(mdp, StripsMDP) and mdp.task is not None
    pure = _episode(pipe, mdp, None, args.timeout, args.mode)
    best: tuple[int, Context] | None = None
    for context in pipe.space:
        result = _episode(pipe, mdp, context, args.timeout, args.mode)
        if result.success and result.discounted_return >= pure.discounted_return - 1e-9:
            kept = len(pipe.build_camp(mdp, context).state_vars)
            if best is None or kept < best[0]:
                best = (kept, context)
    if best is None:
        raise CampError(f"no context reaches pure planning's return on task {t}")
    context = best[1]
    small = export(pipe.build_camp(mdp, context))
    times: dict[str, list[float]] = {"pure": [], "camp": []}
    returns: dict[str, float] = {}
    for _ in range(args.repeats):
        for label, ctx in (("pure", None), ("camp", context)):
            result = _episode(pipe, mdp, ctx, args.timeout, args.mode)
            times[label].append(result.compute_time_s)
            returns[label] = result.discounted_return
    return {
        "products": size,
        "objects": len(mdp.task.objects),
        "task": t,
        "context": context.name,
        "pure_fluents": len(mdp.state_vars),
        "pure_operators": len(mdp.task.operators),
        "camp_fluents": small.n_fluents,
        "camp_operators": small.n_operators,
        "camp_objects": len(small.objects),
        "pure_s": statistics.median(times["pure"]),
        "camp_s": statistics.median(times["camp"]),
        "pure_return": returns["pure"],
        "camp_return": returns["camp"],
    }


def _summary(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "",
        "| products | objects | median pure s | median CAMP s | median ratio |",
        "|---|---|---|---|---|",
    ]
    for size in sorted({r["products"] for r in rows}):
        group = [r for r in rows if r["products"] == size]
        pure = statistics.median(r["pure_s"] for r in group)
        camp = statistics.median(r["camp_s"] for r in group)
        ratio = statistics.median(r["pure_s"] / r["camp_s"] for r in group)
        out.append(f"| {size} | {group[0]['objects']} | {pure:.3f} | {camp:.3f} | {ratio:.1f}× |")
    return out


def _plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r["objects"] for r in rows})
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label, colour in (
        ("pure_s", "pure planning (lifted PDDL)", "#16a34a"),
        ("camp_s", "CAMP (ground PDDL, build included)", "#2563eb"),
    ):
        med = [statistics.median(r[key] for r in rows if r["objects"] == n) for n in sizes]
        lo = [min(r[key] for r in rows if r["objects"] == n) for n in sizes]
        hi = [max(r[key] for r in rows if r["objects"] == n) for n in sizes]
        ax.plot(sizes, med, "o-", color=colour, label=label)
        ax.fill_between(sizes, lo, hi, color=colour, alpha=0.15)
    ax.set_xlabel("objects in the problem")
    ax.set_ylabel("Fast Downward planning time per task (s)")
    ax.set_title("dinner: planning time vs irrelevant objects (median, min–max)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
