"""The work ceiling: per task the best context on work against the universal context, from
score checkpoints, and clear errors for checkpoints it cannot use."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest


def _row(task: int, context: str, work: float | None, ret: float = 1000.0) -> str:
    return json.dumps(
        {"task": task, "context_id": context, "discounted_return": ret, "work_s": work}
    )


def test_the_best_context_on_work_is_set_beside_the_universal_one(
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "scores.jsonl"
    lines = [
        _row(0, "universal", 0.5),
        _row(0, "c1", 0.2),  # saves 0.3 s: 30 points at λ = 100
        _row(0, "c2", 0.1, ret=0.0),  # less work, but never reaches the goal
        _row(1, "universal", 0.3),
        _row(1, "c1", 0.3),  # a tie: the universal context stays the best
    ]
    path.write_text("\n".join(lines) + "\n" + '{"task": 1, "cont')  # a line being written
    out = tmp_path / "ceiling.json"
    assert load_script("work_ceiling").main([str(path), "--json", str(out)]) == 0
    r = json.loads(out.read_text())[str(path)]
    assert [t["best_context"] for t in r["tasks"]] == ["c1", "universal"]
    assert r["tasks"][0]["saving_points"] == pytest.approx(30.0)
    assert r["mean_saving_points"] == pytest.approx(15.0)
    assert r["universal_work_s"] == pytest.approx(0.8) and r["best_work_s"] == pytest.approx(0.5)
    assert r["universal_best"] == 1
    assert "38 % less" in capsys.readouterr().out
    assert path.read_text().endswith('{"task": 1, "cont')  # read only: nothing cut off


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("not json\n", "line 1 is corrupt"),
        ("[1, 2]\n", "not a score record"),
        (_row(0, "universal", None) + "\n", "records no work"),
        (_row(0, "c1", 0.1) + "\n", "no score for the universal context"),
        ("", "no scores"),
    ],
)
def test_a_checkpoint_it_cannot_use_is_a_clear_error(
    content: str | None,
    message: str,
    tmp_path: Path,
    load_script: Callable[[str], ModuleType],
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "scores.jsonl"
    if content is not None:
        path.write_text(content)
    assert load_script("work_ceiling").main([str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
