"""The do-no-harm gate: plan in a context only when its gain over the universal context is
reliably positive.

A selector trained on a few dozen tasks sometimes picks a context that forces a detour, and
the robot then plans longer than it would have without any context. The gate stands between
the selector and the planner. For the selector's choice it looks up the context's *gains*
over the universal context on the training tasks (each task's objective under the context
minus its objective under the universal context, valued as the deployed method experiences
it: a failed attempt falls back to the universal context and costs its own compute time).
Only tasks on which the context can reach the goal count, since the screen never offers the
context elsewhere. The predicted gain is the mean of those gains. Its uncertainty is a
one-sided bootstrap bound on that mean at the configured confidence. The gate commits to the
context only when the lower bound exceeds the margin; otherwise the robot plans with the
universal context, which is what it would have done without a selector.

Only the selector's first choice is tested. Walking down the ranking until some context
passes would test dozens of contexts against the same noise, and at 90 % confidence about
one in ten contexts with no real gain would pass by chance.

The gains are the training score matrix's own numbers, so a trained bundle carries them
(:class:`GainTable`, in the bundle's metadata) and the gate needs nothing at run time but a
table lookup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.learning.labels import ScoreMatrix

# Bootstrap resamples of a context's mean gain: the bound moves by well under a point
# between seeds at this count, and 51 contexts take about 10 ms.
RESAMPLES = 2000


@dataclass(frozen=True)
class GateConfig:
    """``camp.gate`` in the configuration: whether the gate is on, the one-sided confidence
    of the lower bound, the margin (objective units) that bound must exceed, and the fewest
    training tasks a context needs before the gate trusts its mean."""

    enabled: bool = True
    confidence: float = 0.9
    margin: float = 0.0
    min_tasks: int = 5

    @staticmethod
    def from_config(config: Mapping[str, Any]) -> GateConfig:
        data = config.get("camp", {}).get("gate") or {}
        if not isinstance(data, Mapping):
            raise CampError(f"camp.gate must be a mapping, got {data!r}")
        unknown = sorted(set(data) - set(GateConfig.__dataclass_fields__))
        if unknown:
            raise CampError(
                f"unknown setting camp.gate.{unknown[0]}; known: "
                + ", ".join(GateConfig.__dataclass_fields__)
            )
        cfg = GateConfig(**dict(data))
        if not isinstance(cfg.enabled, bool):
            raise CampError(f"camp.gate.enabled must be true or false, got {cfg.enabled!r}")
        if not _number(cfg.confidence) or not 0.5 <= cfg.confidence < 1.0:
            raise CampError(
                f"camp.gate.confidence must be a number in [0.5, 1), got {cfg.confidence!r}"
            )
        if not _number(cfg.margin) or not math.isfinite(cfg.margin):
            raise CampError(f"camp.gate.margin must be a finite number, got {cfg.margin!r}")
        if isinstance(cfg.min_tasks, bool) or not isinstance(cfg.min_tasks, int):
            raise CampError(f"camp.gate.min_tasks must be a whole number, got {cfg.min_tasks!r}")
        if cfg.min_tasks < 1:
            raise CampError(f"camp.gate.min_tasks must be at least 1, got {cfg.min_tasks}")
        return cfg


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class GainEstimate:
    """A context's predicted gain over the universal context: the mean of its training
    gains, the lower bound on that mean, and how many training tasks it rests on."""

    context_id: str
    mean: float
    lower: float
    n: int


@dataclass
class GainTable:
    """Per context, its gains over the universal context on the training tasks where it can
    reach the goal; ``cost`` says how they value compute ("wall" or "work")."""

    cost: str
    gains: dict[str, tuple[float, ...]]
    _cache: dict[tuple[str, float], GainEstimate] = field(default_factory=dict, repr=False)

    @staticmethod
    def from_matrix(
        matrix: ScoreMatrix,
        lam: float | None,
        cost: str = "wall",
        feasible: Callable[[int, str], bool] | None = None,
    ) -> GainTable:
        """The gains of every non-universal context of ``matrix``; ``lam`` re-weighs compute
        (required for ``cost`` "work"); ``feasible(task, context_id)``: whether the screen
        would offer the context on that task (default: always)."""
        universal = Context.universal().id
        if universal not in matrix.context_ids:
            raise CampError("the score matrix has no universal context to measure gains from")
        gains: dict[str, tuple[float, ...]] = {}
        for cid in matrix.context_ids:
            if cid == universal:
                continue
            values = []
            for task in matrix.tasks:
                if feasible is not None and not feasible(task, cid):
                    continue
                mine = matrix._value_with_fallback(task, cid, lam, universal, cost)
                values.append(mine - matrix._value(task, universal, lam, cost))
            gains[cid] = tuple(float(v) for v in values)
        return GainTable(cost, gains)

    def estimate(self, context_id: str, confidence: float) -> GainEstimate | None:
        """The context's gain estimate at ``confidence``; None if the table has no entry or
        no training task for it."""
        key = (context_id, confidence)
        if key in self._cache:
            return self._cache[key]
        values = self.gains.get(context_id)
        if not values:
            return None
        data = np.asarray(values, dtype=np.float64)
        # Seeded by the data's size so the bound is the same on every call and every run.
        rng = np.random.default_rng(len(data))
        means = data[rng.integers(0, len(data), size=(RESAMPLES, len(data)))].mean(axis=1)
        lower = float(np.quantile(means, 1.0 - confidence))
        found = GainEstimate(context_id, float(data.mean()), lower, len(data))
        self._cache[key] = found
        return found

    def to_json(self) -> dict[str, Any]:
        return {"cost": self.cost, "gains": {k: list(v) for k, v in self.gains.items()}}

    @staticmethod
    def from_json(data: Any) -> GainTable:
        """The table a bundle stores; a damaged one is a :class:`CampError`."""
        try:
            cost = str(data["cost"])
            gains = {
                str(cid): tuple(float(v) for v in values) for cid, values in data["gains"].items()
            }
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CampError(f"the bundle's gain table is damaged: {exc!r}") from None
        if not all(math.isfinite(v) for values in gains.values() for v in values):
            raise CampError("the bundle's gain table has a value that is not finite")
        return GainTable(cost, gains)


@dataclass(frozen=True)
class GateDecision:
    """What the gate decided for one task and why.

    ``context``: the context to plan in first; ``proposed``: the selector's first choice;
    ``predicted_gain`` and ``lower_bound`` (objective units, None when unknown) and ``n``
    (training tasks) are the proposed context's; ``reason`` says it in one sentence."""

    context: Context
    proposed: Context
    committed: bool
    predicted_gain: float | None
    lower_bound: float | None
    n: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context.name,
            "proposed": self.proposed.name,
            "committed": self.committed,
            "predicted_gain": self.predicted_gain,
            "lower_bound": self.lower_bound,
            "training_tasks": self.n,
            "reason": self.reason,
        }


