"""The gridworld benchmark: a killed run resumes without measuring its finished pairs again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def test_an_interrupted_run_resumes_without_measuring_its_finished_pairs_again(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    bench = load_script("bench_gridworld")
    config = tmp_path / "grid.yaml"
    config.write_text("domain: gridworld\ncontexts: {max_contexts: 1}\n")  # universal only
    measure = bench._measure
    measured: list[tuple[int, str]] = []
    stop_at = [3]

    def counted(pipe: Any, args: Any, i: int, task: Any, planner: str, ctx: Any) -> Any:
        if len(measured) == stop_at[0]:
            raise KeyboardInterrupt
        measured.append((i, planner))
        return measure(pipe, args, i, task, planner, ctx)

    monkeypatch.setattr(bench, "_measure", counted)
    out = tmp_path / "rows.json"
    spec = "bfs_replan:determinization=most_likely"
    argv = ["--tasks", "2", "--planners", "bfs_replan", spec, "--config", str(config),
            "--artifacts", str(tmp_path / "art"), "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 130 and not out.exists()
    assert "interrupted: the 3 finished runs are kept" in capsys.readouterr().err
    stop_at[0] = 99
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    assert "resuming: 3 runs finished earlier" in printed and "(finished earlier)" in printed
    assert measured == [(0, "bfs_replan"), (0, spec), (1, "bfs_replan"), (1, spec)]
    rows = json.loads(out.read_text())
    assert [(r["task"], r["planner"]) for r in rows] == measured
    assert all(r["pure_outcome"] in ("goal", "horizon", "timeout") for r in rows)
    assert not any((tmp_path / "art" / "bench").iterdir())
