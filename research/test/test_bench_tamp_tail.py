"""The TAMP tail benchmark: settings are checked; a tiny run reports every run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--set", "restart_s=0"], "restart_s must be positive"),
        (["--set", "no_such_setting=1"], "unknown setting"),
        (["--planner", "stilman", "--set", "stuck_restarts=1"], "unknown setting"),
    ],
)
def test_a_setting_the_planner_refuses_is_reported_before_any_run(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    assert load_script("bench_tamp_tail").main(argv) == 2
    err = capsys.readouterr()
    assert message in err.err and "draw 0" not in err.out


@pytest.mark.slow
@pytest.mark.pybullet
@pytest.mark.fast_downward
def test_a_small_run_reports_each_run_and_the_spread(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "tail.json"
    argv = ["--eval-seeds", "2", "--tasks", "1", "--repeats", "1", "--json", str(out)]
    assert load_script("bench_tamp_tail").main(argv) == 0
    data = json.loads(out.read_text())
    assert [(r["draw"], r["task"], r["seed"]) for r in data["rows"]] == [(0, 0, 0), (1, 0, 0)]
    # The two draws are different tasks, as camp eval's seeds 0 and 1 are.
    assert data["summary"]["runs"] == 2
    assert data["summary"]["median_s"] <= data["summary"]["max_s"]
    for row in data["rows"]:
        assert row["success"] == (row["outcome"] == "goal")
        assert {"restarts", "resamples", "cutoffs"} <= set(row["stats"])
        assert 0 < row["steps"] <= row["horizon"] == 200
        assert row["picks"] == 0 or row["steps"] > 2 * row["picks"]  # a pick, then a place
        assert row["past_timeout_stacks"] == []  # done well within 60 s: never sampled
    assert data["summary"]["max_past_timeout_s"] == 0.0
    assert data["summary"]["max_steps"] == max(r["steps"] for r in data["rows"])
    assert data["summary"]["horizon"] == 200
    assert "tamp on 2 runs" in capsys.readouterr().out


def test_an_interrupted_run_resumes_without_measuring_its_finished_runs_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    monkeypatch.chdir(tmp_path)  # the checkpoint goes to ./artifacts/bench
    bench = load_script("bench_tamp_tail")
    measured: list[tuple[int, int, int]] = []
    stop_at = [2]

    def fake_one(pipe: Any, args: Any, task: Any, draw: int, i: int, seed: int) -> dict[str, Any]:
        if len(measured) == stop_at[0]:
            raise KeyboardInterrupt
        measured.append((draw, i, seed))
        return {"draw": draw, "task": i, "seed": seed, "compute_time_s": 1.0 + seed,
                "success": True, "outcome": "goal", "failures": [], "stats": {}}  # fmt: skip

    monkeypatch.setattr(bench, "_one", fake_one)
    out = tmp_path / "tail.json"
    argv = ["--eval-seeds", "2", "--tasks", "1", "--repeats", "2", "--json", str(out)]
    assert bench.main(argv) == 130
    assert "interrupted: the 2 finished runs are kept" in capsys.readouterr().err
    stop_at[0] = 99
    assert bench.main(argv) == 0
    assert "resuming: 2 runs finished earlier" in capsys.readouterr().out
    assert measured == [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1)]
    data = json.loads(out.read_text())
    assert [(r["draw"], r["seed"]) for r in data["rows"]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert data["summary"]["runs_finished_earlier"] == 2
    assert not any((tmp_path / "artifacts" / "bench").iterdir())
