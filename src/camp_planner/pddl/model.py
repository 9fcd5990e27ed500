"""The parsed PDDL model: names, atoms, literals, action schemas, domains and problems.

Plain frozen data, produced by :mod:`.domain_reader` and :mod:`.problem_reader` and read by
the grounder; the supported requirements are declared here, with the model they allow.
"""

from __future__ import annotations

from dataclasses import dataclass

SUPPORTED_REQUIREMENTS: tuple[str, ...] = (
    ":strips",
    ":typing",
    ":action-costs",
    ":negative-preconditions",
    ":equality",
)
OBJECT = "object"
TOTAL_COST = "total-cost"


@dataclass(frozen=True)
class TypedName:
    """A constant, object or parameter (``?x``) with its type (``object`` when untyped)."""

    name: str
    type: str


@dataclass(frozen=True)
class Atom:
    """A predicate applied to arguments: variables ``?x`` (in a domain) or object names."""

    predicate: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.predicate}({','.join(self.args)})"


@dataclass(frozen=True)
class Literal:
    """An atom or its negation."""

    atom: Atom
    positive: bool = True


@dataclass(frozen=True)
class Equality:
    """``(= left right)``, or ``(not (= left right))`` when not ``positive``."""

    left: str
    right: str
    positive: bool = True


@dataclass(frozen=True)
class FunctionTerm:
    """A numeric function applied to arguments, e.g. ``(road-length ?from ?to)``."""

    name: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"({' '.join((self.name, *self.args))})"


@dataclass(frozen=True)
class Signature:
    """A declared predicate or function: its name and typed parameters."""

    name: str
    params: tuple[TypedName, ...]


@dataclass(frozen=True)
class ActionDef:
    """An action schema. ``cost`` is None when the action does not increase the total cost."""

    name: str
    parameters: tuple[TypedName, ...]
    precondition: tuple[Literal, ...]
    equalities: tuple[Equality, ...]
    add: tuple[Atom, ...]
    delete: tuple[Atom, ...]
    cost: float | FunctionTerm | None


@dataclass(frozen=True)
class DomainDef:
    """A parsed domain. ``types`` maps every declared type except ``object`` to its parent."""

    name: str
    requirements: frozenset[str]
    types: dict[str, str]
    constants: tuple[TypedName, ...]
    predicates: dict[str, Signature]
    functions: dict[str, Signature]
    actions: tuple[ActionDef, ...]
    source: str = "<domain>"

    def has_type(self, name: str) -> bool:
        return name == OBJECT or name in self.types

    def is_subtype(self, sub: str, sup: str) -> bool:
        """Whether ``sub`` is ``sup`` or one of its descendants."""
        current = sub
        while current != sup:
            if current == OBJECT or current not in self.types:
                return False
            current = self.types[current]
        return True


@dataclass(frozen=True)
class ProblemDef:
    """A parsed problem; ``function_values`` holds the ``(= (f args) v)`` facts of ``:init``."""

    name: str
    domain_name: str
    requirements: frozenset[str]
    objects: tuple[TypedName, ...]
    init: tuple[Atom, ...]
    function_values: dict[FunctionTerm, float]
    goal: tuple[Literal, ...]
    minimize_total_cost: bool
    source: str = "<problem>"
