"""The world-size table and plot of NAMO bench runs: numbers from the rows, clear errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def _bench(
    path: Path,
    times: dict[str, list[float]],
    boxes: float,
    ratio: float,
    picks: dict[str, list[int]] | None = None,
    stage_times: dict[str, dict[str, float]] | None = None,
) -> Path:
    n = len(times["pure"])
    rows = [
        {k: {"compute_time_s": times[k][i], "success": times[k][i] < 10} for k in times}
        for i in range(n)
    ]
    for key, counts in (picks or {}).items():
        for row, count in zip(rows, counts, strict=True):
            row[key]["picks"] = count
    for key, stages in (stage_times or {}).items():
        for row in rows:
            row[key]["stage_times_s"] = stages
    summary = {
        "median_ratio_pure_over_camp": ratio,
        "median_ratio_interval_95": [ratio / 2, ratio * 2],
        "boxes_per_task": boxes,
    }
    path.write_text(json.dumps({"rows": rows, "summary": summary}))
    return path


def test_table_and_plot_come_from_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    small = _bench(
        tmp_path / "grid3.json",
        {"pure": [1.0, 2.0, 3.0], "camp": [1.0, 1.0, 4.0], "stilman": [2.0, 2.0, 12.0]},
        20.0,
        1.5,
    )
    large = _bench(
        tmp_path / "grid5.json",
        {"pure": [8.0, 9.0, 30.0], "camp": [1.0, 2.0, 3.0], "stilman": [5.0, 6.0, 7.0]},
        55.5,
        4.5,
        picks={"pure": [6, 7, 11], "camp": [2, 2, 3], "stilman": [1, 1, 1]},
        stage_times={
            "pure": {"task_planning": 1.0, "motion_planning": 9.0, "grasp_place": 3.0}
            | {"route_search": 2.0, "collision_checks": 4.0, "setup": 0.0},
            "camp": {"task_planning": 0.25, "motion_planning": 0.5, "grasp_place": 0.5}
            | {"route_search": 0.1, "collision_checks": 0.3, "setup": 0.5},
        },
    )
    out = tmp_path / "img" / "scaling.png"
    assert load_script("plot_bench_namo").main([str(small), str(large), "--plot", str(out)]) == 0
    text, stages = capsys.readouterr().out.split("Where the time went")
    lines = [line for line in text.splitlines() if line.startswith("| grid")]
    assert len(lines) == 2
    # Medians, means and successes of each planner, then the ratio with its interval.
    assert (
        "| grid3 | 20.0 | 2.00 (2.00) | 3/3 | 1.00 (2.00) | 3/3 | 2.00 (5.33) | 2/3 |" in lines[0]
    )
    # pure − CAMP per run: 0, +1, −1 s; the CAMP was faster in 1 of 3 pairs.
    assert "| 1.50× [0.75, 3.00] | +0.00 s [" in lines[0]
    # Runs from before boxes moved were recorded have no count.
    assert lines[0].endswith(", 1/3 | – |")
    assert "| grid5 | 55.5 | 9.00 (15.67) | 2/3 |" in lines[1]
    assert lines[1].endswith(", 3/3 | 8.0 / 2.3 |")
    assert out.stat().st_size > 10_000
    # Then where each run's time went, pure planning beside the CAMP: stage means per run,
    # and the rest of the mean time (15.67 − 1 − 9 − 3 s; 2 − 0.5 − 0.25 − 0.5 − 0.5 s).
    rows = [line for line in stages.splitlines() if line.startswith("| grid5")]
    assert rows == [
        "| grid5 | pure TAMP | 15.67 | 0.00 | 1.00 | 9.00 | 3.00 | 2.00 | 4.00 | 2.67 |",
        "| grid5 | CAMP | 2.00 | 0.50 | 0.25 | 0.50 | 0.50 | 0.10 | 0.30 | 0.25 |",
    ]
    assert "| grid3 | CAMP | 2.00 | – | – | – | – | – | – | 2.00 |" in stages


def test_files_that_are_not_bench_runs_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    plot = load_script("plot_bench_namo")
    assert plot.main([str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    wrong = tmp_path / "eval.json"
    wrong.write_text(json.dumps({"episodes": {}}))
    assert plot.main([str(wrong)]) == 2
    assert "not a bench_namo.py --json file" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"rows": [], "summary": {"median_ratio_pure_over_camp": 1.0}}))
    assert plot.main([str(empty)]) == 2
    assert "holds no runs" in capsys.readouterr().err


def test_runs_of_one_world_joined_with_plus_are_pooled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    plot = load_script("plot_bench_namo")
    first = _bench(
        tmp_path / "grid6.json",
        {"pure": [2.0, 6.0], "camp": [1.0, 2.0], "stilman": [3.0, 3.0]},
        90.0,
        2.5,
    )
    second = _bench(
        tmp_path / "grid6_r2.json",
        {"pure": [4.0, 1.0, 9.0], "camp": [1.0, 1.0, 1.0], "stilman": [60.0, 60.0, 60.0]},
        90.0,
        5.0,
    )
    assert plot.main([f"{first}+{second}"]) == 0
    table = capsys.readouterr().out.split("Where the time went")[0]
    (line,) = [x for x in table.splitlines() if x.startswith("| grid6")]
    # Five rows pooled: pure medians over all five, ratios 2, 3, 4, 1, 9 -> median 3.
    assert line.startswith("| grid6 + 1 more | 90.0 | 4.00 (4.40) | 5/5 |")
    assert "| 3.00× [" in line
    times = {"pure": [1.0], "camp": [1.0], "stilman": [1.0]}
    other = _bench(tmp_path / "grid7.json", times, 120.0, 1.0)
    assert plot.main([f"{first}+{other}"]) == 2
    err = capsys.readouterr().err
    assert "cannot pool" in err and "boxes_per_task differ" in err


def test_two_runs_of_the_same_tasks_and_seeds_are_compared_run_by_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    plot = load_script("plot_bench_namo")
    runs = []
    for name, pure in (("default", [3.0, 5.0, 4.0]), ("rooms", [2.0, 4.0, 5.0])):
        path = _bench(
            tmp_path / f"{name}.json",
            {"pure": pure, "camp": [1.0, 1.0, 1.0], "stilman": [2.0, 2.0, 2.0]},
            120.0,
            2.0,
        )
        data = json.loads(path.read_text())
        # Stored in another order: pairs are matched by task and seed, not by position.
        keys = [(0, 0), (0, 1), (1, 0)] if name == "default" else [(0, 1), (0, 0), (1, 0)]
        for row, (task, seed) in zip(data["rows"], keys, strict=True):
            row.update(task=task, seed=seed)
        path.write_text(json.dumps(data))
        runs.append(str(path))
    assert plot.main(["--paired", *runs]) == 0
    text = capsys.readouterr().out
    # Pure: (0,0) 3 - 4, (0,1) 5 - 2, (1,0) 4 - 5: mean +0.33 s, the second faster once.
    assert "default minus rooms, per run [95 %]:" in text
    assert "  pure     +0.33 s [" in text and "the second faster on 1 of 3" in text
    assert "  camp     +0.00 s [" in text
    with pytest.raises(SystemExit):
        plot.main(["--paired", runs[0]])
    other = _bench(tmp_path / "other.json", {"pure": [1.0], "camp": [1.0], "stilman": [1.0]}, 1, 1)
    assert plot.main(["--paired", runs[0], str(other)]) == 2
    assert "do not hold the same (task, seed) runs" in capsys.readouterr().err


def test_saved_runs_read_back_as_the_same_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    script = load_script("plot_bench_namo")
    times = {"pure": [1.0, 2.0, 3.0], "camp": [1.0, 1.0, 4.0], "stilman": [2.0, 2.0, 12.0]}
    runs = [str(_bench(tmp_path / f"grid{n}.json", times, 20.0 * n, 1.5)) for n in (3, 5)]
    kept = tmp_path / "curve.json"
    assert script.main([*runs, "--save", str(kept)]) == 0
    first = capsys.readouterr().out.split("runs:")[0]
    assert script.main([str(kept)]) == 0
    again = capsys.readouterr().out
    assert "| grid3 |" in first and "| grid5 |" in first and again.strip() == first.strip()
    kept.write_text(json.dumps({"runs": [{"name": "grid7", "rows": []}]}))
    assert script.main([str(kept)]) == 2
    assert "is not a bench_namo.py --json file" in capsys.readouterr().err
