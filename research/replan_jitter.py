"""How far apart the times of one plan are: an eval's episodes planned again in one process.

Where the CAMP keeps the universal context and makes pure planning's plan (58 of the 60
NAMO episodes of evals v15 and v16), the two methods did the same computation, so the
difference between their objectives is the machine's timing alone. This script measures
that timing noise directly, so that an eval's CAMP − pure difference can be set against it.

It reads a ``camp eval`` results file (``--eval``), takes the episodes where the CAMP kept the
universal context and made pure planning's plan, and plans each of them again ``--repeats``
times as pure planning and as the universal context's CAMP, in this one process, alternating
which of the two goes first. Each replay's plan is checked against the eval's (the digest of
its actions): a replay that makes another plan is listed, since then this checkout or
configuration is not the eval's and the comparison means nothing. The universal CAMP is
planned without the selector in front of it (a few milliseconds in the eval).

It prints each episode's times (the wall clock the objective charges, and the process's CPU
time), then over all episodes (and, for planners that count their work, in how many episodes
every replay counted the same work: that count does not depend on the machine's speed):

- **one method against itself**: the largest over the smallest of one plan's repeats, per
  episode and method (median and maximum), and pure planning's repeat-to-repeat difference in
  objective points;
- **CAMP − pure on the replays**, paired by episode and repeat, in objective points
  (−λ × time difference): mean with a bootstrap interval, its range and how many pairs each
  side won: the difference two identical computations make on this machine;
- **CAMP − pure in the eval**, on the same episodes, to set beside it.

Every finished run is appended to a checkpoint in ``artifacts/bench/``: a killed run resumes
from it when the same command is run again (timings from two processes are then mixed, which
the summary says), and a completed run deletes it.

    .venv/bin/python research/replan_jitter.py --eval artifacts/eval/namo-tamp/eval.json
        [--seeds 0 1] [--tasks 10] [--repeats 3] [--config FILE] [--json out.json]
        [--plot out.png]
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

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.eval.evaluate import seed_pipeline
from camp_planner.eval.paired import p_value, paired_difference
from camp_planner.learning.labels import plan_digest
from camp_planner.planners.registry import planner_version
from camp_planner.workflow import Pipeline

DEFAULT_ARTIFACTS = Path("artifacts")
METHODS = ("pure", "camp")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Example: research/replan_jitter.py --eval artifacts/eval/namo-tamp/eval.json",
    )
    parser.add_argument(
        "--eval", type=Path, required=True, help="a `camp eval` results file (results.json)"
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", help="which of the eval's seeds (default: all of them)"
    )
    parser.add_argument("--tasks", type=int, help="only the first N test tasks (default: all)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="replays per episode and method (default 3)"
    )
    parser.add_argument("--config", type=Path, help="the eval's configuration, if not the default")
    parser.add_argument("--json", type=Path, help="also write every run and the summary here")
    parser.add_argument(
        "--plot", type=Path, help="also draw each episode's CAMP − pure, eval and replays (PNG)"
    )
    args = parser.parse_args(argv)
    if args.repeats < 2:
        parser.error("--repeats must be at least 2 (one replay has no spread)")
    if args.tasks is not None and args.tasks < 1:
        parser.error("--tasks must be positive")
    try:
        eval_info = read_eval(args.eval)
        episodes = identical_episodes(eval_info, args.seeds, args.tasks)
        result = _run(args, eval_info, episodes)
    except CampError as exc:  # an eval file or config that cannot be used: no traceback
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    if result is None:
        return 130
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    if args.plot is not None:
        plot(result["runs"], episodes, result["summary"], args.plot)
        print(f"plot: {args.plot}")
    return 0


def read_eval(path: Path) -> dict[str, Any]:
    """The domain, planner, seeds and CAMP and pure-planning episodes of an eval's results."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CampError(f"cannot read {path}: {exc}") from None
    episodes = data.get("episodes") if isinstance(data, dict) else None
    if not isinstance(episodes, dict) or not all(m in episodes for m in METHODS):
        raise CampError(
            f"{path} has no per-episode rows of both the CAMP and pure planning "
            "('episodes' → 'camp', 'pure'): it is not the results.json of a `camp eval` "
            "that ran both"
        )
    title = str(data.get("title", ""))
    parts = [p.strip() for p in title.split(",")]
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise CampError(f"{path}: its title {title!r} does not name a domain and a planner")
    n_seeds = len(episodes["camp"])
    seeds = [int(s) for s in data.get("seed_ids", range(n_seeds))]
    if len(seeds) != n_seeds or len(episodes["pure"]) != n_seeds:
        raise CampError(f"{path}: its seeds and per-seed episode lists do not match")
    return {
        "path": str(path),
        "domain": parts[0],
        "planner": parts[1],
        "seeds": seeds,
        "camp": episodes["camp"],
        "pure": episodes["pure"],
    }


