"""The offline selector study: refuses to plan, and scores picks from an eval's checkpoints."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from camp_planner.cli import main as camp_main

TINY = """\
tasks: {train: 5, test: 2}
contexts: {max_contexts: 4}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 200}
"""


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--variant", "fuzzy:5"], "label kind"),
        (["--variant", "regression:fallback:5"], "expected"),
        (["--folds", "1"], "folds"),
        (["--measure", "cpu"], "invalid choice"),
    ],
)
def test_bad_arguments_are_refused(
    extra: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    with pytest.raises(SystemExit):
        load_script("selector_study").main(["--domain", "gridworld", "--planner", "vi", *extra])
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_study_reads_checkpoints_and_never_beats_the_oracle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load_script: Callable[[str], ModuleType]
) -> None:
    study_script = load_script("selector_study")
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(TINY)
    common = ["--domain", "gridworld", "--config", str(cfg), "--artifacts", str(tmp_path / "a")]
    study = [*common, "--planner", "bfs_replan", "--variant", "multilabel:5"]
    study += ["--variant", "regression:5:noscreen", "--variant", "regression:5:fallback"]
    study += ["--variant", "regression:5:screened", "--variant", "prior/regression:5:fallback"]
    study += ["--attempt-budget", "none"]
    study += ["--json", str(tmp_path / "s.json")]
    # Nothing scored yet: a clear error, not hours of planning.
    assert study_script.main(study) == 2
    assert "run the same `camp eval`" in capsys.readouterr().err
    argv = ["eval", *common, "--planner", "bfs_replan", "--seeds", "1", "--workers", "1"]
    assert camp_main([*argv, "--methods", "camp", "oracle", "--out", str(tmp_path / "e")]) == 0
    assert study_script.main(study) == 0
    rows = json.loads((tmp_path / "s.json").read_text())
    assert set(rows) == {
        "oracle",
        "universal context",
        "multilabel:5",
        "regression:5:noscreen",
        "regression:5:fallback",
        "regression:5:screened",
        "prior/regression:5:fallback",
    }
    oracle = rows["oracle"]["per_task"][0]
    for name, row in rows.items():
        assert len(row["per_task"][0]) == 2
        assert all(o >= v for o, v in zip(oracle, row["per_task"][0], strict=True)), name
    captured = capsys.readouterr()
    assert "regression:5:noscreen" in captured.out
    assert "better/worse" in captured.out
    # BFS-replan does not count its work: valuing picks on work is a clear error.
    assert study_script.main([*study, "--measure", "work"]) == 2
    assert "records no work" in capsys.readouterr().err
    # Several attempt budgets: one row per variant and budget.
    assert study_script.main([*study, "--attempt-budget", "0.001"]) == 0
    rows = json.loads((tmp_path / "s.json").read_text())
    assert {"multilabel:5 (no budget)", "multilabel:5 (budget 0.001 s)"} <= set(rows)
    capsys.readouterr()
    # Each training reports its progress (the CNN's take minutes).
    assert "seed 0, multilabel:5: training" in captured.err
    # Cross-validation on the training tasks: every training task gets a pick, none beats
    # that task's best context.
    assert study_script.main([*study, "--folds", "2"]) == 0
    rows = json.loads((tmp_path / "s.json").read_text())
    oracle = rows["oracle"]["per_task"][0]
    for name, row in rows.items():
        assert len(row["per_task"][0]) == 5
        assert all(o >= v for o, v in zip(oracle, row["per_task"][0], strict=True)), name
    captured = capsys.readouterr()
    assert "cross-validation" in captured.out
    assert "seed 0, multilabel:5, fold 2/2: training" in captured.err


def test_attempt_budget_cuts_off_slow_contexts_in_the_model(
    load_script: Callable[[str], ModuleType],
) -> None:
    from camp_planner.learning.labels import Score, ScoreMatrix

    study = load_script("selector_study")

    def score(cid: str, seconds: float, outcome: str = "goal") -> Score:
        ok = outcome == "goal"
        objective = (1000.0 if ok else 0.0) - 100.0 * seconds
        return Score(0, cid, objective, 1000.0 if ok else 0.0, seconds, ok, outcome)

    scores = [score("slow", 9.0), score("failed", 0.5, "no_plan"), score("universal", 1.0)]
    matrix = ScoreMatrix(
        [0], ["slow", "failed", "universal"], {(0, s.context_id): s for s in scores}
    )
    order = ["slow", "failed", "universal"]
    assert study.with_fallbacks(matrix, 0, order, 100.0) == pytest.approx(100.0)
    # Cut off after 2 s: 200 lost there, 50 on the failure, then the universal context's 900.
    assert study.with_fallbacks(matrix, 0, order, 100.0, 2.0) == pytest.approx(650.0)
    # The universal context is never cut off.
    assert study.with_fallbacks(matrix, 0, ["universal"], 100.0, 0.5) == pytest.approx(900.0)
    assert study.parse_budget("none") is None and study.parse_budget("2.5") == 2.5
    for bad in ("0", "-1", "soon"):
        with pytest.raises(argparse.ArgumentTypeError):
            study.parse_budget(bad)


def test_work_measure_values_picks_on_the_planners_work(
    load_script: Callable[[str], ModuleType],
) -> None:
    from camp_planner.core.errors import CampError
    from camp_planner.learning.labels import Score, ScoreMatrix

    study = load_script("selector_study")

    def score(cid: str, wall: float, work: float | None, outcome: str = "goal") -> Score:
        ok = outcome == "goal"
        ret = 1000.0 if ok else 0.0
        return Score(0, cid, ret - 100.0 * wall, ret, wall, ok, outcome, work_s=work)

    # On the wall clock the room context lost (a slow run); on work it did less.
    scores = [score("rooms", 3.0, 0.5), score("failed", 0.1, 0.2, "no_plan")]
    scores.append(score("universal", 1.0, 0.8))
    matrix = ScoreMatrix(
        [0], [s.context_id for s in scores], {(0, s.context_id): s for s in scores}
    )
    assert study.with_fallbacks(matrix, 0, ["rooms"], 100.0) == pytest.approx(700.0)
    assert study.with_fallbacks(matrix, 0, ["rooms"], 100.0, measure="work") == pytest.approx(950.0)
    # A failed attempt costs its work, then the universal context's 920.
    order = ["failed", "universal"]
    assert study.with_fallbacks(matrix, 0, order, 100.0, measure="work") == pytest.approx(900.0)
    # The budget is on the same measure: 0.5 s of work is within a 0.6 s budget.
    assert study.with_fallbacks(matrix, 0, ["rooms"], 100.0, 0.6, measure="work") == pytest.approx(
        950.0
    )
    unmeasured = ScoreMatrix([0], ["old"], {(0, "old"): score("old", 1.0, None)})
    with pytest.raises(CampError, match="records no work"):
        study.with_fallbacks(unmeasured, 0, ["old"], 100.0, measure="work")
    # Better / worse than the universal context, over seeds; exact ties count as neither.
    runs = [
        {"universal context": [900.0, 900.0], "x": [910.0, 900.0]},
        {"universal context": [800.0], "x": [700.0]},
    ]
    assert study.against_universal(runs, "x") == (1, 1)
    assert study.against_universal(runs, "universal context") == (0, 0)
