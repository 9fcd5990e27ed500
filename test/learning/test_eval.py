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
    code = main(
        [
            "eval",
            "--config",
            str(cfg),
            "--artifacts",
            str(tmp_path / "a"),
            "--seeds",
            "2",
            "--workers",
            "1",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    methods = results["methods"]
    assert set(methods) == set(METHOD_NAMES)
    for stats in methods.values():
        assert stats["seeds"] == 2
        for metric in ("objective", "discounted_return", "compute_time_s", "success"):
            assert set(stats[metric]) == {"mean", "std"}
    # The oracle is the best context per task in hindsight: nothing context-based beats it.
    assert methods["oracle"]["objective"]["mean"] >= methods["pure"]["objective"]["mean"] - 1e-9
    assert "fraction_of_oracle" in methods["camp"]
    assert "| CAMP (ours) |" in (out / "table.md").read_text()
    assert (out / "plot.png").read_bytes()[:4] == b"\x89PNG"
    # A second run reuses every cached seed.
    assert (
        main(
            [
                "eval",
                "--config",
                str(cfg),
                "--artifacts",
                str(tmp_path / "a"),
                "--seeds",
                "2",
                "--workers",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )


def test_unknown_method_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["eval", "--methods", "magic", "--artifacts", str(tmp_path)])
    assert code == 2
    assert "unknown method 'magic'" in capsys.readouterr().err
