"""`camp eval --task-seed` and `--bundle`: fresh test draws without retraining.

A claim must rest on test tasks never used while developing, so the test split can be drawn
from its own generator seed (``tasks.test_seed``). Training must not notice: the training
tasks, their score checkpoint, the CSIs and the trained selector bundle stay those of the run,
so the selector trained once is reused, while every cache of test results is new.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main
from camp_planner.config import load_config
from camp_planner.core.errors import CampError
from camp_planner.domains import get_domain
from camp_planner.workflow import Pipeline

TINY = """\
tasks: {train: 5, test: 2}
contexts: {max_contexts: 4}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 200}
"""


def _config(domain: str, **tasks: int) -> dict:
    config = get_domain(domain).default_config()
    config["tasks"].update({"train": 3, "test": 3, **tasks})
    return config


@pytest.mark.parametrize("name", ["gridworld", "dinner", "namo", "manip"])
def test_the_test_seed_draws_the_test_tasks_and_leaves_the_training_tasks(name: str) -> None:
    domain = get_domain(name)
    plain = _config(name)
    fresh = _config(name, test_seed=7)
    # The test split is the generator's draw for seed 7: what a configuration of seed 7 gets.
    assert domain.make_tasks(fresh, "test") == domain.make_tasks({**plain, "seed": 7}, "test")
    assert domain.make_tasks(fresh, "test") != domain.make_tasks(plain, "test")
    assert domain.make_tasks(fresh, "train") == domain.make_tasks(plain, "train")


def test_the_pddl_domain_refuses_a_test_seed_its_files_cannot_honour() -> None:
    domain = get_domain("pddl")
    config = domain.default_config()
    config["tasks"]["test_seed"] = 3
    with pytest.raises(CampError, match="does not apply to the pddl domain"):
        domain.make_tasks(config, "test")


def test_run_k_tests_on_the_draw_of_seed_s_plus_k_and_trains_as_without_it(
    tmp_path: Path,
) -> None:
    from camp_planner.eval.evaluate import seed_cache, split_pipelines, with_test_seed
    from camp_planner.learning.bundle import trained_bundle
    from camp_planner.learning.train import score_checkpoint

    base = Pipeline.create("gridworld", None, tmp_path)
    fresh = Pipeline.create("gridworld", None, tmp_path)
    fresh.config = with_test_seed(base.config, 100)
    assert "test_seed" not in base.config["tasks"]  # a copy: the original is untouched
    for k in (0, 2):
        train_plain, test_plain = split_pipelines(base, tmp_path, k)
        assert train_plain is test_plain  # without a test seed: one pipeline, as before
        training, test = split_pipelines(fresh, tmp_path, k)
        drawn = get_domain("gridworld").make_tasks({**base.config, "seed": 100 + k}, "test")
        assert list(test.tasks("test")) == drawn
        assert list(test.tasks("test")) != list(test_plain.tasks("test"))
        assert list(training.tasks("train")) == list(train_plain.tasks("train"))
        assert list(test.tasks("train")) == list(train_plain.tasks("train"))
        # The caches of training are the run's own ...
        assert training.config == train_plain.config
        assert trained_bundle(
            tmp_path, "gridworld", "bfs_replan", k, training.config
        ) == trained_bundle(tmp_path, "gridworld", "bfs_replan", k, train_plain.config)
        assert (
            score_checkpoint(training, tmp_path, "bfs_replan", "train", k).path
            == score_checkpoint(train_plain, tmp_path, "bfs_replan", "train", k).path
        )
        assert training.store is test.store  # one CSI cache, learned once
        assert test.store.path == train_plain.store.path
        # ... and the caches of test results are new for the fresh draws.
        methods = ["camp", "pure", "oracle"]
        assert seed_cache(test, tmp_path, "bfs_replan", methods, k) != seed_cache(
            test_plain, tmp_path, "bfs_replan", methods, k
        )
        assert (
            score_checkpoint(test, tmp_path, "bfs_replan", "test", k).path
            != score_checkpoint(test_plain, tmp_path, "bfs_replan", "test", k).path
        )
    # Another test seed is another cache; a given bundle is another cache too.
    other = Pipeline.create("gridworld", None, tmp_path)
    other.config = with_test_seed(base.config, 101)
    assert seed_cache(split_pipelines(other, tmp_path, 0)[1], tmp_path, "x", ["pure"], 0) != (
        seed_cache(split_pipelines(fresh, tmp_path, 0)[1], tmp_path, "x", ["pure"], 0)
    )
    assert seed_cache(base, tmp_path, "x", ["pure"], 0) != seed_cache(
        base, tmp_path, "x", ["pure"], 0, bundle="abc"
    )


def test_the_config_file_may_set_the_test_seed_and_bad_values_are_refused(
    tmp_path: Path,
) -> None:
    domain = get_domain("gridworld")
    path = tmp_path / "c.yaml"
    path.write_text("tasks: {test_seed: 12}\n")
    assert load_config(domain, path)["tasks"]["test_seed"] == 12
    # Absent, the configuration (and every key derived from it) is as it always was.
    assert "test_seed" not in load_config(domain, None)["tasks"]
    for bad in ("-1", "1.5", "x", "null", "[1]", "4294967296"):
        path.write_text(f"tasks: {{test_seed: {bad}}}\n")
        with pytest.raises(CampError, match=r"tasks\.test_seed"):
            load_config(domain, path)
    path.write_text("tasks: {test_seeds: 1}\n")
    with pytest.raises(CampError, match=r"unknown setting 'tasks\.test_seeds'"):
        load_config(domain, path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--task-seed", "-1"], "--task-seed must be a whole number from 0 to 4294967295"),
        (["--task-seed", "4294967295", "--seeds", "2"], "--task-seed + the last seed"),
        (["--bundle", "missing.pt"], "no selector bundle at missing.pt"),
        (["--bundle", "shipped"], "ships no selector bundle for gridworld"),
    ],
)
def test_bad_values_are_clear_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["eval", "--artifacts", str(tmp_path), "--workers", "1", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("camp: error: ") and message in err


def test_a_task_seed_that_is_no_number_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--artifacts", str(tmp_path), "--task-seed", "fresh"])
    assert exit_.value.code == 2
    assert "--task-seed: invalid int value: 'fresh'" in capsys.readouterr().err


def test_a_given_bundle_refuses_methods_that_learn_from_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = tmp_path / "b.pt"
    bundle.write_bytes(b"")  # refused before it is read
    argv = ["eval", "--artifacts", str(tmp_path), "--bundle", str(bundle), "--workers", "1"]
    assert main([*argv, "--methods", "camp", "policy", "oracle"]) == 2
    err = capsys.readouterr().err
    assert "with --bundle only methods that learn nothing" in err
    assert "leave out policy, oracle" in err


def test_the_pddl_domain_refuses_a_task_seed_before_any_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problems = Path(__file__).resolve().parents[2] / "examples"
    domain_file = next(problems.rglob("domain.pddl"), None)
    assert domain_file is not None, "the repository's example PDDL domains are missing"
    problem = next(p for p in domain_file.parent.glob("*.pddl") if p != domain_file)
    argv = ["eval", "--artifacts", str(tmp_path), "--pddl-domain", str(domain_file)]
    argv += ["--pddl-problems", str(problem), "--task-seed", "3", "--workers", "1"]
    assert main(argv) == 2
    assert "does not apply to the pddl domain" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.pt"))


@pytest.mark.slow
def test_fresh_draws_reuse_the_trained_selector_and_a_bundle_needs_no_training(
    tmp_path: Path,
) -> None:
    from camp_planner.learning.bundle import load_bundle

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    art = tmp_path / "a"
    argv = ["eval", "--config", str(cfg), "--artifacts", str(art), "--seeds", "1"]
    argv += ["--workers", "1", "--methods", "camp", "pure"]
    assert main([*argv, "--out", str(tmp_path / "plain")]) == 0
    labels = {p: p.stat().st_mtime_ns for p in art.rglob("*.jsonl")}
    (bundle,) = art.rglob("*.pt")
    assert main([*argv, "--out", str(tmp_path / "fresh"), "--task-seed", "50"]) == 0
    # The training scores are reused as they were (none rescored, none added), and the
    # selector, refitted on them as every eval does, is kept at the same path.
    assert {p: p.stat().st_mtime_ns for p in art.rglob("*.jsonl")} == labels
    assert list(art.rglob("*.pt")) == [bundle]
    assert "test_seed" not in load_bundle(bundle).metadata["config"]["tasks"]
    assert len(list(art.rglob("eval-*.json"))) == 2
    plain = json.loads((tmp_path / "plain" / "results.json").read_text())
    fresh = json.loads((tmp_path / "fresh" / "results.json").read_text())
    assert plain["test_seeds"] is None and fresh["test_seeds"] == [50]
    assert fresh["title"].endswith("test tasks of seed 50")
    # The trained bundle given back with --bundle: the same selector on the fresh draws.
    out = tmp_path / "given"
    assert main([*argv, "--out", str(out), "--task-seed", "50", "--bundle", str(bundle)]) == 0
    given = json.loads((out / "results.json").read_text())
    assert given["bundle"] == str(bundle) and given["test_seeds"] == [50]
    assert [r["context_id"] for r in given["episodes"]["camp"][0]] == [
        r["context_id"] for r in fresh["episodes"]["camp"][0]
    ]
    assert len(list(art.rglob("eval-*.json"))) == 3
