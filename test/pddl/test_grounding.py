from __future__ import annotations

import pytest

from camp_planner.core.errors import CampError
from camp_planner.pddl.grounding import GroundTask, applicable, apply, ground, is_goal
from camp_planner.pddl.parser import parse_domain, parse_problem

DELIVERY = """
(define (domain delivery)
  (:requirements :strips :typing :action-costs)
  (:types truck - vehicle vehicle package - locatable place)
  (:predicates (at ?x - locatable ?p - place) (in ?p - package ?v - vehicle)
               (road ?from ?to - place))
  (:functions (total-cost) - number (road-length ?from ?to - place) - number)
  (:action drive
    :parameters (?v - vehicle ?from ?to - place)
    :precondition (and (at ?v ?from) (road ?from ?to))
    :effect (and (not (at ?v ?from)) (at ?v ?to)
                 (increase (total-cost) (road-length ?from ?to))))
  (:action load
    :parameters (?p - package ?v - vehicle ?l - place)
    :precondition (and (at ?p ?l) (at ?v ?l))
    :effect (and (not (at ?p ?l)) (in ?p ?v) (increase (total-cost) 1)))
  (:action unload
    :parameters (?p - package ?v - vehicle ?l - place)
    :precondition (and (in ?p ?v) (at ?v ?l))
    :effect (and (not (in ?p ?v)) (at ?p ?l) (increase (total-cost) 1.5))))
"""

# The farm has a road out but none in, so the truck can never get there.
DELIVERY_PROBLEM = """
(define (problem deliver-box)
  (:domain delivery)
  (:objects depot shop farm - place t1 - truck box - package)
  (:init (at t1 depot) (at box depot)
         (road depot shop) (road shop depot) (road farm depot)
         (= (road-length depot shop) 5) (= (road-length shop depot) 4)
         (= (road-length farm depot) 7))
  (:goal (at box shop))
  (:metric minimize (total-cost)))
"""


def _delivery(problem: str = DELIVERY_PROBLEM) -> GroundTask:
    domain = parse_domain(DELIVERY, "delivery.pddl")
    return ground(domain, parse_problem(problem, "p.pddl"))


def _run(task: GroundTask, plan: list[str]) -> tuple[frozenset[int], float]:
    ops = {op.name: op for op in task.operators}
    state, cost = task.init, 0.0
    for name in plan:
        op = ops[name]
        assert applicable(op, state), name
        state, cost = apply(op, state), cost + op.cost
    return state, cost


def test_delivery_grounds_to_reachable_fluents_and_operators() -> None:
    task = _delivery()
    # Static road facts are gone; nothing can ever be at the farm.
    assert task.fluents == (
        "at(box,depot)",
        "at(box,shop)",
        "at(t1,depot)",
        "at(t1,shop)",
        "in(box,t1)",
    )
    costs = {op.name: op.cost for op in task.operators}
    assert costs == {
        "drive(t1,depot,shop)": 5.0,
        "drive(t1,shop,depot)": 4.0,
        "load(box,t1,depot)": 1.0,
        "load(box,t1,shop)": 1.0,
        "unload(box,t1,depot)": 1.5,
        "unload(box,t1,shop)": 1.5,
    }
    assert [op.name for op in task.operators] == sorted(costs)
    drive = task.operators[0]
    assert (drive.schema, drive.args) == ("drive", ("t1", "depot", "shop"))
    assert drive.pre_pos == {task.fluent_index("at(t1,depot)")}
    assert drive.delete == {task.fluent_index("at(t1,depot)")}
    assert drive.add == {task.fluent_index("at(t1,shop)")}
    assert drive.pre_neg == frozenset()
    assert task.init == {task.fluent_index("at(t1,depot)"), task.fluent_index("at(box,depot)")}
    assert task.goal_pos == {task.fluent_index("at(box,shop)")}
    assert task.goal_neg == frozenset()
    assert task.objects == {
        "depot": "place",
        "shop": "place",
        "farm": "place",
        "t1": "truck",
        "box": "package",
    }


