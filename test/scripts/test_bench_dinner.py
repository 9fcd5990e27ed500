"""The dinner scaling benchmark: bad arguments are refused; a tiny run writes its outputs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_dinner.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_dinner", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert _load().main(["--tasks", "0"]) == 2
    assert "--tasks" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.fast_downward
def test_a_tiny_run_times_pure_and_camp_with_equal_returns(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["--sizes", "0", "--tasks", "1", "--repeats", "1", "--artifacts", str(tmp_path)]
    assert _load().main([*argv, "--json", str(out), "--plot", str(tmp_path / "b.png")]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["camp_return"] == row["pure_return"]
    assert row["camp_fluents"] <= row["pure_fluents"] and row["pure_s"] > 0
    assert (tmp_path / "b.png").read_bytes()[:4] == b"\x89PNG"
