"""Each context's objective on a task, predicted from the label matrix, with a calibrated
lower bound: what the CAMP runtime's selection rule ranks candidates by.

The label matrix holds, for every training task and context, the objective that context
earned. This model learns, per context, a ridge regression of that objective on a small
description of the task: the first principal components of the selector's own input (task
features, or the structural model's per-context inputs) and the selector's score for the
context. The scores it learns from are out of fold (each training task scored by a
selector trained without it, :func:`camp_planner.learning.train.out_of_fold_scores`): the
full selector fits its own labels to the loss target, so its scores of the training tasks
would look far more telling than they are on a new task. The ridge penalty is chosen by
cross-validation over all contexts at once, from a grid that ends in "no features" (the
context's mean), so a description that does not help costs nothing.

The bound is calibrated out of sample. Every training task's objective is predicted by a
model fitted without its fold (cross-fitting), and the residuals of those predictions say
how far the model errs on tasks it has not seen: the bound is the prediction minus a
one-sided upper bound on the mean optimism of those residuals, at the confidence the rule
asks for. Choosing the best of k candidates favours whichever one the model overrates
(the winner's curse), so the runtime asks for each bound at confidence 1 − (1 − c)/k
(Bonferroni): all k bounds hold at once with probability at least c.

Values the labels record are what the runtime would earn (:func:`runtime_value`): a
context that fails costs its own planning time and ends with the last resort's value, and
a context still planning at the attempt cap is valued as abandoned there. A label cut off
by ``label_timeout_s`` after the cap is therefore exact, not censored: the runtime would
never have planned that long.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.learning.labels import PLANNING_FAILURES, ScoreMatrix

FOLDS = 5
# Principal components of the selector's input that describe a task: a few, because a
# context is scored on a few dozen training tasks.
COMPONENTS = 3
# Ridge penalties (per training task) tried by cross-validation; inf: the context's mean.
PENALTIES = (0.1, 1.0, 10.0, math.inf)
# A context measured on fewer training tasks than this gets no bound (it is never chosen
# over a measured one).
MIN_TASKS = 5


@dataclass(frozen=True)
class Prediction:
    """One candidate's predicted objective on a task, its lower bound at the asked
    confidence, and how many training tasks the context's model rests on."""

    context_id: str
    predicted: float
    lower: float
    n: int


