from __future__ import annotations

import pytest

from camp_planner.core.errors import CampError
from camp_planner.pddl.parser import (
    Atom,
    Equality,
    FunctionTerm,
    Literal,
    TypedName,
    parse_domain,
    parse_problem,
)

DELIVERY = """
; A truck carries packages along roads; driving costs the road's length.
(define (domain Delivery)
  (:requirements :strips :typing :action-costs)
  (:types truck - vehicle
          vehicle package - locatable
          place)
  (:predicates (at ?x - locatable ?p - place)
               (in ?p - package ?v - vehicle)
               (road ?from ?to - place))
  (:functions (total-cost) - number
              (road-length ?from ?to - place) - number)
  (:action drive
    :parameters (?v - vehicle ?from ?to - place)
    :precondition (and (at ?v ?from) (road ?from ?to))
    :effect (and (not (at ?v ?from)) (at ?v ?to)
                 (increase (total-cost) (road-length ?from ?to))))
  (:action LOAD  ; names are case-insensitive
    :parameters (?p - package ?v - vehicle ?l - place)
    :precondition (and (at ?p ?l) (at ?v ?l))
    :effect (and (not (at ?p ?l)) (in ?p ?v) (increase (total-cost) 1)))
  (:action unload
    :parameters (?p - package ?v - vehicle ?l - place)
    :precondition (and (in ?p ?v) (at ?v ?l))
    :effect (and (not (in ?p ?v)) (at ?p ?l) (increase (total-cost) 1.5))))
"""

DELIVERY_PROBLEM = """
(define (problem deliver-box)
  (:domain delivery)
  (:objects depot shop farm - place t1 - truck box - package)
  (:init (at t1 depot) (at box depot)
         (road depot shop) (road shop depot) (road farm depot)
         (= (road-length depot shop) 5) (= (road-length shop depot) 5)
         (= (road-length farm depot) 7) (= (total-cost) 0))
  (:goal (and (at box shop)))
  (:metric minimize (total-cost)))
"""


def test_domain_parses_types_predicates_functions_and_actions() -> None:
    d = parse_domain(DELIVERY, "delivery.pddl")
    assert d.name == "delivery"
    assert d.source == "delivery.pddl"
    assert d.requirements == {":strips", ":typing", ":action-costs"}
    assert d.types == {
        "truck": "vehicle",
        "vehicle": "locatable",
        "package": "locatable",
        "locatable": "object",
        "place": "object",
    }
    assert d.is_subtype("truck", "locatable")
    assert not d.is_subtype("place", "locatable")
    assert d.predicates["road"].params == (TypedName("?from", "place"), TypedName("?to", "place"))
    assert set(d.functions) == {"total-cost", "road-length"}
    drive, load, unload = d.actions
    assert [a.name for a in d.actions] == ["drive", "load", "unload"]
    assert drive.precondition == (
        Literal(Atom("at", ("?v", "?from"))),
        Literal(Atom("road", ("?from", "?to"))),
    )
    assert drive.add == (Atom("at", ("?v", "?to")),)
    assert drive.delete == (Atom("at", ("?v", "?from")),)
    assert drive.cost == FunctionTerm("road-length", ("?from", "?to"))
    assert load.cost == 1.0
    assert unload.cost == 1.5


def test_problem_parses_objects_init_values_goal_and_metric() -> None:
    domain = parse_domain(DELIVERY, "delivery.pddl")
    p = parse_problem(DELIVERY_PROBLEM, "p1.pddl", domain=domain)
    assert (p.name, p.domain_name, p.source) == ("deliver-box", "delivery", "p1.pddl")
    assert TypedName("t1", "truck") in p.objects
    assert Atom("road", ("farm", "depot")) in p.init
    assert p.function_values[FunctionTerm("road-length", ("farm", "depot"))] == 7.0
    assert p.goal == (Literal(Atom("at", ("box", "shop"))),)
    assert p.minimize_total_cost


def test_untyped_constants_equality_and_negative_preconditions() -> None:
    d = parse_domain(
        """(define (domain d) (:requirements :negative-preconditions :equality)
             (:constants home)
             (:predicates (at ?x) (handempty))
             (:action go :parameters (?x ?y)
               :precondition (and (at ?x) (not (at ?y)) (not (= ?x ?y)) (= ?y home)
                                  (handempty))
               :effect (and (at ?y) (not (at ?x)))))""",
        "d.pddl",
    )
    (go,) = d.actions
    assert d.constants == (TypedName("home", "object"),)
    assert Literal(Atom("at", ("?y",)), positive=False) in go.precondition
    assert Literal(Atom("handempty", ())) in go.precondition
    assert go.equalities == (Equality("?x", "?y", False), Equality("?y", "home", True))
    assert go.cost is None


