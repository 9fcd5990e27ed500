"""`camp train`: learn CSIs, score every context on every training task, fit the selector,
and write the bundle. Every stage is cached or checkpointed, so rerunning after an
interruption only does the work that is left."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.objective import attempt_cap
from camp_planner.learning.executor import Workers, make_executor
from camp_planner.learning.gate import GainTable
from camp_planner.learning.labels import (
    Checkpoint,
    ScoreJob,
    ScoreMatrix,
    ScoringStats,
    checkpoint_path,
    score,
)
from camp_planner.learning.objective_model import ObjectiveModel, runtime_values
from camp_planner.learning.structural import selector_input
from camp_planner.progress import progress_bar
from camp_planner.workflow import Pipeline

if TYPE_CHECKING:
    from camp_planner.learning.selector import SelectorConfig

# Bump when what a score record holds changes, so old checkpoints are not reused.
# 3: the planner's count of its work (``work_s``), which ``selector.label_cost: work`` reads.
LABEL_FORMAT = 3


@dataclass
class TrainResult:
    bundle_path: Path
    matrix: ScoreMatrix
    stats: ScoringStats
    iterations: int
    final_loss: float
    label_counts: dict[str, int]
    # The same counts per kind of training task (``Domain.task_kind``; empty: one kind).
    label_counts_by_kind: dict[str, dict[str, int]] = field(default_factory=dict)


# `camp` settings that only the CAMP method reads when it runs (not the scoring of contexts).
CAMP_METHOD_ONLY = frozenset({"attempt_budget_s", "gate", "selection"})


def score_checkpoint(
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    split: str,
    seed: int,
    ablation: bool = False,
    repeat: int = 0,
) -> Checkpoint:
    """The checkpoint holding the scores of one (configuration, planner, split, seed) and,
    for ``repeat`` > 0, of that repeated scoring."""
    # Scores depend on everything but the selector's settings: retuning the selector must
    # not throw away hours of scoring.
    scoring_config = {k: v for k, v in pipe.config.items() if k != "selector"}
    # Nor does how the CAMP method hands over between contexts: each score is one context.
    if "camp" in scoring_config:
        scoring_config["camp"] = {
            k: v for k, v in scoring_config["camp"].items() if k not in CAMP_METHOD_ONLY
        }
    # The test split's generator seed (``camp eval --task-seed``) draws no training task.
    if split != "test" and "test_seed" in scoring_config.get("tasks", {}):
        scoring_config["tasks"] = {
            k: v for k, v in scoring_config["tasks"].items() if k != "test_seed"
        }
    key = {
        "domain": pipe.domain.name,
        "version": pipe.domain.version,
        "config": json.dumps(scoring_config, sort_keys=True, default=str),
        "planner": planner,
        "split": split,
        "seed": seed,
        "ablation": ablation,
        "format": LABEL_FORMAT,
    }
    if repeat:  # the first scoring keeps the key it always had
        key["repeat"] = repeat
    return Checkpoint(checkpoint_path(artifacts, pipe.domain.name, key))


def cached_matrix(
    pipe: Pipeline, artifacts: Path, planner: str, split: str, seed: int, repeat: int = 0
) -> ScoreMatrix:
    """The checkpointed score matrix of ``split`` (``repeat``: which independent scoring),
    without planning anything (offline studies of what was scored); missing scores are an
    error naming the command that scores them."""
    checkpoint = score_checkpoint(pipe, artifacts, planner, split, seed, repeat=repeat)
    # Read only: an eval may be scoring into this checkpoint right now.
    scores = checkpoint.load(repair=False)
    tasks = list(range(len(pipe.tasks(split))))
    ids = [c.id for c in pipe.space]
    missing = [(t, c) for t in tasks for c in ids if (t, c) not in scores]
    if missing:
        raise CampError(
            f"{len(missing)} {split} scores of seed {seed}"
            + (f" (repeat {repeat + 1})" if repeat else "")
            + f" are not in {checkpoint.path}; run the same `camp eval` (with the oracle"
            + (f", selector.label_repeats: {repeat + 1}" if repeat else "")
            + ") first"
        )
    return ScoreMatrix(tasks, ids, {k: v.without_trajectory() for k, v in scores.items()})


def score_split(
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    split: str,
    contexts: list[Context],
    seed: int,
    workers: Workers,
    progress: bool = True,
    ablation: bool = False,
    repeat: int = 0,
) -> tuple[ScoreMatrix, ScoringStats]:
    """Every (task, context) of ``split`` planned and executed on the executor ``workers``
    names, checkpointed (``repeat``: which independent scoring, see :class:`ScoreJob`)."""
    pipe.planner_settings(planner)  # fail fast on an unknown planner
    pipe.learn_csis(label="learning CSIs" if progress else None, workers=workers)
    # Every CSI a job can need is learned now; the workers get them from here, never learn.
    csis = pipe.csi_payload()
    config_json = json.dumps(pipe.config, sort_keys=True, default=str)
    n_tasks = len(pipe.tasks(split))
    ids = [c.id for c in contexts]
    jobs = [
        ScoreJob(
            pipe.domain.name,
            config_json,
            str(artifacts),
            split,
            t,
            cid,
            planner,
            seed,
            ablation,
            repeat,
        )
        for t in range(n_tasks)
        for cid in ids
    ]
    checkpoint = score_checkpoint(pipe, artifacts, planner, split, seed, ablation, repeat)
    return score(
        jobs,
        checkpoint,
        make_executor(workers),
        list(range(n_tasks)),
        ids,
        progress=progress,
        desc=f"scoring {len(ids)} contexts × {n_tasks} {split} tasks ({planner})"
        + (f", repeat {repeat + 1}" if repeat else ""),
        csis=csis,
    )


def score_repeats(
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    seed: int,
    repeats: int,
    workers: Workers = 1,
    progress: bool = True,
) -> tuple[list[ScoreMatrix], ScoringStats]:
    """``repeats`` independent scorings of every training (task, context), each
    checkpointed on its own (so raising ``selector.label_repeats`` keeps what is scored)."""
    contexts = list(pipe.space)
    matrices, reused, computed = [], 0, 0
    for repeat in range(max(repeats, 1)):
        matrix, stats = score_split(
            pipe, artifacts, planner, "train", contexts, seed, workers, progress, repeat=repeat
        )
        matrices.append(matrix)
        reused, computed = reused + stats.reused, computed + stats.computed
    return matrices, ScoringStats(reused, computed)


def selector_targets(
    matrix: ScoreMatrix,
    cfg: SelectorConfig,
    lam: float | None = None,
    tasks: Sequence[int] | None = None,
) -> np.ndarray:
    """The training targets ``cfg`` asks for (kind, temperature, fallback valuation)."""
    fallback = Context.universal().id if cfg.fallback_labels else None
    return matrix.targets(
        cfg.labels, cfg.temperature, lam, tasks, fallback=fallback, cost=cfg.label_cost
    )


def training_mask(
    pipe: Pipeline, tasks: Sequence[Any], contexts: Sequence[Context], cfg: SelectorConfig
) -> np.ndarray | None:
    """With ``selector.learn_screened_only``, which (task, context) pairs the loss counts:
    those the screen keeps (the context's regions can join start and goal on that task's
    map); None otherwise, or for a domain without maps."""
    if not cfg.learn_screened_only:
        return None
    graphs = [pipe.domain.region_graph(t) for t in tasks]
    if all(g is None for g in graphs):
        return None
    return np.array(
        [[g is None or g.can_reach_goal(c) for c in contexts] for g in graphs], dtype=bool
    )


def train(
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    seed: int = 0,
    workers: Workers = 1,
    progress: bool = True,
) -> TrainResult:
    """The paper's selector learning (appendix B) with a checkpointed score matrix; the
    scoring runs on the executor ``workers`` names (an ``int``: that many processes)."""
    # torch loads here, not at import: `describe` and the score matrix do not need it.
    from camp_planner.learning.bundle import Bundle, trained_bundle
    from camp_planner.learning.selector import ContextSelector, SelectorConfig

    cfg = SelectorConfig.from_mapping({**pipe.config["selector"], "seed": seed})
    contexts = list(pipe.space)
    matrices, stats = score_repeats(
        pipe, artifacts, planner, seed, cfg.label_repeats, workers, progress
    )
    # The first scoring keeps the executed trajectories (the imitation baselines learn from
    # them); the selector learns from the mean of all scorings.
    matrix = matrices[0]
    labelled = matrix if len(matrices) == 1 else ScoreMatrix.mean(matrices)
    work_labels = cfg.label_cost == "work"
    # Each training task's best context, as the labels value them (for the bundle's record).
    labels = (
        [int(i) for i in labelled.targets("hard", 1.0, pipe.lam(planner), cost="work")]
        if work_labels
        else labelled.labels()
    )
    features = np.stack(
        [selector_input(pipe, t, cfg.model, contexts, pipe.relevant) for t in pipe.tasks("train")]
    )
    selector = ContextSelector(tuple(features.shape[1:]), len(contexts), cfg)
    # Minutes for the CNN at the iteration cap: worth a progress bar. It stops short of
    # 100 % when the loss target is met first. The prior is a closed-form mean: no bar.
    bar = (
        progress_bar(cfg.max_iterations, "training the selector (iterations)")
        if progress and cfg.iterative
        else None
    )
    try:
        report = selector.fit(
            features,
            # On the work clock the labels need λ; as scored, the objective already has it.
            selector_targets(labelled, cfg, pipe.lam(planner) if work_labels else None),
            bar.update if bar is not None else None,
            training_mask(pipe, pipe.tasks("train"), contexts, cfg),
        )
    finally:
        if bar is not None:
            bar.close()
    counts = Counter(contexts[i].name for i in labels)
    gains = gain_table(pipe, labelled, cfg, planner)
    held_out = out_of_fold_scores(
        features,
        selector_targets(labelled, cfg, pipe.lam(planner) if work_labels else None),
        cfg,
        len(contexts),
        training_mask(pipe, pipe.tasks("train"), contexts, cfg),
        progress,
    )
    model = objective_model(pipe, labelled, features, cfg, planner, seed, held_out)
    bundle = Bundle(
        domain=pipe.domain.name,
        domain_version=pipe.domain.version,
        space=pipe.space,
        csis={c.id: r for c in contexts if (r := pipe.store.cached(c)) is not None},
        selector=selector,
        metadata={
            "planner": planner,
            "seed": seed,
            "lambda": pipe.lam(planner),
            "train_tasks": len(labels),
            "label_counts": dict(counts),
            "iterations": report.iterations,
            "final_loss": report.final_loss,
            "config": pipe.config,
            "gain_table": gains.to_json(),
            "objective_model": model.to_json(),
            # A space of templates: what their instances keep, by role (core/role_relevance.py).
            **(
                {"role_relevance": pipe.role_relevance().to_json()}
                if pipe.basis is not None
                else {}
            ),
        },
    )
    path = trained_bundle(artifacts, pipe.domain.name, planner, seed, pipe.config)
    bundle.save(path)
    # Beside its bundle, under the same key: what the selector was trained on.
    path.with_name(path.stem.replace("selector", "train_scores", 1) + ".json").write_text(
        json.dumps(labelled.to_json(), indent=1)
    )
    by_kind: dict[str, Counter[str]] = {}
    for task, i in zip(pipe.tasks("train"), labels, strict=True):
        kind = pipe.domain.task_kind(task)
        if kind is not None:
            by_kind.setdefault(kind, Counter())[contexts[i].name] += 1
    return TrainResult(
        path,
        matrix,
        stats,
        report.iterations,
        report.final_loss,
        dict(counts),
        {kind: dict(c) for kind, c in sorted(by_kind.items())},
    )


def gain_table(pipe: Pipeline, matrix: ScoreMatrix, cfg: SelectorConfig, planner: str) -> GainTable:
    """Each context's gains over the universal context on the training tasks, valued as the
    labels value them, for the do-no-harm gate (learning/gate.py). Only the tasks on which
    the screen would offer a context count for it."""
    by_id = {c.id: c for c in pipe.space}
    graphs = [pipe.domain.region_graph(t) for t in pipe.tasks("train")]

    def feasible(task: int, context_id: str) -> bool:
        graph = graphs[task] if cfg.screen else None
        return graph is None or graph.can_reach_goal(by_id[context_id])

    lam = pipe.lam(planner) if cfg.label_cost == "work" else None
    return GainTable.from_matrix(matrix, lam, cfg.label_cost, feasible)


def out_of_fold_scores(
    features: np.ndarray,
    targets: np.ndarray,
    cfg: SelectorConfig,
    n_contexts: int,
    mask: np.ndarray | None,
    progress: bool = True,
) -> np.ndarray:
    """Each training task's selector scores (:meth:`ContextSelector.scores`) from a
    selector trained without it: ``FOLDS`` selectors, each on the other folds' tasks. The
    objective model learns how far the selector's confidence predicts the objective from
    these, which the full selector (trained on every task, its own labels fitted to the
    loss target) would overstate."""
    from camp_planner.learning.objective_model import FOLDS
    from camp_planner.learning.selector import ContextSelector

    n = len(features)
    folds = np.random.default_rng(cfg.seed).permutation(n) % FOLDS
    out = np.zeros((n, n_contexts))
    bar = progress_bar(FOLDS, "cross-fitting the selector (folds)") if progress else None
    try:
        for f in range(FOLDS):
            held, kept = folds == f, folds != f
            if not held.any():
                continue
            fold = ContextSelector(tuple(features.shape[1:]), n_contexts, cfg)
            fold.fit(features[kept], targets[kept], None, None if mask is None else mask[kept])
            out[held] = fold.scores(features[held])
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return out


def objective_model(
    pipe: Pipeline,
    matrix: ScoreMatrix,
    features: np.ndarray,
    cfg: SelectorConfig,
    planner: str,
    seed: int,
    held_out: np.ndarray | None = None,
) -> ObjectiveModel:
    """Each context's objective predicted from the selector's input and (``held_out``, one
    row per training task) the selector's out-of-fold scores, for the runtime's selection
    rule (learning/objective_model.py): fitted on what the runtime would earn in each
    context on each training task (attempt caps and fallbacks included), where the screen
    would offer it."""
    lam = pipe.lam(planner)
    give_up = pipe.domain.gives_up(pipe.config)
    tasks = pipe.tasks("train")
    probe = pipe.domain.make_mdp(tasks[0], pipe.config)
    caps: list[float | None] = [None] * len(tasks)
    if probe.return_bound() is not None:  # only domains with a return bound have caps
        caps = [attempt_cap(pipe.domain.make_mdp(t, pipe.config), lam, give_up) for t in tasks]
    by_id = {c.id: c for c in pipe.space}
    graphs = [pipe.domain.region_graph(t) for t in tasks]

    def feasible(task: int, context_id: str) -> bool:
        graph = graphs[task] if cfg.screen else None
        return graph is None or graph.can_reach_goal(by_id[context_id])

    rows = [features[t] for t in matrix.tasks]
    scores = None if held_out is None else np.stack([held_out[t] for t in matrix.tasks])
    value = runtime_values(matrix, lam, cfg.label_cost, caps, give_up, feasible)
    return ObjectiveModel.fit(np.stack(rows), matrix.context_ids, value, seed, scores)


def describe(result: TrainResult) -> dict[str, Any]:
    return {
        "bundle": str(result.bundle_path),
        "scores_reused": result.stats.reused,
        "scores_computed": result.stats.computed,
        "selector_iterations": result.iterations,
        "selector_final_loss": round(result.final_loss, 6),
        "label_counts": result.label_counts,
        "label_counts_by_kind": result.label_counts_by_kind,
    }
