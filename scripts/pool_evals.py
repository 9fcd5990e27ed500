"""Pool the test episodes of several `camp eval` runs into one table.

One run of a randomised planner on 30 test tasks is noisy: in NAMO, pure planning scored
849.4 in one 3-seed run and 779.6 in the next, on the same tasks and seeds. Pooling the
episodes of repeated runs gives each method's mean objective and compute time, its median
compute time, its success count and the spread per episode, with a standard error for the
mean objective. When CAMP is among the methods, it also compares CAMP with each other
method episode by episode (mean difference with a 95 % bootstrap interval, and the
episodes each side won; ``camp_planner.eval.paired``). It reads the ``episodes``
section of each ``results.json`` (no planning).

    .venv/bin/python scripts/pool_evals.py artifacts/eval/namo-0/results.json \\
        artifacts/eval/namo-3/results.json [--methods camp pure stilman] [--json out.json]

(``docs/results/data/namo_eval_seeds*.json`` are five such files, kept as references.)

Runs that hold the same seeds (an eval run twice) repeat the same tasks and planner seeds;
the script says so. ``camp eval --first-seed K`` extends an eval with independent seeds.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError
from camp_planner.eval.evaluate import (
    PAIRED_METRICS,
    paired_markdown,
    speedup_line,
    work_comparison,
    work_markdown,
)
from camp_planner.eval.paired import compare_methods


def load_seeds(path: Path) -> dict[str, list[list[dict[str, Any]]]]:
    """Method → the episodes of one ``results.json``, seed by seed."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CampError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("episodes"), dict):
        raise CampError(
            f"{path} has no per-episode rows ('episodes'); it was written by a `camp eval` "
            "older than this script, so rerun that eval"
        )
    episodes: dict[str, list[list[dict[str, Any]]]] = data["episodes"]
    return episodes


def seed_ids(path: Path) -> list[int]:
    """The seeds (task draws and planner seeds) a ``results.json`` holds. Evals written before
    ``camp eval --first-seed`` ran seeds 0 .. K-1 and did not record them."""
    data = json.loads(path.read_text())
    if "seed_ids" in data:
        return [int(k) for k in data["seed_ids"]]
    first: list[Any] = next(iter(data["episodes"].values()), [])
    return list(range(len(first)))


def repeated_seeds(paths: list[Path]) -> list[tuple[Path, Path, list[int]]]:
    """Pairs of runs that hold the same seeds: the same tasks and planner seeds planned again,
    so their episodes are not independent draws (unless the two evals' configs differ)."""
    ids = [set(seed_ids(p)) for p in paths]
    return [
        (paths[i], paths[j], sorted(ids[i] & ids[j]))
        for i in range(len(paths))
        for j in range(i + 1, len(paths))
        if ids[i] & ids[j]
    ]


def pool(paths: list[Path], methods: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per method, the figures of all episodes of ``paths`` together. A method must be in
    every run, so that each pooled figure covers the same runs. CAMP's entry also holds
    ``paired``: its episode-by-episode comparison with every other pooled method."""
    seeded = [load_seeds(p) for p in paths]
    runs = [{m: [row for seed in seeds for row in seed] for m, seeds in s.items()} for s in seeded]
    names = methods or [m for m in runs[0] if all(m in run for run in runs)]
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        missing = [str(p) for p, run in zip(paths, runs, strict=True) if name not in run]
        if missing:
            raise CampError(f"method '{name}' is not in {', '.join(missing)}")
        rows = [row for run in runs for row in run[name]]
        objectives = [float(r["objective"]) for r in rows]
        times = [float(r["compute_time_s"]) for r in rows]
        sd = statistics.stdev(objectives) if len(rows) > 1 else 0.0
        # The paper's tables give the SD of per-seed means: how much a whole run moves.
        seed_means = [
            statistics.fmean(float(r["objective"]) for r in seed)
            for s in seeded
            for seed in s[name]
            if seed
        ]
        sd_seeds = statistics.stdev(seed_means) if len(seed_means) > 1 else 0.0
        out[name] = {
            "runs": len(runs),
            "episodes": len(rows),
            "objective_mean": statistics.fmean(objectives),
            "objective_sd_per_episode": sd,
            "objective_standard_error": sd / math.sqrt(len(rows)),
            "seeds": len(seed_means),
            "objective_sd_across_seeds": sd_seeds,
            "compute_time_mean_s": statistics.fmean(times),
            "compute_time_median_s": statistics.median(times),
            "successes": sum(bool(r["success"]) for r in rows),
        }
    if "camp" in out:
        # Only methods run on the very (run, seed, task) episodes CAMP was can be paired.
        pooled_rows = {name: [row for run in runs for row in run[name]] for name in names}
        tasks = [r.get("task") for r in pooled_rows["camp"]]
        same = {n: r for n, r in pooled_rows.items() if [x.get("task") for x in r] == tasks}
        out["camp"]["paired"] = compare_methods(same, "camp", PAIRED_METRICS)
        out["camp"]["unpaired"] = sorted(set(pooled_rows) - set(same))
        # Evals written before the planners' work was recorded have none: then no entry.
        work = work_comparison(same)
        if work is not None:
            out["camp"]["work"] = work
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="results.json files of `camp eval`")
    parser.add_argument("--methods", nargs="+", help="methods to pool (default: those in all)")
    parser.add_argument("--json", type=Path, help="also write the pooled figures here")
    args = parser.parse_args(argv)
    try:
        pooled = pool(args.results, args.methods)
    except CampError as exc:
        print(f"pool_evals: {exc}", file=sys.stderr)
        return 2
    print(f"{len(args.results)} runs pooled")
    repeats = repeated_seeds(args.results)
    for a, b, shared in repeats:
        print(
            f"note: {a} and {b} both hold seed(s) {', '.join(map(str, shared))}: unless their "
            "configs differ, those episodes repeat the same tasks and planner seeds, and the "
            "intervals below treat them as independent"
        )
    header = (
        "method           episodes  objective (SE)    SD/episode  SD/seed  mean s  median s  goals"
    )
    print(header)
    for name, p in pooled.items():
        print(
            f"{name:<16} {p['episodes']:>8}  {p['objective_mean']:8.1f}"
            f" ({p['objective_standard_error']:4.1f})"
            f"  {p['objective_sd_per_episode']:10.0f}  {p['objective_sd_across_seeds']:7.1f}"
            f"  {p['compute_time_mean_s']:6.2f}"
            f"  {p['compute_time_median_s']:8.2f}  {p['successes']:>5}"
        )
    line = speedup_line({n: p["compute_time_median_s"] for n, p in pooled.items()})
    if line is not None:
        print(f"\n{line}")
    camp = pooled.get("camp", {})
    if camp.get("paired"):
        print("\n".join(paired_markdown(camp["paired"])))
    if camp.get("work"):
        print("\n".join(work_markdown(camp["work"])))
    if camp.get("unpaired"):
        print(f"\nnot paired with CAMP (other episodes): {', '.join(camp['unpaired'])}")
    if args.json:
        payload = {
            "results": [str(p) for p in args.results],
            "seed_ids": [seed_ids(p) for p in args.results],
            "repeated_seeds": [[str(a), str(b), shared] for a, b, shared in repeats],
            "methods": pooled,
        }
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
