"""The dinner scaling benchmark: bad arguments are refused; a tiny run writes its outputs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

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
