"""Scoring is checkpointed per (task, context); killing `camp train` loses no finished score."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from camp_planner.core.errors import CampError
from camp_planner.learning.executor import InlineExecutor, ProcessExecutor
from camp_planner.learning.labels import Checkpoint, Score

TINY = """\
tasks: {train: 6, test: 2}
contexts: {max_contexts: 5}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 50}
"""


def _square(x: int) -> int:
    return x * x


def test_executors_return_every_result() -> None:
    items = list(range(9))
    assert sorted(InlineExecutor().map_unordered(_square, items)) == [i * i for i in items]
    assert sorted(ProcessExecutor(2).map_unordered(_square, items)) == [i * i for i in items]


def test_checkpoint_drops_only_a_torn_last_line(tmp_path: Path) -> None:
    cp = Checkpoint(tmp_path / "c.jsonl")
    s = Score(0, "universal", 1.0, 2.0, 0.5, True, "goal")
    cp.append(s)
    with cp.path.open("a") as handle:
        handle.write('{"task": 1, "context_')  # killed mid-write
    assert cp.load() == {(0, "universal"): s}
    t = Score(1, "universal", 3.0, 3.0, 0.1, True, "goal")
    cp.append(t)  # the torn line is gone: the new record starts on a clean line
    assert cp.load() == {(0, "universal"): s, (1, "universal"): t}
    # The planner's count of its work survives the round trip; older records have none.
    w = Score(2, "universal", 3.0, 3.0, 0.1, True, "goal", work_s=0.25)
    cp.append(w)
    assert cp.load()[(2, "universal")] == w
    assert Score.from_json({k: v for k, v in w.to_json().items() if k != "work_s"}).work_s is None
    cp.path.write_text("garbage\n" + json.dumps(s.to_json()) + "\n")
    with pytest.raises(CampError, match="corrupt"):
        cp.load()


def _train(cfg: Path, artifacts: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "camp_planner.cli",
            "train",
            "--config",
            str(cfg),
            "--artifacts",
            str(artifacts),
            "--workers",
            "1",
            "--json",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


@pytest.mark.slow
def test_killed_train_resumes_without_recomputing(tmp_path: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    artifacts = tmp_path / "artifacts"
    proc = _train(cfg, artifacts)
    labels_dir = artifacts / "gridworld" / "labels"
    deadline = time.monotonic() + 300
    lines = 0
    while time.monotonic() < deadline:
        files = list(labels_dir.glob("*.jsonl")) if labels_dir.exists() else []
        lines = sum(1 for f in files for _ in f.open()) if files else 0
        if lines >= 8:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 8 <= lines < 30, "the run should be killed part-way through its 30 scores"
    finished = sum(1 for f in labels_dir.glob("*.jsonl") for _ in f.open())

    second = _train(cfg, artifacts)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    summary = json.loads(out)
    assert summary["scores_reused"] == finished
    assert summary["scores_computed"] == 30 - finished
    assert Path(summary["bundle"]).is_file()
    # Every (task, context) pair is in the checkpoint exactly once.
    records = [json.loads(line) for f in labels_dir.glob("*.jsonl") for line in f.open()]
    keys = [(r["task"], r["context_id"]) for r in records]
    assert len(keys) == len(set(keys)) == 30


def _score(task: int, context: str, ret: float, seconds: float, outcome: str) -> Score:
    return Score(task, context, ret - 100.0 * seconds, ret, seconds, outcome == "goal", outcome)


def test_fallback_labels_value_a_failed_context_as_the_fallback_less_its_time() -> None:
    from camp_planner.learning.labels import ScoreMatrix
    from camp_planner.learning.selector import SelectorConfig
    from camp_planner.learning.train import selector_targets

    scores = {
        (0, "universal"): _score(0, "universal", 1000.0, 2.0, "goal"),  # 800
        (0, "fast"): _score(0, "fast", 1000.0, 0.5, "goal"),  # 950
        (0, "fails"): _score(0, "fails", 0.0, 0.3, "no_plan"),  # -30 as a lost episode
        (0, "times_out"): _score(0, "times_out", 0.0, 60.0, "timeout"),
        (0, "acted"): _score(0, "acted", 0.0, 1.0, "horizon"),  # no fallback: it acted on
    }
    matrix = ScoreMatrix([0], ["universal", "fast", "fails", "times_out", "acted"], scores)
    plain = matrix.targets("regression", 5.0)[0]
    assert list(plain) == pytest.approx([800.0, 950.0, -30.0, -6000.0, -100.0])
    cascade = matrix.targets("regression", 5.0, fallback="universal")[0]
    # A fast failure costs its 0.3 s on top of the universal context's score; a timeout
    # costs its whole minute; an episode that acted to the end has no fallback.
    assert list(cascade) == pytest.approx([800.0, 950.0, 770.0, -5200.0, -100.0])
    # λ re-weighs both the failed attempt and the fallback's own time.
    relabelled = matrix.targets("regression", 5.0, lam=10.0, fallback="universal")[0]
    assert relabelled[2] == pytest.approx(1000.0 - 20.0 - 3.0)
    # The selector's setting picks the valuation; the universal context is the fallback.
    on = SelectorConfig.from_mapping({"labels": "regression", "fallback_labels": True})
    off = SelectorConfig.from_mapping({"labels": "regression"})
    assert list(selector_targets(matrix, on)[0]) == pytest.approx(list(cascade))
    assert list(selector_targets(matrix, off)[0]) == pytest.approx(list(plain))
    # Hard labels follow the same valuation: the failing context never wins, either way.
    hard = selector_targets(matrix, SelectorConfig(labels="hard", fallback_labels=True))
    assert list(hard) == [1]


def test_repeated_scorings_average_per_pair() -> None:
    from camp_planner.learning.labels import ScoreMatrix

    runs = [
        {
            (0, "a"): _score(0, "a", 1000.0, 0.5, "goal"),
            (0, "b"): _score(0, "b", 0.0, 0.2, "no_plan"),
        },
        {
            (0, "a"): _score(0, "a", 1000.0, 8.5, "goal"),
            (0, "b"): _score(0, "b", 1000.0, 1.0, "goal"),
        },
        {
            (0, "a"): _score(0, "a", 1000.0, 0.5, "goal"),
            (0, "b"): _score(0, "b", 0.0, 0.2, "no_plan"),
        },
    ]
    mean = ScoreMatrix.mean([ScoreMatrix([0], ["a", "b"], r) for r in runs])
    a, b = mean.get(0, "a"), mean.get(0, "b")
    # One unlucky 8.5 s run no longer decides a's label on its own.
    assert a.compute_time_s == pytest.approx(9.5 / 3) and a.objective == pytest.approx(
        1000 - 950 / 3
    )
    assert a.success and a.outcome == "goal"
    assert not b.success and b.outcome == "no_plan"  # it failed on two of three runs
    assert b.discounted_return == pytest.approx(1000 / 3)
    with pytest.raises(ValueError):
        ScoreMatrix.mean([])


@pytest.mark.slow
def test_label_repeats_score_each_repeat_once_and_keep_the_first(tmp_path: Path) -> None:
    from camp_planner.cli import main as camp_main

    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    artifacts = tmp_path / "artifacts"
    common = ["train", "--config", str(cfg), "--artifacts", str(artifacts), "--json"]
    common += ["--planner", "bfs_replan"]
    assert camp_main(common) == 0
    labels_dir = artifacts / "gridworld" / "labels"
    first = {f.name: f.read_text() for f in labels_dir.glob("*.jsonl")}
    assert len(first) == 1
    cfg.write_text(TINY.replace("selector: {", "selector: {label_repeats: 3, "))
    assert camp_main(common) == 0
    files = {f.name: f.read_text() for f in labels_dir.glob("*.jsonl")}
    # The first scoring is reused untouched; two more are scored, 30 pairs each.
    assert len(files) == 3 and all(files[name] == text for name, text in first.items())
    assert all(len(text.splitlines()) == 30 for text in files.values())
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY.replace("selector: {", "selector: {label_repeats: 0, "))
    assert camp_main([*common[:2], str(bad), *common[3:]]) == 2


def test_labels_on_the_work_clock_charge_the_planners_count_of_its_work() -> None:
    from dataclasses import replace

    from camp_planner.learning.labels import ScoreMatrix
    from camp_planner.learning.selector import SelectorConfig
    from camp_planner.learning.train import selector_targets

    # "lucky" ran fast on the wall clock but did more work than "saves"; on work, "saves"
    # wins, and a run's luck no longer decides the label.
    scores = {
        (0, "universal"): replace(_score(0, "universal", 1000.0, 0.4, "goal"), work_s=0.5),
        (0, "lucky"): replace(_score(0, "lucky", 1000.0, 0.2, "goal"), work_s=0.45),
        (0, "saves"): replace(_score(0, "saves", 1000.0, 0.3, "goal"), work_s=0.1),
        (0, "fails"): replace(_score(0, "fails", 0.0, 0.1, "no_plan"), work_s=0.05),
    }
    matrix = ScoreMatrix([0], ["universal", "lucky", "saves", "fails"], scores)
    assert list(matrix.targets("hard", 1.0)) == [1]
    work = matrix.targets("regression", 1.0, lam=100.0, cost="work")[0]
    assert list(work) == pytest.approx([950.0, 955.0, 990.0, -5.0])
    # With fallbacks a failed attempt costs its work on top of the fallback's.
    cascade = matrix.targets("regression", 1.0, lam=100.0, fallback="universal", cost="work")
    assert cascade[0][3] == pytest.approx(950.0 - 5.0)
    cfg = SelectorConfig.from_mapping({"labels": "hard", "label_cost": "work"})
    assert list(selector_targets(matrix, cfg, lam=100.0)) == [2]
    # The mean of repeated scorings keeps the work where every run recorded it.
    assert ScoreMatrix.mean([matrix, matrix]).get(0, "saves").work_s == pytest.approx(0.1)
    # Scores without work (a planner that does not count it) are a clear error, and so is
    # an unknown cost.
    plain = ScoreMatrix([0], ["universal"], {(0, "universal"): scores[(0, "universal")]})
    plain.scores[(0, "universal")] = _score(0, "universal", 1000.0, 0.4, "goal")
    with pytest.raises(CampError, match="records no work"):
        plain.targets("hard", 1.0, lam=100.0, cost="work")
    with pytest.raises(CampError, match="label_cost must be one of"):
        SelectorConfig.from_mapping({"label_cost": "cpu"})


def test_an_offline_study_reads_scores_without_cutting_a_line_being_written(
    tmp_path: Path,
) -> None:
    cp = Checkpoint(tmp_path / "c.jsonl")
    cp.append(Score(0, "universal", 900.0, 1000.0, 1.0, True, "goal", work_s=0.5))
    with cp.path.open("a") as handle:
        handle.write('{"task": 1, "context_id": "univ')  # a scoring still running
    before = cp.path.read_text()
    assert set(cp.load(repair=False)) == {(0, "universal")}
    assert cp.path.read_text() == before


def test_label_timeout_cuts_label_scoring_alone_and_keys_only_where_set(tmp_path: Path) -> None:
    from camp_planner.learning.train import score_checkpoint, score_split
    from camp_planner.workflow import Pipeline

    plain = Pipeline.create("gridworld", None, tmp_path)
    # Absent from the defaults: every existing configuration keeps its label caches.
    assert "label_timeout_s" not in plain.config
    config = tmp_path / "cut.yaml"
    config.write_text(
        "tasks: {train: 1, test: 1}\ncontexts: {max_contexts: 3}\n"
        "csi: {k1: 10, k2: 5, tasks: 1}\nlabel_timeout_s: 1.0e-6\n"
    )
    cut = Pipeline.create("gridworld", config, tmp_path)
    assert cut.config["label_timeout_s"] == 1e-6
    key = score_checkpoint(cut, tmp_path, "bfs_replan", "train", 0).path
    assert key != score_checkpoint(plain, tmp_path, "bfs_replan", "train", 0).path
    space = list(cut.space)
    matrix, _ = score_split(cut, tmp_path, "bfs_replan", "train", space, 0, 1, False)
    assert {s.outcome for s in matrix.scores.values()} == {"timeout"}
    # A test episode keeps the planning timeout.
    result, _ = cut.run(cut.task("train", 0), "bfs_replan", None)
    assert result.outcome == "goal"
    config.write_text("label_timeout_s: 0\n")
    with pytest.raises(CampError, match="label_timeout_s"):
        Pipeline.create("gridworld", config, tmp_path)
