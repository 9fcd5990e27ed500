"""The train/eval harness on the manipulation domain at a tiny size: CSIs learned from
PyBullet, TAMP label scores, the selector on the red radius and bin occupancy, and every
method of ``camp eval`` against the same test task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main

pytestmark = [pytest.mark.pybullet, pytest.mark.fast_downward, pytest.mark.slow]

TINY = """
domain: manip
tasks: {train: 2, test: 1}
contexts: {max_contexts: 3}
csi: {tasks: 2, k1: 6, k2: 4}
timeout_s: 20.0
selector: {max_iterations: 200}
"""
METHODS = ["camp", "camp_ablation", "pure", "plan_transfer", "policy", "task_policy"]
METHODS += ["oracle", "oracle_rerun"]


def test_manip_trains_and_evaluates_every_method_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY)
    out = tmp_path / "eval"
    args = ["eval", "--domain", "manip", "--config", str(config), "--methods", *METHODS]
    args += ["--seeds", "1", "--workers", "1"]
    args += ["--artifacts", str(tmp_path / "artifacts"), "--out", str(out)]
    assert main(args) == 0
    results = json.loads((out / "results.json").read_text())
    assert set(METHODS) <= set(results["methods"])
    assert (out / "plot.png").stat().st_size > 5_000
    assert (out / "table.md").read_text().count("|") > 10
    bundle = next((tmp_path / "artifacts" / "manip" / "tamp").glob("seed0/selector-*.pt"))
    assert bundle.stat().st_size > 0
    # Training again reuses every score, and breaks the labels down by kind of task.
    capsys.readouterr()
    args = ["train", "--domain", "manip", "--config", str(config), "--json"]
    assert main([*args, "--artifacts", str(tmp_path / "artifacts")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["scores_computed"] == 0
    by_kind = summary["label_counts_by_kind"]
    assert set(by_kind) <= {"skinny", "fat"}
    assert sum(sum(c.values()) for c in by_kind.values()) == 2
