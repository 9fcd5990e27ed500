"""The offline replay of the selection rules reads a cached eval and values every rule's
pick as the runtime experiences it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from camp_planner.cli import main

TINY = """\
tasks: {train: 6, test: 3}
contexts: {max_contexts: 4}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 200}
"""


@pytest.mark.slow
def test_every_rule_is_replayed_and_none_beats_the_oracle_on_a_task(
    tmp_path: Path, load_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    art = tmp_path / "art"
    argv = ["eval", "--config", str(cfg), "--artifacts", str(art), "--seeds", "1"]
    assert main([*argv, "--methods", "camp", "oracle", "--out", str(tmp_path / "eval")]) == 0
    capsys.readouterr()
    out, table = tmp_path / "replay.json", tmp_path / "table.md"
    replay = load_script("replay_selection")
    common = ["--domain", "gridworld", "--planner", "bfs_replan", "--config", str(cfg)]
    assert replay.main([*common, "--artifacts", str(art), "--json", str(out),
                        "--markdown", str(table)]) == 0  # fmt: skip
    record = json.loads(out.read_text())
    values = record["values"]
    assert set(values) == {"ungated", "gate", "bound", "universal", "oracle"}
    assert all(len(v) == 3 for v in values.values())
    for rule, rows in values.items():  # the oracle is the best pick (or giving up) per task
        assert all(v <= o + 1e-9 for v, o in zip(rows, values["oracle"], strict=True)), rule
    # The replayed rule is the runtime's: where the eval's CAMP planned, it scored its pick.
    episodes = json.loads((tmp_path / "eval" / "results.json").read_text())["episodes"]
    assert record["picks"]["bound"] == [e["context_id"] for e in episodes["camp"][0]]
    assert table.read_text().startswith("| gridworld bfs_replan | 3 |")
    # A run that was never scored is a clear error naming the command.
    assert replay.main([*common, "--artifacts", str(tmp_path / "none")]) == 2
    assert "run the same `camp eval`" in capsys.readouterr().err


def test_bad_arguments_are_refused(load_script: Callable[[str], ModuleType]) -> None:
    with pytest.raises(SystemExit) as exc:
        load_script("replay_selection").main(["--domain", "gridworld", "--planner", "vi",
                                              "--seeds", "0"])  # fmt: skip
    assert exc.value.code == 2
