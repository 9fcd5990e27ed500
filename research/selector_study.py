"""Compare selector variants offline on scores an earlier `camp eval` already computed.

`camp eval` checkpoints the score of every (task, context) pair on the training tasks (the
labels) and, when the oracle is evaluated, on the test tasks too. Given those, the outcome of
*selecting* a context is a lookup: this script retrains the selector of each variant (label
kind and temperature) per seed, lets it pick a context for every test task (screened as the
CAMP method does, with its fallbacks modelled from the scores) and reports the test
objective, next to two references: the oracle's best context and the universal context. No
planning runs, so a variant costs seconds instead of an eval run; the chosen variant must
then be confirmed by a real `camp eval` (selection time is not modelled here).

With ``--measure work`` every pick is valued on the planner's count of its work (return − λ ×
work) instead of its scored run's wall-clock time: the same plan counts the same on any
machine, so two variants that pick the same contexts tie exactly, and the oracle row is the
ceiling of `research/work_ceiling.py` with fallbacks modelled.

    .venv/bin/python research/selector_study.py --domain gridworld --planner vi \\
        --config config/gridworld/reduced.yaml --seeds 2 \\
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
from camp_planner.eval.evaluate import seed_pipeline
from camp_planner.learning.labels import PLANNING_FAILURES, ScoreMatrix
from camp_planner.learning.selector import (
    LABEL_KINDS,
    MODELS,
    ContextSelector,
    SelectorConfig,
)
from camp_planner.learning.structural import selector_input
from camp_planner.learning.train import cached_matrix, selector_targets, training_mask
from camp_planner.progress import progress_bar
from camp_planner.runtime.camp_runtime import attempt_budget
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

Variant = tuple[str, str, float, frozenset[str]]  # model, label kind, temperature, flags
# Variant flags and the selector settings they set.
FLAGS: dict[str, tuple[str, bool]] = {
    "noscreen": ("screen", False),
    "fallback": ("fallback_labels", True),
    "nobias": ("structural_context_bias", False),
    "screened": ("learn_screened_only", True),
}


def parse_variant(text: str) -> Variant:
    """``[MODEL/]KIND[:TEMPERATURE][:FLAG ...]``, e.g. ``structural/regression:5:noscreen``.
    Flags: ``noscreen`` (``selector.screen: false``), ``fallback`` (labels valued with the
    fallback to the universal context, ``selector.fallback_labels``), ``nobias`` (the
    structural model without its per-context bias, ``selector.structural_context_bias``),
    ``screened`` (the loss counts only the pairs the screen keeps,
    ``selector.learn_screened_only``)."""
    model, _, rest_text = text.rpartition("/")
    model = model or "net"
    if model not in MODELS:
        raise argparse.ArgumentTypeError(f"model must be one of {', '.join(MODELS)}")
    kind, *rest = rest_text.split(":")
    if kind not in LABEL_KINDS:
        raise argparse.ArgumentTypeError(f"label kind must be one of {', '.join(LABEL_KINDS)}")
    flags = [r for r in rest if r in FLAGS]
    numbers = [r for r in rest if r not in FLAGS]
    if len(numbers) > 1 or (numbers and rest[0] != numbers[0]) or len(set(flags)) < len(flags):
        raise argparse.ArgumentTypeError(
            f"expected [MODEL/]KIND[:TEMPERATURE][:{'|'.join(FLAGS)} ...], got {text!r}"
        )
    try:
        value = float(numbers[0]) if numbers else 5.0
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad temperature in {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("the temperature must be positive")
    return model, kind, value, frozenset(flags)


def parse_budget(text: str) -> float | None:
    """An attempt budget in seconds, or ``none`` for none."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or 'none', got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("an attempt budget must be positive")
    return value


def variant_name(variant: Variant) -> str:
    model, kind, temp, flags = variant
    prefix = "" if model == "net" else f"{model}/"
    return f"{prefix}{kind}:{temp:g}" + "".join(f":{f}" for f in FLAGS if f in flags)


def variant_settings(variant: Variant) -> dict[str, Any]:
    """The selector settings a variant names (over the domain's own)."""
    model, kind, temp, flags = variant
    settings: dict[str, Any] = {"model": model, "labels": kind, "temperature": temp}
    settings.update(FLAGS[f] for f in flags)
    return settings


MEASURES = ("wall", "work")