@dataclass
class ObjectiveModel:
    """Per context, a ridge regression of its objective on the task's description and, when
    fitted with them, the selector's score for that context."""

    feature_mean: np.ndarray  # (D,) the selector input's mean over training tasks
    components: np.ndarray  # (m, D) principal directions, m ≤ COMPONENTS
    scale: np.ndarray  # (m,) standard deviation of each projected component
    penalty: float
    coef: dict[str, np.ndarray]  # context id → intercept and weights (m, then the score's)
    residuals: dict[str, np.ndarray]  # context id → cross-fitted y − ŷ on its tasks
    # context id → (mean, standard deviation) of the selector's out-of-fold scores; empty:
    # fitted without scores
    score_scale: dict[str, tuple[float, float]] = field(default_factory=dict)

    # --- fitting ----------------------------------------------------------------------------
    @staticmethod
    def fit(
        inputs: np.ndarray,
        context_ids: Sequence[str],
        value: Callable[[int, str], float | None],
        seed: int = 0,
        scores: np.ndarray | None = None,
    ) -> ObjectiveModel:
        """Fit on the training tasks' selector ``inputs`` (one row per task, any shape);
        ``value(task_row, context_id)``: the runtime value of that context on that task, or
        None where the context is not offered (screened out); ``scores`` (task row ×
        context, in ``context_ids`` order): the selector's scores of each task from a
        selector that did not see it (out of fold)."""
        x = np.asarray(inputs, dtype=np.float64).reshape(len(inputs), -1)
        if len(x) == 0:
            raise CampError("the objective model needs at least one training task")
        mean = x.mean(axis=0)
        centred = x - mean
        _, sing, vt = np.linalg.svd(centred, full_matrices=False)
        keep = int(min(COMPONENTS, len(x) - 1, int(np.sum(sing > 1e-9 * max(sing[0], 1e-12)))))
        components = vt[:keep]
        projected = centred @ components.T
        scale = projected.std(axis=0) if keep else np.zeros(0)
        scale = np.where(scale > 1e-12, scale, 1.0)
        z = projected / scale
        folds = np.random.default_rng(seed).permutation(len(x)) % FOLDS
        data: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        score_scale: dict[str, tuple[float, float]] = {}
        for j, cid in enumerate(context_ids):
            rows = [(i, v) for i in range(len(x)) if (v := value(i, cid)) is not None]
            if not all(math.isfinite(v) for _, v in rows):
                raise CampError(f"a label of context {cid} is not finite")
            idx = np.array([i for i, _ in rows], dtype=int)
            design = z[idx]
            if scores is not None:
                column = np.asarray(scores, dtype=np.float64)[:, j]
                sd = float(column.std())
                score_scale[cid] = (float(column.mean()), sd if sd > 1e-12 else 1.0)
                standard = (column[idx] - score_scale[cid][0]) / score_scale[cid][1]
                design = np.column_stack([design, standard])
            data[cid] = (idx, design, np.array([v for _, v in rows], dtype=np.float64))
        # One penalty for every context: the one whose cross-fitted predictions err least.
        errors = {
            p: sum(
                float(np.sum(_cross_fit(d, y, folds[idx], p) ** 2)) for idx, d, y in data.values()
            )
            for p in PENALTIES
        }
        penalty = min(PENALTIES, key=lambda p: (errors[p], -p))
        coef = {cid: _ridge(d, y, penalty) for cid, (_, d, y) in data.items() if len(y)}
        residuals = {
            cid: _cross_fit(d, y, folds[idx], penalty)
            for cid, (idx, d, y) in data.items()
            if len(y)
        }
        return ObjectiveModel(mean, components, scale, penalty, coef, residuals, score_scale)

    # --- prediction -------------------------------------------------------------------------
    def describe(self, x: np.ndarray) -> np.ndarray:
        """A task's description: its selector input projected on the principal components."""
        flat = np.asarray(x, dtype=np.float64).reshape(-1)
        if flat.shape != self.feature_mean.shape:
            raise CampError(
                f"the objective model reads {self.feature_mean.size} input values, got {flat.size}"
            )
        projected: np.ndarray = (flat - self.feature_mean) @ self.components.T / self.scale
        return projected

    @property
    def uses_scores(self) -> bool:
        """Whether predictions need the selector's scores of the task."""
        return bool(self.score_scale)

    def predict(
        self,
        x: np.ndarray,
        context_ids: Sequence[str],
        confidence: float,
        scores: Mapping[str, float] | None = None,
    ) -> list[Prediction]:
        """Each context's predicted objective on the task with input ``x`` (and, for a model
        fitted with them, the selector's ``scores`` of it by context id) and its lower
        bound, all bounds holding at once with probability ``confidence`` (each at
        1 − (1 − confidence)/k for the k contexts asked about). A context without a model
        (measured on fewer than MIN_TASKS tasks) gets a bound of −inf."""
        z = self.describe(x)
        if self.uses_scores and scores is None:
            raise CampError("this objective model predicts from the selector's scores: give them")
        k = max(1, len(context_ids))
        level = 1.0 - (1.0 - confidence) / k
        out = []
        for cid in context_ids:
            coef = self.coef.get(cid)
            res = self.residuals.get(cid)
            n = 0 if res is None else len(res)
            if coef is None:
                out.append(Prediction(cid, float("nan"), -math.inf, n))
                continue
            design = z
            if self.uses_scores:
                assert scores is not None
                mean, sd = self.score_scale[cid]
                design = np.append(z, (float(scores[cid]) - mean) / sd)
            predicted = float(coef[0] + design @ coef[1:])
            if res is None or n < MIN_TASKS:
                out.append(Prediction(cid, predicted, -math.inf, n))
                continue
            out.append(Prediction(cid, predicted, predicted - optimism(res, level), n))
        return out

    # --- storage ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            # Six significant digits: NAMO's inputs are 10,000 values, and the bundle
            # stores every number as JSON text.
            "feature_mean": _compact(self.feature_mean),
            "components": [_compact(row) for row in self.components],
            "scale": self.scale.tolist(),
            "penalty": None if math.isinf(self.penalty) else self.penalty,
            "coef": {k: v.tolist() for k, v in self.coef.items()},
            "residuals": {k: v.tolist() for k, v in self.residuals.items()},
            "score_scale": {k: list(v) for k, v in self.score_scale.items()},
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> ObjectiveModel:
        """The model a bundle stores; a damaged one is a :class:`CampError`."""
        try:
            mean = np.asarray(data["feature_mean"], dtype=np.float64)
            components = np.asarray(data["components"], dtype=np.float64).reshape(-1, mean.size)
            scale = np.asarray(data["scale"], dtype=np.float64)
            penalty = math.inf if data["penalty"] is None else float(data["penalty"])
            coef = {str(k): np.asarray(v, dtype=np.float64) for k, v in data["coef"].items()}
            residuals = {
                str(k): np.asarray(v, dtype=np.float64) for k, v in data["residuals"].items()
            }
            score_scale = {
                str(k): (float(v[0]), float(v[1]))
                for k, v in (data.get("score_scale") or {}).items()
            }
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise CampError(f"the bundle's objective model is damaged: {exc!r}") from None
        m = len(components) + (1 if score_scale else 0)
        arrays = [mean, components, scale, *coef.values(), *residuals.values()]
        if len(scale) != len(components) or any(len(c) != m + 1 for c in coef.values()):
            raise CampError("the bundle's objective model is damaged: its shapes disagree")
        if score_scale and set(coef) - set(score_scale):
            raise CampError("the bundle's objective model is damaged: a context has no score")
        numbers = [v for pair in score_scale.values() for v in pair]
        if not all(np.all(np.isfinite(a)) for a in arrays) or not all(
            math.isfinite(v) for v in numbers
        ):
            raise CampError("the bundle's objective model has a value that is not finite")
        if np.any(scale <= 0) or any(sd <= 0 for _, sd in score_scale.values()):
            raise CampError("the bundle's objective model has a scale that is not positive")
        return ObjectiveModel(mean, components, scale, penalty, coef, residuals, score_scale)


