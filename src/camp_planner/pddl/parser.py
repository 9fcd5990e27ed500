"""Parse PDDL domains and problems in the STRIPS fragment the planners can ground.

The fragment is STRIPS with typing, action costs, negative preconditions and equality.
Anything outside it is rejected with a :class:`CampError` naming the construct and the file
(with a line number where there is one), so a domain the planners cannot handle fails when it
is loaded instead of being silently misread. Names are case-insensitive and kept lower-case.

This module is the parser's public API; the work is split along its seams: the model
(:mod:`.model`), S-expressions and the shared reading helpers (:mod:`.sexpr`), domains
(:mod:`.domain_reader`) and problems (:mod:`.problem_reader`).
"""

from __future__ import annotations

from camp_planner.pddl.domain_reader import parse_domain
from camp_planner.pddl.model import (
    OBJECT,
    SUPPORTED_REQUIREMENTS,
    TOTAL_COST,
    ActionDef,
    Atom,
    DomainDef,
    Equality,
    FunctionTerm,
    Literal,
    ProblemDef,
    Signature,
    TypedName,
)
from camp_planner.pddl.problem_reader import check_problem, parse_problem
from camp_planner.pddl.sexpr import SExpr, SList, Token, read_sexprs

__all__ = [
    "OBJECT",
    "SUPPORTED_REQUIREMENTS",
    "TOTAL_COST",
    "ActionDef",
    "Atom",
    "DomainDef",
    "Equality",
    "FunctionTerm",
    "Literal",
    "ProblemDef",
    "SExpr",
    "SList",
    "Signature",
    "Token",
    "TypedName",
    "check_problem",
    "parse_domain",
    "parse_problem",
    "read_sexprs",
]