def with_fallbacks(
    test: ScoreMatrix,
    task: int,
    order: list[str],
    lam: float,
    budget: float | None = None,
    universal: str = "universal",
    measure: str = "wall",
) -> float:
    """The objective of trying ``order`` until a context does not fail, modelled from the
    scores: a failed attempt costs its compute time (λ·t) and the next one starts afresh.
    Exact when planning fails before the first action (value iteration, Fast Downward);
    an approximation when it fails mid-episode. With ``budget`` (``camp.attempt_budget_s``),
    a context other than ``universal`` whose scored run took longer is taken to have been
    cut off there, at a cost of λ·budget: its run up to the budget is assumed to match the
    scored one. ``measure`` "work" counts time as the planner's work instead of the wall
    clock, for the objective, the failed attempts and the budget alike."""
    # On the wall clock a run is worth its objective as scored; on work, λ weighs the work.
    charge = None if measure == "wall" else lam
    spent = 0.0
    for cid in order:
        score = test.get(task, cid)
        cost = score.seconds(measure)
        if budget is not None and cid != universal and cost > budget:
            spent += lam * budget
            continue
        if score.outcome not in PLANNING_FAILURES:
            return score.value(charge, measure) - spent
        spent += lam * cost
    return -spent


def _orders(
    pipe: Pipeline,
    selector: ContextSelector,
    cfg: SelectorConfig,
    model: str,
    task_objects: list[Any],
) -> list[list[str]]:
    """The contexts each task is planned with, in turn, as the CAMP method picks them: the
    first ranked context (screened), up to two fallbacks, then the universal one."""
    contexts = list(pipe.space)
    universal = next(c.id for c in contexts if c.is_universal)
    orders = []
    for task in task_objects:
        x = selector_input(pipe, task, model, contexts, pipe.relevant)
        ranked = [(contexts[i], p) for i, p in selector.ranked(x)]
        if cfg.screen:
            ranked, _ = screen(ranked, pipe.domain.region_graph(task))
        order = [c.id for c, _ in ranked[:3]]
        if universal not in order:
            order.append(universal)
        orders.append(order)
    return orders


def budget_name(name: str, budget: float | None, budgets: list[float | None]) -> str:
    """A row's name: the variant's, and its attempt budget when several are compared."""
    if len(budgets) == 1:
        return name
    return f"{name} (no budget)" if budget is None else f"{name} (budget {budget:g} s)"


def _fit(
    selector: ContextSelector,
    x: np.ndarray,
    y: np.ndarray,
    desc: str,
    mask: np.ndarray | None = None,
) -> None:
    """Train ``selector``, with a progress bar: the CNN takes minutes per training (the
    prior, a closed-form mean, none)."""
    if not selector.cfg.iterative:
        selector.fit(x, y, None, mask)
        return
    bar = progress_bar(selector.cfg.max_iterations, desc)
    try:
        selector.fit(x, y, bar.update, mask)
    finally:
        bar.close()


def study_seed(
    base: Pipeline,
    artifacts: Path,
    planner: str,
    seed: int,
    variants: list[Variant],
    folds: int = 0,
    label_repeats: int = 1,
    budgets: list[float | None] | None = None,
    measure: str = "wall",
) -> dict[str, list[float]]:
    """Per variant (and the references), the objective of each task's pick: on the test
    tasks, or with ``folds`` > 0 on the training tasks by cross-validation (each fold picked
    by a selector trained on the other folds), which chooses a variant without looking at
    the test tasks. Each variant is scored under each of ``budgets`` (attempt budgets;
    default: the configuration's ``camp.attempt_budget_s``), every pick valued on ``measure``
    (the wall clock, or the planner's count of its work)."""
    pipe = seed_pipeline(base, artifacts, seed)
    lam = pipe.lam(planner)
    budgets = budgets or [attempt_budget(pipe.config)]
    # With repeats the selectors learn from, and cross-validation scores picks by, the mean
    # of the independent scorings: a steadier estimate of each pick's worth than one run.
    runs = [cached_matrix(pipe, artifacts, planner, "train", seed, r) for r in range(label_repeats)]
    train = runs[0] if len(runs) == 1 else ScoreMatrix.mean(runs)
    contexts = list(pipe.space)
    universal = next(c.id for c in contexts if c.is_universal)
    train_tasks = pipe.tasks("train")
    if folds > 0:
        scored, scored_tasks = train, list(train_tasks)
    else:
        scored, scored_tasks = (
            cached_matrix(pipe, artifacts, planner, "test", seed),
            list(pipe.tasks("test")),
        )
    charge = None if measure == "wall" else lam  # as in with_fallbacks
    out: dict[str, list[float]] = {
        "oracle": [
            max(scored.get(t, c).value(charge, measure) for c in scored.context_ids)
            for t in scored.tasks
        ],
        "universal context": [
            scored.get(t, universal).value(charge, measure) for t in scored.tasks
        ],
    }
    for variant in variants:
        model = variant[0]
        cfg = SelectorConfig.from_mapping(
            {**pipe.config["selector"], **variant_settings(variant), "seed": seed}
        )
        x_train = np.stack(
            [selector_input(pipe, t, model, contexts, pipe.relevant) for t in train_tasks]
        )
        # Labels on the work clock need λ; as scored, the objective already has it.
        y_train = np.asarray(
            selector_targets(train, cfg, lam if cfg.label_cost == "work" else None)
        )
        mask = training_mask(pipe, train_tasks, contexts, cfg)
        if folds == 0:
            selector = ContextSelector(tuple(x_train.shape[1:]), len(contexts), cfg)
            _fit(
                selector,
                x_train,
                y_train,
                f"seed {seed}, {variant_name(variant)}: training",
                mask,
            )
            orders = _orders(pipe, selector, cfg, model, scored_tasks)
        else:
            orders = [[] for _ in train.tasks]
            for fold in range(folds):
                held = [i for i in range(len(train.tasks)) if i % folds == fold]
                kept = [i for i in range(len(train.tasks)) if i % folds != fold]
                selector = ContextSelector(tuple(x_train.shape[1:]), len(contexts), cfg)
                _fit(
                    selector,
                    x_train[kept],
                    y_train[kept],
                    f"seed {seed}, {variant_name(variant)}, fold {fold + 1}/{folds}: training",
                    None if mask is None else mask[kept],
                )
                fold_orders = _orders(pipe, selector, cfg, model, [scored_tasks[i] for i in held])
                for i, order in zip(held, fold_orders, strict=True):
                    orders[i] = order
        for budget in budgets:
            out[budget_name(variant_name(variant), budget, budgets)] = [
                with_fallbacks(scored, t, order, lam, budget, universal, measure)
                for t, order in zip(scored.tasks, orders, strict=True)
            ]
    return out