def decide(
    ranked: Sequence[tuple[Context, float]], table: GainTable | None, cfg: GateConfig
) -> GateDecision:
    """The gate's decision for the selector's ranking (best first)."""
    universal = Context.universal()
    proposed = ranked[0][0] if ranked else universal

    def take(context: Context, reason: str, found: GainEstimate | None = None) -> GateDecision:
        gain, lower, n = (found.mean, found.lower, found.n) if found else (None, None, 0)
        committed = context == proposed
        return GateDecision(context, proposed, committed, gain, lower, n, reason)

    if not ranked:
        return take(universal, "no context can reach the goal")
    if proposed.is_universal:
        return take(universal, "the selector chose the universal context")
    if not cfg.enabled:
        return take(proposed, "the gate is off (camp.gate.enabled)")
    if table is None:
        return take(
            proposed,
            "the bundle has no gain table (trained before the gate): the selector's choice "
            "is taken unchecked",
        )
    found = table.estimate(proposed.id, cfg.confidence)
    if found is None:
        return take(
            universal, f"no training task measured {proposed.name} against the universal context"
        )
    if found.n < cfg.min_tasks:
        return take(
            universal,
            f"{proposed.name} rests on {found.n} training task(s), fewer than "
            f"camp.gate.min_tasks = {cfg.min_tasks}",
            found,
        )
    measured = (
        f"{proposed.name} gains {found.mean:+.1f} over the universal context on {found.n} "
        f"training tasks"
    )
    bound = f"the {cfg.confidence:.0%} lower bound {found.lower:+.1f}"
    if found.lower > cfg.margin:
        return take(proposed, f"{measured}; {bound} clears the margin {cfg.margin:g}", found)
    return take(
        universal,
        f"{measured}, but {bound} does not clear the margin {cfg.margin:g}: planning with the "
        "universal context",
        found,
    )
