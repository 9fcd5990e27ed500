"""Replaying an eval's identical-plan episodes: which episodes are replayed, in which order,
and what is reported when a replay is not the eval's plan or the eval file cannot be used
(bad arguments: test_script_arguments.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


def _row(task: int, context: str, plan: str) -> dict[str, Any]:
    return {"task": task, "context_id": context, "objective": 960.0 - task,
            "compute_time_s": 0.4, "success": True, "fallbacks": 0, "plan": plan}  # fmt: skip


def _eval_file(tmp_path: Path) -> Path:
    """Task 0: universal CAMP, the same (made-up) plan as pure planning; task 1: another
    context; task 2: the universal context but another plan than pure planning's."""
    data = {
        "title": "namo, tamp, λ = 100, 1 seed(s)",
        "seed_ids": [0],
        "episodes": {
            "camp": [[_row(0, "universal", "aaaa"), _row(1, "c1234567", "bbbb"),
                      _row(2, "universal", "cccc")]],
            "pure": [[_row(0, "universal", "aaaa"), _row(1, "universal", "bbbb"),
                      _row(2, "universal", "dddd")]],
        },
    }  # fmt: skip
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.pybullet
def test_only_identical_plan_episodes_are_replayed_alternately_and_other_plans_are_flagged(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "jitter.json"
    png = tmp_path / "jitter.png"
    argv = ["--eval", str(_eval_file(tmp_path)), "--repeats", "2", "--json", str(out)]
    argv += ["--plot", str(png)]
    assert load_script("replan_jitter").main(argv) == 0
    data = json.loads(out.read_text())
    runs = data["runs"]
    # Task 0 only; pure planning first on repeat 0, the CAMP first on repeat 1.
    assert [(r["task"], r["repeat"], r["method"]) for r in runs] == [
        (0, 0, "pure"), (0, 0, "camp"), (0, 1, "camp"), (0, 1, "pure"),
    ]  # fmt: skip
    assert all(r["success"] and r["compute_time_s"] > 0 and r["cpu_s"] > 0 for r in runs)
    # The universal CAMP makes pure planning's plan, every time; the eval's made-up digest
    # is not it, and every replay says so.
    assert len({r["plan"] for r in runs}) == 1
    summary = data["summary"]
    assert len(summary["other_plans"]) == 4 and summary["failures"] == 0
    # The same plan, the same work counted, whatever each replay's time.
    assert len({r["work_s"] for r in runs}) == 1 and runs[0]["work_s"] > 0
    assert summary["same_work"] == 1
    assert summary["episodes"] == 1 and summary["replays_camp_minus_pure"]["pairs"] == 2
    assert summary["eval_camp_minus_pure"]["mean"] == pytest.approx(0.0)
    assert summary["drift"][0] == pytest.approx(1.0)
    assert summary["max_over_min"]["pure"]["median"] >= 1.0
    assert png.read_bytes().startswith(b"\x89PNG")
    printed = capsys.readouterr().out
    assert "not the eval plan" in printed and "is not the eval's" in printed


@pytest.mark.parametrize(
    ("content", "argv", "message"),
    [
        (None, [], "cannot read"),
        ("{not json", [], "cannot read"),
        ('{"episodes": {"camp": []}}', [], "per-episode rows of both"),
        ('{"title": "x", "episodes": {"camp": [], "pure": []}}', [], "does not name"),
        ("SEED", ["--seeds", "7"], "seed(s) [7] are not in"),
        ("SEED", ["--tasks", "1"], "nothing to replay"),
    ],
)
def test_an_eval_file_that_cannot_be_used_is_a_clear_error(
    content: str | None,
    argv: list[str],
    message: str,
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "results.json"
    if content == "SEED":
        path = _eval_file(tmp_path)  # with --tasks 1 only task 0 is left; its plans differ:
        data = json.loads(path.read_text())
        data["episodes"]["pure"][0][0]["plan"] = "eeee"
        path.write_text(json.dumps(data))
    elif content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exc:
        load_script("replan_jitter").main(["--eval", str(path), *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
