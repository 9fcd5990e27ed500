"""Timing planning runs: every run is reported with what it planned (bad arguments and an
unreadable config: test_script_arguments.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.pybullet


def test_each_task_and_seed_is_one_run_with_its_plan_and_stages(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "runs.json"
    script = load_script("time_planning_runs")
    assert script.main(["--tasks", "2", "--seeds", "2", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    runs = data["runs"]
    assert [(r["task"], r["seed"]) for r in runs] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(r["success"] and r["picks"] >= 1 and r["seconds"] > 0 for r in runs)
    assert all(r["stage_times_s"]["motion_planning"] > 0 for r in runs)
    # Each run's plan as a digest of its actions: two tasks, two plans.
    assert all(len(r["plan"]) == 12 and int(r["plan"], 16) >= 0 for r in runs)
    assert runs[0]["plan"] != runs[2]["plan"]
    summary = data["summary"]
    assert summary["runs"] == 4 and summary["successes"] == 4 and summary["planner"] == "tamp"
    assert summary["total_s"] == pytest.approx(sum(r["seconds"] for r in runs))
    assert "4 runs" in capsys.readouterr().out


def test_stilman_can_be_timed_too(tmp_path: Path, load_script: Callable[[str], ModuleType]) -> None:
    out = tmp_path / "runs.json"
    argv = ["--planner", "stilman", "--tasks", "1", "--seeds", "1", "--json", str(out)]
    assert load_script("time_planning_runs").main(argv) == 0
    data = json.loads(out.read_text())
    assert data["summary"]["planner"] == "stilman" and data["runs"][0]["context"] is None


def test_the_camp_method_is_timed_with_its_contexts_and_every_run_counts_its_work(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "runs.json"
    argv = ["--planner", "camp", "--tasks", "2", "--seeds", "1", "--json", str(out)]
    assert load_script("time_planning_runs").main(argv) == 0
    data = json.loads(out.read_text())
    runs, summary = data["runs"], data["summary"]
    assert summary["planner"] == "camp" and summary["successes"] == 2
    # The shipped selector's first pick is named with each run; plain planners name none.
    assert all(r["context"] and r["work_s"] > 0 for r in runs)
    assert summary["total_work_s"] == pytest.approx(sum(r["work_s"] for r in runs))
    assert summary["seconds_per_work_s"] == pytest.approx(
        summary["total_s"] / summary["total_work_s"]
    )
    assert "s per s of work" in capsys.readouterr().out


def test_a_missing_bundle_is_a_clear_error(
    tmp_path: Path, load_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--planner", "camp", "--tasks", "1", "--bundle", str(tmp_path / "none.pt")]
    with pytest.raises(SystemExit) as exc:
        load_script("time_planning_runs").main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "no selector bundle" in err and "Traceback" not in err


def test_planner_settings_can_be_changed_and_an_unknown_one_is_a_clear_error(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "runs.json"
    argv = ["--tasks", "1", "--seeds", "1", "--set", "restart_s=4", "--json", str(out)]
    assert load_script("time_planning_runs").main(argv) == 0
    data = json.loads(out.read_text())
    assert data["summary"]["settings"] == {"restart_s": 4}
    assert data["runs"][0]["success"]
    with pytest.raises(SystemExit) as exc:
        load_script("time_planning_runs").main(["--tasks", "1", "--set", "restart_sx=4"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown setting" in err and "restart_s," in err and "Traceback" not in err
