"""Generating the space of candidate contexts (paper section 4.1).

Terms ``V = v`` come from discrete variables whose domain is no larger than a threshold (so
continuous variables are excluded). From them we form single terms, disjunctions and
conjunctions up to configured lengths, skipping combinations whose variables' joint domain
size exceeds the threshold. The universal context is always first.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from camp_planner.core.context import Context, Term
from camp_planner.core.errors import CampError, reject_unknown
from camp_planner.core.mdp import FactoredMDP, Variable, freeze


@dataclass(frozen=True)
class ContextSpaceSpec:
    """Hyperparameters of context-space generation."""

    max_domain_size: int = 10
    variables: tuple[str, ...] | None = None
    # Only terms with these values (e.g. [0]: "stay out of X" but never "be in X").
    values: tuple[Hashable, ...] | None = None
    # Values every disjunction must contain (e.g. the start and goal rooms: a context that
    # forbids either can never help).
    required_values: tuple[Hashable, ...] | None = None
    include_single: bool = True
    min_disjunction_length: int = 2
    max_disjunction_length: int = 2
    max_conjunction_length: int = 0
    max_contexts: int | None = None
    seed: int = 0

    @staticmethod
    def from_mapping(data: Mapping[str, Any]) -> ContextSpaceSpec:
        reject_unknown(data, ContextSpaceSpec.__dataclass_fields__, "context-space")
        values = dict(data)
        for key in ("variables", "values", "required_values"):
            if values.get(key) is not None:
                values[key] = tuple(freeze(v) for v in values[key])
        return ContextSpaceSpec(**values)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["variables"] = list(self.variables) if self.variables is not None else None
        out["values"] = list(self.values) if self.values is not None else None
        required = out.pop("required_values")
        if required is not None:  # absent when unused, so older specs keep their form
            out["required_values"] = list(required)
        return out


@dataclass(frozen=True)
class ContextSpace:
    """An ordered list of contexts; index 0 is the universal context."""

    contexts: tuple[Context, ...]

    def __post_init__(self) -> None:
        if not self.contexts or not self.contexts[0].is_universal:
            raise CampError("a context space must start with the universal context")
        ids = [c.id for c in self.contexts]
        if len(set(ids)) != len(ids):
            raise CampError("a context space must not repeat a context")

    def __len__(self) -> int:
        return len(self.contexts)

    def __iter__(self) -> Iterator[Context]:
        return iter(self.contexts)

    def __getitem__(self, index: int) -> Context:
        return self.contexts[index]

    def index_of(self, context: Context) -> int:
        return [c.id for c in self.contexts].index(context.id)

    def resolve(self, ref: str) -> Context:
        """Look a context up by list index, stable id, or readable name."""
        ref = ref.strip()
        if ref.isdigit():
            i = int(ref)
            if i < len(self.contexts):
                return self.contexts[i]
        for c in self.contexts:
            if ref in (c.id, c.name):
                return c
        raise CampError(
            f"unknown context '{ref}': use an index 0..{len(self.contexts) - 1} or an id "
            "from `camp contexts`"
        )

    def to_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.contexts]

    @staticmethod
    def from_json(data: Sequence[Mapping[str, Any]]) -> ContextSpace:
        return ContextSpace(tuple(Context.from_json(d) for d in data))


def candidate_terms(variables: Sequence[Variable], spec: ContextSpaceSpec) -> list[Term]:
    """All ``V = v`` terms over discrete variables within the domain-size threshold."""
    names = {v.name for v in variables}
    if spec.variables is not None:
        missing = set(spec.variables) - names
        if missing:
            raise CampError(f"context variables not in the MDP: {', '.join(sorted(missing))}")
    terms: list[Term] = []
    for var in variables:
        if spec.variables is not None and var.name not in spec.variables:
            continue
        if var.domain is None or var.domain_size > spec.max_domain_size:
            continue
        terms.extend(
            Term(var.name, value)
            for value in var.domain
            if spec.values is None or value in spec.values
        )
    return terms


def _joint_domain_size(terms: Sequence[Term], sizes: Mapping[str, float]) -> float:
    return math.prod(sizes[v] for v in {t.variable for t in terms})


def generate_context_space(mdp: FactoredMDP, spec: ContextSpaceSpec) -> ContextSpace:
    """The paper's context family over ``mdp``'s variables, universal context first."""
    variables = mdp.variables
    sizes = {v.name: v.domain_size for v in variables}
    terms = candidate_terms(variables, spec)
    found: list[Context] = []
    if spec.include_single:
        found.extend(Context("single", (t,)) for t in terms)
    for length in range(max(2, spec.min_disjunction_length), spec.max_disjunction_length + 1):
        for combo in itertools.combinations(terms, length):
            if spec.required_values is not None and not set(spec.required_values) <= {
                t.value for t in combo
            }:
                continue
            if _joint_domain_size(combo, sizes) <= spec.max_domain_size:
                found.append(Context("disjunction", combo))
    for length in range(2, spec.max_conjunction_length + 1):
        for combo in itertools.combinations(terms, length):
            if len({t.variable for t in combo}) != length:
                continue
            if _joint_domain_size(combo, sizes) <= spec.max_domain_size:
                found.append(Context("conjunction", combo))
    if spec.max_contexts is not None and len(found) > spec.max_contexts - 1:
        # A seeded subsample, kept in generation order so ids and indices stay readable.
        keep = sorted(random.Random(spec.seed).sample(range(len(found)), spec.max_contexts - 1))
        found = [found[i] for i in keep]
    return ContextSpace((Context.universal(), *found))