def test_plan_reaches_the_goal_with_the_expected_cost() -> None:
    task = _delivery()
    assert not is_goal(task, task.init)
    state, cost = _run(task, ["load(box,t1,depot)", "drive(t1,depot,shop)", "unload(box,t1,shop)"])
    assert is_goal(task, state)
    assert cost == 7.5
    assert task.fluents[next(iter(state - {task.fluent_index("at(t1,shop)")}))] == "at(box,shop)"


def test_unreachable_fluents_and_static_facts_are_absent() -> None:
    task = _delivery()
    for atom in ("at(t1,farm)", "at(box,farm)", "road(depot,shop)"):
        with pytest.raises(CampError, match="unknown fluent"):
            task.fluent_index(atom)
    assert all("farm" not in op.name for op in task.operators)


def test_unreachable_goal_fluent_is_kept() -> None:
    task = _delivery(DELIVERY_PROBLEM.replace("(:goal (at box shop))", "(:goal (at box farm))"))
    goal = task.fluent_index("at(box,farm)")
    assert task.goal_pos == {goal}
    assert all(goal not in op.add for op in task.operators)


def test_missing_cost_value_names_the_term() -> None:
    problem = DELIVERY_PROBLEM.replace("(= (road-length shop depot) 4)", "")
    with pytest.raises(CampError, match=r"p\.pddl: no value for \(road-length shop depot\)"):
        _delivery(problem)


def test_without_a_metric_every_operator_costs_one() -> None:
    # Plan length is the objective then, as Fast Downward counts it (test_metric.py).
    domain = parse_domain(
        "(define (domain d) (:predicates (p ?x) (q ?x))"
        " (:action a :parameters (?x) :precondition (p ?x) :effect (q ?x)))"
    )
    problem = parse_problem(
        "(define (problem i) (:domain d) (:objects o) (:init (p o)) (:goal (q o)))"
    )
    task = ground(domain, problem)
    assert task.fluents == ("q(o)",)
    assert [(op.name, op.cost, op.pre_pos) for op in task.operators] == [("a(o)", 1.0, frozenset())]
    assert task.init == frozenset()


ROOMS = """
(define (domain rooms)
  (:requirements :strips :typing :negative-preconditions :equality)
  (:types room)
  (:constants hall - room)
  (:predicates (at ?r - room) (blocked ?r - room) (alarm ?r - room) (visited ?r - room)
               (handempty))
  (:action go
    :parameters (?from ?to - room)
    :precondition (and (at ?from) (not (blocked ?to)) (not (alarm ?to)) (not (= ?from ?to)))
    :effect (and (not (at ?from)) (at ?to) (visited ?to)))
  (:action trip
    :parameters (?r - room)
    :precondition (and (at ?r) (not (= ?r hall)) (handempty))
    :effect (alarm ?r))
  (:action stay
    :parameters (?r ?s - room)
    :precondition (and (at ?r) (= ?r ?s))
    :effect (and (visited ?s) (not (handempty)))))
"""

ROOMS_PROBLEM = """
(define (problem tour)
  (:domain rooms)
  (:objects a b c - room)
  (:init (at hall) (blocked c) (handempty))
  (:goal (and (visited b) (not (alarm b)))))
"""


def _rooms() -> GroundTask:
    return ground(parse_domain(ROOMS, "rooms.pddl"), parse_problem(ROOMS_PROBLEM, "tour.pddl"))


def test_negative_preconditions_and_equality() -> None:
    task = _rooms()
    ops = {op.name: op for op in task.operators}
    # Inequality removes go(x,x); the static (not (blocked ?to)) removes every go(*,c).
    assert sorted(n for n in ops if n.startswith("go(")) == [
        "go(a,b)",
        "go(a,hall)",
        "go(b,a)",
        "go(b,hall)",
        "go(hall,a)",
        "go(hall,b)",
    ]
    assert sorted(n for n in ops if n.startswith("trip(")) == ["trip(a)", "trip(b)"]
    assert sorted(n for n in ops if n.startswith("stay(")) == [
        "stay(a,a)",
        "stay(b,b)",
        "stay(hall,hall)",
    ]
    # alarm(hall) can never become true, so that negative precondition is dropped.
    assert ops["go(a,hall)"].pre_neg == frozenset()
    assert ops["go(hall,a)"].pre_neg == {task.fluent_index("alarm(a)")}
    assert ops["trip(a)"].pre_pos == {task.fluent_index("at(a)"), task.fluent_index("handempty()")}
    assert "blocked(c)" not in task.fluents
    assert "at(c)" not in task.fluents
    assert task.goal_neg == {task.fluent_index("alarm(b)")}
    assert task.objects["hall"] == "room"


