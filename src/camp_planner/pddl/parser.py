"""Parse PDDL domains and problems in the STRIPS fragment the planners can ground.

The fragment is STRIPS with typing, action costs, negative preconditions and equality.
Anything outside it is rejected with a :class:`CampError` naming the construct and the file
(with a line number where there is one), so a domain the planners cannot handle fails when it
is loaded instead of being silently misread. Names are case-insensitive and kept lower-case.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

from camp_planner.core.errors import CampError

SUPPORTED_REQUIREMENTS: tuple[str, ...] = (
    ":strips",
    ":typing",
    ":action-costs",
    ":negative-preconditions",
    ":equality",
)
OBJECT = "object"
TOTAL_COST = "total-cost"

_TOKEN_RE = re.compile(r"\s+|;[^\n]*|[()]|[^\s();]+")
_NAME_RE = re.compile(r"[a-z][a-z0-9_\-]*\Z")
_VARIABLE_RE = re.compile(r"\?[a-z][a-z0-9_\-]*\Z")
# ASCII digits only: \d would also take other scripts' digits, which Fast Downward cannot read.
_NUMBER_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?\Z")
# Connectives of richer fragments: naming them in the error beats "unknown predicate or".
_UNSUPPORTED_CONNECTIVES = frozenset({"or", "imply", "exists", "forall", "when"})
_NUMERIC_EFFECTS = frozenset({"increase", "decrease", "assign", "scale-up", "scale-down"})
_DOMAIN_SECTIONS = (":requirements", ":types", ":constants", ":predicates", ":functions")
_PROBLEM_SECTIONS = (":domain", ":requirements", ":objects", ":init", ":goal", ":metric")


# --- the parsed model ----------------------------------------------------------------------
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


# --- S-expressions ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Token:
    """A lower-cased word of the input and the line it is on."""

    text: str
    line: int


@dataclass(frozen=True)
class SList:
    """A parenthesised list and the line of its opening parenthesis."""

    items: tuple[SExpr, ...]
    line: int


SExpr = Token | SList


def _tokens(text: str) -> Iterator[Token]:
    line = 1
    for match in _TOKEN_RE.finditer(text):
        chunk = match.group()
        if chunk[0].isspace():
            line += chunk.count("\n")
        elif chunk[0] != ";":
            yield Token(chunk.lower(), line)


def read_sexprs(text: str, source: str) -> list[SExpr]:
    """Split ``text`` into its top-level S-expressions; comments start with ``;``."""
    stack: list[tuple[int, list[SExpr]]] = [(0, [])]
    for token in _tokens(text):
        if token.text == "(":
            stack.append((token.line, []))
        elif token.text == ")":
            if len(stack) == 1:
                raise CampError(f"{source}:{token.line}: unbalanced parentheses: unexpected ')'")
            line, items = stack.pop()
            stack[-1][1].append(SList(tuple(items), line))
        else:
            stack[-1][1].append(token)
    if len(stack) > 1:
        raise CampError(
            f"{source}:{stack[-1][0]}: unbalanced parentheses: the '(' on this line is never closed"
        )
    return stack[0][1]


def _show(node: SExpr) -> str:
    if isinstance(node, Token):
        return f"'{node.text}'"
    if not node.items:
        return "()"
    head = node.items[0]
    return f"({head.text} ...)" if isinstance(head, Token) else "a nested list"


# --- shared reading helpers ------------------------------------------------------------------
class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source
        self.requirements: frozenset[str] = frozenset({":strips"})

    def fail(self, node: SExpr | None, message: str) -> NoReturn:
        where = self.source if node is None else f"{self.source}:{node.line}"
        raise CampError(f"{where}: {message}")

    def as_list(self, node: SExpr, what: str) -> SList:
        if not isinstance(node, SList):
            self.fail(node, f"expected {what}, found {_show(node)}")
        return node

    def as_token(self, node: SExpr, what: str) -> Token:
        if not isinstance(node, Token):
            self.fail(node, f"expected {what}, found {_show(node)}")
        return node

    def name(self, node: SExpr, what: str) -> str:
        token = self.as_token(node, what)
        if not _NAME_RE.match(token.text):
            self.fail(token, f"expected {what}, found {_show(token)}")
        return token.text

    def variable(self, node: SExpr, what: str) -> str:
        token = self.as_token(node, what)
        if not _VARIABLE_RE.match(token.text):
            self.fail(token, f"expected {what}, found {_show(token)}")
        return token.text

    def number(self, node: SExpr, what: str) -> float:
        token = self.as_token(node, what)
        if not _NUMBER_RE.match(token.text):
            self.fail(token, f"expected {what}, found {_show(token)}")
        value = float(token.text)
        if not math.isfinite(value):
            # Hundreds of digits: float() gives inf, which no cost sum or planner can use.
            self.fail(token, f"the number {token.text[:20]}... is too large")
        return value

    def head(self, node: SList, what: str) -> str:
        if not node.items or not isinstance(node.items[0], Token):
            self.fail(node, f"expected {what}, found {_show(node)}")
        return node.items[0].text

    def require(self, requirement: str, node: SExpr, construct: str) -> None:
        if requirement not in self.requirements:
            self.fail(node, f"{construct} needs the {requirement} requirement")

    def define(self, text: str, kind: str) -> tuple[str, list[SList]]:
        """Check the ``(define (KIND NAME) (:section ...) ...)`` frame; return NAME, sections."""
        expected = f"(define ({kind} NAME) ...)"
        exprs = read_sexprs(text, self.source)
        if not exprs:
            self.fail(None, f"expected {expected}, found no PDDL")
        top = exprs[0]
        if (
            not isinstance(top, SList)
            or not top.items
            or not isinstance(top.items[0], Token)
            or top.items[0].text != "define"
        ):
            self.fail(top, f"expected {expected}, found {_show(top)}")
        if len(exprs) > 1:
            self.fail(exprs[1], f"unexpected {_show(exprs[1])} after {expected}")
        if len(top.items) < 2:
            self.fail(top, f"expected {expected}, found (define) without a name")
        header = self.as_list(top.items[1], f"({kind} NAME)")
        if len(header.items) != 2 or self.head(header, f"({kind} NAME)") != kind:
            self.fail(header, f"expected ({kind} NAME), found {_show(header)}")
        name = self.name(header.items[1], f"a {kind} name")
        sections = []
        for item in top.items[2:]:
            section = self.as_list(
                item, f"a section like (:{'action' if kind == 'domain' else 'init'} ...)"
            )
            key = self.head(section, "a section keyword")
            if not key.startswith(":"):
                self.fail(section, f"expected a section keyword like :requirements, found '{key}'")
            sections.append(section)
        return name, sections

    def read_requirements(self, node: SList) -> None:
        found = {":strips"}
        for item in node.items[1:]:
            token = self.as_token(item, "a requirement like :strips")
            if not token.text.startswith(":"):
                self.fail(token, f"expected a requirement like :strips, found {_show(token)}")
            if token.text not in SUPPORTED_REQUIREMENTS:
                raise CampError(
                    f"unsupported PDDL requirement {token.text} in {self.source} "
                    f"(supported: {', '.join(SUPPORTED_REQUIREMENTS)})"
                )
            found.add(token.text)
        self.requirements = frozenset(found)

    def typed_list(
        self, items: Sequence[SExpr], where: str, variables: bool, typing_required: bool = True
    ) -> list[tuple[str, str, Token]]:
        """Read ``a b - t c`` into (name, type, token) triples; untyped names get ``object``."""
        kind = "a variable like ?x" if variables else "a name"
        result: list[tuple[str, str, Token]] = []
        pending: list[tuple[str, Token]] = []
        i = 0
        while i < len(items):
            item = items[i]
            if isinstance(item, Token) and item.text == "-":
                if not pending:
                    self.fail(item, f"'-' without names before it in {where}")
                if i + 1 >= len(items):
                    self.fail(item, f"expected a type after '-' in {where}")
                type_node = items[i + 1]
                if isinstance(type_node, SList):
                    self.fail(type_node, f"unsupported type {_show(type_node)} in {where}")
                if typing_required:
                    self.require(":typing", item, f"the typed list in {where}")
                type_name = self.name(type_node, f"a type name in {where}")
                result.extend((name, type_name, token) for name, token in pending)
                pending = []
                i += 2
                continue
            token = self.as_token(item, f"{kind} in {where}")
            text = self.variable(token, kind) if variables else self.name(token, kind)
            pending.append((text, token))
            i += 1
        result.extend((name, OBJECT, token) for name, token in pending)
        return result


# --- domains ---------------------------------------------------------------------------------
class _DomainReader(_Reader):
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
            elif inner_head in _UNSUPPORTED_CONNECTIVES or inner_head in ("and", "not"):
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
        elif head in _UNSUPPORTED_CONNECTIVES or head in _NUMERIC_EFFECTS:
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
            if inner_head in _UNSUPPORTED_CONNECTIVES or inner_head in ("and", "not", "="):
                self.fail(inner, f"unsupported (not ({inner_head} ...)) in {where}")
            deletes.append(self.atom(inner, params, where))
        elif head == "increase":
            self.require(":action-costs", formula, f"(increase ...) in {where}")
            if costs:
                self.fail(formula, f"more than one (increase (total-cost) ...) in {where}")
            costs.append(self.cost(formula, params, where))
        elif head in _UNSUPPORTED_CONNECTIVES or head in _NUMERIC_EFFECTS or head == "=":
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
                target, f"only (total-cost) can be increased, found {_show(target)} in {where}"
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
                    f"unexpected {_show(key)} in {where} "
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


def _too_deep(source: str) -> CampError:
    # Conditions, effects and goals are read recursively; a file nested thousands of levels
    # deep exhausts Python's stack long before any real domain would.
    return CampError(f"{source}: the PDDL is nested too deeply to read")


def parse_domain(text: str, source: str = "<domain>") -> DomainDef:
    """Parse a PDDL domain; ``source`` (usually the file name) is used in error messages."""
    try:
        return _DomainReader(source).read(text)
    except RecursionError:
        raise _too_deep(source) from None


# --- problems --------------------------------------------------------------------------------
class _ProblemReader(_Reader):
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
        elif head == "not" or head == "and" or head in _UNSUPPORTED_CONNECTIVES:
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
                if inner_head in _UNSUPPORTED_CONNECTIVES or inner_head in ("and", "not", "="):
                    self.fail(inner, f"unsupported (not ({inner_head} ...)) in :goal")
                goal.append(Literal(self.ground_atom(inner, ":goal"), positive=False))
            elif head in _UNSUPPORTED_CONNECTIVES or head == "=":
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
        raise _too_deep(source) from None
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
