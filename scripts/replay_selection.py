"""Replay the CAMP runtime's selection rules offline on scored tasks, in seconds.

For each run (seed) of a ``camp eval`` whose training and test score matrices are cached
(the oracle scores every context on every test task), every rule picks the first context
for each test task exactly as the runtime would, and the pick is valued from the test
matrix the way the runtime experiences it: a context that fails, or is still planning at the
attempt cap, costs its time and ends with the last resort (0 where the domain may give up,
else the universal context's score); giving up is worth 0. Rules: the paper's ungated
selector, the do-no-harm gate, the lower bound on the objective (``bound``), always the
universal context, and the oracle (the best context of each test task in hindsight).

Nothing is planned: the numbers are read from the matrices, so a row costs seconds.

    python scripts/replay_selection.py --domain gridworld --planner vi \\
        --config config/gridworld/vi.yaml --first-seed 100 --seeds 1 --markdown out.md
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.config import with_test_seed
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.objective import attempt_cap
from camp_planner.eval.evaluate import split_pipelines
from camp_planner.eval.paired import paired_difference
from camp_planner.learning.bundle import load_bundle, trained_bundle
from camp_planner.learning.labels import ScoreMatrix
from camp_planner.learning.objective_model import runtime_values
from camp_planner.learning.selector import SelectorConfig
from camp_planner.learning.train import (
    cached_matrix,
    objective_model,
    out_of_fold_scores,
    selector_targets,
    training_mask,
)
from camp_planner.runtime.camp_runtime import CampRuntime
from camp_planner.workflow import Pipeline

RULES = ("ungated", "gate", "bound", "universal", "oracle")


def replay_seed(
    base: Pipeline,
    artifacts: Path,
    planner: str,
    seed: int,
    bundle_file: Path | None = None,
    refit: bool = False,
) -> tuple[dict[str, list[float]], dict[str, list[str]]]:
    """Each rule's runtime value on every test task of run ``seed``, and its pick (a context
    id, or "give_up"); ``bundle_file``: the bundle a ``camp eval --bundle`` evaluated
    (default: the one the run trained); ``refit``: fit the objective model again from the
    run's training scores with this version's code, instead of the bundle's."""
    training, pipe = split_pipelines(base, artifacts, seed)
    test_matrix = cached_matrix(pipe, artifacts, planner, "test", seed)
    path = bundle_file or trained_bundle(
        artifacts, base.domain.name, planner, seed, training.config
    )
    if not path.is_file():
        raise CampError(f"no bundle for seed {seed} at {path}: run the same `camp eval` first")
    bundle = load_bundle(path, base.domain.name, base.domain.version)
    if refit or "objective_model" not in bundle.metadata:
        # Trained before the model (or asked to): fit it here from the run's training scores.
        cfg = SelectorConfig.from_mapping({**training.config["selector"], "seed": seed})
        repeats = [
            cached_matrix(training, artifacts, planner, "train", seed, r)
            for r in range(cfg.label_repeats)
        ]
        train_matrix = repeats[0] if len(repeats) == 1 else ScoreMatrix.mean(repeats)
        probe = CampRuntime(training, planner, bundle, rule="ungated")
        x = np.stack([probe.selector_input(t) for t in training.tasks("train")])
        lam = training.lam(planner) if cfg.label_cost == "work" else None
        contexts = list(training.space)
        held_out = out_of_fold_scores(
            x,
            selector_targets(train_matrix, cfg, lam),
            cfg,
            len(contexts),
            training_mask(training, training.tasks("train"), contexts, cfg),
        )
        model = objective_model(training, train_matrix, x, cfg, planner, seed, held_out)
        bundle = copy.copy(bundle)
        bundle.metadata = {**bundle.metadata, "objective_model": model.to_json()}
    runtimes = {r: CampRuntime(pipe, planner, bundle, rule=r) for r in ("ungated", "gate", "bound")}
    lam = pipe.lam(planner)
    tasks = pipe.tasks("test")
    give_up = pipe.domain.gives_up(pipe.config)
    caps = [attempt_cap(pipe.domain.make_mdp(t, pipe.config), lam, give_up) for t in tasks]
    value = runtime_values(test_matrix, lam, "wall", caps, give_up, feasible=None)
    universal = Context.universal().id
    out: dict[str, list[float]] = {r: [] for r in RULES}
    picks: dict[str, list[str]] = {r: [] for r in runtimes}
    for row, task in enumerate(tasks):
        for rule, runtime in runtimes.items():
            first = runtime.select(task).first
            out[rule].append(0.0 if first is None else _v(value(row, first.id)))
            picks[rule].append("give_up" if first is None else first.id)
        out["universal"].append(_v(value(row, universal)))
        options = [_v(value(row, c)) for c in test_matrix.context_ids]
        if pipe.domain.gives_up(pipe.config):
            options.append(0.0)
        out["oracle"].append(max(options))
    return out, picks


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"a whole number ≥ 1, got {text}")
    return value


