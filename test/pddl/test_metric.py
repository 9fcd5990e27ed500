"""One objective for the PDDL path: the MDP's return charges what Fast Downward optimised.

With ``(:metric minimize (total-cost))`` that is the action costs; without a metric Fast
Downward minimises plan length, so every operator costs 1. Both ways of giving a task to the
planner are checked: the user's lifted files (pure planning) and the exported ground PDDL
(what a CAMP gets).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from camp_planner.core.objective import EpisodeResult, run_episode
from camp_planner.pddl.export import export
from camp_planner.pddl.grounding import ground
from camp_planner.pddl.mdp import PddlSource, StripsMDP
from camp_planner.pddl.parser import parse_domain, parse_problem
from camp_planner.planners.fast_downward import FastDownward

# One expensive step straight to the goal, or a chain of four cheap ones.
SHORTCUT = (Path(__file__).parent / "data" / "shortcut-domain.pddl").read_text()
METRIC = " (:metric minimize (total-cost))"


def _shortcut_problem(metric: bool) -> str:
    return (
        "(define (problem p) (:domain shortcut) (:init (s0) (= (total-cost) 0))"
        f" (:goal (done)){METRIC if metric else ''})"
    )


# No action costs at all: a 16-step chain.
CHAIN_LENGTH = 16
CHAIN = """
(define (domain chain)
  (:requirements :strips :typing)
  (:types node)
  (:predicates (at ?n - node) (next ?a ?b - node))
  (:action step :parameters (?a ?b - node) :precondition (and (at ?a) (next ?a ?b))
    :effect (and (at ?b) (not (at ?a)))))
"""
CHAIN_PROBLEM = (
    "(define (problem walk) (:domain chain)"
    f" (:objects {' '.join(f'n{k}' for k in range(CHAIN_LENGTH + 1))} - node)"
    f" (:init (at n0) {' '.join(f'(next n{k} n{k + 1})' for k in range(CHAIN_LENGTH))})"
    f" (:goal (at n{CHAIN_LENGTH})))"
)


def _mdp(domain_text: str, problem_text: str, lifted: bool) -> StripsMDP:
    domain = parse_domain(domain_text, "domain.pddl")
    problem = parse_problem(problem_text, "problem.pddl", domain)
    # Without a source the planner gets the exported ground PDDL, as for a CAMP.
    source = PddlSource(domain_text, problem_text) if lifted else None
    return StripsMDP.from_task(ground(domain, problem), "p", horizon=40, source=source)


def _episode(mdp: StripsMDP) -> tuple[EpisodeResult, FastDownward]:
    planner = FastDownward()
    result = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success
    return result, planner


@pytest.mark.fast_downward
@pytest.mark.parametrize("lifted", [True, False], ids=["lifted", "ground"])
def test_without_a_metric_the_return_charges_plan_length(lifted: bool) -> None:
    result, planner = _episode(_mdp(SHORTCUT, _shortcut_problem(metric=False), lifted))
    assert [a[0] for a in result.actions] == ["expensive()"]
    assert result.discounted_return == -1.0
    assert planner.last_stats["input"] == ("lifted" if lifted else "ground")


@pytest.mark.fast_downward
@pytest.mark.parametrize("lifted", [True, False], ids=["lifted", "ground"])
def test_with_the_metric_the_return_charges_action_costs(lifted: bool) -> None:
    result, _ = _episode(_mdp(SHORTCUT, _shortcut_problem(metric=True), lifted))
    assert [a[0] for a in result.actions] == ["c1()", "c2()", "c3()", "c4()"]
    assert result.discounted_return == -4.0


@pytest.mark.fast_downward
@pytest.mark.parametrize("lifted", [True, False], ids=["lifted", "ground"])
def test_a_domain_without_action_costs_charges_one_per_step(lifted: bool) -> None:
    result, planner = _episode(_mdp(CHAIN, CHAIN_PROBLEM, lifted))
    assert len(result.actions) == CHAIN_LENGTH
    assert result.discounted_return == -float(CHAIN_LENGTH)
    assert planner.last_stats["plan_cost"] == CHAIN_LENGTH


@pytest.mark.parametrize("metric", [False, True])
def test_operator_costs_and_the_export_follow_the_metric(metric: bool) -> None:
    mdp = _mdp(SHORTCUT, _shortcut_problem(metric), lifted=False)
    assert mdp.task is not None
    costs = {op.name: op.cost for op in mdp.task.operators}
    expected = 10.0 if metric else 1.0
    assert costs == {"expensive()": expected, "c1()": 1.0, "c2()": 1.0, "c3()": 1.0, "c4()": 1.0}
    # The ground PDDL a CAMP is planned in charges exactly these costs.
    written = re.findall(r"\(increase \(total-cost\) (\d+)\)", export(mdp).domain_text)
    assert sorted(int(c) for c in written) == sorted(int(c) for c in costs.values())


def test_a_costless_action_costs_nothing_under_the_metric_and_one_without() -> None:
    domain_text = (
        "(define (domain free) (:requirements :strips :action-costs) (:predicates (p) (q))"
        " (:functions (total-cost) - number)"
        " (:action a :parameters () :precondition (p) :effect (q)))"
    )
    for metric, cost in ((True, 0.0), (False, 1.0)):
        problem = (
            f"(define (problem i) (:domain free) (:init (p)) (:goal (q)){METRIC if metric else ''})"
        )
        task = _mdp(domain_text, problem, lifted=False).task
        assert task is not None and [op.cost for op in task.operators] == [cost]
