"""`camp eval`: the experimental protocol of section 5 for any domain.

For each of K seeds (a different train/test task draw and selector seed, as the paper's 10
independent runs), train the selector (resumable), score every context on the test tasks
when the oracle is asked for, run every method on every test task (task by task, the
methods in a shuffled order per task, so that the runs compared pair by pair are seconds
apart), and
aggregate: per method the mean and standard deviation across seeds of the per-seed mean
objective, return, compute time, success rate and fallbacks. Writes ``results.json``,
``table.md`` (the paper's appendix layout) and ``plot.png`` (mean return vs compute time,
per-axis std, like the paper's figure).

``--task-seed S`` (the setting ``tasks.test_seed``) draws run k's test tasks from generator
seed S + k instead of the run's own seed, so that a claim rests on tasks never used while
developing; the training tasks, their scores, CSIs and the trained selector stay those of
the run, reused from their caches. ``--bundle`` evaluates a given selector bundle (e.g. the
shipped one) instead of training one per run.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from camp_planner.config import TEST_SEED, check_task_seed, with_test_seed
from camp_planner.core.errors import CampError
from camp_planner.eval.episodes import run_episodes
from camp_planner.eval.methods import TrainingData, make_methods
from camp_planner.eval.paired import compare_methods, p_value, paired_difference
from camp_planner.learning import ALL_METHODS
from camp_planner.learning.bundle import load_bundle, shipped_bundle
from camp_planner.learning.executor import Workers
from camp_planner.learning.labels import Score, ScoreMatrix
from camp_planner.learning.train import score_split, train
from camp_planner.planners.registry import planner_names, planner_version
from camp_planner.progress import progress_bar
from camp_planner.workflow import Pipeline

T = TypeVar("T")

METRICS = ("objective", "discounted_return", "compute_time_s", "success", "fallbacks")
# CAMP against every other method, episode by episode (eval/paired.py).
PAIRED_METRICS = ("objective", "compute_time_s")
LABELS = {
    "camp": "CAMP (ours)",
    "camp_ablation": "CAMP ablation (sink only)",
    "camp_ungated": "CAMP without the gate (paper)",
    "pure": "Pure planning",
    "plan_transfer": "Plan transfer",
    "policy": "Policy learning",
    "task_policy": "Task-conditioned policy",
    "oracle": "Oracle context (upper bound)",
    "oracle_rerun": "Oracle's context, planned again",
    "stilman": "Stilman's NAMO algorithm",
}


# What ``camp eval --bundle`` can run: methods that learn nothing from training tasks (the
# CAMP methods use the given bundle's selector), besides the domain's own baselines.
BUNDLE_METHODS = ("camp", "camp_ablation", "camp_ungated", "pure")


def seed_pipeline(base: Pipeline, artifacts: Path, seed: int) -> Pipeline:
    """The pipeline of run ``seed``: the task draws shift with the seed (the test split's
    generator seed too, where the configuration sets one)."""
    config = copy.deepcopy(base.config)
    config["seed"] = int(base.config["seed"]) + seed
    tasks = config.get("tasks")
    if isinstance(tasks, dict) and tasks.get(TEST_SEED) is not None:
        tasks[TEST_SEED] = check_task_seed(int(tasks[TEST_SEED]) + seed, "the test seed")
    return Pipeline.from_config(base.domain.name, config, artifacts)


def split_pipelines(base: Pipeline, artifacts: Path, seed: int) -> tuple[Pipeline, Pipeline]:
    """Run ``seed``'s (training pipeline, test pipeline): the same unless the configuration
    draws the test tasks from their own seed. The training pipeline's configuration then
    lacks that seed, so that the training scores, the CSIs and the selector bundle, all keyed
    on it, are those of the run without fresh test draws: trained once, reused by any."""
    test = seed_pipeline(base, artifacts, seed)
    if test.config["tasks"].get(TEST_SEED) is None:
        return test, test
    # A shallow copy shares the CSI store: its cache is keyed without the tasks, and a second
    # store would not see the CSIs the first learns during training.
    training = copy.copy(test)
    training.config = with_test_seed(test.config, None)
    return training, test


def bundle_path(spec: str | Path, domain: str, planner: str, world: str | None = None) -> Path:
    """The bundle ``camp eval --bundle`` names: a file, or ``shipped`` for the one the
    package ships for ``domain`` and ``planner`` in ``world`` (None: the paper's)."""
    if str(spec) == "shipped":
        path = shipped_bundle(domain, planner, world)
        if path is None:
            where = f" in the {world} world" if world else ""
            raise CampError(
                f"the package ships no selector bundle for {domain} with {planner}{where}: "
                "give a bundle file with --bundle"
            )
        return path
    path = Path(spec)
    if not path.is_file():
        raise CampError(f"no selector bundle at {path}")
    return path


def file_digest(path: Path) -> str:
    """A digest of a file's bytes: what a cache of results obtained with it keys on."""
    return hashlib.sha1(path.read_bytes()).hexdigest()[:12]


def seed_cache(
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    methods: Sequence[str],
    seed: int,
    bundle: str | None = None,
) -> Path:
    """Where run ``seed``'s scores are cached: keyed by everything that decides them
    (``bundle``: the digest of the selector bundle evaluated instead of one trained per run).
    ``pipe`` is the run's test pipeline: its configuration holds the test seed, if any."""
    # The domain version too: a change to the domain's planners leaves the configuration as
    # it was, and without it an eval after NAMO version 4 returned version 3's scores.
    fields: dict[str, Any] = {
        "domain": pipe.domain.name,
        "version": pipe.domain.version,
        "config": pipe.config,
        "planner": planner,
        "methods": list(methods),
        "seed": seed,
        # Methods interleaved task by task, shuffled per task (3; rotated: 2): the times of
        # (1), method by method, are not comparable pair by pair with them.
        "order": 3,
        # What a score records (2: the planners' count of their work, ``work_s``): an eval
        # cached before a field was recorded would report it missing.
        "score_format": 2,
        # What the CAMP method does (2: the do-no-harm gate, learning/gate.py; 3: the
        # universal context keeping every variable plans in the task's own MDP; 4: the CAMP
        # runtime, with its rule by lower bound and the attempt cap).
        "camp_method": 4,
        # The baselines' own versions: a fix to Stilman's algorithm reruns the eval.
        "planners": {
            name: planner_version(name)
            for name in (planner, *pipe.domain.baselines)
            if name in planner_names()
        },
    }
    if bundle is not None:  # absent otherwise: the caches of earlier evals keep their key
        fields["bundle"] = bundle
    key = json.dumps(fields, sort_keys=True, default=str)
    out_dir = artifacts / pipe.domain.name / planner / f"seed{seed}"
    return out_dir / f"eval-{hashlib.sha1(key.encode()).hexdigest()[:10]}.json"


def run_seed(
    base: Pipeline,
    artifacts: Path,
    planner: str,
    methods: Sequence[str],
    seed: int,
    workers: Workers,
    progress: bool = True,
    bundle_file: Path | None = None,
) -> dict[str, list[Score]]:
    """Every method's scores on the test tasks of run ``seed`` (cached per configuration);
    ``bundle_file``: the selector to evaluate instead of training one for the run."""
    training, pipe = split_pipelines(base, artifacts, seed)
    digest = None if bundle_file is None else file_digest(bundle_file)
    cache = seed_cache(pipe, artifacts, planner, methods, seed, digest)
    out_dir = cache.parent
    if cache.exists():
        data = json.loads(cache.read_text())
        return {m: [Score.from_json(s) for s in rows] for m, rows in data.items()}

    trained = None
    if bundle_file is None:
        trained = train(training, artifacts, planner, seed=seed, workers=workers, progress=progress)
        bundle_file = trained.bundle_path
    bundle = load_bundle(bundle_file, pipe.domain.name, pipe.domain.version)
    test_matrix: ScoreMatrix | None = None
    if "oracle" in methods or "oracle_rerun" in methods:
        # Scored with the test pipeline: fresh test draws get their own checkpoint.
        test_matrix, _ = score_split(
            pipe, artifacts, planner, "test", list(pipe.space), seed, workers, progress
        )
    n_test = len(pipe.tasks("test"))
    made = make_methods(methods, bundle, test_matrix)
    if trained is not None:  # with a given bundle, only methods that learn nothing run
        features = np.stack([training.domain.features(t) for t in training.tasks("train")])
        data = TrainingData(training, planner, trained.matrix, features, seed)
        for method in made:
            method.fit(data)
    bar = _bar(len(methods) * n_test, f"seed {seed}: evaluating methods", progress)
    try:
        scores = run_episodes(
            pipe,
            artifacts,
            planner,
            list(interleaved(made, n_test, seed)),
            seed,
            workers,
            None if bar is None else lambda: bar.update(1),
        )
    finally:
        if bar is not None:
            bar.close()
    results = {m.name: [scores[(m.name, t)] for t in range(n_test)] for m in made}
    out_dir.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({m: [s.to_json() for s in rows] for m, rows in results.items()}))
    return results


