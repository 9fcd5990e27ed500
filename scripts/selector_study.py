"""Compare selector variants offline on scores an earlier `camp eval` already computed.

`camp eval` checkpoints the score of every (task, context) pair on the training tasks (the
labels) and, when the oracle is evaluated, on the test tasks too. Given those, the outcome of
*selecting* a context is a lookup: this script retrains the selector of each variant (label
kind and temperature) per seed, lets it pick a context for every test task (screened as the
CAMP method does, with its fallbacks modelled from the scores) and reports the test
objective, next to two references: the oracle's best context and the universal context. No
planning runs, so a variant costs seconds instead of an eval run; the chosen variant must
then be confirmed by a real `camp eval` (selection time is not modelled here).

    .venv/bin/python scripts/selector_study.py --domain gridworld --planner vi \\
        --config config/gridworld-reduced.yaml --seeds 2 \\
        --variant multilabel:5 --variant regression:5 [--json out.json]

Refuses to plan: a (task, context) score missing from the checkpoints is an error that names
the eval command to run first.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.errors import CampError
from camp_planner.core.feasibility import screen
from camp_planner.learning.evaluate import seed_pipeline
from camp_planner.learning.labels import ScoreMatrix
from camp_planner.learning.selector import (
    LABEL_KINDS,
    MODELS,
    ContextSelector,
    SelectorConfig,
)
from camp_planner.learning.structural import selector_input
from camp_planner.learning.train import score_checkpoint
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

Variant = tuple[str, str, float, bool]  # model, label kind, temperature, screen
FAILED = frozenset({"timeout", "no_plan", "planner_error"})


def parse_variant(text: str) -> Variant:
    """``[MODEL/]KIND[:TEMPERATURE][:noscreen]``, e.g. ``structural/regression:5:noscreen``."""
    model, _, rest_text = text.rpartition("/")
    model = model or "net"
    if model not in MODELS:
        raise argparse.ArgumentTypeError(f"model must be one of {', '.join(MODELS)}")
    kind, *rest = rest_text.split(":")
    if kind not in LABEL_KINDS:
        raise argparse.ArgumentTypeError(f"label kind must be one of {', '.join(LABEL_KINDS)}")
    screened = True
    if rest and rest[-1] == "noscreen":
        screened = False
        rest = rest[:-1]
    if len(rest) > 1:
        raise argparse.ArgumentTypeError(
            f"expected [MODEL/]KIND[:TEMPERATURE][:noscreen], got {text!r}"
        )
    try:
        value = float(rest[0]) if rest else 5.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad temperature in {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("the temperature must be positive")
    return model, kind, value, screened


def variant_name(variant: Variant) -> str:
    model, kind, temp, screened = variant
    prefix = "" if model == "net" else f"{model}/"
    return f"{prefix}{kind}:{temp:g}" + ("" if screened else ":noscreen")


def with_fallbacks(test: ScoreMatrix, task: int, order: list[str], lam: float) -> float:
    """The objective of trying ``order`` until a context does not fail, modelled from the
    scores: a failed attempt costs its compute time (λ·t) and the next one starts afresh.
    Exact when planning fails before the first action (value iteration, Fast Downward);
    an approximation when it fails mid-episode."""
    spent = 0.0
    for cid in order:
        score = test.get(task, cid)
        if score.outcome not in FAILED:
            return score.objective - spent
        spent += lam * score.compute_time_s
    return -spent


def cached_matrix(
    pipe: Pipeline, artifacts: Path, planner: str, split: str, seed: int
) -> ScoreMatrix:
    """The checkpointed score matrix of ``split``, without planning anything."""
    checkpoint = score_checkpoint(pipe, artifacts, planner, split, seed)
    scores = checkpoint.load()
    tasks = list(range(len(pipe.tasks(split))))
    ids = [c.id for c in pipe.space]
    missing = [(t, c) for t in tasks for c in ids if (t, c) not in scores]
    if missing:
        raise CampError(
            f"{len(missing)} {split} scores of seed {seed} are not in {checkpoint.path}; "
            "run the same `camp eval` (with the oracle) first"
        )
    return ScoreMatrix(tasks, ids, {k: v.without_trajectory() for k, v in scores.items()})


def study_seed(
    base: Pipeline, artifacts: Path, planner: str, seed: int, variants: list[Variant]
) -> dict[str, list[float]]:
    """Per variant (and the references), the test objective of each test task's pick."""
    pipe = seed_pipeline(base, artifacts, seed)
    train = cached_matrix(pipe, artifacts, planner, "train", seed)
    test = cached_matrix(pipe, artifacts, planner, "test", seed)
    contexts = list(pipe.space)
    test_tasks = pipe.tasks("test")
    universal = next(c.id for c in contexts if c.is_universal)
    out: dict[str, list[float]] = {
        "oracle": [test.get(t, test.context_ids[test.best_index(t)]).objective for t in test.tasks],
        "universal context": [test.get(t, universal).objective for t in test.tasks],
    }
    lam = pipe.lam(planner)
    for variant in variants:
        model, kind, temp, screened = variant
        cfg = SelectorConfig.from_mapping(
            {
                **pipe.config["selector"],
                "model": model,
                "labels": kind,
                "temperature": temp,
                "screen": screened,
                "seed": seed,
            }
        )
        x_train = np.stack(
            [selector_input(pipe, t, model, contexts, pipe.relevant) for t in pipe.tasks("train")]
        )
        selector = ContextSelector(tuple(x_train.shape[1:]), len(contexts), cfg)
        selector.fit(x_train, train.targets(kind, temp))
        picks = []
        for t, task in zip(test.tasks, test_tasks, strict=True):
            x = selector_input(pipe, task, model, contexts, pipe.relevant)
            ranked = [(contexts[i], p) for i, p in selector.ranked(x)]
            if cfg.screen:
                ranked, _ = screen(ranked, pipe.domain.region_graph(task))
            # As the CAMP method: the first pick, up to two fallbacks, then universal.
            order = [c.id for c, _ in ranked[:3]]
            if universal not in order:
                order.append(universal)
            picks.append(with_fallbacks(test, t, order, lam))
        out[variant_name(variant)] = picks
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True)
    parser.add_argument("--planner", required=True)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--seeds", type=int, default=1, help="seeds of the earlier eval run")
    parser.add_argument(
        "--variant",
        action="append",
        type=parse_variant,
        help="[MODEL/]KIND[:TEMPERATURE][:noscreen], e.g. multilabel:5 or "
        "structural/regression:5:noscreen (repeatable; default: those two)",
    )
    parser.add_argument("--json", type=Path, help="also write the per-task objectives here")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    variants = args.variant or [
        ("net", "multilabel", 5.0, True),
        ("structural", "regression", 5.0, False),
    ]
    try:
        base = Pipeline.create(args.domain, args.config, args.artifacts)
        per_seed = [
            study_seed(base, args.artifacts, args.planner, s, variants) for s in range(args.seeds)
        ]
    except CampError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"test objective of the picked context ({args.domain}, {args.planner}), mean per seed")
    header = " ".join(f"{'seed ' + str(s):>9}" for s in range(args.seeds))
    print(f"{'selector':<34} {header}      mean")
    rows: dict[str, Any] = {}
    for name in per_seed[0]:
        means = [statistics.fmean(run[name]) for run in per_seed]
        rows[name] = {"seed_means": means, "per_task": [run[name] for run in per_seed]}
        cells = " ".join(f"{m:9.1f}" for m in means)
        print(f"{name:<34} {cells} {statistics.fmean(means):9.1f}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
