"""Benchmark: TAMP planning time in the manipulation domain as the distractors grow (the
scaling row of paper domain D4), pure planning vs the CAMP of a context.

For each distractor count in ``--distractors`` (default 15 30 60; ``world.n_distractors``,
the left table's grid growing from 5 × 5 to fit them) the manipulation pipeline is built
with that count, and the first ``--tasks`` tasks of ``--split`` are taken. Their seeds are
the same at every size, and so are what the selector sees (whether the reds are fat, which
bins are occupied: drawn first), but the positions of the objects are not (the grid and its
outer cells grow, so the same random stream places them elsewhere).

The context of each task is ``--context REF`` (an index, id or name as ``camp contexts
--domain manip`` lists them, e.g. "grasp ∈ {none,side}"), or else the first choice of a
selector bundle: ``--bundle B.pt``, by default the one ``camp train`` wrote for this
configuration (planner ``tamp``, seed 0) under ``--artifacts``, else the one the package
ships for manip, if any (none: give ``--context``). The selector's features (the red
radius, the bins' occupancy) mean the same at every size, so a bundle trained at 15 serves
every size; its latency is added to the CAMP's time. A CAMP that fails falls back as the
CAMP method of ``camp eval`` does: down the selector's ranking (``--context``: straight) to
the universal context, every attempt's time counted.
The CSIs of the chosen contexts are learned for every size, in up to ``--workers``
processes, before anything is timed (cached in ``<artifacts>/csi``); ``--csi-k K`` and
``--csi-tasks N`` shrink their budget for a cheap run.

The TAMP planner then runs once in the full task (pure) and once in the CAMP, each executed
in the full simulated world, ``--repeats K`` times with planner seeds 0..K-1. Printed per
size: mean and median planning time of each, the median ratio pure ÷ CAMP with a 95 %
bootstrap interval, the objective's paired difference (pure minus CAMP: mean, 95 %
interval, Wilcoxon signed-rank p), successes, the mean seconds per stage (motion planning
is part of grasping, regrasping and placing), and the variables the CAMP dropped.
``--json`` writes every run and the summary.

Every finished (size, task, planner seed) run is appended to a checkpoint in
``<artifacts>/bench/`` as it ends: a killed run resumes from it when the same command runs
again; a run that completes deletes it.

    .venv/bin/python scripts/bench_manip.py [--distractors 15 30 60] [--tasks 10]
        [--split test] [--repeats 1] [--timeout 60] [--context REF | --bundle B.pt]
        [--config C.yaml] [--csi-k K] [--csi-tasks N] [--workers N] [--json out.json]
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from camp_planner.config import load_config
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.objective import EpisodeResult
from camp_planner.domains import get_domain
from camp_planner.eval.paired import bootstrap_interval, paired_difference
from camp_planner.learning.jsonl import RunCheckpoint
from camp_planner.planners.registry import planner_version
from camp_planner.runtime.camp_runtime import CampRuntime
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

PLANNER = "tamp"
# The stages of a manipulation TAMP run, as the planner names them and as printed. Motion
# planning (the base's paths) happens within grasping, regrasping and placing: no sum.
STAGES = (
    ("task_planning", "task planning"),
    ("motion_planning", "motion planning"),
    ("grasping", "grasping"),
    ("regrasping", "regrasping"),
    ("placing", "placing"),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("--distractors", type=int, nargs="+", default=[15, 30, 60], metavar="N",
        help="distractor counts (default 15 30 60)")  # fmt: skip
    add("--tasks", type=int, default=10, metavar="N", help="the first N tasks (default 10)")
    add("--split", choices=("test", "train"), default="test", help="default: test")
    add("--repeats", type=int, default=1, metavar="K",
        help="runs per task and method, planner seeds 0..K-1 (default 1)")  # fmt: skip
    add("--timeout", type=float, default=60.0, metavar="S",
        help="seconds per planning call (default 60)")  # fmt: skip
    pick = parser.add_mutually_exclusive_group().add_argument
    pick("--context", metavar="REF", help="every task's context (`camp contexts --domain manip`)")
    pick("--bundle", type=Path, metavar="B.pt",
         help="selector choosing each task's context (default: as `camp plan`)")  # fmt: skip
    add("--config", type=Path, metavar="C.yaml", help="manip settings overriding the defaults")
    add("--csi-k", type=int, metavar="K", help="CSI samples, csi.k1 = csi.k2 = K (cheap runs)")
    add("--csi-tasks", type=int, metavar="N", help="CSI training tasks, csi.tasks = N (cheap runs)")
    add("--artifacts", type=Path, default=DEFAULT_ARTIFACTS, metavar="DIR",
        help=f"caches and checkpoints (default {DEFAULT_ARTIFACTS})")  # fmt: skip
    add("--json", type=Path, metavar="OUT", help="write every run and the summary here")
    add("--workers", type=int, default=1, metavar="N",
        help="processes learning the CSIs (default 1); timed runs go one at a time")  # fmt: skip
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.repeats < 1 or not args.timeout > 0:
        parser.error("--tasks and --repeats must be at least 1 and --timeout positive")
    if min(args.distractors) < 0:
        parser.error("--distractors must be non-negative counts")
    if any(v is not None and v < 1 for v in (args.csi_k, args.csi_tasks, args.workers)):
        parser.error("--csi-k, --csi-tasks and --workers must be at least 1")
    args.distractors = list(dict.fromkeys(args.distractors))
    try:
        return _run(args)
    except CampError as exc:
        print(f"bench_manip: error: {exc}", file=sys.stderr)
        return 2


def base_config(args: argparse.Namespace) -> dict[str, Any]:
    """The configuration every size starts from: ``--config`` with the CSI budget options."""
    config = load_config(get_domain("manip"), args.config)
    if args.csi_k is not None:
        config["csi"].update(k1=args.csi_k, k2=args.csi_k)
    if args.csi_tasks is not None:
        config["csi"]["tasks"] = args.csi_tasks
    return config


def bundle_path(args: argparse.Namespace) -> Path | None:
    """The bundle choosing the contexts, as ``camp plan`` finds it (None: ``--context``)."""
    from camp_planner.learning.bundle import shipped_bundle, trained_bundle

    if args.context is not None:
        return None
    if args.bundle is not None:
        return Path(args.bundle)
    trained = trained_bundle(
        args.artifacts, "manip", PLANNER, 0, load_config(get_domain("manip"), args.config)
    )
    found: Path | None = trained if trained.is_file() else shipped_bundle("manip", PLANNER)
    if found is None:
        raise CampError(
            f"no selector bundle for manip (none trained at {trained}, none shipped): give "
            "--context REF (see `camp contexts --domain manip`) or --bundle B.pt"
        )
    return found


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    path = bundle_path(args)
    config = base_config(args)
    bundle = None
    if path is not None:
        from camp_planner.learning.bundle import load_bundle

        bundle = load_bundle(path, "manip", get_domain("manip").version)
    header = {
        "machine": f"{platform.node()}, {platform.machine()}, Python {platform.python_version()}",
        "commit": _commit(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "choice": f"context {args.context}" if path is None else f"bundle {path}",
    }
    print(", ".join(f"{k} {v}" for k, v in header.items()), flush=True)
    # Everything that decides a run's result, apart from its unit (distractors, task, seed).
    choice = args.context if path is None else hashlib.sha1(path.read_bytes()).hexdigest()
    identity = {"format": 2, "version": get_domain("manip").version, "choice": choice,
                "planner": planner_version(PLANNER), "config": config, "split": args.split,
                "timeout": args.timeout}  # fmt: skip
    checkpoint = RunCheckpoint(args.artifacts / "bench", "manip", identity)
    if checkpoint.resuming():
        print(checkpoint.resuming(), flush=True)
    rows: list[dict[str, Any]] = []
    try:
        sizes = []
        # Offline work for every size before anything is timed: the CSIs of every context
        # an attempt may build, in up to --workers processes.
        for n in args.distractors:
            sized = copy.deepcopy(config)
            sized["world"]["n_distractors"] = n
            # Never fewer tasks than configured: the CSIs' training tasks stay the same.
            sized["tasks"][args.split] = max(int(sized["tasks"][args.split]), args.tasks)
            pipe = Pipeline.from_config("manip", sized, args.artifacts)
            tasks = list(pipe.tasks(args.split))[: args.tasks]
            chosen = [_choose(pipe, bundle, args.context, t) for t in tasks]
            contexts = list({c.id: c for order, _ in chosen for c in order}.values())
            pipe.learn_csis(contexts, f"learning CSIs, {n} distractors", args.workers)
            sizes.append((n, pipe, tasks, chosen))
        print(
            f"{'n':>3} {'task':>4} {'seed':>4}  {'context':<32} {'pure s':>7} {'ok':>3} "
            f"{'CAMP s':>7} {'ok':>3} {'dropped':>7} {'ratio':>6}",
            flush=True,
        )
        for n, pipe, tasks, chosen in sizes:
            for i, (task, (order, selection_s)) in enumerate(zip(tasks, chosen, strict=True)):
                for seed in range(args.repeats):
                    unit = (n, i, seed)
                    row = checkpoint.get(unit)
                    earlier = row is not None
                    if row is None:
                        row = _measure(pipe, args.timeout, unit, task, order, selection_s, bundle)
                        checkpoint.add(unit, row)
                    rows.append({**row, "finished_earlier": earlier})
                    print(
                        f"{n:>3} {i:>4} {seed:>4}  {row['context']:<32} "
                        f"{row['pure']['compute_time_s']:>7.2f} {_ok(row['pure'])} "
                        f"{row['camp']['compute_time_s']:>7.2f} {_ok(row['camp'])} "
                        f"{row['dropped_variables']:>7} {row['ratio']:>5.1f}×"
                        f"{'  (finished earlier)' if earlier else ''}",
                        flush=True,
                    )
    except KeyboardInterrupt:
        print(f"\n{checkpoint.interrupted()}", file=sys.stderr)
        return 130
    summary = {
        str(n): summarise([r for r in rows if r["distractors"] == n]) for n in args.distractors
    }
    for n in args.distractors:
        print("\n" + "\n".join(describe(n, summary[str(n)])))
    wall = time.perf_counter() - started
    resumed = sum(r["finished_earlier"] for r in rows)
    print(f"\nwall time {wall:.0f} s ({resumed} runs finished earlier, not in it)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        out = {
            "header": {**header, "wall_time_s": wall, "runs_finished_earlier": resumed},
            "rows": rows,
            "summary": summary,
        }
        args.json.write_text(json.dumps(out, indent=1, default=str))
    checkpoint.discard()  # complete: the same command measures everything again
    return 0


def _runtime(pipe: Pipeline, bundle: Any) -> CampRuntime:
    """The CAMP runtime for one size: the bundle's selector ranking its contexts (the paper's
    rule: the selector's first choice, then the next-ranked) and the CSIs of this size, from
    the pipeline (a bundle is trained at one size only)."""
    return CampRuntime(pipe, PLANNER, bundle, rule="ungated", relevance="store")


def _choose(pipe: Pipeline, bundle: Any, ref: str | None, task: Any) -> tuple[list[Context], float]:
    """The contexts the task's CAMP tries in turn (the universal one last) and the seconds
    choosing them took (0 for ``--context``)."""
    if bundle is None:
        return [pipe.space.resolve(str(ref)), Context.universal()], 0.0
    selection = _runtime(pipe, bundle).select(task)
    return selection.order, selection.latency_s


def _camp_run(
    pipe: Pipeline, bundle: Any, task: Any, order: list[Context], seed: int, timeout: float
) -> tuple[EpisodeResult, Any]:
    """The task planned by the CAMP runtime (``order[0]`` named first for ``--context``),
    falling back down its order whenever planning fails; the CAMP that ended the episode
    is returned with the result."""
    runtime = _runtime(pipe, bundle)
    named = order[0] if bundle is None else None
    run = runtime.run(task, seed, named=named, timeout_s=timeout)
    return run.result, run.camp


def _measure(
    pipe: Pipeline,
    timeout: float,
    unit: tuple[int, int, int],
    task: Any,
    order: list[Context],
    selection_s: float,
    bundle: Any = None,
) -> dict[str, Any]:
    """One pure and one CAMP run of TAMP on a task: ``unit`` is (distractors, task, seed)."""
    n, index, seed = unit
    ctx = order[0]
    row: dict[str, Any] = {"distractors": n, "task": index, "seed": seed, "context": ctx.name,
                           "context_id": ctx.id, "selection_s": selection_s}  # fmt: skip
    for label in ("pure", "camp"):
        if label == "pure":
            result, camp = pipe.run(task, PLANNER, None, seed=seed, timeout_s=timeout)
        else:
            result, camp = _camp_run(pipe, bundle, task, order, seed, timeout)
        row[label] = {
            "compute_time_s": result.compute_time_s,
            "fallbacks": result.fallbacks,
            "success": result.success,
            "outcome": result.outcome,
            "objective": result.objective,
            "steps": result.steps,
            "stage_times_s": result.stage_times_s,
            "failures": result.failures[:3],  # why a run failed, without running it again
        }
        if camp is not None:
            row["dropped_variables"] = len(camp.dropped_variables)
            row["variables"] = len(camp.variables) + len(camp.dropped_variables)
    row["ratio"] = row["pure"]["compute_time_s"] / max(row["camp"]["compute_time_s"], 1e-9)
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The statistics of one size's runs."""
    out: dict[str, Any] = {"runs": len(rows)}
    for label in ("pure", "camp"):
        times = [r[label]["compute_time_s"] for r in rows]
        out[label] = {
            "mean_s": statistics.fmean(times),
            "median_s": statistics.median(times),
            "successes": sum(r[label]["success"] for r in rows),
            "stage_means_s": {
                k: statistics.fmean(r[label]["stage_times_s"].get(k, 0.0) for r in rows)
                for k, _ in STAGES
            },
        }
    ratios = [r["ratio"] for r in rows]
    out["median_ratio_pure_over_camp"] = statistics.median(ratios)
    out["median_ratio_interval_95"] = list(bootstrap_interval(ratios, "median"))
    out["objective_pure_minus_camp"] = paired_difference(
        [r["pure"]["objective"] for r in rows], [r["camp"]["objective"] for r in rows]
    )
    out["mean_dropped_variables"] = statistics.fmean(r["dropped_variables"] for r in rows)
    out["variables"] = rows[0]["variables"]
    out["contexts"] = dict(sorted(Counter(r["context"] for r in rows).items()))
    return out