def _compact(values: np.ndarray) -> list[float]:
    return [float(f"{v:.6g}") for v in np.asarray(values, dtype=np.float64).ravel()]


def optimism(residuals: np.ndarray, level: float) -> float:
    """A one-sided upper bound, at ``level``, on how much the model overrates a context on
    average: the mean of ŷ − y over its cross-fitted residuals plus the normal quantile
    times their standard error (never below 0: a model that underrates is not trusted to
    keep doing so)."""
    over = -np.asarray(residuals, dtype=np.float64)
    n = len(over)
    se = float(over.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
    return max(0.0, float(over.mean()) + NormalDist().inv_cdf(level) * se)


def _ridge(design: np.ndarray, y: np.ndarray, penalty: float) -> np.ndarray:
    """Intercept and weights of a ridge regression of ``y`` on ``design`` (the intercept is
    not penalised; inf: the mean alone)."""
    m = design.shape[1]
    if math.isinf(penalty) or m == 0 or len(y) < 2:
        return np.concatenate([[float(y.mean()) if len(y) else 0.0], np.zeros(m)])
    centre = design.mean(axis=0)
    dc = design - centre
    w = np.linalg.solve(dc.T @ dc + penalty * len(y) * np.eye(m), dc.T @ (y - y.mean()))
    return np.concatenate([[float(y.mean() - centre @ w)], w])


def _cross_fit(design: np.ndarray, y: np.ndarray, folds: np.ndarray, penalty: float) -> np.ndarray:
    """y − ŷ for each of a context's tasks, ŷ from a model fitted without that task's fold
    (``folds``: each task's fold)."""
    out = np.zeros(len(y))
    for f in np.unique(folds):
        held = folds == f
        if held.all():  # one fold only: nothing to fit on, predict with nothing learned
            out[held] = y[held]
            continue
        coef = _ridge(design[~held], y[~held], penalty)
        out[held] = y[held] - (coef[0] + design[held] @ coef[1:])
    return out


def runtime_values(
    matrix: ScoreMatrix,
    lam: float,
    cost: str,
    caps: Sequence[float | None],
    give_up: bool,
    feasible: Callable[[int, str], bool] | None = None,
) -> Callable[[int, str], float | None]:
    """``value(row, context_id)``: what the CAMP runtime would earn planning in that context
    first on the training task of ``matrix.tasks[row]``, read from its label.

    A context that reaches the goal or acts to the horizon within the task's attempt cap
    (``caps[task]``, seconds, by task index; None: no cap) earns its own objective. One that
    fails, or is still planning at the cap, costs its planning time up to the cap and ends
    with the last resort's value: 0 where the domain may give up, else the universal
    context's label (which, as the last resort, plans on uncapped).
    ``feasible(task, context_id)`` false: the screen never offers the context on that task
    (None)."""
    universal = Context.universal().id
    if universal not in matrix.context_ids:
        raise CampError("the score matrix has no universal context to value fallbacks with")

    def value(row: int, cid: str) -> float | None:
        task = matrix.tasks[row]
        if feasible is not None and not feasible(task, cid):
            return None
        score = matrix.get(task, cid)
        seconds = score.seconds(cost)
        cap = caps[task]
        last_resort = cid == universal and not give_up
        over = cap is not None and seconds > cap and not last_resort
        if score.outcome not in PLANNING_FAILURES and not over:
            return score.discounted_return - lam * seconds
        if last_resort:
            return score.discounted_return - lam * seconds
        spent = min(seconds, cap) if cap is not None else seconds
        after = 0.0 if give_up else value(row, universal)
        assert after is not None
        return after - lam * spent

    return value
