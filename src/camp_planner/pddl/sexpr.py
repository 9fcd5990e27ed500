"""PDDL text to S-expressions, and the reading helpers the domain and problem readers share.

Tokens are lower-cased (PDDL names are case-insensitive) and keep their line, so every error
names the file and line of what it refuses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NoReturn

from camp_planner.core.errors import CampError
from camp_planner.pddl.model import OBJECT, SUPPORTED_REQUIREMENTS

_TOKEN_RE = re.compile(r"\s+|;[^\n]*|[()]|[^\s();]+")
_NAME_RE = re.compile(r"[a-z][a-z0-9_\-]*\Z")
_VARIABLE_RE = re.compile(r"\?[a-z][a-z0-9_\-]*\Z")
# ASCII digits only: \d would also take other scripts' digits, which Fast Downward cannot read.
_NUMBER_RE = re.compile(r"-?[0-9]+(?:\.[0-9]+)?\Z")
# Connectives of richer fragments: naming them in the error beats "unknown predicate or".
UNSUPPORTED_CONNECTIVES = frozenset({"or", "imply", "exists", "forall", "when"})
NUMERIC_EFFECTS = frozenset({"increase", "decrease", "assign", "scale-up", "scale-down"})


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


def show(node: SExpr) -> str:
    """``node`` in words for an error message."""
    if isinstance(node, Token):
        return f"'{node.text}'"
    if not node.items:
        return "()"
    head = node.items[0]
    return f"({head.text} ...)" if isinstance(head, Token) else "a nested list"


class Reader:
    """What reading a domain and reading a problem share: errors that name the place, and
    names, numbers, requirements and typed lists."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.requirements: frozenset[str] = frozenset({":strips"})

    def fail(self, node: SExpr | None, message: str) -> NoReturn:
        where = self.source if node is None else f"{self.source}:{node.line}"
        raise CampError(f"{where}: {message}")

    def as_list(self, node: SExpr, what: str) -> SList:
        if not isinstance(node, SList):
            self.fail(node, f"expected {what}, found {show(node)}")
        return node

    def as_token(self, node: SExpr, what: str) -> Token:
        if not isinstance(node, Token):
            self.fail(node, f"expected {what}, found {show(node)}")
        return node

    def name(self, node: SExpr, what: str) -> str:
        token = self.as_token(node, what)
        if not _NAME_RE.match(token.text):
            self.fail(token, f"expected {what}, found {show(token)}")
        return token.text

    def variable(self, node: SExpr, what: str) -> str:
        token = self.as_token(node, what)
        if not _VARIABLE_RE.match(token.text):
            self.fail(token, f"expected {what}, found {show(token)}")
        return token.text

    def number(self, node: SExpr, what: str) -> float:
        token = self.as_token(node, what)
        if not _NUMBER_RE.match(token.text):
            self.fail(token, f"expected {what}, found {show(token)}")
        value = float(token.text)
        if not math.isfinite(value):
            # Hundreds of digits: float() gives inf, which no cost sum or planner can use.
            self.fail(token, f"the number {token.text[:20]}... is too large")
        return value

    def head(self, node: SList, what: str) -> str:
        if not node.items or not isinstance(node.items[0], Token):
            self.fail(node, f"expected {what}, found {show(node)}")
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
            self.fail(top, f"expected {expected}, found {show(top)}")
        if len(exprs) > 1:
            self.fail(exprs[1], f"unexpected {show(exprs[1])} after {expected}")
        if len(top.items) < 2:
            self.fail(top, f"expected {expected}, found (define) without a name")
        header = self.as_list(top.items[1], f"({kind} NAME)")
        if len(header.items) != 2 or self.head(header, f"({kind} NAME)") != kind:
            self.fail(header, f"expected ({kind} NAME), found {show(header)}")
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
                self.fail(token, f"expected a requirement like :strips, found {show(token)}")
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
                    self.fail(type_node, f"unsupported type {show(type_node)} in {where}")
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


def too_deep(source: str) -> CampError:
    # Conditions, effects and goals are read recursively; a file nested thousands of levels
    # deep exhausts Python's stack long before any real domain would.
    return CampError(f"{source}: the PDDL is nested too deeply to read")
