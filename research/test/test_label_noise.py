"""The label-noise report: luck shows up as the gap between an oracle and its picks replanned."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from camp_planner.learning.labels import Score, ScoreMatrix


def _matrix(objectives: dict[tuple[int, str], float]) -> ScoreMatrix:
    scores = {
        (t, c): Score(t, c, v, 1000.0, (1000.0 - v) / 100.0, True, "goal")
        for (t, c), v in objectives.items()
    }
    return ScoreMatrix([0, 1], ["universal", "a", "b"], scores)


def test_a_lucky_run_is_told_from_a_good_context(load_script: Callable[[str], ModuleType]) -> None:
    noise = load_script("label_noise")
    # Task 0: "a" is truly better (900 in every scoring). Task 1: "a" and "b" are lucky in
    # one scoring each and otherwise worse than the universal context.
    common = {(0, "universal"): 800.0, (0, "a"): 900.0, (0, "b"): 700.0, (1, "universal"): 800.0}
    runs = [
        _matrix({**common, (1, "a"): 950.0, (1, "b"): 600.0}),
        _matrix({**common, (1, "a"): 600.0, (1, "b"): 950.0}),
        _matrix({**common, (1, "a"): 600.0, (1, "b"): 600.0}),
    ]
    out = noise.summarise(runs)
    assert out["universal"] == pytest.approx(800.0)
    # Each scoring's own oracle: 900 on task 0; 950, 950 and 800 on task 1.
    assert out["oracle_of_one_scoring"] == pytest.approx((900 * 3 + 950 + 950 + 800) / 6)
    # Replanned, the lucky picks of task 1 fall below the universal context.
    assert out["its_picks_scored_by_another_scoring"] < out["oracle_of_one_scoring"]
    # The mean of the other two scorings keeps "a" on task 0 and mostly the universal
    # context on task 1 (where a lucky 950 averages down to 775 or 600).
    assert out["oracle_of_the_others_mean_scored_held_out"] == pytest.approx(850.0)
    assert out["its_universal_picks_fraction"] == pytest.approx(3 / 6)
    with pytest.raises(Exception, match="two scorings"):
        noise.summarise(runs[:1])


def test_missing_scorings_are_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    noise = load_script("label_noise")
    argv = ["--domain", "gridworld", "--planner", "bfs_replan", "--artifacts", str(tmp_path)]
    assert noise.main(argv) == 2
    assert "not in" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        noise.main([*argv, "--repeats", "1"])
