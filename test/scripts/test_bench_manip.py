"""The manipulation scaling benchmark: arguments, the summary's statistics, the error without
a bundle, and a tiny end-to-end run (two sizes, one task) that resumes from its checkpoint."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

CHEAP = ["--csi-k", "4", "--csi-tasks", "1", "--timeout", "20"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--tasks", "0"],
        ["--repeats", "0"],
        ["--timeout", "0"],
        ["--distractors", "15", "-1"],
        ["--distractors"],
        ["--csi-k", "0"],
        ["--workers", "0"],
        ["--split", "validation"],
        ["--context", "1", "--bundle", "b.pt"],
    ],
)
def test_bad_arguments_are_refused_in_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    with pytest.raises(SystemExit) as exc:
        load_script("bench_manip").main(argv)
    assert exc.value.code == 2
    assert "--" in capsys.readouterr().err.splitlines()[-1]


def test_without_a_bundle_it_asks_for_a_context(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import camp_planner.learning.bundle as bundle

    monkeypatch.setattr(bundle, "shipped_bundle", lambda domain, planner: None)
    assert load_script("bench_manip").main(["--artifacts", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert (
        line.startswith("bench_manip: error: no selector bundle for manip") and "--context" in line
    )


def test_the_summary_pairs_pure_and_camp_runs(load_script: Callable[[str], ModuleType]) -> None:
    bench = load_script("bench_manip")

    def run(seconds: float, objective: float, ok: bool = True) -> dict[str, Any]:
        stages = {"task_planning": 0.1, "grasping": seconds / 2, "setup": 9.0}
        return {"compute_time_s": seconds, "success": ok, "objective": objective,
                "stage_times_s": stages}  # fmt: skip

    rows = [
        {"context": "c", "pure": run(p, 800.0), "camp": run(c, o, o > 0), "ratio": p / c,
         "dropped_variables": d, "variables": 36}
        for p, c, o, d in ((2.0, 1.0, 790.0, 15), (4.0, 1.0, 780.0, 15), (3.0, 3.0, -50.0, 12))
    ]  # fmt: skip
    s = bench.summarise(rows)
    assert s["pure"]["mean_s"] == 3.0 and s["camp"]["median_s"] == 1.0
    assert (s["pure"]["successes"], s["camp"]["successes"]) == (3, 2)
    assert s["median_ratio_pure_over_camp"] == 2.0
    low, high = s["median_ratio_interval_95"]
    assert 1.0 <= low <= 2.0 <= high <= 4.0
    d = s["objective_pure_minus_camp"]
    assert d["mean"] == pytest.approx((10 + 20 + 850) / 3) and d["pairs"] == 3
    assert 0 < d["signed_rank_p"] <= 1
    assert s["pure"]["stage_means_s"] == {"task_planning": pytest.approx(0.1),
        "motion_planning": 0.0, "grasping": 1.5, "regrasping": 0.0, "placing": 0.0}  # fmt: skip
    assert s["mean_dropped_variables"] == 14.0 and s["contexts"] == {"c": 3}
    text = "\n".join(bench.describe(15, s))
    assert "median ratio pure ÷ CAMP 2.00×" in text and "success 2/3" in text


@pytest.mark.slow
@pytest.mark.pybullet
@pytest.mark.fast_downward
def test_a_tiny_scaling_row_runs_both_sizes_and_resumes(
    tmp_path: Path, load_script: Callable[[str], ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = load_script("bench_manip")
    measure, measured, stop = bench._measure, [], [True]

    def counting(pipe: Any, timeout: float, unit: tuple[int, int, int], *rest: Any) -> Any:
        # Every size's CSIs are learned before the first run is timed.
        assert len(list((tmp_path / "art" / "csi").glob("manip-*.json"))) == 2
        if unit[0] == 30 and stop[0]:
            raise KeyboardInterrupt  # killed at the second size
        measured.append(unit)
        return measure(pipe, timeout, unit, *rest)

    monkeypatch.setattr(bench, "_measure", counting)
    out = tmp_path / "bench.json"
    argv = ["--tasks", "1", "--distractors", "15", "30", "--context", "grasp ∈ {none,side}",
            *CHEAP, "--artifacts", str(tmp_path / "art"), "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 130
    assert measured == [(15, 0, 0)] and not out.exists()
    (checkpoint,) = (tmp_path / "art" / "bench").iterdir()
    stop[0] = False
    assert bench.main(argv) == 0
    # The run at 15 was read from the checkpoint, not measured again.
    assert measured == [(15, 0, 0), (30, 0, 0)]
    data = json.loads(out.read_text())
    assert [(r["distractors"], r["finished_earlier"]) for r in data["rows"]] == [
        (15, True),
        (30, False),
    ]
    assert set(data["summary"]) == {"15", "30"} and data["header"]["runs_finished_earlier"] == 1
    for row in data["rows"]:
        assert row["context"] == "grasp ∈ {none,side}"
        for label in ("pure", "camp"):
            assert row[label]["compute_time_s"] > 0 and "objective" in row[label]
        assert 0 <= row["dropped_variables"] <= row["variables"]
    # More distractors are more variables; the pure run plans with all of them.
    assert data["rows"][1]["variables"] == data["rows"][0]["variables"] + 15
    assert not checkpoint.exists()  # complete: discarded
