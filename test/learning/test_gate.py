"""The do-no-harm gate (learning/gate.py) on synthetic score matrices."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from camp_planner.core.context import Context, Term
from camp_planner.core.errors import CampError
from camp_planner.learning.gate import GainTable, GateConfig, decide
from camp_planner.learning.labels import Score, ScoreMatrix

U = Context.universal()
A = Context("disjunction", (Term("room", 0), Term("room", 1)))
B = Context("disjunction", (Term("room", 0), Term("room", 2)))


def _score(task: int, cid: str, objective: float, outcome: str = "goal") -> Score:
    return Score(
        task=task,
        context_id=cid,
        objective=objective,
        discounted_return=100.0,
        compute_time_s=(100.0 - objective) / 10.0,
        success=outcome == "goal",
        outcome=outcome,
    )


def _matrix(gains_a: list[float], gains_b: list[float]) -> ScoreMatrix:
    """Universal scores 50 on every task; A and B score 50 plus their gains."""
    scores = {}
    for t, (ga, gb) in enumerate(zip(gains_a, gains_b, strict=True)):
        scores[(t, U.id)] = _score(t, U.id, 50.0)
        scores[(t, A.id)] = _score(t, A.id, 50.0 + ga)
        scores[(t, B.id)] = _score(t, B.id, 50.0 + gb)
    return ScoreMatrix(list(range(len(gains_a))), [U.id, A.id, B.id], scores)


def test_a_gain_within_its_noise_plans_with_the_universal_context() -> None:
    # A wins big on some tasks and loses as big on others: mean +2, noise ±30.
    noisy = [32.0, -28.0] * 10
    table = GainTable.from_matrix(_matrix(noisy, [0.0] * 20), None)
    decision = decide([(A, 0.9), (U, 0.1)], table, GateConfig())
    assert decision.context == U and not decision.committed and decision.proposed == A
    assert decision.predicted_gain == pytest.approx(2.0)
    assert decision.lower_bound is not None and decision.lower_bound < 0.0
    assert "does not clear" in decision.reason


def test_a_gain_that_clearly_beats_its_noise_commits_to_the_context() -> None:
    steady = [10.0, 12.0, 8.0, 11.0, 9.0] * 4
    table = GainTable.from_matrix(_matrix(steady, [0.0] * 20), None)
    decision = decide([(A, 0.6), (B, 0.3), (U, 0.1)], table, GateConfig())
    assert decision.context == A and decision.committed
    assert decision.predicted_gain == pytest.approx(10.0)
    assert decision.lower_bound is not None and 0.0 < decision.lower_bound < 10.0
    assert "clears the margin" in decision.reason


def test_the_margin_confidence_and_minimum_tasks_are_honoured() -> None:
    steady = [10.0, 12.0, 8.0, 11.0, 9.0] * 4
    table = GainTable.from_matrix(_matrix(steady, [0.0] * 20), None)
    assert not decide([(A, 1.0)], table, GateConfig(margin=15.0)).committed
    assert not decide([(A, 1.0)], table, GateConfig(min_tasks=21)).committed
    small = GainTable.from_matrix(_matrix([10.0, 9.0], [0.0, 0.0]), None)
    assert "fewer than" in decide([(A, 1.0)], small, GateConfig()).reason
    # A bound at 99 % confidence sits below the one at 90 %.
    lo99 = table.estimate(A.id, 0.99)
    lo90 = table.estimate(A.id, 0.9)
    assert lo99 is not None and lo90 is not None and lo99.lower < lo90.lower


def test_only_the_first_choice_is_tested() -> None:
    # B would pass, but the selector proposed A: the gate does not go shopping for B.
    table = GainTable.from_matrix(_matrix([32.0, -28.0] * 10, [10.0] * 20), None)
    assert decide([(A, 0.6), (B, 0.4)], table, GateConfig()).context == U


def test_tasks_the_screen_would_not_offer_are_left_out() -> None:
    # A loses 500 on the tasks where its rooms cannot reach the goal: the screen never offers
    # it there, so only the other tasks count.
    gains = [10.0, -500.0] * 10
    feasible = GainTable.from_matrix(
        _matrix(gains, [0.0] * 20), None, feasible=lambda t, c: t % 2 == 0
    )
    everything = GainTable.from_matrix(_matrix(gains, [0.0] * 20), None)
    assert decide([(A, 1.0)], feasible, GateConfig()).committed
    assert not decide([(A, 1.0)], everything, GateConfig()).committed


def test_a_failed_attempt_is_valued_as_falling_back() -> None:
    """A failed attempt costs its own time and then scores what the universal context does."""
    m = _matrix([0.0], [0.0])
    m.scores[(0, A.id)] = Score(0, A.id, -1.0, 0.0, 0.1, False, "no_plan")
    table = GainTable.from_matrix(m, None)
    assert table.gains[A.id] == (pytest.approx(-1.0),)


def test_the_universal_choice_the_gate_off_and_old_bundles_pass_through() -> None:
    table = GainTable.from_matrix(_matrix([32.0, -28.0] * 10, [0.0] * 20), None)
    assert decide([(U, 1.0)], table, GateConfig()).context == U
    assert decide([(A, 1.0)], table, GateConfig(enabled=False)).context == A
    unchecked = decide([(A, 1.0)], None, GateConfig())
    assert unchecked.context == A and "no gain table" in unchecked.reason
    assert decide([], table, GateConfig()).context == U


def test_the_table_round_trips_and_a_damaged_one_is_refused() -> None:
    table = GainTable.from_matrix(_matrix([1.0, 2.0], [3.0, 4.0]), None)
    again = GainTable.from_json(table.to_json())
    assert again.gains == table.gains and again.cost == table.cost
    with pytest.raises(CampError, match="damaged"):
        GainTable.from_json({"gains": {}})
    with pytest.raises(CampError, match="not finite"):
        GainTable.from_json({"cost": "wall", "gains": {A.id: [math.nan]}})


@pytest.mark.parametrize(
    ("gate", "message"),
    [
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": "high"}, "confidence"),
        ({"margin": math.inf}, "margin"),
        ({"min_tasks": 0}, "min_tasks"),
        ({"enabled": "yes"}, "enabled"),
        ({"threshold": 1}, "unknown setting camp.gate.threshold"),
        ([1, 2], "mapping"),
    ],
)
def test_bad_gate_settings_are_named(gate: object, message: str) -> None:
    with pytest.raises(CampError, match=message):
        GateConfig.from_config({"camp": {"gate": gate}})


def test_the_gate_is_set_from_a_configuration_file(tmp_path: Path) -> None:
    from camp_planner.config import load_config
    from camp_planner.domains import get_domain

    path = tmp_path / "gate.yaml"
    path.write_text("camp: {gate: {margin: 2, enabled: false}}\n")
    config = load_config(get_domain("dinner"), path)
    assert GateConfig.from_config(config) == GateConfig(enabled=False, margin=2.0)
    # Without the setting the configuration has no gate key (its hash, which keys the label
    # caches, is unchanged) and the gate is on.
    assert "gate" not in load_config(get_domain("dinner"), None)["camp"]
    assert GateConfig.from_config(load_config(get_domain("dinner"), None)).enabled
    path.write_text("camp: {gate: {confidence: 1.5}}\n")
    with pytest.raises(CampError, match=r"camp.gate.confidence.*\[0.5, 1\)"):
        load_config(get_domain("dinner"), path)


def test_test_time_settings_leave_the_training_caches_keyed_as_before(tmp_path: Path) -> None:
    """The gate and the test tasks' seed change no training score and no trained bundle."""
    import copy

    from camp_planner.learning.bundle import trained_bundle
    from camp_planner.learning.train import score_checkpoint
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create("gridworld", None, tmp_path)
    before = copy.deepcopy(pipe.config)
    bundle = trained_bundle(tmp_path, "gridworld", "bfs_replan", 0, before)
    train = score_checkpoint(pipe, tmp_path, "bfs_replan", "train", 0).path
    test = score_checkpoint(pipe, tmp_path, "bfs_replan", "test", 0).path
    pipe.config["camp"]["gate"] = {"enabled": False}
    pipe.config["tasks"]["test_seed"] = 1000
    assert trained_bundle(tmp_path, "gridworld", "bfs_replan", 0, pipe.config) == bundle
    assert score_checkpoint(pipe, tmp_path, "bfs_replan", "train", 0).path == train
    # The oracle's test scores are of other tasks now, so they get a checkpoint of their own.
    assert score_checkpoint(pipe, tmp_path, "bfs_replan", "test", 0).path != test