def test_negative_goal_and_negative_precondition_semantics() -> None:
    task = _rooms()
    state, _ = _run(task, ["go(hall,b)"])
    assert is_goal(task, state)
    state, _ = _run(task, ["go(hall,b)", "trip(b)"])
    assert not is_goal(task, state)
    ops = {op.name: op for op in task.operators}
    assert not applicable(ops["go(a,b)"], apply(ops["go(hall,a)"], state))
    after_stay = apply(ops["stay(hall,hall)"], task.init)
    assert not applicable(ops["trip(a)"], apply(ops["go(hall,a)"], after_stay))


def test_subtype_objects_match_supertype_parameters() -> None:
    domain = parse_domain(
        """(define (domain zoo) (:requirements :typing)
             (:types cat dog - mammal mammal bird - animal)
             (:predicates (fed ?a - animal) (hungry ?a - animal))
             (:action feed :parameters (?m - mammal) :precondition (hungry ?m)
               :effect (and (fed ?m) (not (hungry ?m)))))""",
    )
    problem = parse_problem(
        """(define (problem p) (:domain zoo) (:objects tom - cat rex - dog tweety - bird)
             (:init (hungry tom) (hungry rex) (hungry tweety))
             (:goal (and (fed tom) (fed rex))))"""
    )
    task = ground(domain, problem)
    assert [op.name for op in task.operators] == ["feed(rex)", "feed(tom)"]
    state, _ = _run(task, ["feed(tom)", "feed(rex)"])
    assert is_goal(task, state)


def test_static_goal_is_decided_at_grounding() -> None:
    domain = parse_domain(
        "(define (domain d) (:predicates (p) (s ?x) (done))"
        " (:action a :parameters () :precondition (p) :effect (done)))"
    )
    holds = parse_problem(
        "(define (problem i) (:domain d) (:objects o) (:init (p) (s o)) (:goal (and (s o) (done))))"
    )
    task = ground(domain, holds)
    assert task.fluents == ("done()",)
    fails = parse_problem("(define (problem i) (:domain d) (:objects o) (:init (p)) (:goal (s o)))")
    unsolvable = ground(domain, fails)
    assert unsolvable.goal_pos == {unsolvable.fluent_index("s(o)")}
    assert not is_goal(unsolvable, unsolvable.init)


def test_grounding_errors_name_the_problem_file() -> None:
    domain = parse_domain(DELIVERY, "delivery.pddl")
    problem = parse_problem(
        DELIVERY_PROBLEM.replace("(at box depot)", "(at parcel depot)"), "p7.pddl"
    )
    with pytest.raises(CampError, match=r"^p7\.pddl: undeclared object parcel"):
        ground(domain, problem)


def test_grounding_a_few_hundred_objects_grounds_only_what_the_roads_allow() -> None:
    # Grounding follows the static facts, so operators grow with the roads, not places squared.
    n = 300
    places = " ".join(f"p{i}" for i in range(n))
    roads = " ".join(f"(road p{i} p{i + 1}) (road p{i + 1} p{i})" for i in range(n - 1))
    lengths = " ".join(
        f"(= (road-length p{i} p{i + 1}) 1) (= (road-length p{i + 1} p{i}) 1)" for i in range(n - 1)
    )
    problem = f"""(define (problem line) (:domain delivery)
      (:objects {places} - place t1 t2 - truck box - package)
      (:init (at t1 p0) (at t2 p{n - 1}) (at box p0) {roads} {lengths})
      (:goal (at box p{n - 1})))"""
    task = _delivery(problem)
    drives = [op for op in task.operators if op.schema == "drive"]
    assert len(drives) == 2 * 2 * (n - 1)
    assert len(task.fluents) == 2 * n + n + 2  # trucks anywhere, box anywhere or in a truck