def against_universal(per_seed: list[dict[str, list[float]]], name: str) -> tuple[int, int]:
    """How many tasks (over all seeds) the row ``name`` values above, and below, the
    universal context (ties within 1e-9 count as neither)."""
    better = worse = 0
    for run in per_seed:
        for v, u in zip(run[name], run["universal context"], strict=True):
            better += v > u + 1e-9
            worse += v < u - 1e-9
    return better, worse


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
        help="[MODEL/]KIND[:TEMPERATURE][:FLAG ...], MODEL one of net (the default), "
        "structural, prior; flags noscreen, fallback, nobias, screened; e.g. multilabel:5, "
        "structural/regression:5:noscreen or prior/regression:50:fallback "
        "(repeatable; default: the first two)",
    )
    parser.add_argument(
        "--folds",
        type=int,
        default=0,
        help="K > 1: cross-validate on the training tasks in K folds instead of scoring the "
        "test tasks (choose a variant without looking at the test tasks)",
    )
    parser.add_argument(
        "--label-repeats",
        type=int,
        default=1,
        help="K > 1: training scores are the mean of K independent scorings "
        "(`selector.label_repeats: K` in `camp train` scores them)",
    )
    parser.add_argument(
        "--attempt-budget",
        action="append",
        type=parse_budget,
        metavar="S|none",
        help="score each variant with this camp.attempt_budget_s (seconds a context other "
        "than the universal one may plan before the next takes over; repeatable, to compare "
        "several; default: the configuration's)",
    )
    parser.add_argument(
        "--measure",
        choices=MEASURES,
        default="wall",
        help="value the picks on the scored runs' wall-clock time (the default), or on the "
        "planner's count of its work (return − λ × work: the same for the same plan on any "
        "machine; needs scores of label format 3 from a planner that counts work)",
    )
    parser.add_argument("--json", type=Path, help="also write the per-task objectives here")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if args.label_repeats < 1:
        parser.error("--label-repeats must be at least 1")
    if args.folds == 1 or args.folds < 0:
        parser.error("--folds must be 0 (score the test tasks) or at least 2")
    variants = args.variant or [
        ("net", "multilabel", 5.0, frozenset()),
        ("structural", "regression", 5.0, frozenset({"noscreen"})),
    ]
    try:
        base = Pipeline.create(args.domain, args.config, args.artifacts)
        per_seed = [
            study_seed(
                base,
                args.artifacts,
                args.planner,
                s,
                variants,
                args.folds,
                args.label_repeats,
                args.attempt_budget,
                args.measure,
            )
            for s in range(args.seeds)
        ]
    except CampError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    where = f"training tasks, {args.folds}-fold cross-validation" if args.folds else "test tasks"
    on = "on the planner's work" if args.measure == "work" else "on the wall clock"
    print(
        f"objective of the picked context ({args.domain}, {args.planner}; {where}; {on}), "
        "mean per seed; tasks better / worse than the universal context"
    )
    header = " ".join(f"{'seed ' + str(s):>9}" for s in range(args.seeds))
    width = max(34, *(len(name) for name in per_seed[0]))
    print(f"{'selector':<{width}} {header}      mean  better/worse")
    rows: dict[str, Any] = {}
    for name in per_seed[0]:
        means = [statistics.fmean(run[name]) for run in per_seed]
        better, worse = against_universal(per_seed, name)
        rows[name] = {
            "seed_means": means,
            "per_task": [run[name] for run in per_seed],
            "better": better,
            "worse": worse,
        }
        cells = " ".join(f"{m:9.1f}" for m in means)
        print(f"{name:<{width}} {cells} {statistics.fmean(means):9.1f}  {better:>6}/{worse}")
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
