"""Benchmark: the shipped selector on scenes partway through a task, beside the same tasks'
starts.

For each fresh test task (``--task-seed S``, seeds never used in development) pure planning
plans and executes the whole task once; the state after ``--fraction`` of its executed steps
is turned into the scene a perception stack would report (the robot wherever it got to,
boxes or reds already moved, possibly one held) and that scene into a task, through the
domain's scene adapter as the planning service does (``CampService.task_of``). A scene the
model cannot represent is counted with its named error and left out.

Then CAMP (the CAMP runtime with the selector bundle the package ships, ``--bundle`` for
another) and pure planning run on every start-of-task task and every mid-task task,
interleaved task by task in a seeded shuffled order as ``camp eval`` runs them, and the two
are compared pair by pair with the eval's statistics (:mod:`camp_planner.eval.paired`):
mean objective, success, compute time, CAMP minus pure planning with a bootstrap interval
and the Wilcoxon signed-rank p, separately for starts and mid-task states.

    .venv/bin/python scripts/bench_midtask.py --domain namo [--tasks 20] [--task-seed 9000]
        [--fraction 0.5] [--config C.yaml] [--bundle B.pt] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from camp_planner.config import with_test_seed
from camp_planner.core.errors import CampError
from camp_planner.domains import get_plugin
from camp_planner.domains.interface.errors import ServiceError
from camp_planner.eval.evaluate import PAIRED_METRICS
from camp_planner.eval.methods import bundled_camp_method
from camp_planner.eval.paired import compare_methods, p_value
from camp_planner.learning.labels import Score, score_of
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

# Added to the run's seed for the pure-planning run whose prefix makes a mid-task state, so
# that the runs compared later draw randomness of their own.
PREFIX_SEED_OFFSET = 104_729
METHODS = ("camp", "pure")


def mid_task(pipe: Pipeline, task: Any, planner: str, fraction: float, seed: int) -> Any:
    """The task of the scene after ``fraction`` of the steps pure planning executes on
    ``task`` (None when the run reached no state strictly between its start and its goal);
    a :class:`ServiceError` when the model cannot represent that scene."""
    result, _ = pipe.run(task, planner, None, seed=seed + PREFIX_SEED_OFFSET)
    states = result.states
    mdp = pipe.domain.make_mdp(task, pipe.config)
    k = min(max(1, round(fraction * (len(states) - 1))), len(states) - 1)
    if k < 1 or mdp.is_terminal(states[k]):
        return None
    plugin = get_plugin(pipe.domain.name)
    scene = plugin.scene_from_task(task, states[k], "map")
    made, _ = plugin.task_from_scene(scene, pipe.config, "map")
    return made


def run_all(
    pipe: Pipeline, planner: str, sets: dict[str, list[Any]], bundle: Path | None, seed: int
) -> dict[str, dict[str, list[Score]]]:
    """Every method on every task of every set: set → method → scores, task by task, the
    (set, method) runs of a task in a shuffled order."""
    camp = bundled_camp_method(pipe, planner, bundle)
    runtime = camp.runtime(pipe, planner)
    out: dict[str, dict[str, list[Score]]] = {s: {m: [] for m in METHODS} for s in sets}
    for t in range(len(next(iter(sets.values())))):
        order = [(s, m) for s in sets for m in METHODS]
        random.Random(1_000_003 * seed + t).shuffle(order)
        for which, method in order:
            task = sets[which][t]
            if method == "camp":
                run = runtime.run(task, seed)
                first = run.first
                score = score_of(t, "give_up" if first is None else first.id, run.result)
            else:
                result, _ = pipe.run(task, planner, None, seed=seed)
                score = score_of(t, "pure", result)
            out[which][method].append(score.without_trajectory())
            print(
                f"  task {t:2d} {which:5s} {method:4s} objective {score.objective:8.1f} "
                f"compute {score.compute_time_s:6.3f} s success {score.success}",
                file=sys.stderr,
            )
    return out


def summary(scores: dict[str, list[Score]]) -> dict[str, Any]:
    """Per method the means, and CAMP against pure planning pair by pair."""
    rows = {m: [s.to_json() for s in runs] for m, runs in scores.items()}
    out: dict[str, Any] = {
        m: {
            "objective": statistics.fmean(s.objective for s in runs),
            "success": statistics.fmean(float(s.success) for s in runs),
            "compute_time_s": statistics.fmean(s.compute_time_s for s in runs),
            "universal_first": sum(s.context_id == "universal" for s in runs),
            "fallbacks": sum(s.fallbacks for s in runs),
        }
        for m, runs in scores.items()
    }
    out["paired"] = compare_methods(rows, "camp", PAIRED_METRICS)["pure"]
    return out


def markdown(results: dict[str, dict[str, Any]], n: int) -> list[str]:
    lines = [
        "| states | tasks | method | mean objective | success | mean compute s | "
        "universal first | fallbacks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for which, s in results.items():
        for m in METHODS:
            r = s[m]
            lines.append(
                f"| {which} | {n} | {m} | {r['objective']:.1f} | {r['success']:.0%} | "
                f"{r['compute_time_s']:.3f} | {r['universal_first']} | {r['fallbacks']} |"
            )
    lines += [
        "",
        "| states | Δ objective CAMP − pure [95 % interval] | won CAMP / pure | p | "
        "Δ compute s [95 % interval] |",
        "|---|---|---|---|---|",
    ]
    for which, s in results.items():
        o, t = s["paired"]["objective"], s["paired"]["compute_time_s"]
        lines.append(
            f"| {which} | {o['mean']:+.1f} [{o['ci_low']:+.1f}, {o['ci_high']:+.1f}] | "
            f"{o['a_wins']} / {o['b_wins']} | {p_value(o)} | {t['mean']:+.3f} "
            f"[{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--domain", choices=["namo", "manip"], default="namo")
    parser.add_argument("--planner", default="tamp")
    parser.add_argument("--tasks", type=int, default=20, help="number of fresh test tasks")
    parser.add_argument("--task-seed", type=int, default=9000, help="test tasks' generator seed")
    parser.add_argument("--fraction", type=float, default=0.5, help="of the executed steps")
    parser.add_argument("--seed", type=int, default=0, help="the planners' seed")
    parser.add_argument("--config", type=Path, help="the domain's configuration (YAML)")
    parser.add_argument("--bundle", type=Path, help="selector bundle (default: the shipped one)")
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--json", type=Path, help="also write the scores and summary here")
    args = parser.parse_args(argv)
    try:
        if not 0.0 < args.fraction < 1.0:
            raise CampError("--fraction must lie strictly between 0 and 1")
        pipe = Pipeline.create(args.domain, args.config, args.artifacts)
        pipe.config = with_test_seed(pipe.config, args.task_seed)
        pipe.config["tasks"]["test"] = args.tasks
        starts, mids, refused = [], [], []
        for task in pipe.tasks("test"):
            try:
                made = mid_task(pipe, task, args.planner, args.fraction, args.seed)
            except ServiceError as exc:
                refused.append({"task": task.task_id, "code": exc.code.name, "why": exc.message})
                print(f"task {task.task_id}: refused, {exc.code.name}: {exc.message}")
                continue
            if made is not None:
                starts.append(task)
                mids.append(made)
        if not mids:
            raise CampError("no task gave a mid-task scene the model represents")
        scores = run_all(pipe, args.planner, {"start": starts, "mid": mids}, args.bundle, args.seed)
    except CampError as exc:
        print(f"bench_midtask: error: {exc}", file=sys.stderr)
        return 2
    results = {which: summary(s) for which, s in scores.items()}
    holding = sum(bool(t.held) for t in mids)
    print(
        f"{args.domain}, {len(mids)} of {args.tasks} tasks from seed {args.task_seed} "
        f"(mid-task: after {args.fraction:.0%} of pure planning's executed steps, {holding} "
        f"of them holding an object; {len(refused)} refused, "
        f"{args.tasks - len(mids) - len(refused)} with no state between)"
    )
    print("\n".join(markdown(results, len(mids))))
    if args.json is not None:
        record = {
            "args": {k: str(v) for k, v in vars(args).items()},
            "refused": refused,
            "summary": results,
            "scores": {
                w: {m: [x.to_json() for x in s] for m, s in d.items()} for w, d in scores.items()
            },
        }
        args.json.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