def identical_episodes(
    info: dict[str, Any], seeds: list[int] | None, tasks: int | None
) -> list[dict[str, Any]]:
    """The (seed, task) episodes where the CAMP kept the universal context and made pure
    planning's plan, with both methods' eval rows."""
    chosen = info["seeds"] if seeds is None else seeds
    unknown = sorted(set(chosen) - set(info["seeds"]))
    if unknown:
        raise CampError(
            f"seed(s) {unknown} are not in {info['path']} (it holds seeds {info['seeds']})"
        )
    found = []
    for k, seed in enumerate(info["seeds"]):
        if seed not in chosen:
            continue
        pure_rows = {int(r["task"]): r for r in info["pure"][k]}
        for camp_row in info["camp"][k]:
            task = int(camp_row["task"])
            pure_row = pure_rows.get(task)
            if (tasks is not None and task >= tasks) or pure_row is None:
                continue
            same = camp_row.get("plan") and camp_row.get("plan") == pure_row.get("plan")
            if camp_row.get("context_id") == "universal" and same:
                found.append({"seed": seed, "task": task, "camp": camp_row, "pure": pure_row})
    if not found:
        raise CampError(
            f"{info['path']}: no chosen episode has the CAMP in the universal context making "
            "pure planning's plan (or the file records no plans), so there is nothing to replay"
        )
    return found


def _run(
    args: argparse.Namespace, info: dict[str, Any], episodes: list[dict[str, Any]]
) -> dict[str, Any] | None:
    # Imported here so that a bad --eval is reported before the checkpoint's home is touched.
    from camp_planner.learning.jsonl import RunCheckpoint

    started = time.perf_counter()
    base = Pipeline.create(info["domain"], args.config, DEFAULT_ARTIFACTS)
    planner = info["planner"]
    lam = base.lam(planner)
    checkpoint = RunCheckpoint(
        DEFAULT_ARTIFACTS / "bench",
        "replan-jitter",
        {
            "format": 1,
            "eval": [info["path"], [(e["seed"], e["task"]) for e in episodes]],
            "version": base.domain.version,
            "planner": [planner, planner_version(planner)],
            "config": base.config,
            "repeats": args.repeats,
        },
    )
    if checkpoint.resuming():
        print(checkpoint.resuming(), flush=True)
    runs: list[dict[str, Any]] = []
    resumed = 0
    print(f"{len(episodes)} episodes × {args.repeats} repeats × {len(METHODS)} methods")
    print(f"{'seed':>4} {'task':>4} {'rep':>3} {'method':>6} {'wall s':>7} {'cpu s':>7} plan")
    try:
        pipes: dict[int, Pipeline] = {}
        for ep in episodes:
            seed = ep["seed"]
            if seed not in pipes:  # camp eval's seed `seed`: the task draws shift with it
                pipes[seed] = seed_pipeline(base, DEFAULT_ARTIFACTS, seed)
            pipe = pipes[seed]
            task = pipe.task("test", ep["task"])
            for rep in range(args.repeats):
                # Alternating which goes first, so that neither always plans on a warm cache.
                order = METHODS if rep % 2 == 0 else METHODS[::-1]
                for method in order:
                    unit = (seed, ep["task"], rep, method)
                    run = checkpoint.get(unit)
                    earlier = run is not None
                    if run is None:
                        run = _replay(pipe, planner, task, method, seed)
                        checkpoint.add(unit, run)
                    resumed += earlier
                    run = {"seed": seed, "task": ep["task"], "repeat": rep, **run}
                    run["same_plan_as_eval"] = run["plan"] == ep[method]["plan"]
                    runs.append(run)
                    print(
                        f"{seed:>4} {ep['task']:>4} {rep:>3} {method:>6} "
                        f"{run['compute_time_s']:>7.3f} {run['cpu_s']:>7.3f} {run['plan']}"
                        f"{'' if run['same_plan_as_eval'] else '  (not the eval plan)'}"
                        f"{'  (finished earlier)' if earlier else ''}",
                        flush=True,
                    )
    except KeyboardInterrupt:
        print(f"\n{checkpoint.interrupted()}", file=sys.stderr)
        return None
    summary = summarise(runs, episodes, lam, args.repeats)
    summary.update(
        eval=info["path"],
        planner=planner,
        version=base.domain.version,
        wall_time_s=time.perf_counter() - started,
        runs_finished_earlier=resumed,  # by an interrupted run, in another process
        machine=f"{platform.machine()}, {platform.python_version()}",
    )
    report(summary, runs)
    checkpoint.discard()  # complete: the same command measures everything again
    return {"summary": summary, "runs": runs}


