"""A tiny configuration of the whole train/eval pipeline, in CI time."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from camp_planner.cli import main
from camp_planner.learning import METHOD_NAMES

TINY = """\
tasks: {train: 5, test: 2}
contexts: {max_contexts: 4}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 200}
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
    assert "| CAMP (ours) |" in (out / "table.md").read_text()
    assert (out / "plot.png").read_bytes()[:4] == b"\x89PNG"
    # A second run reuses every cached seed instead of retraining or re-evaluating.
    caches = sorted((tmp_path / "a").rglob("eval-*.json"))
    assert len(caches) == 2
    stamps = [c.stat().st_mtime_ns for c in caches]
    assert main(argv) == 0
    assert [c.stat().st_mtime_ns for c in caches] == stamps
    assert json.loads((out / "results.json").read_text())["methods"] == methods


def test_unknown_method_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["eval", "--methods", "magic", "--artifacts", str(tmp_path)])
    assert code == 2
    assert "unknown method 'magic'" in capsys.readouterr().err