def interleaved(methods: Sequence[T], n_test: int, seed: int = 0) -> Iterator[tuple[int, T]]:
    """(test task, method) in the order an eval plans them: task by task, each task's
    methods in their own order, shuffled with a generator seeded by ``seed`` and the task.

    The runs an eval compares pair by pair are then seconds apart, and the host's speed, which
    drifts over minutes, is nearly the same for both. Method by method, minutes apart, two
    identical computations differed beyond the paired interval (``research/replan_jitter.py``
    and docs/results/history.md, "Identical plans planned again"). Shuffled rather than rotated: a
    rotation puts the same method before a given one on every task (the CAMP always after
    Stilman's algorithm), so whatever one run leaves behind for the next would fall on
    one method only."""
    for t in range(n_test):
        order = list(methods)
        random.Random(1_000_003 * seed + t).shuffle(order)
        for method in order:
            yield t, method


def _bar(total: int, desc: str, progress: bool) -> Any:
    if not progress:
        return None
    return progress_bar(total, desc, leave=False)


def aggregate(per_seed: list[dict[str, list[Score]]]) -> dict[str, dict[str, Any]]:
    """Mean and std across seeds of each method's per-seed mean metrics."""
    out: dict[str, dict[str, Any]] = {}
    methods = list(per_seed[0])
    for method in methods:
        stats: dict[str, Any] = {"seeds": len(per_seed)}
        for metric in METRICS:
            seed_means = [
                statistics.fmean(float(getattr(s, metric)) for s in run[method]) for run in per_seed
            ]
            stats[metric] = {
                "mean": statistics.fmean(seed_means),
                "std": statistics.pstdev(seed_means) if len(seed_means) > 1 else 0.0,
            }
        # Pooled over every episode: NAMO's planning times are heavy-tailed, and the
        # issue's speed-up target is a ratio of medians.
        stats["median_compute_time_s"] = statistics.median(
            float(s.compute_time_s) for run in per_seed for s in run[method]
        )
        stages = stage_breakdown([run[method] for run in per_seed])
        if stages:
            stats["stage_times_s"] = stages
        out[method] = stats
    rows = episodes(per_seed)
    paired = compare_methods(
        {m: [row for run in rows[m] for row in run] for m in methods},
        "camp",
        PAIRED_METRICS,
    )
    if paired:
        out["camp"]["paired"] = paired
    work = work_comparison({m: [row for run in rows[m] for row in run] for m in methods})
    if work is not None:
        out["camp"]["work"] = work
    if "camp" in rows and "pure" in rows:
        same = same_plans(rows["camp"], rows["pure"])
        if same is not None:
            out["camp"]["same_plan_as_pure"] = same
    for reference in ("oracle", "oracle_rerun"):
        if "camp" in out and reference in out:
            oracle = out[reference]["objective"]["mean"]
            camp = out["camp"]["objective"]["mean"]
            # A ratio of objectives only reads as "how close" when both are positive.
            out["camp"][f"fraction_of_{reference}"] = (
                camp / oracle if oracle > 0 and camp > 0 else None
            )
    speedups = median_speedups({m: out[m]["median_compute_time_s"] for m in out})
    for method, ratio in speedups.items():
        out[method]["median_speedup_over_pure"] = ratio
    return out


