"""Contexts (C, 𝒞): constraints a robot imposes on itself, over discrete variables.

A context is one of five kinds:

* ``universal``: no constraint;
* ``single``: one term ``V = v``;
* ``conjunction``: terms over distinct variables, all of which must hold
  (``bin=2 ∧ grasp=top``);
* ``disjunction``: terms of which any one must hold (``room ∈ {0,1}``, ``a=1 ∨ b=0``);
* ``set_conjunction``: a conjunction of per-variable value sets (the paper's conjunctive
  contexts of D4). Its terms may repeat a variable; the terms of one variable form that
  variable's allowed set, and *every* constrained variable must take a value in its set:
  ``bin ∈ {none,2,5} ∧ grasp ∈ {none,top}`` holds for (bin=5, grasp=none) and not for
  (bin=3, grasp=none). It constrains at least two variables and allows more than one value
  for at least one of them: with one variable it would be a disjunction, with one value per
  variable a conjunction, and refusing those keeps one kind (and one id) per meaning;
* ``template``: a rule the domain turns into a concrete context per task
  (:meth:`camp_planner.domains.base.Domain.instantiate`), e.g. NAMO's "the rooms of the
  doorway route through the fewest boxes". Its one term names it (``template=lightest_route``).
  Where rooms and doors are drawn per task, fixed room sets rarely join start and goal in a
  large world; a template always does, and the selector picks among templates as among
  contexts. It constrains nothing until instantiated: its membership test is an error.

Contexts are immutable, hashable, serialisable, and carry a stable id derived from their
canonical form (kind and sorted terms), so ids survive reordering of a context space and
process restarts.
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

ContextKind = Literal[
    "universal", "single", "conjunction", "disjunction", "set_conjunction", "template"
]
_KINDS: tuple[str, ...] = (
    "universal",
    "single",
    "conjunction",
    "disjunction",
    "set_conjunction",
    "template",
)
TEMPLATE_VARIABLE = "template"


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
        if self.kind == "template" and (
            len(self.terms) != 1 or self.terms[0].variable != TEMPLATE_VARIABLE
        ):
            raise CampError(f"a template context has exactly one term {TEMPLATE_VARIABLE}=<name>")
        if self.kind == "conjunction" and len({t.variable for t in self.terms}) != len(self.terms):
            raise CampError("a conjunction constrains each variable at most once")
        canonical = tuple(sorted(set(self.terms), key=_term_sort_key))
        object.__setattr__(self, "terms", canonical)
        if self.kind == "set_conjunction":
            n_vars = len({t.variable for t in canonical})
            if n_vars < 2:
                raise CampError(
                    "a set conjunction constrains at least two variables (use a disjunction "
                    "for one variable's value set)"
                )
            if n_vars == len(canonical):
                raise CampError(
                    "a set conjunction allows several values for at least one variable (use a "
                    "conjunction when each variable has one value)"
                )

    @staticmethod
    def universal() -> Context:
        return Context("universal")

    @staticmethod
    def template(name: str) -> Context:
        """The template context ``name`` (a rule of the domain's, instantiated per task)."""
        return Context("template", (Term(TEMPLATE_VARIABLE, name),))

    @property
    def is_universal(self) -> bool:
        return self.kind == "universal"

    @property
    def is_template(self) -> bool:
        return self.kind == "template"

    @property
    def template_name(self) -> str:
        """The name of a template context (a CampError for any other kind)."""
        if not self.is_template:
            raise CampError(f"context {self.name} is not a template")
        return str(self.terms[0].value)

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
        """A readable form, e.g. ``agent_room ∈ {0,1,2}``, ``grasp=top ∧ bin=2`` or (a set
        conjunction) ``bin ∈ {none,2,5} ∧ grasp ∈ {none,top}``; values in canonical order
        (by ``repr``, so strings before numbers). ``ContextSpace.resolve`` accepts it back."""
        if self.is_universal:
            return "universal"
        if self.is_template:
            return f"template {self.terms[0].value}"
        if self.kind in ("disjunction", "set_conjunction"):
            groups = self.allowed_values()
            joiner = " ∨ " if self.kind == "disjunction" else " ∧ "
            return joiner.join(
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
        """A fast membership test ``(s, a) -> bool`` bound to ``mdp``'s variable layout.

        Disjunctions need one variable in its allowed values; every other kind needs all of
        them (for single terms and conjunctions each set has one value, for a set
        conjunction it is the variable's set). The CAMP sends (s, a) outside to the sink."""
        if self.is_universal:
            return lambda s, a: True
        if self.is_template:
            raise CampError(f"{self.name} constrains nothing until the domain instantiates it")
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

    def violations(self, mdp: FactoredMDP, state: State, action: Action) -> tuple[str, ...]:
        """Why (s, a) is outside the context: the constrained variables whose value is not
        allowed (sorted), or () when (s, a) is inside. A disjunction is violated only when
        every one of its variables is, so then it names them all. For explanations (which
        term sent a plan to the sink); membership tests use :meth:`compile`."""
        if self.is_universal:
            return ()
        if self.is_template:
            raise CampError(f"{self.name} constrains nothing until the domain instantiates it")
        values = dict(zip((v.name for v in mdp.state_vars), state, strict=True))
        values.update(zip((v.name for v in mdp.action_vars), action, strict=True))
        unknown = sorted(self.variables - set(values))
        if unknown:
            raise CampError(f"context {self.name} names unknown variable '{unknown[0]}'")
        bad = tuple(v for v, allowed in sorted(self._allowed.items()) if values[v] not in allowed)
        if self.kind == "disjunction" and len(bad) < len(self._allowed):
            return ()
        return bad


def _term_sort_key(t: Term) -> tuple[str, str]:
    return (t.variable, repr(t.value))
