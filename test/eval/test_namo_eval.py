"""The train/eval harness on NAMO at a tiny size: CSIs from PyBullet, TAMP label scores, the
CNN selector on top-down images, and the CAMP and pure-planning methods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main

pytestmark = [pytest.mark.pybullet, pytest.mark.fast_downward, pytest.mark.slow]

TINY = """
domain: namo
tasks: {train: 2, test: 1}
contexts: {max_contexts: 3}
csi: {tasks: 2}
timeout_s: 20.0
selector: {max_iterations: 200}
"""


def test_namo_eval_runs_end_to_end(tmp_path: Path) -> None:
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY)
    out = tmp_path / "eval"
    args = ["eval", "--domain", "namo", "--planner", "tamp", "--config", str(config)]
    args += ["--methods", "camp", "pure", "stilman", "--seeds", "1", "--workers", "1"]
    args += ["--artifacts", str(tmp_path / "artifacts"), "--out", str(out)]
    assert main(args) == 0
    results = json.loads((out / "results.json").read_text())
    methods = results["methods"]
    assert {"camp", "pure", "stilman"} <= set(methods)
    assert (out / "plot.png").stat().st_size > 5_000
    assert (out / "table.md").read_text().count("|") > 10
    bundle = next((tmp_path / "artifacts" / "namo" / "tamp").glob("seed0/selector-*.pt"))
    assert bundle.stat().st_size > 0
