"""Contexts (C, 𝒞): constraints a robot imposes on itself, over discrete variables.

A context is universal, a single term ``V = v``, a conjunction of terms, or a disjunction of
terms. Contexts are immutable, hashable, serialisable, and carry a stable id derived from
their canonical form, so ids survive reordering of a context space and process restarts.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from camp_planner.core.errors import CampError
from camp_planner.core.mdp import Action, FactoredMDP, State, freeze

ContextKind = Literal["universal", "single", "conjunction", "disjunction"]
_KINDS: tuple[str, ...] = ("universal", "single", "conjunction", "disjunction")


@dataclass(frozen=True, order=True)
class Term:
    """The constraint ``variable = value``."""

    variable: str
    value: Hashable

    def to_json(self) -> dict[str, Any]:
        return {"variable": self.variable, "value": self.value}


@dataclass(frozen=True)
class Context:
    """A context over state and action variables. Terms are kept sorted (canonical form)."""

    kind: ContextKind
    terms: tuple[Term, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise CampError(f"unknown context kind '{self.kind}'")
        if self.kind == "universal" and self.terms:
            raise CampError("the universal context has no terms")
        if self.kind == "single" and len(self.terms) != 1:
            raise CampError("a single-term context has exactly one term")
        if self.kind in ("conjunction", "disjunction") and len(self.terms) < 1:
            raise CampError(f"a {self.kind} needs at least one term")
        if self.kind == "conjunction" and len({t.variable for t in self.terms}) != len(self.terms):
            raise CampError("a conjunction constrains each variable at most once")
        canonical = tuple(sorted(set(self.terms), key=_term_sort_key))
        object.__setattr__(self, "terms", canonical)

    @staticmethod
    def universal() -> Context:
        return Context("universal")

    @property
    def is_universal(self) -> bool:
        return self.kind == "universal"

    # Both are cached (like ``id``): screening asks them of every context of the space on
    # every /select_context call, and recomputing them was a third of its cost.
    @functools.cached_property
    def variables(self) -> frozenset[str]:
        """C: the variables the context constrains."""
        return frozenset(t.variable for t in self.terms)

    @functools.cached_property
    def _allowed(self) -> dict[str, tuple[Hashable, ...]]:
        out: dict[str, list[Hashable]] = {}
        for t in self.terms:
            out.setdefault(t.variable, []).append(t.value)
        return {k: tuple(sorted(v, key=repr)) for k, v in out.items()}

    def allowed_values(self) -> dict[str, list[Hashable]]:
        """Per constrained variable, the values the terms mention (sorted)."""
        return {k: list(v) for k, v in self._allowed.items()}

    def allowed(self, variable: str) -> tuple[Hashable, ...]:
        """The values the terms mention for ``variable`` (sorted; empty if none)."""
        return self._allowed.get(variable, ())

    @property
    def name(self) -> str:
        """A readable form, e.g. ``agent_room ∈ {0,1,2}`` or ``grasp=top ∧ bin=2``."""
        if self.is_universal:
            return "universal"
        if self.kind == "disjunction":
            groups = self.allowed_values()
            return " ∨ ".join(
                f"{var} ∈ {{{','.join(map(str, vals))}}}" if len(vals) > 1 else f"{var}={vals[0]}"
                for var, vals in groups.items()
            )
        return " ∧ ".join(f"{t.variable}={t.value}" for t in self.terms)

    @functools.cached_property
    def id(self) -> str:
        """A stable id: a short hash of the canonical JSON form (computed once: selection
        and CAMP caches look contexts up by id on every call)."""
        digest = hashlib.sha1(self.canonical_json().encode()).hexdigest()
        return "universal" if self.is_universal else f"c{digest[:8]}"

    def canonical_json(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True, default=str)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "terms": [t.to_json() for t in self.terms]}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Context:
        try:
            kind = data["kind"]
            terms = tuple(Term(str(t["variable"]), freeze(t["value"])) for t in data["terms"])
        except (KeyError, TypeError) as exc:
            raise CampError(f"malformed context JSON: {exc!r}") from exc
        return Context(kind, terms)

    def compile(self, mdp: FactoredMDP) -> Callable[[State, Action], bool]:
        """A fast membership test ``(s, a) -> bool`` bound to ``mdp``'s variable layout."""
        if self.is_universal:
            return lambda s, a: True
        lookups: list[tuple[bool, int, frozenset[Hashable]]] = []
        for var, values in self.allowed_values().items():
            if var in {v.name for v in mdp.state_vars}:
                lookups.append((True, mdp.state_index(var), frozenset(values)))
            elif var in {v.name for v in mdp.action_vars}:
                lookups.append((False, mdp.action_index(var), frozenset(values)))
            else:
                raise CampError(f"context {self.name} names unknown variable '{var}'")
        if self.kind == "disjunction":

            def any_term(s: State, a: Action) -> bool:
                return any((s if st else a)[i] in vals for st, i, vals in lookups)

            return any_term

        def all_terms(s: State, a: Action) -> bool:
            return all((s if st else a)[i] in vals for st, i, vals in lookups)

        return all_terms

    def contains(self, mdp: FactoredMDP, state: State, action: Action) -> bool:
        """Whether (s, a) is in the context."""
        return self.compile(mdp)(state, action)


def _term_sort_key(t: Term) -> tuple[str, str]:
    return (t.variable, repr(t.value))
