"""Generating the space of candidate contexts (paper section 4.1).

Terms ``V = v`` come from discrete variables whose domain is no larger than a threshold (so
continuous variables are excluded). From them we form single terms, disjunctions and
conjunctions up to configured lengths, skipping combinations whose variables' joint domain
size exceeds the threshold. The universal context is always first.

Set conjunctions (``bin ∈ {none,2,5} ∧ grasp ∈ {none,top}``, see :mod:`.context`) come last
and only when ``max_set_conjunction_variables`` ≥ 2 (default 0: off, so existing spaces and
their ids are unchanged). Each combines 2 to that many distinct variables, each with an
allowed set drawn from its candidate terms that

* holds at most ``max_set_size`` values and is a proper subset of the variable's domain
  (the whole domain would not constrain it);
* contains every ``required_values`` entry among the variable's candidate values ("none is
  always allowed"), plus at least one other value (a set of required values only would forbid
  everything the variable is for);

and at least one set holds two or more values (all singletons are the conjunction family).
The joint-domain threshold is not applied to them: it exists to keep out continuous and
huge variables, which ``max_domain_size`` already does per variable, while a set
conjunction's reason to exist is combining variables; ``max_set_size`` and the variable
count bound the family instead.
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
    # Set conjunctions (see the module docstring): off unless at least 2.
    max_set_conjunction_variables: int = 0
    max_set_size: int = 2
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
        # Likewise the set-conjunction keys while at their defaults.
        for key in ("max_set_conjunction_variables", "max_set_size"):
            if out[key] == ContextSpaceSpec.__dataclass_fields__[key].default:
                del out[key]
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
        """Look a context up by list index, stable id, or readable name. A name also matches
        without its spaces and with ASCII for its symbols (``in``, ``and``/``&``,
        ``or``/``|``), so ``"bin in {none,2} and grasp=top"`` can be typed in a shell."""
        ref = ref.strip()
        if ref.isdigit():
            i = int(ref)
            if i < len(self.contexts):
                return self.contexts[i]
        for c in self.contexts:
            if ref in (c.id, c.name) or (c.is_template and ref == c.template_name):
                return c
        loose = _loose_name(ref)
        for c in self.contexts:
            if _loose_name(c.name) == loose:
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


_ASCII_SYMBOLS = ((" in ", "∈"), (" and ", "∧"), ("&", "∧"), (" or ", "∨"), ("|", "∨"))


def _loose_name(name: str) -> str:
    """``name`` with ASCII symbols replaced and spaces removed, for lenient look-ups."""
    for ascii_form, symbol in _ASCII_SYMBOLS:
        name = name.replace(ascii_form, symbol)
    return "".join(name.split())


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


def _whole_domain(terms: Sequence[Term], sizes: Mapping[str, float]) -> bool:
    """Whether ``terms`` name every value of one variable (and nothing else)."""
    names = {t.variable for t in terms}
    return len(names) == 1 and len(terms) == sizes[next(iter(names))]


def _covering_combinations(
    terms: Sequence[Term], length: int, required: Sequence[Hashable] | None
) -> Iterator[tuple[Term, ...]]:
    """The ``length``-combinations of ``terms`` whose values include every ``required`` value,
    in ``itertools.combinations`` order (so ids, indices and a space's seeded subsample stay
    as they were).

    Filtering every combination cost 11 s in a 20×20 NAMO world (400 room terms, 10.6 million
    triples, of which about 400 hold both required rooms): branches that can no longer take
    in the values still missing are cut here instead."""
    if not required:
        yield from itertools.combinations(terms, length)
        return
    n = len(terms)
    later: list[frozenset[Hashable]] = [frozenset()] * (n + 1)
    for i in range(n - 1, -1, -1):
        later[i] = later[i + 1] | {terms[i].value}
    chosen: list[Term] = []

    def extend(start: int, missing: frozenset[Hashable]) -> Iterator[tuple[Term, ...]]:
        left = length - len(chosen)
        if left == 0:
            if not missing:
                yield tuple(chosen)
            return
        if len(missing) > left:
            return
        for i in range(start, n - left + 1):
            if not missing <= later[i]:
                return  # later starts see fewer values still
            term = terms[i]
            if len(missing) == left and term.value not in missing:
                continue  # every slot left must take in a missing value
            chosen.append(term)
            yield from extend(i + 1, missing - {term.value})
            chosen.pop()

    yield from extend(0, frozenset(required))


def generate_context_space(mdp: FactoredMDP, spec: ContextSpaceSpec) -> ContextSpace:
    """The paper's context family over ``mdp``'s variables, universal context first."""
    variables = mdp.variables
    sizes = {v.name: v.domain_size for v in variables}
    terms = candidate_terms(variables, spec)
    found: list[Context] = []
    if spec.include_single:
        found.extend(Context("single", (t,)) for t in terms)
    for length in range(max(2, spec.min_disjunction_length), spec.max_disjunction_length + 1):
        for combo in _covering_combinations(terms, length, spec.required_values):
            if _whole_domain(combo, sizes):
                continue  # every value of its one variable: the universal context again
            if _joint_domain_size(combo, sizes) <= spec.max_domain_size:
                found.append(Context("disjunction", combo))
    for length in range(2, spec.max_conjunction_length + 1):
        for combo in itertools.combinations(terms, length):
            if len({t.variable for t in combo}) != length:
                continue
            if _joint_domain_size(combo, sizes) <= spec.max_domain_size:
                found.append(Context("conjunction", combo))
    found.extend(_set_conjunctions(variables, terms, spec))
    if spec.max_contexts is not None and len(found) > spec.max_contexts - 1:
        # A seeded subsample, kept in generation order so ids and indices stay readable.
        keep = sorted(random.Random(spec.seed).sample(range(len(found)), spec.max_contexts - 1))
        found = [found[i] for i in keep]
    return ContextSpace((Context.universal(), *found))


def _value_sets(
    variable: Variable, values: Sequence[Hashable], spec: ContextSpaceSpec
) -> list[tuple[Hashable, ...]]:
    """The allowed sets a set conjunction may give ``variable`` (see the module docstring),
    in generation order: by size, then in the order of ``values``."""
    domain = list(variable.domain or ())
    # Like every other family, sets draw only on candidate terms: a required value the
    # ``values`` filter removed is not added back.
    required = [v for v in dict.fromkeys(spec.required_values or ()) if v in values]
    optional = [v for v in values if v not in required]
    out: list[tuple[Hashable, ...]] = []
    for extra in range(1, spec.max_set_size - len(required) + 1):
        for chosen in itertools.combinations(optional, extra):
            allowed = (*required, *chosen)
            if len(allowed) < len(domain):
                out.append(allowed)
    return out


def _set_conjunctions(
    variables: Sequence[Variable], terms: Sequence[Term], spec: ContextSpaceSpec
) -> list[Context]:
    """Every set conjunction ``spec`` asks for over the variables of ``terms``."""
    if spec.max_set_conjunction_variables < 2:
        return []
    by_name = {v.name: v for v in variables}
    values: dict[str, list[Hashable]] = {}
    for t in terms:
        values.setdefault(t.variable, []).append(t.value)
    sets = {name: _value_sets(by_name[name], vals, spec) for name, vals in values.items()}
    names = [name for name in values if sets[name]]
    out: list[Context] = []
    for width in range(2, spec.max_set_conjunction_variables + 1):
        for combo in itertools.combinations(names, width):
            for choice in itertools.product(*(sets[name] for name in combo)):
                if all(len(allowed) == 1 for allowed in choice):
                    continue
                out.append(
                    Context(
                        "set_conjunction",
                        tuple(
                            Term(name, value)
                            for name, allowed in zip(combo, choice, strict=True)
                            for value in allowed
                        ),
                    )
                )
    return out