def _replay(pipe: Pipeline, planner: str, task: Any, method: str, seed: int) -> dict[str, Any]:
    """One episode planned again: pure planning, or the universal context's CAMP."""
    context = Context.universal() if method == "camp" else None
    cpu0 = time.process_time()
    result, _ = pipe.run(task, planner, context, seed=seed)
    cpu = time.process_time() - cpu0
    return {
        "method": method,
        "compute_time_s": result.compute_time_s,
        "cpu_s": cpu,
        "objective": result.objective,
        "success": result.success,
        "plan": plan_digest(result.actions),
        "work_s": result.work_s,
    }


def summarise(
    runs: list[dict[str, Any]], episodes: list[dict[str, Any]], lam: float, repeats: int
) -> dict[str, Any]:
    """The spread of one plan's time, and CAMP − pure on the replays and in the eval."""
    by_unit = {(r["seed"], r["task"], r["repeat"], r["method"]): r for r in runs}
    spreads: dict[str, list[float]] = {m: [] for m in METHODS}
    self_diffs: list[float] = []  # pure against pure, consecutive repeats, objective points
    camp_obj: list[float] = []
    pure_obj: list[float] = []
    for ep in episodes:
        key = (ep["seed"], ep["task"])
        for method in METHODS:
            times = [by_unit[(*key, rep, method)]["compute_time_s"] for rep in range(repeats)]
            spreads[method].append(max(times) / max(min(times), 1e-9))
        for rep in range(repeats):
            camp_obj.append(by_unit[(*key, rep, "camp")]["objective"])
            pure_obj.append(by_unit[(*key, rep, "pure")]["objective"])
            if rep > 0:
                self_diffs.append(
                    by_unit[(*key, rep, "pure")]["objective"]
                    - by_unit[(*key, rep - 1, "pure")]["objective"]
                )
    # The planner's count of its work (nominal seconds) should not vary with the machine's
    # speed: an episode whose replays all did the same work shows it does not.
    works = [
        {
            by_unit[(e["seed"], e["task"], rep, m)].get("work_s")
            for rep in range(repeats)
            for m in METHODS
        }
        for e in episodes
    ]
    replays = paired_difference(camp_obj, pure_obj)
    in_eval = paired_difference(
        [float(e["camp"]["objective"]) for e in episodes],
        [float(e["pure"]["objective"]) for e in episodes],
    )
    diffs = [c - p for c, p in zip(camp_obj, pure_obj, strict=True)]
    return {
        "lambda": lam,
        "episodes": len(episodes),
        "repeats": repeats,
        "other_plans": [
            [r["seed"], r["task"], r["repeat"], r["method"]]
            for r in runs
            if not r["same_plan_as_eval"]
        ],
        "failures": sum(not r["success"] for r in runs),
        # Episodes whose replays, both methods', all counted the same work (None: not counted).
        "same_work": None if any(None in w for w in works) else sum(len(w) == 1 for w in works),
        "max_over_min": {
            m: {"median": statistics.median(s), "max": max(s)} for m, s in spreads.items()
        },
        # One plan's time at each repeat over its first, median over episodes and methods: a
        # process that slows down as it plans (memory growing, caches filling) shows here.
        "drift": [
            statistics.median(
                by_unit[(e["seed"], e["task"], rep, m)]["compute_time_s"]
                / max(by_unit[(e["seed"], e["task"], 0, m)]["compute_time_s"], 1e-9)
                for e in episodes
                for m in METHODS
            )
            for rep in range(repeats)
        ],
        "pure_repeat_to_repeat": {
            "median_abs": statistics.median(abs(d) for d in self_diffs),
            "max_abs": max(abs(d) for d in self_diffs),
        },
        "replays_camp_minus_pure": {**replays, "min": min(diffs), "max": max(diffs)},
        "eval_camp_minus_pure": in_eval,
    }


