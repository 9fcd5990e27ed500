"""The paper's two additional experiments (section 5.3 and appendix), as plots.

* λ sweep: for each λ, relabel the training tasks from the *same* score matrix (the matrix
  keeps return and compute time, so J = return − λ·time needs no replanning), retrain the
  selector, and evaluate CAMP on the test tasks with that λ. With ``selector.label_repeats``
  the matrix is the mean of that many scorings, as in ``camp train``.
* Training-set size sweep: train the selector on the first n training tasks only and
  evaluate CAMP on the test tasks.
Each point is averaged over seeds (mean ± std across seeds).
"""

from __future__ import annotations

import copy
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.errors import CampError
from camp_planner.eval.episodes import run_episodes
from camp_planner.eval.evaluate import seed_pipeline
from camp_planner.eval.methods import CampMethod, Method, Pure
from camp_planner.learning.bundle import Bundle
from camp_planner.learning.executor import Workers
from camp_planner.learning.jsonl import append_record, corrupt, read_records
from camp_planner.learning.labels import ScoreMatrix
from camp_planner.learning.selector import ContextSelector, SelectorConfig
from camp_planner.learning.structural import selector_input
from camp_planner.learning.train import (
    score_repeats,
    selector_targets,
    training_mask,
)
from camp_planner.workflow import Pipeline


def relabel(matrix: ScoreMatrix, lam: float, tasks: Sequence[int]) -> list[int]:
    """Best context index per task under objective return − λ·compute time."""
    return [int(i) for i in matrix.targets("hard", 1.0, lam, tasks)]


def _camp_on_test(
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    matrix: ScoreMatrix,
    lam: float,
    tasks: Sequence[int],
    seed: int,
    workers: Workers,
) -> dict[str, float]:
    cfg = SelectorConfig.from_mapping({**pipe.config["selector"], "seed": seed})
    contexts = list(pipe.space)
    features = np.stack(
        [
            selector_input(pipe, pipe.task("train", t), cfg.model, contexts, pipe.relevant)
            for t in tasks
        ]
    )
    selector = ContextSelector(tuple(features.shape[1:]), len(pipe.space), cfg)
    mask = training_mask(pipe, [pipe.task("train", t) for t in tasks], contexts, cfg)
    selector.fit(features, selector_targets(matrix, cfg, lam, tasks), None, mask)
    csis = {c.id: r for c in pipe.space if (r := pipe.store.cached(c)) is not None}
    bundle = Bundle(pipe.domain.name, pipe.domain.version, pipe.space, csis, selector, {})
    return _summarise(CampMethod(bundle), pipe, artifacts, planner, seed, workers)


def _summarise(
    method: Method,
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    seed: int,
    workers: Workers,
) -> dict[str, float]:
    pairs = [(t, method) for t in range(len(pipe.tasks("test")))]
    scores = list(run_episodes(pipe, artifacts, planner, pairs, seed, workers).values())
    return {
        "objective": statistics.fmean(s.objective for s in scores),
        "return": statistics.fmean(s.discounted_return for s in scores),
        "compute_time_s": statistics.fmean(s.compute_time_s for s in scores),
        "success": statistics.fmean(float(s.success) for s in scores),
    }


Key = tuple[int, float, str]  # (seed, swept value, method); pure planning's value is 0