def test_empty_and_missing_preconditions_are_allowed() -> None:
    d = parse_domain(
        """(define (domain d) (:predicates (p))
             (:action a :parameters () :precondition () :effect (p))
             (:action b :effect (not (p))))""",
    )
    assert [a.precondition for a in d.actions] == [(), ()]


UNSUPPORTED = [
    ":conditional-effects",
    ":adl",
    ":derived-predicates",
    ":durative-actions",
    ":numeric-fluents",
    ":fluents",
    ":disjunctive-preconditions",
    ":existential-preconditions",
    ":universal-preconditions",
    ":quantified-preconditions",
]


@pytest.mark.parametrize("requirement", UNSUPPORTED)
def test_unsupported_requirement_is_named(requirement: str) -> None:
    text = f"(define (domain d) (:requirements :strips {requirement}) (:predicates (p)))"
    with pytest.raises(CampError) as err:
        parse_domain(text, "dinner.pddl")
    assert str(err.value) == (
        f"unsupported PDDL requirement {requirement} in dinner.pddl (supported: :strips, "
        ":typing, :action-costs, :negative-preconditions, :equality)"
    )


def test_unsupported_requirement_in_a_problem_is_named() -> None:
    text = "(define (problem p) (:domain d) (:requirements :adl) (:goal (p)))"
    with pytest.raises(CampError, match=r":adl in p\.pddl"):
        parse_problem(text, "p.pddl")


def _domain(action: str, requirements: str = ":strips :typing") -> str:
    return f"""(define (domain d)
      (:requirements {requirements})
      (:types room)
      (:constants hall - room)
      (:predicates (at ?r - room) (link ?a ?b - room))
      {action})"""


MALFORMED_DOMAINS = {
    "unbalanced": ("(define (domain d) (:predicates (p))", "never closed"),
    "extra close": ("(define (domain d) (:predicates (p))))", "unexpected ')'"),
    "no define": ("(domain d)", "expected (define (domain NAME) ...)"),
    "empty": ("; nothing but a comment\n", "found no PDDL"),
    "problem as domain": ("(define (problem p) (:domain d))", "expected (domain NAME)"),
    "unknown predicate": (
        _domain("(:action a :parameters (?r - room) :precondition (in ?r) :effect (at ?r))"),
        "unknown predicate in in the precondition of action a",
    ),
    "wrong arity": (
        _domain("(:action a :parameters (?r - room) :precondition (link ?r) :effect (at ?r))"),
        "wrong arity: predicate link takes 2 argument(s), got 1",
    ),
    "undeclared parameter": (
        _domain("(:action a :parameters (?r - room) :effect (at ?s))"),
        "undeclared parameter ?s in the effect of action a",
    ),
    "undeclared object": (
        _domain("(:action a :parameters () :effect (at kitchen))"),
        "undeclared object kitchen",
    ),
    "undeclared type": (
        _domain("(:action a :parameters (?r - place) :effect (at ?r))"),
        "undeclared type place",
    ),
    "when": (
        _domain("(:action a :parameters (?r - room) :effect (when (at ?r) (at hall)))"),
        "unsupported 'when' in the effect of action a",
    ),
    "forall": (
        _domain("(:action a :parameters () :effect (forall (?r - room) (at ?r)))"),
        "unsupported 'forall'",
    ),
    "or": (
        _domain("(:action a :parameters () :precondition (or (at hall)) :effect (at hall))"),
        "unsupported 'or' in the precondition of action a",
    ),
    "exists": (
        _domain(
            "(:action a :parameters () :precondition (exists (?r - room) (at ?r))"
            " :effect (at hall))"
        ),
        "unsupported 'exists'",
    ),
    "imply": (
        _domain(
            "(:action a :parameters () :precondition (imply (at hall) (at hall)) :effect (at hall))"
        ),
        "unsupported 'imply'",
    ),
    "negation needs requirement": (
        _domain("(:action a :parameters () :precondition (not (at hall)) :effect (at hall))"),
        "needs the :negative-preconditions requirement",
    ),
    "equality needs requirement": (
        _domain("(:action a :parameters (?r - room) :precondition (= ?r hall) :effect (at ?r))"),
        "needs the :equality requirement",
    ),
    "types need typing": ("(define (domain d) (:types room))", "needs the :typing requirement"),
    "increase needs action costs": (
        _domain("(:action a :parameters () :effect (increase (total-cost) 1))"),
        "needs the :action-costs requirement",
    ),
    "two increases": (
        "(define (domain d) (:requirements :action-costs) (:predicates (p))"
        " (:functions (total-cost) - number)"
        " (:action a :effect (and (p) (increase (total-cost) 1) (increase (total-cost) 2))))",
        "more than one (increase (total-cost) ...)",
    ),
    "numeric fluent": (
        "(define (domain d) (:requirements :action-costs) (:predicates (p))"
        " (:functions (total-cost) - number (fuel) - number)"
        " (:action a :effect (and (p) (increase (fuel) 1))))",
        "only (total-cost) can be increased",
    ),
    "derived section": (
        "(define (domain d) (:predicates (p)) (:derived (p) (p)))",
        "unsupported domain section :derived",
    ),
    # float() of 400 digits is inf, which used to pass as a cost and crash the export.
    "cost too large": (
        "(define (domain d) (:requirements :action-costs) (:predicates (p))"
        " (:functions (total-cost) - number)"
        f" (:action a :effect (and (p) (increase (total-cost) {'9' * 400}))))",
        "is too large",
    ),
    # Used to escape as a RecursionError.
    "nested too deeply": (
        "(define (domain d) (:predicates (p))"
        f" (:action a :precondition {'(and ' * 5000}(p){')' * 5000} :effect (p)))",
        "nested too deeply",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_DOMAINS))
