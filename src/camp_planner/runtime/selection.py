"""How the CAMP runtime chooses the contexts to plan in, and in which order.

Three rules, one per kind of evidence a selector bundle carries:

- ``bound`` (bundles with an objective model, :mod:`camp_planner.learning.objective_model`):
  the candidates are the selector's top k contexts, the universal context and, where the
  domain allows it, giving up. Each context's objective on this task is predicted and given
  a lower bound that holds for all k at once; the candidate with the highest bound is tried
  first, and fallbacks follow in bound order. The universal context is scored by the same
  model, never assumed safe; giving up is worth exactly 0. The order ends at the universal
  context or at giving up, whichever bound comes first: what follows it is worth less and
  it cannot do worse than planning on.
- ``gate`` (older bundles, which store only each context's gains over the universal
  context): the do-no-harm gate of :mod:`camp_planner.learning.gate`.
- ``ungated``: the paper's CAMP, the selector's first choice and then the next-ranked.

``auto`` (the default) is ``bound`` when the bundle has an objective model, else ``gate``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.learning.gate import GateDecision

RULES = ("auto", "bound", "gate", "ungated")
GIVE_UP = "give up"


@dataclass(frozen=True)
class SelectionSettings:
    """``camp.selection``: the rule, how many of the selector's contexts are candidates
    (``top_k``), the joint confidence of the candidates' bounds, and whether this domain
    may give up on a task (not planning at all is worth 0)."""

    rule: str = "auto"
    top_k: int = 3
    confidence: float = 0.9
    give_up: bool = False

    @staticmethod
    def from_config(config: Mapping[str, Any], give_up: bool = False) -> SelectionSettings:
        """``camp.selection`` of ``config``; ``give_up``: the domain's default for it."""
        data = dict(config.get("camp", {}).get("selection") or {})
        if data.get("give_up") is None:
            data["give_up"] = give_up
        if not isinstance(data, Mapping):
            raise CampError(f"camp.selection must be a mapping, got {data!r}")
        unknown = sorted(set(data) - set(SelectionSettings.__dataclass_fields__))
        if unknown:
            raise CampError(
                f"unknown setting camp.selection.{unknown[0]}; known: "
                + ", ".join(SelectionSettings.__dataclass_fields__)
            )
        s = SelectionSettings(**data)
        if s.rule not in RULES:
            raise CampError(
                f"camp.selection.rule must be one of {', '.join(RULES)}, got {s.rule!r}"
            )
        if isinstance(s.top_k, bool) or not isinstance(s.top_k, int) or s.top_k < 1:
            raise CampError(f"camp.selection.top_k must be a whole number ≥ 1, got {s.top_k!r}")
        if (
            isinstance(s.confidence, bool)
            or not isinstance(s.confidence, int | float)
            or not 0.5 <= s.confidence < 1.0
        ):
            raise CampError(
                f"camp.selection.confidence must be a number in [0.5, 1), got {s.confidence!r}"
            )
        if not isinstance(s.give_up, bool):
            raise CampError(f"camp.selection.give_up must be true or false, got {s.give_up!r}")
        return s


@dataclass(frozen=True)
class Candidate:
    """One option the rule weighed: a context (None: giving up), the selector's
    probability for it, its predicted objective on this task and the lower bound (None
    where the rule predicts none), and how many training tasks the prediction rests on."""

    context: Context | None
    probability: float | None = None
    predicted_objective: float | None = None
    lower_bound: float | None = None
    n: int = 0

    @property
    def name(self) -> str:
        return GIVE_UP if self.context is None else self.context.name

    def to_json(self) -> dict[str, Any]:
        def num(v: float | None) -> float | None:
            return None if v is None or not math.isfinite(v) else round(v, 4)

        return {
            "context": None
            if self.context is None
            else {"id": self.context.id, "name": self.context.name},
            "name": self.name,
            "probability": num(self.probability),
            "predicted_objective": num(self.predicted_objective),
            "lower_bound": num(self.lower_bound),
            "training_tasks": self.n,
        }


@dataclass(frozen=True)
class Selection:
    """What the runtime decided for one task: the rule, the selector's ranking (after the
    screen) and the contexts screened out, the candidates in the rule's order (best first),
    the contexts to plan in, in order (``order``, the fallback order), whether the robot
    gives up once they have all failed (``gives_up``; else the last keeps the timeout),
    and why, in one sentence."""

    rule: str
    ranked: list[tuple[Context, float]]
    screened: list[Context]
    candidates: list[Candidate]
    order: list[Context]
    gives_up: bool
    reason: str
    latency_s: float = 0.0
    gate: GateDecision | None = field(default=None)

    @property
    def first(self) -> Context | None:
        """The context planned first (None: the robot gives up at once)."""
        return self.order[0] if self.order else None

    @property
    def winner(self) -> str:
        """The chosen candidate's name (a context's, or "give up")."""
        return GIVE_UP if self.first is None else self.first.name

    def fallback_order(self) -> list[str]:
        """The names of what the runtime tries, in order ("give up" last if it would)."""
        return [c.name for c in self.order] + ([GIVE_UP] if self.gives_up else [])

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "winner": self.winner,
            "reason": self.reason,
            "candidates": [c.to_json() for c in self.candidates],
            "fallback_order": self.fallback_order(),
            "latency_s": round(self.latency_s, 6),
            **({"gate": self.gate.to_json()} if self.gate is not None else {}),
        }


def bound_order(
    candidates: Sequence[Candidate], max_fallbacks: int
) -> tuple[list[Candidate], list[Context], bool]:
    """(candidates sorted by lower bound, best first; the contexts to try in that order;
    whether the order ends by giving up). The order stops at the universal context or at
    giving up, whichever comes first, and holds at most ``1 + max_fallbacks`` contexts
    before the universal one (the universal context is always in it unless giving up
    ranks above it). Where bounds tie (contexts without one), the universal context wins."""

    def key(c: Candidate) -> tuple[float, bool, float, float]:
        lower = -math.inf if c.lower_bound is None else c.lower_bound
        predicted = c.predicted_objective
        pred = -math.inf if predicted is None or not math.isfinite(predicted) else predicted
        prob = c.probability or 0.0
        # Among candidates no bound separates (none measured on enough training tasks),
        # the universal context comes first: what the robot does without evidence.
        universal = c.context is not None and c.context.is_universal
        return (lower, universal, pred, prob)

    ranked = sorted(candidates, key=key, reverse=True)
    order: list[Context] = []
    for c in ranked:
        if c.context is None:
            return ranked, order, True
        if c.context.is_universal:
            order.append(c.context)
            return ranked, order, False
        if len(order) <= max_fallbacks:
            order.append(c.context)
    order.append(Context.universal())
    return ranked, order, False
