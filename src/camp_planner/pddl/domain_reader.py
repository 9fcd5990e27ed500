"""PDDL domains: types, constants, predicates, functions and STRIPS action schemas with
action costs, negative preconditions and equality; anything richer is refused by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from camp_planner.pddl.model import (
    OBJECT,
    TOTAL_COST,
    ActionDef,
    Atom,
    DomainDef,
    Equality,
    FunctionTerm,
    Literal,
    Signature,
    TypedName,
)
from camp_planner.pddl.sexpr import (
    NUMERIC_EFFECTS,
    UNSUPPORTED_CONNECTIVES,
    Reader,
    SExpr,
    SList,
    Token,
    show,
    too_deep,
)

_DOMAIN_SECTIONS = (":requirements", ":types", ":constants", ":predicates", ":functions")


class _DomainReader(Reader):
    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.types: dict[str, str] = {}
        self.constants: dict[str, str] = {}
        self.predicates: dict[str, Signature] = {}
        self.functions: dict[str, Signature] = {}

    def read(self, text: str) -> DomainDef:
        name, sections = self.define(text, "domain")
        single: dict[str, SList] = {}
        actions: list[SList] = []
        for section in sections:
            key = self.head(section, "a section keyword")
            if key == ":action":
                actions.append(section)
            elif key in _DOMAIN_SECTIONS:
                if key in single:
                    self.fail(section, f"duplicate ({key} ...) section")
                single[key] = section
            else:
                self.fail(
                    section,
                    f"unsupported domain section {key} "
                    f"(expected {', '.join(_DOMAIN_SECTIONS)} or :action)",
                )
        # Later sections refer to earlier ones, whatever order the file lists them in.
        if ":requirements" in single:
            self.read_requirements(single[":requirements"])
        if ":types" in single:
            self.read_types(single[":types"])
        if ":constants" in single:
            self.read_constants(single[":constants"])
        if ":predicates" in single:
            self.read_predicates(single[":predicates"])
        if ":functions" in single:
            self.read_functions(single[":functions"])
        parsed: dict[str, ActionDef] = {}
        for node in actions:
            action = self.read_action(node)
            if action.name in parsed:
                self.fail(node, f"duplicate action {action.name}")
            parsed[action.name] = action
        return DomainDef(
            name=name,
            requirements=self.requirements,
            types=dict(self.types),
            constants=tuple(TypedName(n, t) for n, t in self.constants.items()),
            predicates=dict(self.predicates),
            functions=dict(self.functions),
            actions=tuple(parsed.values()),
            source=self.source,
        )

    def check_type(self, name: str, token: Token, where: str) -> None:
        if name != OBJECT and name not in self.types:
            self.fail(token, f"undeclared type {name} in {where}")

    def read_types(self, node: SList) -> None:
        self.require(":typing", node, "(:types ...)")
        explicit: dict[str, str] = {}
        for name, parent, token in self.typed_list(node.items[1:], ":types", variables=False):
            if name == OBJECT:
                if parent != OBJECT:
                    self.fail(token, "the built-in type object cannot have a parent")
                continue
            if explicit.get(name, parent) != parent:
                self.fail(
                    token,
                    f"type {name} has two parents ({explicit[name]} and {parent}); "
                    "multiple inheritance is not supported",
                )
            explicit[name] = parent
        types = dict(explicit)
        for parent in explicit.values():
            # PDDL lets a supertype appear only after '-'; it then descends from object.
            if parent != OBJECT:
                types.setdefault(parent, OBJECT)
        for start in types:
            seen = {start}
            current = types[start]
            while current != OBJECT:
                if current in seen:
                    self.fail(node, f"the type hierarchy has a cycle through {start}")
                seen.add(current)
                current = types[current]
        self.types = types

    def read_constants(self, node: SList) -> None:
        for name, type_name, token in self.typed_list(node.items[1:], ":constants", False):
            self.check_type(type_name, token, ":constants")
            if name in self.constants:
                self.fail(token, f"duplicate constant {name}")
            self.constants[name] = type_name

    def read_params(self, items: Sequence[SExpr], where: str) -> tuple[TypedName, ...]:
        params: dict[str, str] = {}
        for name, type_name, token in self.typed_list(items, where, variables=True):
            self.check_type(type_name, token, where)
            if name in params:
                self.fail(token, f"duplicate parameter {name} in {where}")
            params[name] = type_name
        return tuple(TypedName(n, t) for n, t in params.items())

    def read_predicates(self, node: SList) -> None:
        for item in node.items[1:]:
            decl = self.as_list(item, "a predicate declaration like (at ?x - thing)")
            if not decl.items:
                self.fail(decl, "expected a predicate declaration, found ()")
            name = self.name(decl.items[0], "a predicate name")
            if name in self.predicates:
                self.fail(decl, f"duplicate predicate {name}")
            params = self.read_params(decl.items[1:], f"predicate {name}")
            self.predicates[name] = Signature(name, params)

    def read_functions(self, node: SList) -> None:
        self.require(":action-costs", node, "(:functions ...)")
        items = node.items[1:]
        i = 0
        while i < len(items):
            decl = self.as_list(items[i], "a function declaration like (total-cost)")
            if not decl.items:
                self.fail(decl, "expected a function declaration, found ()")
            name = self.name(decl.items[0], "a function name")
            params = self.read_params(decl.items[1:], f"function {name}")
            i += 1
            dash = items[i] if i < len(items) else None
            if isinstance(dash, Token) and dash.text == "-":
                if i + 1 >= len(items):
                    self.fail(dash, f"expected a type after '-' for function {name}")
                type_name = self.name(items[i + 1], f"the type of function {name}")
                if type_name != "number":
                    self.fail(
                        dash, f"unsupported type {type_name} of function {name} (only number)"
                    )
                i += 2
            if name == TOTAL_COST and params:
                self.fail(decl, "(total-cost) takes no arguments")
            if name in self.functions:
                self.fail(decl, f"duplicate function {name}")
            self.functions[name] = Signature(name, params)

    def term(self, node: SExpr, params: Mapping[str, str], where: str) -> str:
        token = self.as_token(node, f"a parameter or constant in {where}")
        if token.text.startswith("?"):
            if token.text not in params:
                self.fail(token, f"undeclared parameter {token.text} in {where}")
        elif token.text not in self.constants:
            self.fail(
                token,
                f"undeclared object {token.text} in {where} "
                "(a domain may only name objects declared in :constants)",
            )
        return token.text

    def atom(self, node: SList, params: Mapping[str, str], where: str) -> Atom:
        name = self.head(node, f"an atom in {where}")
        signature = self.predicates.get(name)
        if signature is None:
            self.fail(node, f"unknown predicate {name} in {where}")
        args = node.items[1:]
        if len(args) != len(signature.params):
            self.fail(
                node,
                f"wrong arity: predicate {name} takes {len(signature.params)} argument(s), "
                f"got {len(args)} in {where}",
            )
        return Atom(name, tuple(self.term(a, params, where) for a in args))

    def equality(
        self, node: SList, params: Mapping[str, str], where: str, positive: bool
    ) -> Equality:
        self.require(":equality", node, f"(= ...) in {where}")
        if len(node.items) != 3:
            self.fail(node, f"(= ...) takes exactly two arguments in {where}")
        left, right = (self.term(a, params, where) for a in node.items[1:])
        return Equality(left, right, positive)

    def condition(
        self,
        node: SExpr,
        params: Mapping[str, str],
        where: str,
        literals: list[Literal],
        equalities: list[Equality],
    ) -> None:
        formula = self.as_list(node, f"a condition in {where}")
        if not formula.items:
            return
        head = self.head(formula, f"a condition in {where}")
        if head == "and":
            for item in formula.items[1:]:
                self.condition(item, params, where, literals, equalities)
        elif head == "not":
            if len(formula.items) != 2:
                self.fail(formula, f"(not ...) takes exactly one condition in {where}")
            inner = self.as_list(
                formula.items[1], f"an atom or (= ...) inside (not ...) in {where}"
            )
            inner_head = self.head(inner, f"an atom inside (not ...) in {where}")
            if inner_head == "=":
                equalities.append(self.equality(inner, params, where, positive=False))
            elif inner_head in UNSUPPORTED_CONNECTIVES or inner_head in ("and", "not"):
                self.fail(
                    inner,
                    f"unsupported (not ({inner_head} ...)) in {where}: only an atom or "
                    "an equality may be negated",
                )
            else:
                self.require(":negative-preconditions", formula, f"(not ...) in {where}")
                literals.append(Literal(self.atom(inner, params, where), positive=False))
        elif head == "=":
            equalities.append(self.equality(formula, params, where, positive=True))
        elif head in UNSUPPORTED_CONNECTIVES or head in NUMERIC_EFFECTS:
            self.fail(
                formula,
                f"unsupported '{head}' in {where} (only atoms, not, = and and are allowed)",
            )
        else:
            literals.append(Literal(self.atom(formula, params, where), positive=True))

    def effect(
        self,
        node: SExpr,
        params: Mapping[str, str],
        where: str,
        adds: list[Atom],
        deletes: list[Atom],
        costs: list[float | FunctionTerm],
    ) -> None:
        formula = self.as_list(node, f"an effect in {where}")
        if not formula.items:
            return
        head = self.head(formula, f"an effect in {where}")
        if head == "and":
            for item in formula.items[1:]:
                self.effect(item, params, where, adds, deletes, costs)
        elif head == "not":
            if len(formula.items) != 2:
                self.fail(formula, f"(not ...) takes exactly one atom in {where}")
            inner = self.as_list(formula.items[1], f"an atom inside (not ...) in {where}")
            inner_head = self.head(inner, f"an atom inside (not ...) in {where}")
            if inner_head in UNSUPPORTED_CONNECTIVES or inner_head in ("and", "not", "="):
                self.fail(inner, f"unsupported (not ({inner_head} ...)) in {where}")
            deletes.append(self.atom(inner, params, where))
        elif head == "increase":
            self.require(":action-costs", formula, f"(increase ...) in {where}")
            if costs:
                self.fail(formula, f"more than one (increase (total-cost) ...) in {where}")
            costs.append(self.cost(formula, params, where))
        elif head in UNSUPPORTED_CONNECTIVES or head in NUMERIC_EFFECTS or head == "=":
            self.fail(
                formula,
                f"unsupported '{head}' in {where} "
                "(only atoms, (not atom), and, and (increase (total-cost) ...) are allowed)",
            )
        else:
            adds.append(self.atom(formula, params, where))

    def cost(self, node: SList, params: Mapping[str, str], where: str) -> float | FunctionTerm:
        expected = "(increase (total-cost) AMOUNT)"
        if len(node.items) != 3:
            self.fail(node, f"expected {expected} in {where}")
        target, amount = node.items[1], node.items[2]
        if not (
            isinstance(target, SList)
            and len(target.items) == 1
            and isinstance(target.items[0], Token)
            and target.items[0].text == TOTAL_COST
        ):
            self.fail(
                target, f"only (total-cost) can be increased, found {show(target)} in {where}"
            )
        if TOTAL_COST not in self.functions:
            self.fail(target, "(total-cost) is used but not declared in :functions")
        if isinstance(amount, Token):
            value = self.number(amount, f"a number or a function term in {where}")
            if value < 0:
                self.fail(amount, f"negative action cost {amount.text} in {where}")
            return value
        name = self.head(amount, f"a function term in {where}")
        signature = self.functions.get(name)
        if signature is None or name == TOTAL_COST:
            self.fail(amount, f"unknown cost function {name} in {where}")
        args = amount.items[1:]
        if len(args) != len(signature.params):
            self.fail(
                amount,
                f"wrong arity: function {name} takes {len(signature.params)} argument(s), "
                f"got {len(args)} in {where}",
            )
        return FunctionTerm(name, tuple(self.term(a, params, where) for a in args))

    def read_action(self, node: SList) -> ActionDef:
        if len(node.items) < 2:
            self.fail(node, "expected (:action NAME :parameters (...) ...)")
        name = self.name(node.items[1], "an action name")
        where = f"action {name}"
        fields: dict[str, SExpr] = {}
        items = node.items[2:]
        for i in range(0, len(items), 2):
            key = self.as_token(items[i], f":parameters, :precondition or :effect in {where}")
            if key.text not in (":parameters", ":precondition", ":effect"):
                self.fail(
                    key,
                    f"unexpected {show(key)} in {where} "
                    "(expected :parameters, :precondition or :effect)",
                )
            if key.text in fields:
                self.fail(key, f"duplicate {key.text} in {where}")
            if i + 1 >= len(items):
                self.fail(key, f"missing value after {key.text} in {where}")
            fields[key.text] = items[i + 1]
        parameters: tuple[TypedName, ...] = ()
        if ":parameters" in fields:
            plist = self.as_list(fields[":parameters"], f"a parameter list in {where}")
            parameters = self.read_params(plist.items, f"the parameters of {where}")
        params = {p.name: p.type for p in parameters}
        literals: list[Literal] = []
        equalities: list[Equality] = []
        if ":precondition" in fields:
            self.condition(
                fields[":precondition"],
                params,
                f"the precondition of {where}",
                literals,
                equalities,
            )
        adds: list[Atom] = []
        deletes: list[Atom] = []
        costs: list[float | FunctionTerm] = []
        if ":effect" in fields:
            self.effect(fields[":effect"], params, f"the effect of {where}", adds, deletes, costs)
        return ActionDef(
            name=name,
            parameters=parameters,
            precondition=tuple(literals),
            equalities=tuple(equalities),
            add=tuple(adds),
            delete=tuple(deletes),
            cost=costs[0] if costs else None,
        )


def parse_domain(text: str, source: str = "<domain>") -> DomainDef:
    """Parse a PDDL domain; ``source`` (usually the file name) is used in error messages."""
    try:
        return _DomainReader(source).read(text)
    except RecursionError:
        raise too_deep(source) from None