def describe(n: int, s: dict[str, Any]) -> list[str]:
    """The printed lines of one size's summary."""
    low, high = s["median_ratio_interval_95"]
    d = s["objective_pure_minus_camp"]
    lines = [f"{n} distractors, {s['runs']} runs; contexts {s['contexts']}"]
    for label, name in (("pure", "pure"), ("camp", "CAMP")):
        p = s[label]
        stages = ", ".join(f"{text} {p['stage_means_s'][k]:.3f}" for k, text in STAGES)
        lines.append(
            f"  {name:<5} mean {p['mean_s']:6.2f} s, median {p['median_s']:6.2f} s, "
            f"success {p['successes']}/{s['runs']}; mean s per stage: {stages}"
        )
    lines.append(
        f"  median ratio pure ÷ CAMP {s['median_ratio_pure_over_camp']:.2f}× (95 % interval "
        f"{low:.2f}–{high:.2f}×); objective pure minus CAMP {d['mean']:+.1f} (95 % interval "
        f"{d['ci_low']:+.1f} to {d['ci_high']:+.1f}, Wilcoxon p {d['signed_rank_p']:.3g}); "
        f"variables dropped {s['mean_dropped_variables']:.1f} of {s['variables']}"
    )
    return lines


def _commit() -> str:
    """The checked-out commit, marked when tracked files differ from it (read-only git)."""
    git = ["git", "-C", str(Path(__file__).resolve().parents[1])]
    try:
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run([*git, "diff-index", "--quiet", "HEAD", "--"], check=False)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" (with uncommitted changes)" if dirty.returncode else "")


def _ok(result: dict[str, Any]) -> str:
    return f"{'y' if result['success'] else 'n':>3}"


if __name__ == "__main__":
    sys.exit(main())
