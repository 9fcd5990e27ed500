"""Fuzzing the PDDL path.

Parsing and grounding: the courier example's domain and problem, mutated token by token
(tokens and parentheses deleted, duplicated, swapped or inserted, unknown requirements,
bad costs, other scripts' characters, empty files), either ground to a task the export can
write, or are refused with a :class:`CampError` naming the file, never another exception;
and the unmutated files ground the same afterwards.

One metric: for random tiny STRIPS problems, with and without ``(:metric minimize
(total-cost))``, the return of Fast Downward's plan is minus the plan's cost under PDDL's
metric (action costs with the metric, plan length without), and that cost is the optimum a
brute-force Dijkstra over the task's few states finds, whether the planner read the lifted
files or the exported ground PDDL.
"""

from __future__ import annotations

import heapq
import itertools
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from camp_planner.core.errors import CampError
from camp_planner.core.objective import run_episode
from camp_planner.pddl.export import export
from camp_planner.pddl.grounding import GroundTask, ground
from camp_planner.pddl.mdp import PddlSource, StripsMDP
from camp_planner.pddl.parser import SUPPORTED_REQUIREMENTS, parse_domain, parse_problem
from camp_planner.planners.fast_downward import FastDownward

COURIER = Path(__file__).resolve().parents[2] / "examples" / "pddl" / "courier"
DOMAIN_TEXT = (COURIER / "domain.pddl").read_text()
PROBLEM_TEXT = (COURIER / "p1.pddl").read_text()
TOKEN = re.compile(r"\s+|;[^\n]*|[()]|[^\s();]+")
POOL = [
    "(", ")", "()", "-", "?x", "?from", "and", "not", "or", "=", "increase", "(total-cost)",
    "total-cost", ":requirements", ":adl", ":fluents", ":durative-actions", ":typing",
    ":action-costs", ":parameters", ":precondition", ":effect", ":action", "room", "parcel",
    "object", "number", "-5", "0", "1.5", "nan", "inf", "-inf", "1e9", "9" * 40, "9" * 400,
    "é", "\u00a0", "\u0663", "\uff11", "\U0001f600", "\x00", ";", "define", "domain", "go",
]  # fmt: skip
BAD_NUMBERS = ["-1", "-0.5", "nan", "inf", "-inf", "1e5", "0x10", "9" * 400, "\u0663", "½", ""]


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` with a few tokens deleted, duplicated, swapped, inserted or replaced."""
    tokens = _tokens(text)
    for _ in range(draw(st.integers(1, 4))):
        words = [i for i, t in enumerate(tokens) if not t.isspace()]
        action = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "replace"]))
        i = draw(st.sampled_from(words))
        if action == "delete":
            del tokens[i]
        elif action == "duplicate":
            tokens.insert(i, tokens[i] + " ")
        elif action == "swap":
            j = draw(st.sampled_from(words))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif action == "insert":
            tokens.insert(i, f" {draw(st.sampled_from(POOL))} ")
        else:
            tokens[i] = draw(st.one_of(st.sampled_from(POOL), st.text(min_size=1, max_size=4)))
    return "".join(tokens)


def _reference() -> tuple[int, int]:
    task = _ground(DOMAIN_TEXT, PROBLEM_TEXT)
    assert task is not None
    return len(task.fluents), len(task.operators)


def _ground(domain_text: str, problem_text: str) -> GroundTask | None:
    """The grounded task, exported as a CAMP would be, or None after checking the refusal is
    a CampError naming one of the files (parsing, grounding) or the operator (the export,
    which no longer knows the files)."""
    try:
        domain = parse_domain(domain_text, "domain.pddl")
        task = ground(domain, parse_problem(problem_text, "p1.pddl", domain))
    except CampError as exc:
        assert "domain.pddl" in str(exc) or "p1.pddl" in str(exc), str(exc)
        return None
    try:
        export(StripsMDP.from_task(task, "p1", horizon=50))
    except CampError as exc:
        assert any(op.name in str(exc) for op in task.operators), str(exc)
        return None
    return task


REFERENCE = _reference()


def _still_works() -> None:
    task = _ground(DOMAIN_TEXT, PROBLEM_TEXT)
    assert task is not None and (len(task.fluents), len(task.operators)) == REFERENCE


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.one_of(
        st.tuples(mutated_text(DOMAIN_TEXT), st.just(PROBLEM_TEXT)),
        st.tuples(st.just(DOMAIN_TEXT), mutated_text(PROBLEM_TEXT)),
        st.tuples(mutated_text(DOMAIN_TEXT), mutated_text(PROBLEM_TEXT)),
        st.tuples(st.sampled_from(["", " \n", ";", "()", "(define)"]), st.just(PROBLEM_TEXT)),
        st.tuples(st.just(DOMAIN_TEXT), st.sampled_from(["", "\n\n", "(", ")"])),
        st.tuples(st.text(max_size=80), st.text(max_size=80)),
    )
)
def test_mutated_courier_files_ground_or_are_refused(texts: tuple[str, str]) -> None:
    _ground(*texts)
    _still_works()


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    requirement=st.from_regex(r":[a-z][a-z\-]{0,14}", fullmatch=True).filter(
        lambda r: r not in SUPPORTED_REQUIREMENTS
    ),
    in_problem=st.booleans(),
)
def test_an_unknown_requirement_is_named(requirement: str, in_problem: bool) -> None:
    domain, problem = DOMAIN_TEXT, PROBLEM_TEXT
    if in_problem:
        problem = problem.replace(
            "(:domain courier)", f"(:domain courier) (:requirements {requirement})"
        )
    else:
        domain = domain.replace(":action-costs", f":action-costs {requirement}")
    with pytest.raises(CampError, match=f"unsupported PDDL requirement {requirement} in"):
        _ground_strict(domain, problem)
    _still_works()


def _ground_strict(domain_text: str, problem_text: str) -> None:
    domain = parse_domain(domain_text, "domain.pddl")
    task = ground(domain, parse_problem(problem_text, "p1.pddl", domain))
    export(StripsMDP.from_task(task, "p1", horizon=50))


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    number=st.one_of(
        st.sampled_from(BAD_NUMBERS),
        st.integers(max_value=-1).map(str),
        st.decimals(0, 10**6, allow_nan=False, allow_infinity=False, places=2)
        .filter(lambda d: d % 1 != 0)
        .map(str),
        st.integers(2**31, 10**30).map(str),
    ),
    where=st.sampled_from(["action", "init"]),
)
def test_a_bad_cost_is_refused(number: str, where: str) -> None:
    # Every cost here matters: pick and drop cost 1 each, and every corridor's length is
    # charged by a go the robot can take.
    if where == "action":
        domain = DOMAIN_TEXT.replace(
            "(increase (total-cost) 1)", f"(increase (total-cost) {number})"
        )
        problem = PROBLEM_TEXT
    else:
        domain = DOMAIN_TEXT
        problem = re.sub(
            r"\(= \(length (\w) (\w)\) \d+\)", rf"(= (length \1 \2) {number})", PROBLEM_TEXT
        )
    with pytest.raises(CampError):
        _ground_strict(domain, problem)
    _still_works()


# --- one metric: the return charges what Fast Downward minimised ---------------------------
@dataclass(frozen=True)
class TinyAction:
    pre: frozenset[int]
    neg: frozenset[int]
    add: frozenset[int]
    delete: frozenset[int]
    cost: int
    charged: bool  # whether the action says (increase (total-cost) cost)


@dataclass(frozen=True)
class TinyTask:
    n: int
    actions: tuple[TinyAction, ...]
    init: frozenset[int]
    goal: frozenset[int]
    metric: bool

    def cost(self, action: TinyAction) -> int:
        """PDDL's metric: the action cost with (:metric minimize (total-cost)), else 1."""
        return (action.cost if action.charged else 0) if self.metric else 1

    def texts(self) -> tuple[str, str]:
        negative = any(a.neg for a in self.actions)
        requirements = ":strips :action-costs" + (" :negative-preconditions" if negative else "")
        actions = []
        for k, a in enumerate(self.actions):
            pre = [f"(p{i})" for i in sorted(a.pre)] + [f"(not (p{i}))" for i in sorted(a.neg)]
            eff = [f"(p{i})" for i in sorted(a.add)] + [f"(not (p{i}))" for i in sorted(a.delete)]
            if a.charged:
                eff.append(f"(increase (total-cost) {a.cost})")
            actions.append(
                f"(:action a{k} :parameters () :precondition (and {' '.join(pre)})"
                f" :effect (and {' '.join(eff)}))"
            )
        domain = (
            f"(define (domain tiny) (:requirements {requirements})"
            f" (:predicates {' '.join(f'(p{i})' for i in range(self.n))})"
            f" (:functions (total-cost) - number) {' '.join(actions)})"
        )
        problem = (
            "(define (problem t) (:domain tiny)"
            f" (:init (= (total-cost) 0) {' '.join(f'(p{i})' for i in sorted(self.init))})"
            f" (:goal (and {' '.join(f'(p{i})' for i in sorted(self.goal))}))"
            + (" (:metric minimize (total-cost)))" if self.metric else ")")
        )
        return domain, problem

    def optimum(self) -> int | None:
        """The cheapest plan's cost under the metric, by Dijkstra over all reachable states."""
        frontier: list[tuple[int, tuple[int, ...]]] = [(0, tuple(sorted(self.init)))]
        best: dict[frozenset[int], int] = {self.init: 0}
        while frontier:
            cost, key = heapq.heappop(frontier)
            state = frozenset(key)
            if cost > best[state]:
                continue
            if self.goal <= state:
                return cost
            for a in self.actions:
                if a.pre <= state and not (a.neg & state):
                    nxt = (state - a.delete) | a.add
                    total = cost + self.cost(a)
                    if total < best.get(nxt, total + 1):
                        best[nxt] = total
                        heapq.heappush(frontier, (total, tuple(sorted(nxt))))
        return None


@st.composite
def tiny_tasks(draw: st.DrawFn) -> TinyTask:
    """A chain of actions from an initial atom to the goal (so that most tasks have plans of
    a few steps), plus random actions that may open shortcuts, dead ends or cheaper detours."""
    n = draw(st.integers(3, 5))
    props = st.sampled_from(range(n))
    order = draw(st.permutations(range(n)))
    chain = order[: draw(st.integers(1, n - 1)) + 1]

    def action(pre: frozenset[int], neg: frozenset[int], add: frozenset[int]) -> TinyAction:
        cost = draw(st.integers(0, 5))
        return TinyAction(
            pre=pre,
            neg=neg - pre,
            add=add,
            delete=frozenset(draw(st.sets(props, max_size=2))),
            cost=cost,
            charged=cost > 0 or draw(st.booleans()),
        )

    actions = [
        action(frozenset({a}), frozenset(), frozenset({b})) for a, b in itertools.pairwise(chain)
    ]
    for _ in range(draw(st.integers(0, 3))):
        actions.append(
            action(
                frozenset(draw(st.sets(props, max_size=2))),
                frozenset(draw(st.sets(props, max_size=1))),
                frozenset(draw(st.sets(props, min_size=1, max_size=2))),
            )
        )
    goal = frozenset({chain[-1], *draw(st.sets(props, max_size=1))})
    init = (frozenset(draw(st.sets(props))) | {chain[0]}) - {chain[-1]}
    return TinyTask(n, tuple(draw(st.permutations(actions))), init, goal, draw(st.booleans()))


@pytest.mark.fast_downward
@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(tiny=tiny_tasks(), lifted=st.booleans())
def test_the_return_is_minus_the_optimal_cost_under_the_metric(
    tiny: TinyTask, lifted: bool
) -> None:
    domain_text, problem_text = tiny.texts()
    domain = parse_domain(domain_text, "tiny.pddl")
    task = ground(domain, parse_problem(problem_text, "t.pddl", domain))
    source = PddlSource(domain_text, problem_text) if lifted else None
    mdp = StripsMDP.from_task(task, "tiny", horizon=40, source=source)
    result = run_episode(mdp, FastDownward(), lam=0.0, timeout_s=60, rng=random.Random(0))
    optimum = tiny.optimum()
    if optimum is None:
        assert not result.success, (domain_text, problem_text)
        return
    assert result.success, (domain_text, problem_text, result.failures)
    charged = sum(tiny.cost(tiny.actions[int(str(a[0])[1:].split("(")[0])]) for a in result.actions)
    assert result.discounted_return == -charged == -optimum, (domain_text, problem_text)
