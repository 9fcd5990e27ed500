"""The objective model: per-context predictions from the label matrix, bounds calibrated on
cross-fitted residuals, runtime values of labels (caps, fallbacks, giving up)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from camp_planner.core.errors import CampError
from camp_planner.learning.labels import Score, ScoreMatrix
from camp_planner.learning.objective_model import ObjectiveModel, optimism, runtime_values


def _data(n: int = 40, seed: int = 0) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 6))
    x[:, 0] *= 5.0  # the feature that varies most between tasks (a principal component)
    # "rooms" earns more the larger the task's first feature; "universal" is flat and noisy.
    y = {
        "rooms": 50.0 + 4.0 * x[:, 0] + rng.normal(scale=2.0, size=n),
        "universal": 40.0 + rng.normal(scale=10.0, size=n),
    }
    return x, y


def test_a_context_whose_objective_follows_the_task_is_predicted_per_task() -> None:
    x, y = _data()
    model = ObjectiveModel.fit(x, ["rooms", "universal"], lambda i, c: float(y[c][i]))
    assert not math.isinf(model.penalty)  # the description helps: ridge, not the mean
    high, low = x.copy()[0], x.copy()[0]
    high[0], low[0] = 10.0, -10.0
    up = model.predict(high, ["rooms", "universal"], 0.9)
    down = model.predict(low, ["rooms", "universal"], 0.9)
    assert up[0].predicted > 80 and down[0].predicted < 20  # follows the task
    assert abs(up[1].predicted - down[1].predicted) < 15  # the flat one barely moves
    for p in up + down:
        assert p.lower < p.predicted and p.n == 40


def test_more_candidates_widen_every_bound() -> None:
    x, y = _data()
    model = ObjectiveModel.fit(x, ["rooms", "universal"], lambda i, c: float(y[c][i]))
    one = model.predict(x[0], ["universal"], 0.9)[0]
    two = model.predict(x[0], ["rooms", "universal"], 0.9)[1]
    assert two.lower < one.lower and two.predicted == one.predicted


def test_the_bound_is_calibrated_on_held_out_tasks() -> None:
    """Over fresh draws, the bound on a context's mean objective falls below the true mean
    at least as often as its confidence asks (the residuals are cross-fitted)."""
    misses = 0
    for seed in range(40):
        x, y = _data(seed=seed)
        model = ObjectiveModel.fit(x, ["universal"], lambda i, c, y=y: float(y[c][i]), seed=seed)
        if model.predict(np.zeros(6), ["universal"], 0.9)[0].lower > 40.0:
            misses += 1
    assert misses <= 8  # 10 % expected; 8 of 40 is beyond a 2-sigma excursion


def test_a_context_measured_on_too_few_tasks_gets_no_bound_and_a_model_round_trips() -> None:
    x, y = _data()
    model = ObjectiveModel.fit(
        x, ["rooms", "universal"], lambda i, c: float(y[c][i]) if c != "rooms" or i < 3 else None
    )
    rooms, universal = model.predict(x[0], ["rooms", "universal"], 0.9)
    assert rooms.lower == -math.inf and rooms.n == 3 and math.isfinite(universal.lower)
    again = ObjectiveModel.from_json(model.to_json())
    assert again.predict(x[0], ["universal"], 0.9)[0].predicted == pytest.approx(
        universal.predicted, abs=1e-3
    )
    damaged = model.to_json()
    damaged["coef"]["universal"] = [1.0]
    with pytest.raises(CampError, match="objective model is damaged"):
        ObjectiveModel.from_json(damaged)
    with pytest.raises(CampError, match="reads 6 input values"):
        model.predict(np.zeros(5), ["universal"], 0.9)


def test_optimism_is_never_negative_and_grows_with_the_level() -> None:
    res = np.array([5.0, -3.0, 2.0, 1.0, -4.0, 0.5])
    assert 0.0 <= optimism(res, 0.8) < optimism(res, 0.99)
    assert optimism(np.full(6, 100.0), 0.9) == 0.0  # a model that underrates: no credit


def _score(task: int, cid: str, ret: float, seconds: float, outcome: str) -> Score:
    return Score(task, cid, ret - 100 * seconds, ret, seconds, outcome == "goal", outcome)


def test_runtime_values_charge_the_cap_and_the_last_resort() -> None:
    scores = {
        (0, "universal"): _score(0, "universal", 90.0, 2.0, "timeout"),  # label cut at 2 s
        (0, "rooms"): _score(0, "rooms", 95.0, 0.1, "goal"),
        (1, "universal"): _score(1, "universal", 90.0, 0.2, "goal"),
        (1, "rooms"): _score(1, "rooms", 0.0, 0.3, "no_plan"),
    }
    matrix = ScoreMatrix([0, 1], ["universal", "rooms"], scores)
    caps = [0.9, 0.9]
    give_up = runtime_values(matrix, 100.0, "wall", caps, give_up=True)
    # Still planning at the cap: abandoned there, then the robot gives up (worth 0).
    assert give_up(0, "universal") == pytest.approx(-90.0)
    assert give_up(0, "rooms") == pytest.approx(85.0)
    assert give_up(1, "rooms") == pytest.approx(-30.0)  # failed: its time, then give up
    plan_on = runtime_values(matrix, 100.0, "wall", caps, give_up=False)
    # The universal context is the last resort: uncapped, its own label.
    assert plan_on(0, "universal") == pytest.approx(-110.0)
    assert plan_on(1, "rooms") == pytest.approx(70.0 - 30.0)  # its time, then universal
    screened = runtime_values(matrix, 100.0, "wall", caps, True, lambda t, c: c != "rooms")
    assert screened(0, "rooms") is None


def test_the_selectors_held_out_scores_make_the_prediction_per_task() -> None:
    rng = np.random.default_rng(3)
    n = 40
    x = rng.normal(size=(n, 6))  # the features say nothing here
    held_out = rng.normal(size=(n, 2))  # the selector's out-of-fold scores per context
    y = {"rooms": 50.0 + 15.0 * held_out[:, 0] + rng.normal(scale=2.0, size=n)}
    y["universal"] = 40.0 + rng.normal(scale=2.0, size=n)
    ids = ["rooms", "universal"]
    model = ObjectiveModel.fit(x, ids, lambda i, c: float(y[c][i]), scores=held_out)
    assert model.uses_scores
    sure = model.predict(x[0], ids, 0.9, {"rooms": 2.0, "universal": 0.0})
    doubt = model.predict(x[0], ids, 0.9, {"rooms": -2.0, "universal": 0.0})
    assert sure[0].predicted > 70 and doubt[0].predicted < 30
    assert sure[0].lower > sure[1].lower and doubt[0].lower < doubt[1].lower
    with pytest.raises(CampError, match="give them"):
        model.predict(x[0], ids, 0.9)
    again = ObjectiveModel.from_json(model.to_json())
    assert again.predict(x[0], ids, 0.9, {"rooms": 2.0, "universal": 0.0})[0].predicted == (
        pytest.approx(sure[0].predicted, abs=1e-3)
    )
    damaged = model.to_json()
    del damaged["score_scale"]["rooms"]
    with pytest.raises(CampError, match="damaged"):
        ObjectiveModel.from_json(damaged)
