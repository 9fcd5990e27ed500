"""PDDL problems: objects, the initial state with function values, a conjunctive goal and
the total-cost metric; and the check of a problem against its domain."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NoReturn

from camp_planner.core.errors import CampError
from camp_planner.pddl.model import (
    OBJECT,
    TOTAL_COST,
    Atom,
    DomainDef,
    FunctionTerm,
    Literal,
    ProblemDef,
    TypedName,
)
from camp_planner.pddl.sexpr import (
    UNSUPPORTED_CONNECTIVES,
    Reader,
    SExpr,
    SList,
    Token,
    too_deep,
)

_PROBLEM_SECTIONS = (":domain", ":requirements", ":objects", ":init", ":goal", ":metric")


class _ProblemReader(Reader):
    def read(self, text: str) -> ProblemDef:
        name, sections = self.define(text, "problem")
        keyed: dict[str, SList] = {}
        for section in sections:
            key = self.head(section, "a section keyword")
            if key not in _PROBLEM_SECTIONS:
                self.fail(
                    section,
                    f"unsupported problem section {key} (expected {', '.join(_PROBLEM_SECTIONS)})",
                )
            if key in keyed:
                self.fail(section, f"duplicate ({key} ...) section")
            keyed[key] = section
        if ":domain" not in keyed:
            self.fail(None, "missing (:domain NAME)")
        if ":goal" not in keyed:
            self.fail(None, "missing (:goal ...)")
        domain_node = keyed[":domain"]
        if len(domain_node.items) != 2:
            self.fail(domain_node, "expected (:domain NAME)")
        domain_name = self.name(domain_node.items[1], "a domain name")
        if ":requirements" in keyed:
            self.read_requirements(keyed[":requirements"])
        objects: dict[str, str] = {}
        if ":objects" in keyed:
            # Whether types may be used depends on the domain: check_problem decides that.
            for obj, type_name, token in self.typed_list(
                keyed[":objects"].items[1:], ":objects", variables=False, typing_required=False
            ):
                if obj in objects:
                    self.fail(token, f"duplicate object {obj}")
                objects[obj] = type_name
        init: list[Atom] = []
        values: dict[FunctionTerm, float] = {}
        for item in keyed[":init"].items[1:] if ":init" in keyed else ():
            self.init_item(item, init, values)
        goal: list[Literal] = []
        self.goal(keyed[":goal"].items[1:], goal)
        return ProblemDef(
            name=name,
            domain_name=domain_name,
            requirements=self.requirements,
            objects=tuple(TypedName(n, t) for n, t in objects.items()),
            init=tuple(init),
            function_values=values,
            goal=tuple(goal),
            minimize_total_cost=self.metric(keyed[":metric"]) if ":metric" in keyed else False,
            source=self.source,
        )

    def ground_atom(self, node: SList, where: str) -> Atom:
        name = self.name(node.items[0] if node.items else node, f"a predicate name in {where}")
        args = tuple(self.name(a, f"an object name in {where}") for a in node.items[1:])
        return Atom(name, args)

    def init_item(self, node: SExpr, init: list[Atom], values: dict[FunctionTerm, float]) -> None:
        fact = self.as_list(node, "an atom or (= (f ...) NUMBER) in :init")
        head = self.head(fact, "an atom or (= (f ...) NUMBER) in :init")
        if head == "=":
            if len(fact.items) != 3:
                self.fail(fact, "expected (= (f ...) NUMBER) in :init")
            term_node = self.as_list(fact.items[1], "a function term like (f a b) in :init")
            term_atom = self.ground_atom(term_node, ":init")
            term = FunctionTerm(term_atom.predicate, term_atom.args)
            if term in values:
                self.fail(fact, f"duplicate value for {term} in :init")
            values[term] = self.number(fact.items[2], f"a number for {term} in :init")
        elif head == "not" or head == "and" or head in UNSUPPORTED_CONNECTIVES:
            self.fail(fact, f"unsupported ({head} ...) in :init: list the true atoms only")
        else:
            init.append(self.ground_atom(fact, ":init"))

    def goal(self, items: Sequence[SExpr], goal: list[Literal]) -> None:
        for item in items:
            formula = self.as_list(item, "a goal condition")
            if not formula.items:
                continue
            head = self.head(formula, "a goal condition")
            if head == "and":
                self.goal(formula.items[1:], goal)
            elif head == "not":
                if len(formula.items) != 2:
                    self.fail(formula, "(not ...) takes exactly one atom in :goal")
                inner = self.as_list(formula.items[1], "an atom inside (not ...) in :goal")
                inner_head = self.head(inner, "an atom inside (not ...) in :goal")
                if inner_head in UNSUPPORTED_CONNECTIVES or inner_head in ("and", "not", "="):
                    self.fail(inner, f"unsupported (not ({inner_head} ...)) in :goal")
                goal.append(Literal(self.ground_atom(inner, ":goal"), positive=False))
            elif head in UNSUPPORTED_CONNECTIVES or head == "=":
                self.fail(
                    formula, f"unsupported '{head}' in :goal (only atoms, not and and are allowed)"
                )
            else:
                goal.append(Literal(self.ground_atom(formula, ":goal"), positive=True))

    def metric(self, node: SList) -> bool:
        items = node.items
        if not (
            len(items) == 3
            and isinstance(items[1], Token)
            and items[1].text == "minimize"
            and isinstance(items[2], SList)
            and len(items[2].items) == 1
            and isinstance(items[2].items[0], Token)
            and items[2].items[0].text == TOTAL_COST
        ):
            self.fail(node, "unsupported metric: only (:metric minimize (total-cost)) is allowed")
        return True


def parse_problem(
    text: str, source: str = "<problem>", domain: DomainDef | None = None
) -> ProblemDef:
    """Parse a PDDL problem; with ``domain``, also check it against that domain."""
    try:
        problem = _ProblemReader(source).read(text)
    except RecursionError:
        raise too_deep(source) from None
    if domain is not None:
        check_problem(domain, problem)
    return problem


def check_problem(domain: DomainDef, problem: ProblemDef) -> None:
    """Raise a :class:`CampError` unless every name ``problem`` uses is declared and fits."""

    def fail(message: str) -> NoReturn:
        raise CampError(f"{problem.source}: {message}")

    if problem.domain_name != domain.name:
        fail(
            f"the problem is for domain {problem.domain_name}, "
            f"but {domain.source} defines domain {domain.name}"
        )
    typing = ":typing" in domain.requirements | problem.requirements
    objects = {c.name: c.type for c in domain.constants}
    for obj in problem.objects:
        if obj.type != OBJECT and not typing:
            fail(f"object {obj.name} has a type, but the domain does not declare :typing")
        if not domain.has_type(obj.type):
            fail(f"undeclared type {obj.type} of object {obj.name} in :objects")
        # Re-declaring a domain constant with its own type is common and harmless.
        if objects.get(obj.name, obj.type) != obj.type:
            fail(f"object {obj.name} is already a domain constant of type {objects[obj.name]}")
        objects[obj.name] = obj.type

    def check_args(args: tuple[str, ...], shown: str, where: str) -> None:
        for arg in args:
            if arg not in objects:
                fail(f"undeclared object {arg} in {shown} in {where}")

    def check_atom(atom: Atom, where: str) -> None:
        signature = domain.predicates.get(atom.predicate)
        if signature is None:
            fail(f"unknown predicate {atom.predicate} in {where}")
        if len(atom.args) != len(signature.params):
            fail(
                f"wrong arity: predicate {atom.predicate} takes {len(signature.params)} "
                f"argument(s), got {len(atom.args)} in {atom} in {where}"
            )
        check_args(atom.args, str(atom), where)

    for atom in problem.init:
        check_atom(atom, ":init")
    for literal in problem.goal:
        check_atom(literal.atom, ":goal")
    for term in problem.function_values:
        function = domain.functions.get(term.name)
        if function is None:
            fail(f"unknown function {term.name} in :init")
        if len(term.args) != len(function.params):
            fail(
                f"wrong arity: function {term.name} takes {len(function.params)} "
                f"argument(s), got {len(term.args)} in :init"
            )
        check_args(term.args, str(term), ":init")
    if problem.minimize_total_cost and TOTAL_COST not in domain.functions:
        fail(f"the metric minimises (total-cost), which {domain.source} does not declare")
