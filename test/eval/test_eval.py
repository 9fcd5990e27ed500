"""A tiny configuration of the whole train/eval pipeline, in CI time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main
from camp_planner.eval.evaluate import interleaved, work_comparison, work_markdown
from camp_planner.learning import METHOD_NAMES

# Five training tasks are too few for the runtime's rule to trust a context (it would send
# most test tasks to the universal context or give up); these tests check the eval's
# records, so the CAMP here is the paper's, planning in the selector's choice.
TINY = """\
tasks: {train: 5, test: 2}
contexts: {max_contexts: 4}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 200}
camp: {selection: {rule: ungated}}
"""


@pytest.mark.slow
def test_tiny_eval_writes_results_table_and_plot(tmp_path: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    out = tmp_path / "eval"
    argv = ["eval", "--config", str(cfg), "--artifacts", str(tmp_path / "a")]
    argv += ["--seeds", "2", "--workers", "1", "--out", str(out)]
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    methods = results["methods"]
    assert set(methods) == set(METHOD_NAMES)
    for stats in methods.values():
        assert stats["seeds"] == 2
        for metric in ("objective", "discounted_return", "compute_time_s", "success"):
            assert set(stats[metric]) == {"mean", "std"}
    assert "fraction_of_oracle" in methods["camp"]
    # Every test episode is kept, per method and seed, for pooling runs afterwards.
    episodes = results["episodes"]
    assert set(episodes) == set(METHOD_NAMES)
    assert [len(seed) for seed in episodes["camp"]] == [2, 2]
    assert sum(r["objective"] for seed in episodes["camp"] for r in seed) / 4 == pytest.approx(
        methods["camp"]["objective"]["mean"]
    )
    assert "fraction_of_oracle_rerun" in methods["camp"]
    # Each episode names its plan by a digest of its actions. BFS-replan is deterministic,
    # so wherever the CAMP picked the oracle's context it made the oracle's plan.
    plans = [r["plan"] for runs in episodes.values() for seed in runs for r in seed]
    assert all(len(p) == 12 and int(p, 16) >= 0 for p in plans) and len(set(plans)) > 1
    same = [
        (c["plan"], o["plan"])
        for cs, os_ in zip(episodes["camp"], episodes["oracle"], strict=True)
        for c, o in zip(cs, os_, strict=True)
        if c["context_id"] == o["context_id"]
    ]
    assert same and all(c == o for c, o in same)
    counted = methods["camp"]["same_plan_as_pure"]
    assert counted["episodes"] == 4 and 0 <= counted["universal_same"] <= counted["universal"]
    assert counted["same"] == sum(
        c["plan"] == p["plan"]
        for cs, ps in zip(episodes["camp"], episodes["pure"], strict=True)
        for c, p in zip(cs, ps, strict=True)
    )
    table = (out / "table.md").read_text()
    assert "| CAMP (ours) |" in table
    assert f"CAMP made pure planning's plan in {counted['same']} of 4 episodes" in table
    # Per-stage times: planning methods report them, the learned policies plan nothing.
    for method in ("camp", "pure", "oracle"):
        stages = methods[method]["stage_times_s"]
        assert {"setup", "prepare", "act"} <= set(stages)
        assert sum(stages[k] for k in ("setup", "prepare", "act")) == pytest.approx(
            methods[method]["compute_time_s"]["mean"], rel=1e-3, abs=1e-4
        )
    assert "Where the compute time went" in table
    # CAMP against each other method, paired over the 2 seeds x 2 tasks.
    paired = methods["camp"]["paired"]
    assert set(paired) == set(METHOD_NAMES) - {"camp"}
    assert paired["pure"]["objective"]["pairs"] == 4
    assert paired["pure"]["objective"]["mean"] == pytest.approx(
        methods["camp"]["objective"]["mean"] - methods["pure"]["objective"]["mean"]
    )
    assert "CAMP against each method on the same test episodes" in table
    assert "| Pure planning | " in table.split("CAMP against each method")[1]
    assert "Wilcoxon signed-rank" in table
    assert 0.0 < paired["pure"]["objective"]["signed_rank_p"] <= 1.0
    assert (out / "plot.png").read_bytes()[:4] == b"\x89PNG"
    # A second run reuses every cached seed instead of retraining or re-evaluating.
    caches = sorted((tmp_path / "a").rglob("eval-*.json"))
    assert len(caches) == 2
    for cache in caches:
        rows = json.loads(cache.read_text())
        # The rerun plans the very context the oracle picked, task by task.
        assert [r["context_id"] for r in rows["oracle_rerun"]] == [
            r["context_id"] for r in rows["oracle"]
        ]
    stamps = [c.stat().st_mtime_ns for c in caches]
    assert main(argv) == 0
    assert [c.stat().st_mtime_ns for c in caches] == stamps
    assert json.loads((out / "results.json").read_text())["methods"] == methods
    assert results["seed_ids"] == [0, 1]
    # --first-seed 1 asks for run 1 alone: the very episodes the 2-seed eval holds for it,
    # from its cache, labelled as seed 1 for pooling.
    later = tmp_path / "later"
    argv_later = [*argv[:-1], str(later), "--seeds", "1", "--first-seed", "1"]
    assert main(argv_later) == 0
    assert [c.stat().st_mtime_ns for c in caches] == stamps
    again = json.loads((later / "results.json").read_text())
    assert again["seed_ids"] == [1]
    assert again["episodes"]["camp"] == [episodes["camp"][1]]
    assert again["title"].endswith("seed 1")


# What two runs of one episode agree on whatever the machine: not its times, nor the
# objective that charges them, nor the host.
DETERMINISTIC = ("task", "context_id", "success", "fallbacks", "plan")


def eval_episodes(argv: list[str], out: Path, workers: str) -> dict[str, list[dict[str, object]]]:
    """The test episodes of a 1-seed eval run with ``--workers workers``, deterministic
    fields only, after dropping the cached episodes (the labels and the selector stay)."""
    for cache in out.parent.glob("a/gridworld/bfs_replan/seed0/eval-*.json"):
        cache.unlink()
    assert main([*argv, "--workers", workers]) == 0
    episodes = json.loads((out / "results.json").read_text())["episodes"]
    return {m: [{f: r[f] for f in DETERMINISTIC} for r in runs[0]] for m, runs in episodes.items()}


@pytest.mark.slow
def test_test_episodes_on_two_processes_are_those_of_one(tmp_path: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    out = tmp_path / "eval"
    argv = ["eval", "--config", str(cfg), "--artifacts", str(tmp_path / "a"), "--out", str(out)]
    # A policy is a torch net fitted in the driver before the workers fork.
    argv += ["--seeds", "1", "--methods", "camp", "pure", "policy", "oracle_rerun"]
    inline = eval_episodes(argv, out, "1")
    assert eval_episodes(argv, out, "2") == inline
    assert set(inline) == {"camp", "pure", "policy", "oracle_rerun"}
    assert all(len(runs) == 2 for runs in inline.values())


def test_unknown_method_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["eval", "--methods", "magic", "--artifacts", str(tmp_path)])
    assert code == 2
    assert "unknown method 'magic'" in capsys.readouterr().err


def test_stage_breakdown_pools_seeds_and_counts_missing_stages_as_zero() -> None:
    from camp_planner.eval.evaluate import stage_breakdown
    from camp_planner.learning.labels import Score

    a = Score(0, "c", 1.0, 1.0, 3.0, True, "goal", stage_times_s={"prepare": 2.0, "act": 1.0})
    b = Score(1, "c", 1.0, 1.0, 1.0, True, "goal", stage_times_s={"prepare": 1.0})
    c = Score(0, "c", 1.0, 1.0, 0.0, True, "goal")  # checkpointed before stages were kept
    assert stage_breakdown([[a], [b, c]]) == pytest.approx({"prepare": 1.0, "act": 1 / 3})
    assert stage_breakdown([[c]]) == {}
    assert Score.from_json(a.to_json()) == a
    assert a.without_trajectory().stage_times_s == a.stage_times_s


def test_the_oracle_rerun_plans_the_oracles_context_with_fresh_randomness() -> None:
    from types import SimpleNamespace

    from camp_planner.core.objective import EpisodeResult
    from camp_planner.eval.methods import RERUN_SEED_OFFSET, OracleRerun

    other, best = SimpleNamespace(id="a"), SimpleNamespace(id="b")
    matrix = SimpleNamespace(context_ids=["a", "b"], best_index=lambda task: 1)
    calls: list[tuple[object, int]] = []

    def run(task: object, planner: str, context: object, seed: int) -> tuple[object, None]:
        calls.append((context, seed))
        return EpisodeResult(5.0, 4.0, 0.01, 3, True, "goal"), None

    pipe = SimpleNamespace(space=[other, best], task=lambda split, i: i, run=run)
    score = OracleRerun(matrix).evaluate(pipe, "mcts", 0, seed=2)  # type: ignore[arg-type]
    assert calls == [(best, 2 + RERUN_SEED_OFFSET)]
    assert score.context_id == "b"
    assert score.objective == 4.0


def test_a_new_domain_version_never_reuses_an_old_evals_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from camp_planner.eval.evaluate import seed_cache
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create("gridworld", None, tmp_path)
    path = seed_cache(pipe, tmp_path, "bfs_replan", ["camp", "pure"], 0)
    assert path == seed_cache(pipe, tmp_path, "bfs_replan", ["camp", "pure"], 0)
    assert path != seed_cache(pipe, tmp_path, "bfs_replan", ["camp", "pure"], 1)
    monkeypatch.setattr(type(pipe.domain), "version", "changed planners")
    assert path != seed_cache(pipe, tmp_path, "bfs_replan", ["camp", "pure"], 0)


def test_a_new_baseline_version_reruns_the_eval_but_keeps_the_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from camp_planner.eval.evaluate import seed_cache
    from camp_planner.learning.train import score_checkpoint
    from camp_planner.planners.stilman import Stilman
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create("namo", None, tmp_path)
    methods = ["camp", "pure", "stilman"]
    path = seed_cache(pipe, tmp_path, "tamp", methods, 0)
    labels = score_checkpoint(pipe, tmp_path, "tamp", "train", 0).path
    monkeypatch.setattr(Stilman, "version", "a fix")
    assert seed_cache(pipe, tmp_path, "tamp", methods, 0) != path
    assert score_checkpoint(pipe, tmp_path, "tamp", "train", 0).path == labels


def test_median_speedups_over_pure_planning_are_reported_with_their_ceiling() -> None:
    from camp_planner.eval.evaluate import aggregate, table_markdown
    from camp_planner.learning.labels import Score

    def run(times: list[float]) -> list[Score]:
        return [Score(i, "c", 1000 - 100 * t, 1000.0, t, True, "goal") for i, t in enumerate(times)]

    # Medians pooled over both seeds: pure 4 s, CAMP 2 s, the oracle's contexts 1 s. The
    # means (which a slow tail decides) would give other ratios.
    per_seed = [
        {"camp": run([2.0, 9.0]), "pure": run([4.0, 30.0]), "oracle_rerun": run([1.0, 1.0])},
        {"camp": run([1.0, 2.0]), "pure": run([1.0, 4.0]), "oracle_rerun": run([0.5, 5.0])},
    ]
    summary = aggregate(per_seed)
    assert summary["pure"]["median_compute_time_s"] == pytest.approx(4.0)
    assert summary["camp"]["median_speedup_over_pure"] == pytest.approx(2.0)
    assert summary["oracle_rerun"]["median_speedup_over_pure"] == pytest.approx(4.0)
    table = table_markdown(summary, "t")
    assert "pure planning ÷ CAMP: 2.00×" in table
    assert "oracle's contexts planned again: 4.00×" in table
    del per_seed[0]["oracle_rerun"], per_seed[1]["oracle_rerun"]
    table = table_markdown(aggregate(per_seed), "t")
    assert "pure planning ÷ CAMP" in table and "planned again:" not in table


def test_same_plans_counts_the_universal_episodes_apart_and_skips_unrecorded_plans() -> None:
    from camp_planner.eval.evaluate import same_plans

    def row(context: str, plan: str) -> dict[str, object]:
        return {"context_id": context, "plan": plan}

    camp = [[row("universal", "a"), row("universal", "b"), row("c1", "c"), row("c2", "x")]]
    pure = [[row("pure", "a"), row("pure", "z"), row("pure", "c"), row("pure", "")]]
    assert same_plans(camp, pure) == {"episodes": 3, "same": 2, "universal": 2, "universal_same": 1}
    # Evals written before plans were recorded have none to compare.
    assert same_plans([[{"context_id": "universal"}]], [[{"context_id": "pure"}]]) is None


def test_methods_are_interleaved_task_by_task_in_a_shuffled_order() -> None:
    methods = [f"m{i}" for i in range(9)]
    order = list(interleaved(methods, 10, seed=3))
    # Task by task, every method once per task.
    assert [t for t, _ in order] == [t for t in range(10) for _ in methods]
    for t in range(10):
        assert sorted(m for task, m in order if task == t) == methods
    # No method always runs right after the same one (a rotation would put m8 before m0
    # on every task); the same seed gives the same order, another seed another.
    before = {order[k - 1][1] for k in range(1, len(order)) if order[k][1] == "m0"}
    assert len(before) > 2
    assert order == list(interleaved(methods, 10, seed=3))
    assert order != list(interleaved(methods, 10, seed=4))
    assert list(interleaved([], 3)) == []


def test_work_is_compared_only_for_methods_that_count_it_and_equal_work_is_a_tie() -> None:
    def rows(*works: float | None) -> list[dict[str, object]]:
        return [{"task": t, "work_s": w, "compute_time_s": 0.5} for t, w in enumerate(works)]

    work = work_comparison(
        {
            "camp": rows(1.0, 2.0, 0.5),
            "pure": rows(1.0, 2.0, 1.5),  # the same plan twice, then a context that saved 1 s
            "plan_transfer": rows(None, None, None),  # no planner work counted
            "stilman": rows(2.0, 4.0, 1.0),
        }
    )
    assert work is not None
    assert work["median_s"] == {"camp": 1.0, "pure": 1.5, "stilman": 2.0}
    pure = work["paired"]["pure"]
    assert pure["mean"] == pytest.approx(-1 / 3)
    assert (pure["a_wins"], pure["b_wins"], pure["pairs"]) == (0, 1, 3)
    table = "\n".join(work_markdown(work))
    assert "| Pure planning | 1.500 | 1.00× |" in table and "| 2 / 1 / 0 | 1.000 |" in table
    # The two equal pairs carry no evidence: one difference left, so the rank test says 1.
    assert pure["signed_rank_p"] == 1.0
    assert "| CAMP (ours) | 1.000 | 1.50× | – | – | – |" in table
    assert "plan_transfer" not in table and "Plan transfer" not in table
    # Wall-clock seconds per second of work, over all episodes: 1.5 s of 3.5 s and 4.5 s.
    assert work["wall_per_work"] == pytest.approx(
        {"camp": 1.5 / 3.5, "pure": 1.5 / 4.5, "stilman": 1.5 / 7.0}
    )
    assert "| 2 / 1 / 0 | 1.000 | 0.33 |" in table
    assert "| CAMP (ours) | 1.000 | 1.50× | – | – | – | 0.43 |" in table
    # Results written before the ratio was recorded: a dash in its place.
    older = {k: v for k, v in work.items() if k != "wall_per_work"}
    assert "| CAMP (ours) | 1.000 | 1.50× | – | – | – | – |" in "\n".join(work_markdown(older))
    # Without CAMP's count (an eval written before it was recorded) there is nothing to say.
    assert work_comparison({"camp": rows(None), "pure": rows(1.0)}) is None
    assert work_markdown(None) == []
