"""Ground PDDL export of STRIPS MDPs and CAMPs, checked by Fast Downward itself."""

from __future__ import annotations

import random

import pytest

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.errors import CampError
from camp_planner.core.objective import run_episode
from camp_planner.pddl.export import export
from camp_planner.pddl.grounding import ground
from camp_planner.pddl.mdp import StripsMDP
from camp_planner.pddl.parser import parse_domain, parse_problem
from camp_planner.planners.fast_downward import FastDownward

DOMAIN = """
(define (domain lamp)
  (:requirements :strips :negative-preconditions :action-costs)
  (:predicates (on) (broken) (lit))
  (:functions (total-cost) - number)
  (:action switch :parameters () :precondition (and (not (on)) (not (broken)))
    :effect (and (on) (increase (total-cost) 1)))
  (:action smash :parameters () :precondition () :effect (and (broken) (increase (total-cost) 1)))
  (:action read :parameters () :precondition (on) :effect (and (lit) (increase (total-cost) 2))))
"""
PROBLEM = (
    "(define (problem p) (:domain lamp) (:init) (:goal (lit)) (:metric minimize (total-cost)))"
)


def _mdp() -> StripsMDP:
    domain = parse_domain(DOMAIN, "lamp.pddl")
    task = ground(domain, parse_problem(PROBLEM, "p.pddl", domain))
    return StripsMDP.from_task(task, "lamp", horizon=10)


def test_negative_preconditions_survive_the_export() -> None:
    exported = export(_mdp())
    assert ":negative-preconditions" in exported.domain_text
    assert "(not (on))" in exported.domain_text
    assert exported.n_operators == 3


def test_a_context_removes_the_operators_that_would_violate_it() -> None:
    mdp = _mdp()
    camp = CAMP.build(mdp, Context("single", (Term("broken()", 0),)), None)
    exported = export(camp)
    assert sorted(exported.action_names.values()) == ["read()", "switch()"]


@pytest.mark.fast_downward
def test_fast_downward_solves_the_exported_camp() -> None:
    mdp = _mdp()
    camp = CAMP.build(mdp, Context("single", (Term("broken()", 0),)), None)
    result = run_episode(
        mdp, FastDownward(), lam=0.0, timeout_s=30, rng=random.Random(0), camp=camp
    )
    assert result.success and [a[0] for a in result.actions] == ["switch()", "read()"]
    assert result.discounted_return == -3.0


def test_a_fractional_cost_is_refused_not_rounded() -> None:
    # Rounding would have Fast Downward optimise costs the return does not charge (its
    # translator refuses decimals in the lifted files as well).
    domain = parse_domain(
        DOMAIN.replace("(lit) (increase (total-cost) 2)", "(lit) (increase (total-cost) 2.5)")
    )
    mdp = StripsMDP.from_task(ground(domain, parse_problem(PROBLEM, "p.pddl", domain)), "l", 10)
    with pytest.raises(CampError, match=r"read\(\) costs 2\.5: .*whole-number"):
        export(mdp)