def _seed(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a whole number ≥ 0, got {text}")
    return value


def _v(value: float | None) -> float:
    assert value is not None
    return value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--domain", required=True, help="the eval's domain")
    p.add_argument("--planner", required=True, help="the eval's planner")
    p.add_argument("--config", type=Path, help="the eval's configuration file")
    p.add_argument("--artifacts", type=Path, default=Path("artifacts"), help="its artifacts")
    p.add_argument("--seeds", type=_count, default=1, help="runs of the eval to replay")
    p.add_argument("--first-seed", type=_seed, default=0, help="the eval's --first-seed")
    p.add_argument("--task-seed", type=int, help="as camp eval's: fresh test draws")
    p.add_argument(
        "--bundle",
        type=Path,
        help="the bundle `camp eval --bundle` evaluated; its training scores are those of "
        "`camp train` with the same configuration and seed 0",
    )
    p.add_argument(
        "--refit",
        action="store_true",
        help="fit the objective model again from the run's cached training scores (the "
        "bundle's selector kept), to replay this version's rule on an older bundle",
    )
    p.add_argument("--json", type=Path, help="write every task's values here")
    p.add_argument("--markdown", type=Path, help="append the table row here")
    args = p.parse_args(argv)
    try:
        base = Pipeline.create(args.domain, args.config, args.artifacts)
        if args.task_seed is not None:
            base.config = with_test_seed(base.config, args.task_seed)
        replays = [
            replay_seed(base, args.artifacts, args.planner, s, args.bundle, args.refit)
            for s in range(args.first_seed, args.first_seed + args.seeds)
        ]
    except CampError as exc:
        print(f"replay_selection: error: {exc}", file=sys.stderr)
        return 2
    pooled = {r: [v for run, _ in replays for v in run[r]] for r in RULES}
    picks = {r: [p for _, run in replays for p in run[r]] for r in replays[0][1]}
    means = {r: float(np.mean(v)) for r, v in pooled.items()}
    diffs = {r: paired_difference(pooled["bound"], pooled[r]) for r in RULES if r != "bound"}
    # How much of the ungated selector's and of the oracle's gain over the universal context
    # the bound rule keeps (None where that gain is not positive).
    kept: dict[str, float | None] = {}
    for ref in ("ungated", "oracle"):
        gain = means[ref] - means["universal"]
        kept[ref] = None if gain <= 0 else (means["bound"] - means["universal"]) / gain
    record: dict[str, Any] = {
        "domain": args.domain,
        "planner": args.planner,
        "config": None if args.config is None else str(args.config),
        "seeds": list(range(args.first_seed, args.first_seed + args.seeds)),
        "tasks": len(pooled["bound"]),
        "means": means,
        "bound_minus": diffs,
        "gain_kept": kept,
        "values": pooled,
        "picks": picks,
    }
    shown = {k: v for k, v in record.items() if k not in ("values", "picks")}
    print(json.dumps(shown, indent=1, default=str))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=1, default=str))
    if args.markdown:
        cells = " | ".join(f"{means[r]:.1f}" for r in RULES)
        shares = " | ".join("—" if v is None else f"{v:.0%}" for v in kept.values())
        row = f"| {args.domain} {args.planner} | {len(pooled['bound'])} | {cells} | {shares} |\n"
        with args.markdown.open("a") as fh:
            fh.write(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