def report(summary: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    """The summary as text under the runs."""
    n = summary["episodes"]
    print(
        f"\n{n} episodes where the CAMP kept the universal context and made pure planning's "
        f"plan, each planned {summary['repeats']} times by each method (λ = {summary['lambda']:g})"
    )
    if summary["other_plans"]:
        print(
            f"  {len(summary['other_plans'])} replays made another plan than the eval's: this "
            "checkout or configuration is not the eval's, so the comparison below is not "
            "of identical computations"
        )
    if summary["failures"]:
        print(f"  {summary['failures']} replays did not reach the goal")
    if summary["same_work"] is not None:
        print(
            f"  the planner's count of its work (nominal s) was the same in every replay of "
            f"{summary['same_work']} of the {n} episodes, whatever their times"
        )
    for m, s in summary["max_over_min"].items():
        print(
            f"  {m}: one plan's slowest repeat ÷ its fastest: median {s['median']:.2f}×, "
            f"max {s['max']:.2f}×"
        )
    drift = ", ".join(f"{x:.2f}" for x in summary["drift"])
    print(f"  one plan's time at repeats 0, 1, … over its first (median): {drift}")
    rr = summary["pure_repeat_to_repeat"]
    print(
        f"  pure planning against itself (consecutive repeats): median |Δ| "
        f"{rr['median_abs']:.1f} points, max {rr['max_abs']:.1f}"
    )
    for label, key in (("replays", "replays_camp_minus_pure"), ("eval", "eval_camp_minus_pure")):
        d = summary[key]
        extra = f", range {d['min']:+.1f} to {d['max']:+.1f}" if "min" in d else ""
        print(
            f"  CAMP − pure, {label}: {d['mean']:+.1f} [{d['ci_low']:+.1f}, {d['ci_high']:+.1f}] "
            f"points over {d['pairs']} pairs ({d['verdict']}; CAMP ahead in {d['a_wins']}, "
            f"pure in {d['b_wins']}; signed-rank p {p_value(d)}){extra}"
        )
    if summary["runs_finished_earlier"]:
        print(
            f"  {summary['runs_finished_earlier']} of {len(runs)} runs were read from a "
            "checkpoint of an interrupted run: their times come from another process"
        )
    print(f"  wall time {summary['wall_time_s']:.0f} s")


def plot(
    runs: list[dict[str, Any]], episodes: list[dict[str, Any]], summary: dict[str, Any], path: Path
) -> None:
    """One row per episode: the eval's CAMP − pure (a large dot) and each replay's (small
    dots), in objective points, so that the eval's spread can be seen against the machine's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_unit = {(r["seed"], r["task"], r["repeat"], r["method"]): r for r in runs}
    rows = []
    for ep in episodes:
        key = (ep["seed"], ep["task"])
        replays = [
            by_unit[(*key, rep, "camp")]["objective"] - by_unit[(*key, rep, "pure")]["objective"]
            for rep in range(summary["repeats"])
        ]
        in_eval = float(ep["camp"]["objective"]) - float(ep["pure"]["objective"])
        rows.append((f"seed {key[0]} task {key[1]}", in_eval, replays))
    rows.sort(key=lambda row: row[1])
    fig, ax = plt.subplots(figsize=(6.4, 1.2 + 0.22 * len(rows)))
    ys = range(len(rows))
    for y, (_, _, replays) in zip(ys, rows, strict=True):
        ax.scatter(replays, [y] * len(replays), s=12, color="tab:blue", alpha=0.6, lw=0)
    ax.scatter([r[1] for r in rows], list(ys), s=40, color="tab:red", zorder=3)
    ax.axvline(0.0, color="0.5", lw=0.8)
    ax.set_yticks(list(ys), [r[0] for r in rows], fontsize=7)
    ax.set_xlabel("CAMP − pure planning, objective points (λ × seconds)")
    rep = summary["replays_camp_minus_pure"]
    ev = summary["eval_camp_minus_pure"]
    ax.set_title(
        f"Identical plans: the eval (red) {ev['mean']:+.1f} [{ev['ci_low']:+.1f}, "
        f"{ev['ci_high']:+.1f}],\nreplays interleaved (blue) {rep['mean']:+.1f} "
        f"[{rep['ci_low']:+.1f}, {rep['ci_high']:+.1f}]",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
