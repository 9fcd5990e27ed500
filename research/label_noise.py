"""How much of a context's score is the context, and how much one run's luck?

Reads K independent scorings of the training (task, context) pairs that
``camp train`` checkpointed with ``selector.label_repeats: K`` (no planning) and prints:

* run-to-run agreement: the rank correlation, over all pairs, of one scoring's compute
  times (and objectives) with another's;
* the universal context's mean objective;
* the hindsight oracle of one scoring (its best context per task, scored by that same
  scoring: what `camp eval` reports as the oracle) and the same picks scored by the
  *other* scorings (the oracle's contexts planned again): the gap between the two is luck;
* the oracle of the mean of all scorings but one, scored by the one left out (each in
  turn): how much a selector that knew each pair's mean over K-1 runs could win, with no
  run's luck counted twice.

    .venv/bin/python research/label_noise.py --domain namo --planner tamp --repeats 3 \\
        [--config FILE] [--seed 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.eval.evaluate import seed_pipeline
from camp_planner.learning.labels import ScoreMatrix
from camp_planner.learning.train import cached_matrix
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def _ranks(values: list[float]) -> np.ndarray:
    order = np.argsort(np.asarray(values), kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    return ranks


def rank_correlation(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation (ties broken by position)."""
    ra, rb = _ranks(a), _ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


def best(matrix: ScoreMatrix, task: int) -> str:
    return matrix.context_ids[matrix.best_index(task)]


def summarise(runs: list[ScoreMatrix]) -> dict[str, Any]:
    """The agreement and oracle figures above for K >= 2 scorings of the same pairs."""
    if len(runs) < 2:
        raise CampError("need at least two scorings to compare")
    universal = Context.universal().id
    tasks = runs[0].tasks
    keys = sorted(runs[0].scores)
    pairs = [(i, j) for i in range(len(runs)) for j in range(len(runs)) if i < j]
    agreement = {
        "compute_time": statistics.mean(
            rank_correlation(
                [runs[i].scores[k].compute_time_s for k in keys],
                [runs[j].scores[k].compute_time_s for k in keys],
            )
            for i, j in pairs
        ),
        "objective": statistics.mean(
            rank_correlation(
                [runs[i].scores[k].objective for k in keys],
                [runs[j].scores[k].objective for k in keys],
            )
            for i, j in pairs
        ),
    }
    mean = ScoreMatrix.mean(runs)

    def value(matrix: ScoreMatrix, task: int, context: str) -> float:
        return matrix.get(task, context).objective

    own_oracle = statistics.mean(
        statistics.mean(value(r, t, best(r, t)) for t in tasks) for r in runs
    )
    # Each scoring's oracle picks, scored by every other scoring.
    replanned = statistics.mean(
        value(runs[j], t, best(runs[i], t))
        for i in range(len(runs))
        for j in range(len(runs))
        if i != j
        for t in tasks
    )
    held_out: list[float] = []
    picks_universal = 0
    for j in range(len(runs)):
        others = [r for i, r in enumerate(runs) if i != j]
        pooled = others[0] if len(others) == 1 else ScoreMatrix.mean(others)
        for t in tasks:
            pick = best(pooled, t)
            picks_universal += pick == universal
            held_out.append(value(runs[j], t, pick))
    return {
        "repeats": len(runs),
        "tasks": len(tasks),
        "contexts": len(runs[0].context_ids),
        "rank_correlation_between_scorings": agreement,
        "universal": statistics.mean(value(mean, t, universal) for t in tasks),
        "oracle_of_one_scoring": own_oracle,
        "its_picks_scored_by_another_scoring": replanned,
        "oracle_of_the_others_mean_scored_held_out": statistics.mean(held_out),
        "its_universal_picks_fraction": picks_universal / len(held_out),
        "universal_per_task_sd": statistics.stdev(value(mean, t, universal) for t in tasks),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True)
    parser.add_argument("--planner", required=True)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--seed", type=int, default=0, help="the `camp train --seed` scored")
    parser.add_argument("--repeats", type=int, default=3, help="scorings to read (K >= 2)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.repeats < 2:
        parser.error("--repeats must be at least 2")
    try:
        base = Pipeline.create(args.domain, args.config, args.artifacts)
        pipe = seed_pipeline(base, args.artifacts, args.seed)
        runs = [
            cached_matrix(pipe, args.artifacts, args.planner, "train", args.seed, r)
            for r in range(args.repeats)
        ]
        out = summarise(runs)
    except CampError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    agree = out["rank_correlation_between_scorings"]
    print(
        f"{args.domain}, {args.planner}: {out['tasks']} training tasks × {out['contexts']} "
        f"contexts, {out['repeats']} scorings (seed {args.seed})"
    )
    print(
        f"rank correlation between scorings: compute time {agree['compute_time']:.2f}, "
        f"objective {agree['objective']:.2f}"
    )
    rows = [
        ("universal context (mean of the scorings)", out["universal"]),
        ("oracle of one scoring (as `camp eval` reports)", out["oracle_of_one_scoring"]),
        ("  its picks, scored by another scoring", out["its_picks_scored_by_another_scoring"]),
    ]
    for label, number in rows:
        print(f"{label:<52} {number:8.1f}")
    print(
        "oracle of the other scorings' mean, scored held out "
        f"{out['oracle_of_the_others_mean_scored_held_out']:8.1f}"
        f"  (universal on {100 * out['its_universal_picks_fraction']:.0f} % of tasks)"
    )
    print(
        f"standard error of a {out['tasks']}-task mean (universal): "
        f"{out['universal_per_task_sd'] / out['tasks'] ** 0.5:.1f}"
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
