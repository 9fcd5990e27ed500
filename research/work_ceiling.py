"""What a perfect choice of contexts saves in planner work: the ceiling for any selector.

Reads score checkpoints (the ``artifacts/<domain>/labels/<planner>-<key>.jsonl`` files that
`camp train` and `camp eval` write, one record per (task, context) planned), which record the
planner's count of its work since label format 3. Per task it finds the context with the best
objective on work (return − λ × work) and sets it beside the universal context (pure
planning's problem). It prints each task's saving, then the total work of both and the mean
saving per task in objective points.

Unlike the oracle of `camp eval`, which picks each task's context on one wall-clock run per
context (and so partly picks luck), this one reads work counts, which are the same for the
same plan on any machine: the saving it reports is what the contexts are worth in
computation, and so the most a selector choosing on work can find.

    .venv/bin/python research/work_ceiling.py artifacts/namo/labels/tamp-<key>.jsonl [--lam 100]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError
from camp_planner.learning.jsonl import read_records


def read_scores(path: Path) -> list[dict[str, Any]]:
    """The complete records of a score checkpoint, read only: a line still being written by
    a running scoring (no newline yet) is skipped, not cut off."""
    if not path.is_file():
        raise CampError(f"cannot read {path}: no such file")
    rows = []
    for number, row in read_records(path, repair=False):
        if not isinstance(row, dict) or "task" not in row or "context_id" not in row:
            raise CampError(f"{path}, line {number}: not a score record")
        rows.append(row)
    return rows


def ceiling(rows: list[dict[str, Any]], lam: float) -> dict[str, Any]:
    """Per task, the best context on work against the universal context, and the totals."""
    by_task: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        if row.get("work_s") is None:
            raise CampError(
                f"the score of task {row.get('task')}, context {row.get('context_id')} records "
                "no work: scored before label format 3, or by a planner that does not count it"
            )
        by_task[int(row["task"])][str(row["context_id"])] = row

    def value(s: dict[str, Any]) -> float:
        return float(s["discounted_return"]) - lam * float(s["work_s"])

    tasks: list[dict[str, Any]] = []
    for task, scores in sorted(by_task.items()):
        universal = scores.get("universal")
        if universal is None:
            raise CampError(f"task {task} has no score for the universal context")
        best_id, best = max(scores.items(), key=lambda kv: (value(kv[1]), kv[0] == "universal"))
        tasks.append(
            {
                "task": task,
                "best_context": best_id,
                "universal_work_s": float(universal["work_s"]),
                "best_work_s": float(best["work_s"]),
                "saving_points": value(best) - value(universal),
            }
        )
    if not tasks:
        raise CampError("no scores to read")
    savings = [t["saving_points"] for t in tasks]
    return {
        "lambda": lam,
        "tasks": tasks,
        "universal_work_s": sum(t["universal_work_s"] for t in tasks),
        "best_work_s": sum(t["best_work_s"] for t in tasks),
        "mean_saving_points": statistics.fmean(savings),
        "median_saving_points": statistics.median(savings),
        "universal_best": sum(t["best_context"] == "universal" for t in tasks),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scores", nargs="+", type=Path, help="score checkpoints (.jsonl)")
    parser.add_argument("--lam", type=float, default=100.0, help="λ (default 100, NAMO's)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if not args.lam > 0:
        parser.error("--lam must be positive")
    results = {}
    try:
        for path in args.scores:
            results[str(path)] = ceiling(read_scores(path), args.lam)
    except CampError as exc:
        print(f"work_ceiling: error: {exc}", file=sys.stderr)
        return 2
    for path, r in results.items():
        print(f"{path}: {len(r['tasks'])} tasks, λ = {r['lambda']:g}")
        for t in r["tasks"]:
            print(
                f"  task {t['task']:>3}: {t['best_context']:<12} {t['best_work_s']:.3f} s of "
                f"work against the universal context's {t['universal_work_s']:.3f} s "
                f"({t['saving_points']:+.1f} points)"
            )
        print(
            f"  total work {r['best_work_s']:.2f} s against {r['universal_work_s']:.2f} s "
            f"({100 * (1 - r['best_work_s'] / r['universal_work_s']):.0f} % less); saving per "
            f"task {r['mean_saving_points']:+.1f} points on average, "
            f"{r['median_saving_points']:+.1f} at the median; the universal context is best "
            f"on {r['universal_best']} of {len(r['tasks'])} tasks"
        )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