def test_malformed_domain_names_source_and_problem(case: str) -> None:
    text, expected = MALFORMED_DOMAINS[case]
    with pytest.raises(CampError) as err:
        parse_domain(text, "broken.pddl")
    message = str(err.value)
    assert message.startswith("broken.pddl"), message
    assert expected in message, message


def test_error_carries_the_line_number() -> None:
    text = "(define (domain d)\n  (:predicates (p))\n  (:action a\n    :effect (q)))"
    with pytest.raises(CampError, match=r"^broken\.pddl:4: unknown predicate q"):
        parse_domain(text, "broken.pddl")


def _problem(init: str, goal: str = "(at hall)", objects: str = "kitchen - room") -> str:
    return f"(define (problem p) (:domain d) (:objects {objects}) (:init {init}) (:goal {goal}))"


MALFORMED_PROBLEMS = {
    "unbalanced": ("(define (problem p) (:domain d) (:goal (at hall))", "never closed"),
    "unknown predicate": (_problem("(in kitchen)"), "unknown predicate in in :init"),
    "wrong arity": (_problem("(link kitchen)"), "wrong arity: predicate link takes 2"),
    "undeclared object": (_problem("(at garden)"), "undeclared object garden in at(garden)"),
    "undeclared object in goal": (
        _problem("(at hall)", goal="(not (at cellar))"),
        "undeclared object cellar",
    ),
    "undeclared type": (_problem("", objects="kitchen - place"), "undeclared type place"),
    "wrong domain": (
        "(define (problem p) (:domain other) (:goal (at hall)))",
        "the problem is for domain other",
    ),
    "or in goal": (_problem("", goal="(or (at hall) (at kitchen))"), "unsupported 'or'"),
    "negative init": (_problem("(not (at hall))"), "unsupported (not ...) in :init"),
    "missing goal": ("(define (problem p) (:domain d))", "missing (:goal ...)"),
    "bad metric": (
        "(define (problem p) (:domain d) (:goal (at hall)) (:metric maximize (total-cost)))",
        "unsupported metric",
    ),
    "nested too deeply": (
        _problem("", goal=f"{'(and ' * 5000}(at hall){')' * 5000}"),
        "nested too deeply",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_PROBLEMS))
def test_malformed_problem_names_source_and_problem(case: str) -> None:
    domain = parse_domain(_domain(""), "d.pddl")
    text, expected = MALFORMED_PROBLEMS[case]
    with pytest.raises(CampError) as err:
        parse_problem(text, "broken-problem.pddl", domain=domain)
    message = str(err.value)
    assert message.startswith("broken-problem.pddl"), message
    assert expected in message, message
