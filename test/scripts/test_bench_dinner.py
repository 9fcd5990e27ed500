"""The dinner scaling benchmark: bad arguments are refused; a tiny run writes its outputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def test_bad_arguments_are_refused(
    capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    assert load_script("bench_dinner").main(["--tasks", "0"]) == 2
    assert "--tasks" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.fast_downward
def test_a_tiny_run_times_pure_and_camp_with_equal_returns(
    tmp_path: Path, load_script: Callable[[str], ModuleType]
) -> None:
    bench = load_script("bench_dinner")
    out = tmp_path / "bench.json"
    argv = ["--sizes", "0", "--tasks", "1", "--repeats", "1", "--artifacts", str(tmp_path)]
    assert bench.main([*argv, "--json", str(out), "--plot", str(tmp_path / "b.png")]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["camp_return"] == row["pure_return"]
    assert row["camp_fluents"] <= row["pure_fluents"] and row["pure_s"] > 0
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
    assert not any((tmp_path / "bench").iterdir())  # complete: its checkpoint is gone


def test_an_interrupted_run_resumes_without_measuring_its_finished_rows_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    bench = load_script("bench_dinner")
    measured: list[tuple[int, int]] = []
    stop_at = [2]

    def fake_measure(pipe: Any, args: Any, size: int, t: int, task: Any) -> dict[str, Any]:
        if len(measured) == stop_at[0]:
            raise KeyboardInterrupt
        measured.append((size, t))
        return {"products": size, "objects": 10 + size, "task": t, "context": "U",
                "pure_fluents": 9, "pure_operators": 9, "camp_fluents": 3, "camp_operators": 3,
                "camp_objects": 2, "pure_s": 2.0, "camp_s": 1.0, "pure_return": 5.0,
                "camp_return": 5.0}  # fmt: skip

    monkeypatch.setattr(bench, "_measure", fake_measure)
    out = tmp_path / "bench.json"
    argv = ["--sizes", "0", "50", "--tasks", "2", "--artifacts", str(tmp_path),
            "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 130
    assert "the 2 finished runs are kept" in capsys.readouterr().err
    stop_at[0] = 99
    assert bench.main(argv) == 0
    assert measured == [(0, 0), (0, 1), (50, 0), (50, 1)]
    rows = json.loads(out.read_text())["rows"]
    assert [(r["products"], r["task"]) for r in rows] == measured
    assert not any((tmp_path / "bench").iterdir())