def work_comparison(rows: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The planners' own count of their work (``work_s``, nominal seconds) where every episode
    of a method has one: each such method's median per episode, and CAMP minus each of
    them, paired episode by episode. Unlike wall-clock time this reads the same on any
    machine and at any load, so it shows what a context saves in computation with no timing
    noise (two runs that made the same plan did the same work). None without CAMP's work.

    ``wall_per_work``: each method's wall-clock seconds per second of work, over all its
    episodes. The nominal costs are the same for every method, so a method whose ratio is
    higher spends more time in code the count does not see (or in costlier checks)."""
    counted = {
        m: [float(r["work_s"]) for r in eps]
        for m, eps in rows.items()
        if eps and all(r.get("work_s") is not None for r in eps)
    }
    if "camp" not in counted:
        return None
    medians = {m: statistics.median(w) for m, w in counted.items()}
    paired = {m: paired_difference(counted["camp"], w) for m, w in counted.items() if m != "camp"}
    per_work = {
        m: sum(float(r["compute_time_s"]) for r in rows[m]) / sum(w)
        for m, w in counted.items()
        if sum(w) > 0 and all(r.get("compute_time_s") is not None for r in rows[m])
    }
    return {"median_s": medians, "paired": paired, "wall_per_work": per_work}


def same_plans(
    camp: list[list[dict[str, Any]]], pure: list[list[dict[str, Any]]]
) -> dict[str, int] | None:
    """In how many paired episodes the CAMP made pure planning's plan, overall and where it
    kept the universal context (there it plans pure planning's problem, so a different
    plan means the planner's randomness differed); None without recorded plans."""
    pairs = [
        (c, p)
        for cs, ps in zip(camp, pure, strict=True)
        for c, p in zip(cs, ps, strict=True)
        if c.get("plan") and p.get("plan")
    ]
    if not pairs:
        return None
    universal = [(c, p) for c, p in pairs if c["context_id"] == "universal"]
    return {
        "episodes": len(pairs),
        "same": sum(c["plan"] == p["plan"] for c, p in pairs),
        "universal": len(universal),
        "universal_same": sum(c["plan"] == p["plan"] for c, p in universal),
    }


def median_speedups(medians: Mapping[str, float]) -> dict[str, float | None]:
    """Pure planning's median compute time ÷ CAMP's and ÷ that of the oracle's contexts
    planned again, for those of the three in ``medians`` (method → median seconds)."""
    if "pure" not in medians:
        return {}
    pure = medians["pure"]
    return {
        m: (pure / medians[m] if medians[m] > 0 else None)
        for m in ("camp", "oracle_rerun")
        if m in medians
    }


def speedup_line(medians: Mapping[str, float]) -> str | None:
    """The median speed-ups of :func:`median_speedups` as one sentence (None without CAMP
    and pure planning): the second, over the oracle's contexts planned again, is what the
    contexts are worth with a perfect choice, which bounds what any selector can reach."""
    ratios = median_speedups(medians)
    camp = ratios.get("camp")
    if camp is None:
        return None
    line = (
        f"Median compute time per episode, pure planning ÷ CAMP: {camp:.2f}× "
        f"({medians['pure']:.3f} s ÷ {medians['camp']:.3f} s)"
    )
    ceiling = ratios.get("oracle_rerun")
    if ceiling is not None:
        line += (
            f"; pure planning ÷ the oracle's contexts planned again: {ceiling:.2f}× (what "
            "the contexts are worth with a perfect choice, a bound on any selector)"
        )
    return line + "."


def stage_breakdown(runs: list[list[Score]]) -> dict[str, float]:
    """Mean seconds per planning stage per test task, pooled over seeds (stages a planner
    does not report are absent; a task that never reached a stage counts 0 for it)."""
    rows = [s for run in runs for s in run]
    names = sorted({k for s in rows for k in s.stage_times_s})
    if not rows or not names:
        return {}
    return {k: statistics.fmean(s.stage_times_s.get(k, 0.0) for s in rows) for k in names}


# Stages worth a column. "setup" is context selection plus CAMP construction; "prepare" and
# "act" are the planner's up-front and per-step calls; the rest break "prepare" down for
# planners that report it (TAMP: task and motion planning, grasps and placements).
BREAKDOWN_STAGES = (
    "setup",
    "prepare",
    "act",
    "task_planning",
    "motion_planning",
    "grasp_place",
    "collision_checks",
)


# What ``results.json`` keeps of every test episode (per method, per seed), so that runs
# can be pooled afterwards (scripts/pool_evals.py) without the per-seed caches.
EPISODE_FIELDS = (
    "task",
    "context_id",
    "objective",
    "compute_time_s",
    "success",
    "fallbacks",
    "plan",
    "work_s",
)


def episodes(per_seed: list[dict[str, list[Score]]]) -> dict[str, list[list[dict[str, Any]]]]:
    """Every test episode's main figures: method → seed → task rows."""
    return {
        method: [
            [{k: getattr(s, k) for k in EPISODE_FIELDS} for s in run[method]] for run in per_seed
        ]
        for method in per_seed[0]
    }


def write_outputs(
    summary: dict[str, dict[str, Any]],
    out_dir: Path,
    title: str,
    command: str,
    wall_time_s: float,
    per_seed: list[dict[str, list[Score]]] | None = None,
    seed_ids: list[int] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    payload: dict[str, Any] = {
        "title": title,
        "command": command,
        "wall_time_s": wall_time_s,
        "methods": summary,
        **(extra or {}),
    }
    if per_seed:
        payload["episodes"] = episodes(per_seed)
        # Which runs these are, so that pooling two evals can tell repeats from new draws.
        payload["seed_ids"] = seed_ids if seed_ids is not None else list(range(len(per_seed)))
    (out_dir / "results.json").write_text(json.dumps(payload, indent=1))
    (out_dir / "table.md").write_text(table_markdown(summary, title))
    plot(summary, out_dir / "plot.png", title)


def table_markdown(summary: dict[str, dict[str, Any]], title: str) -> str:
    lines = [
        f"**{title}** — test-task means over seeds (standard deviation across seeds)",
        "",
        "| method | objective (SD) | return (SD) | compute s (SD) | success | fallbacks |",
        "|---|---|---|---|---|---|",
    ]
    for method, s in summary.items():
        o, r, c = s["objective"], s["discounted_return"], s["compute_time_s"]
        lines.append(
            f"| {LABELS.get(method, method)} | {o['mean']:.1f} ({o['std']:.1f}) | "
            f"{r['mean']:.1f} ({r['std']:.1f}) | {c['mean']:.3f} ({c['std']:.3f}) | "
            f"{100 * s['success']['mean']:.0f} % | {s['fallbacks']['mean']:.2f} |"
        )
    camp = summary.get("camp", {})
    if camp.get("fraction_of_oracle") is not None:
        lines += [
            "",
            f"CAMP reaches {100 * camp['fraction_of_oracle']:.0f} % of the oracle's objective.",
        ]
    if camp.get("fraction_of_oracle_rerun") is not None:
        lines += [
            "",
            f"CAMP reaches {100 * camp['fraction_of_oracle_rerun']:.0f} % of the objective of "
            "the oracle's contexts planned again (the oracle's own figure is the best of one "
            "noisy run per context, which overstates what its choices earn on average).",
        ]
    lines += _speedup_markdown(summary)
    same = camp.get("same_plan_as_pure")
    if same:
        lines += [
            "",
            f"CAMP made pure planning's plan in {same['same']} of {same['episodes']} "
            f"episodes: in {same['universal_same']} of the {same['universal']} where it kept "
            "the universal context (the same problem as pure planning's).",
        ]
    lines += paired_markdown(camp.get("paired", {}))
    lines += work_markdown(camp.get("work"))
    lines += _breakdown_markdown(summary)
    return "\n".join(lines) + "\n"


def _speedup_markdown(summary: dict[str, dict[str, Any]]) -> list[str]:
    line = speedup_line({m: s["median_compute_time_s"] for m, s in summary.items()})
    return [] if line is None else ["", line]


def work_markdown(work: Mapping[str, Any] | None) -> list[str]:
    """:func:`work_comparison` as a table, one row per method that counts its work."""
    if not work:
        return []
    medians, paired = work["median_s"], work["paired"]
    # Results written before the ratio was recorded have none: a dash.
    per_work = work.get("wall_per_work", {})
    lines = [
        "",
        "The planners' own count of their work (nominal seconds: collision checks, IK "
        "solves, grid cells searched and task-planner calls, each at a fixed cost), which "
        "reads the same on any machine and at any load: two runs that made the same plan "
        "did the same work, so CAMP minus a method here is what the context saved in "
        "computation, with no timing noise. The last column is wall-clock seconds per "
        "second of work over all episodes: time spent outside what the count sees.",
        "",
        "| method | median work s | pure ÷ method | CAMP − method, work s [interval] | "
        "equal / CAMP less / CAMP more | p | wall s per work s |",
        "|---|---|---|---|---|---|---|",
    ]
    pure = medians.get("pure")
    for method, median in medians.items():
        ratio = f"{pure / median:.2f}×" if pure is not None and median > 0 else "–"
        d = paired.get(method)
        if d is None:
            diff, won, p = "–", "–", "–"
        else:
            diff = f"{d['mean']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"
            equal = d["pairs"] - d["a_wins"] - d["b_wins"]
            won = f"{equal} / {d['b_wins']} / {d['a_wins']}"
            p = p_value(d)
        ratio_wall = f"{per_work[method]:.2f}" if method in per_work else "–"
        lines.append(
            f"| {LABELS.get(method, method)} | {median:.3f} | {ratio} | {diff} | {won} | {p} "
            f"| {ratio_wall} |"
        )
    return lines


def paired_markdown(paired: dict[str, dict[str, dict[str, Any]]], who: str = "CAMP") -> list[str]:
    """The paired comparisons of :func:`compare_methods` as a table, one row per method."""
    if not paired:
        return []
    first = next(iter(paired.values()))["objective"]
    lines = [
        "",
        f"{who} against each method on the same test episodes ({who} minus the method, mean "
        f"over {first['pairs']} (seed, task) pairs, {100 * first['level']:.0f} % bootstrap "
        f"interval; episodes won: by {who} / by the method). The seed-to-seed SDs above "
        "overlap for most pairs of methods; an interval that excludes 0 is a difference "
        "beyond the run-to-run noise. The interval of a mean is too narrow when times are "
        "heavy-tailed, so p is also given: the Wilcoxon signed-rank test's two-sided p-value "
        "on the objective, which asks whether one side wins pair by pair (exact ties left "
        "out):",
        "",
        "| against | Δ objective [interval] | won | objective | p | Δ compute s [interval] "
        "| time |",
        "|---|---|---|---|---|---|---|",
    ]
    for other, cmp in paired.items():
        o, t = cmp["objective"], cmp["compute_time_s"]
        o_verdict = {"a ahead": f"{who} ahead", "b ahead": f"{who} behind"}.get(
            o["verdict"], "within noise"
        )
        t_verdict = {"a ahead": f"{who} slower", "b ahead": f"{who} faster"}.get(
            t["verdict"], "within noise"
        )
        lines.append(
            f"| {LABELS.get(other, other)} | {o['mean']:+.1f} [{o['ci_low']:+.1f}, "
            f"{o['ci_high']:+.1f}] | {o['a_wins']} / {o['b_wins']} | {o_verdict} | "
            f"{p_value(o)} | "
            f"{t['mean']:+.3f} [{t['ci_low']:+.3f}, {t['ci_high']:+.3f}] | {t_verdict} |"
        )
    return lines


def _breakdown_markdown(summary: dict[str, dict[str, Any]]) -> list[str]:
    """A per-stage time table for the methods whose planner reports stages."""
    reported = {m: s["stage_times_s"] for m, s in summary.items() if s.get("stage_times_s")}
    stages = [k for k in BREAKDOWN_STAGES if any(k in t for t in reported.values())]
    if not stages:
        return []
    lines = [
        "",
        "Where the compute time went (mean seconds per test task, all seeds; setup = context "
        "selection + CAMP construction, prepare = the planner's up-front call, act = its "
        "per-step calls; the columns after them break prepare down, and collision checks "
        "is the part of them spent in the simulator's collision queries):",
        "",
        "| method | " + " | ".join(k.replace("_", " ") for k in stages) + " | total compute |",
        "|---|" + "---|" * (len(stages) + 1),
    ]
    for method, times in reported.items():
        cells = " | ".join(f"{times.get(k, 0.0):.3f}" for k in stages)
        total = summary[method]["compute_time_s"]["mean"]
        lines.append(f"| {LABELS.get(method, method)} | {cells} | {total:.3f} |")
    return lines


def plot(summary: dict[str, dict[str, Any]], path: Path, title: str) -> None:
    """Mean return vs mean compute time per method, with per-axis std bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.4))
    colours = plt.get_cmap("tab10")
    for i, (method, s) in enumerate(summary.items()):
        x, y = s["compute_time_s"], s["discounted_return"]
        ax.errorbar(
            x["mean"],
            y["mean"],
            xerr=x["std"],
            yerr=y["std"],
            fmt="o",
            capsize=3,
            color=colours(i),
            label=LABELS.get(method, method),
        )
    ax.set_xlabel("compute time per test task (s)")
    ax.set_ylabel("return (discounted)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def eval_title(
    base: Pipeline, planner: str, seeds: int, first_seed: int = 0, bundle_file: Path | None = None
) -> str:
    """The heading of an eval's table: domain, planner, λ, which seeds it ran, and, where
    they are not the runs' own, which seeds drew the test tasks and whose selector ran."""
    which = f"{seeds} seed(s)"
    if first_seed:
        last = first_seed + seeds - 1
        which = f"seeds {first_seed}-{last}" if seeds > 1 else f"seed {first_seed}"
    title = f"{base.domain.name}, {planner}, λ = {base.lam(planner):g}, {which}"
    test_seed = base.config.get("tasks", {}).get(TEST_SEED)
    if test_seed is not None:
        first, last = test_seed + first_seed, test_seed + first_seed + seeds - 1
        title += f", test tasks of seed{f's {first}-{last}' if seeds > 1 else f' {first}'}"
    if bundle_file is not None:
        title += f", selector {bundle_file.name}"
    return title


def evaluate(
    base: Pipeline,
    artifacts: Path,
    planner: str,
    methods: Sequence[str],
    seeds: int,
    workers: Workers,
    out_dir: Path,
    command: str,
    progress: bool = True,
    first_seed: int = 0,
    bundle_file: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """Run seeds ``first_seed`` .. ``first_seed + seeds - 1`` (test tasks from the
    configuration's ``tasks.test_seed`` + k where it sets one: :func:`with_test_seed`) and
    write their outputs; ``bundle_file``: evaluate that selector bundle in every run instead
    of training one per run."""
    started = time.perf_counter()
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise CampError(f"unknown method '{unknown[0]}'; choose from: {', '.join(ALL_METHODS)}")
    if seeds < 1:
        raise CampError("--seeds must be at least 1")
    if first_seed < 0:
        raise CampError("--first-seed must be at least 0")
    test_seed = base.config.get("tasks", {}).get(TEST_SEED)
    if test_seed is not None:
        # Refused before any run rather than at the first run past the generator's range.
        check_task_seed(test_seed)
        check_task_seed(test_seed + first_seed + seeds - 1, "--task-seed + the last seed")
        base.tasks("test")  # a domain whose test tasks are not drawn says so before training
    if bundle_file is not None:
        allowed = (*BUNDLE_METHODS, *base.domain.baselines)
        learning = [m for m in methods if m not in allowed]
        if learning:
            raise CampError(
                f"with --bundle only methods that learn nothing from training tasks run "
                f"({', '.join(allowed)}); leave out {', '.join(learning)}"
            )
    # Run k is the same whichever eval asks for it (cached per seed), so seeds 3-5 of a
    # second eval are new task draws and new planner seeds: episodes independent of 0-2's.
    seed_ids = list(range(first_seed, first_seed + seeds))
    per_seed = [
        run_seed(base, artifacts, planner, methods, k, workers, progress, bundle_file)
        for k in seed_ids
    ]
    summary = aggregate(per_seed)
    title = eval_title(base, planner, seeds, first_seed, bundle_file)
    write_outputs(
        summary,
        out_dir,
        title,
        command,
        time.perf_counter() - started,
        per_seed,
        seed_ids,
        {
            # Which test draws these are: evals of the same seeds with other test seeds are
            # new draws, not repeats, when pooled.
            "test_seeds": None if test_seed is None else [test_seed + k for k in seed_ids],
            "bundle": None if bundle_file is None else str(bundle_file),
        },
    )
    return summary