class PointCheckpoint:
    """Finished sweep points, one JSON line each, keyed by (seed, value, method); a point
    that was cut short by a kill is simply recomputed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[Key, dict[str, float]]:
        found: dict[Key, dict[str, float]] = {}
        for number, row in read_records(self.path):
            try:
                key = (int(row["seed"]), float(row["value"]), str(row.get("method", "camp")))
                found[key] = {m: float(row[m]) for m in POINT_METRICS}
            except (KeyError, TypeError, ValueError):
                raise corrupt(self.path, number) from None
        return found

    def append(self, key: Key, point: dict[str, float]) -> None:
        seed, value, method = key
        append_record(self.path, {"seed": seed, "value": value, "method": method, **point})


POINT_METRICS = ("objective", "return", "compute_time_s", "success")


def _checkpoint(base: Pipeline, artifacts: Path, kind: str, planner: str) -> PointCheckpoint:
    key = json.dumps(
        {"kind": kind, "planner": planner, "config": base.config, "format": SWEEP_FORMAT},
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return PointCheckpoint(
        artifacts / base.domain.name / planner / "sweeps" / f"{kind}-{digest}.jsonl"
    )


# Bump when what a sweep point measures changes, so stale checkpoints are not reused.
SWEEP_FORMAT = 2


def sweep(
    kind: str,
    base: Pipeline,
    artifacts: Path,
    planner: str,
    values: Sequence[float],
    seeds: int,
    workers: Workers,
    out_dir: Path,
    progress: bool = True,
) -> dict[str, Any]:
    """Run a ``lambda`` or ``train-size`` sweep; write ``sweep-<kind>.json`` and ``.png``.

    Every finished (seed, value) point is checkpointed, so a rerun after an interruption
    only computes the points that are missing; one line per point goes to stderr."""
    if kind not in ("lambda", "train-size"):
        raise CampError(f"unknown sweep '{kind}'; choose lambda or train-size")
    if not values:
        raise CampError("give at least one value to sweep")
    values = [float(v) for v in values]
    checkpoint = _checkpoint(base, artifacts, kind, planner)
    done = checkpoint.load()
    # Per seed: CAMP at every value, and pure planning once (it does not learn, so neither λ
    # nor the training set changes what it does; its objective at λ is return − λ·time).
    keys = [(k, v, "camp") for k in range(seeds) for v in values]
    keys += [(k, 0.0, "pure") for k in range(seeds)]
    total = len(keys)
    finished = sum(key in done for key in keys)
    started = time.perf_counter()
    computed = 0
    if progress and finished:
        _say(f"sweep {kind}: {finished}/{total} points reused from {checkpoint.path}")
    for k in range(seeds):
        if all(key in done for key in keys if key[0] == k):
            continue
        pipe = seed_pipeline(base, artifacts, k)
        pipe.learn_csis(label="learning CSIs" if progress else None, workers=workers)
        # The same labels as `camp train`: the mean of selector.label_repeats scorings.
        repeats = SelectorConfig.from_mapping(pipe.config["selector"]).label_repeats
        matrices, _ = score_repeats(pipe, artifacts, planner, k, repeats, workers, progress)
        matrix = ScoreMatrix.mean(matrices)
        for key in (key for key in keys if key[0] == k and key not in done):
            _, v, method = key
            if method == "pure":
                done[key] = _summarise(Pure(), pipe, artifacts, planner, k, workers)
            else:
                run = copy.copy(pipe)
                run.config = copy.deepcopy(pipe.config)
                if kind == "lambda":
                    run.config["lambda"][planner] = v
                    tasks = matrix.tasks
                else:
                    n = int(v)
                    if not 1 <= n <= len(matrix.tasks):
                        raise CampError(f"training-set size {n} outside 1..{len(matrix.tasks)}")
                    tasks = matrix.tasks[:n]
                done[key] = _camp_on_test(
                    run, artifacts, planner, matrix, run.lam(planner), tasks, k, workers
                )
            checkpoint.append(key, done[key])
            finished += 1
            computed += 1
            if progress:
                eta = (time.perf_counter() - started) / computed * (total - finished)
                what = "pure planning" if method == "pure" else f"{kind} {v:g}"
                _say(
                    f"sweep {kind}: seed {k}, {what} → objective {done[key]['objective']:.2f} "
                    f"({finished}/{total} points, ETA {eta / 60:.1f} min)"
                )

    def stats(runs: list[dict[str, float]]) -> dict[str, dict[str, float]]:
        return {
            m: {
                "mean": statistics.fmean(p[m] for p in runs),
                "std": statistics.pstdev([p[m] for p in runs]) if len(runs) > 1 else 0.0,
            }
            for m in POINT_METRICS
        }

    pure_runs = [done[(k, 0.0, "pure")] for k in range(seeds)]
    pure_points = []
    for v in values:
        lam = v if kind == "lambda" else base.lam(planner)
        runs = [{**p, "objective": p["return"] - lam * p["compute_time_s"]} for p in pure_runs]
        pure_points.append({"value": v, **stats(runs)})
    summary = {
        "kind": kind,
        "planner": planner,
        "seeds": seeds,
        "points": [
            {"value": v, **stats([done[(k, v, "camp")] for k in range(seeds)])} for v in values
        ],
        "pure": pure_points,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"sweep-{kind}.json").write_text(json.dumps(summary, indent=1))
    _plot(summary, out_dir / f"sweep-{kind}.png", base.domain.name)
    return summary


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _plot(summary: dict[str, Any], path: Path, domain: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [p["value"] for p in summary["points"]]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, metric, label in zip(
        axes,
        ("objective", "return", "compute_time_s"),
        ("objective J", "return", "compute time (s)"),
        strict=True,
    ):
        for key, style, colour, name in (
            ("points", "o-", "#2563eb", "CAMP"),
            ("pure", "s--", "#16a34a", "pure planning"),
        ):
            ys = [p[metric]["mean"] for p in summary[key]]
            es = [p[metric]["std"] for p in summary[key]]
            ax.errorbar(xs, ys, yerr=es, fmt=style, capsize=3, color=colour, label=name)
        ax.set_xlabel("λ" if summary["kind"] == "lambda" else "training tasks")
        ax.set_ylabel(label)
        if summary["kind"] == "lambda" and min(xs) > 0:
            ax.set_xscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"CAMP on {domain} ({summary['planner']}): {summary['kind']} sweep, "
        f"{summary['seeds']} seed(s)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
