from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main
from camp_planner.eval.sweeps import relabel
from camp_planner.learning.labels import Score, ScoreMatrix


def test_relabel_trades_return_against_time() -> None:
    scores = {
        (0, "fast"): Score(0, "fast", 0, 80.0, 0.01, True, "goal"),
        (0, "slow"): Score(0, "slow", 0, 90.0, 1.0, True, "goal"),
    }
    matrix = ScoreMatrix([0], ["fast", "slow"], scores)
    assert relabel(matrix, 0.0, [0]) == [1]  # λ = 0: only return counts
    assert relabel(matrix, 100.0, [0]) == [0]  # λ = 100: one second costs 100


@pytest.mark.slow
def test_tiny_sweeps_write_plots(tmp_path: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(
        "tasks: {train: 4, test: 2}\ncontexts: {max_contexts: 3}\n"
        "csi: {k1: 10, k2: 5, tasks: 2}\nselector: {max_iterations: 100}\n"
    )
    common = [
        "--config",
        str(cfg),
        "--artifacts",
        str(tmp_path / "a"),
        "--seeds",
        "1",
        "--workers",
        "1",
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(["sweep", "lambda", "--values", "0", "1000", *common]) == 0
    assert main(["sweep", "train-size", "--values", "2", "4", *common]) == 0
    for kind in ("lambda", "train-size"):
        assert (tmp_path / "out" / f"sweep-{kind}.png").read_bytes()[:4] == b"\x89PNG"
    assert main(["sweep", "train-size", "--values", "9", *common]) == 2

    # Every point is checkpointed: a rerun with one more value computes only that point, and
    # a line cut short by a kill is recomputed, not an error.
    (ckpt,) = (tmp_path / "a" / "gridworld" / "bfs_replan" / "sweeps").glob("lambda-*.jsonl")
    assert len(ckpt.read_text().splitlines()) == 3  # CAMP at 2 values, pure planning once
    ckpt.write_text(ckpt.read_text() + '{"seed": 0, "value": 5')
    assert main(["sweep", "lambda", "--values", "0", "1000", "10", *common]) == 0
    rows = [json.loads(line) for line in ckpt.read_text().splitlines()]
    assert sorted((r["method"], r["value"]) for r in rows) == [
        ("camp", 0.0),
        ("camp", 10.0),
        ("camp", 1000.0),
        ("pure", 0.0),
    ]
    summary = json.loads((tmp_path / "out" / "sweep-lambda.json").read_text())
    assert [p["value"] for p in summary["points"]] == [0.0, 1000.0, 10.0]
    # Pure planning's objective at each λ is its return minus λ times its compute time.
    pure = summary["pure"]
    slope = (pure[0]["objective"]["mean"] - pure[1]["objective"]["mean"]) / 1000
    assert slope == pytest.approx(pure[0]["compute_time_s"]["mean"])
    ckpt.write_text("not json\n")
    assert main(["sweep", "lambda", "--values", "0", *common]) == 2


def test_soft_and_multilabel_targets_share_near_ties() -> None:
    scores = {
        (0, "a"): Score(0, "a", 89.0, 89.0, 0.0, True, "goal"),
        (0, "b"): Score(0, "b", 88.5, 88.5, 0.0, True, "goal"),
        (0, "c"): Score(0, "c", 0.0, 0.0, 0.0, False, "no_plan"),
    }
    matrix = ScoreMatrix([0], ["a", "b", "c"], scores)
    soft = matrix.targets("soft", 5.0)
    assert soft.shape == (1, 3) and soft.sum() == pytest.approx(1.0)
    assert soft[0, 0] > soft[0, 1] > 0.4 and soft[0, 2] < 1e-6
    assert matrix.targets("soft", 5.0, lam=0.0) == pytest.approx(soft)
    assert matrix.targets("multilabel", 1.0).tolist() == [[1.0, 1.0, 0.0]]
    assert matrix.targets("multilabel", 0.1).tolist() == [[1.0, 0.0, 0.0]]
    assert matrix.targets("hard", 5.0).tolist() == [0]


@pytest.mark.slow
def test_a_sweep_learns_from_every_scoring_that_label_repeats_asks_for(tmp_path: Path) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(
        "tasks: {train: 3, test: 1}\ncontexts: {max_contexts: 3}\n"
        "csi: {k1: 10, k2: 5, tasks: 2}\nselector: {max_iterations: 50, label_repeats: 2}\n"
    )
    args = ["sweep", "lambda", "--values", "0", "--config", str(cfg), "--seeds", "1"]
    args += ["--artifacts", str(tmp_path / "a"), "--out", str(tmp_path / "out")]
    assert main(args) == 0
    # As `camp train` does: two scorings of every training (task, context), one file each.
    files = sorted((tmp_path / "a" / "gridworld" / "labels").glob("*.jsonl"))
    assert len(files) == 2
    assert [len(f.read_text().splitlines()) for f in files] == [9, 9]
