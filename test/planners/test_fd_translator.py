"""The resident Fast Downward translator's protocol: a reply always answers its own request,
whatever failed before it, and budgets too large for the operating system's waits plan
normally."""

from __future__ import annotations

import json
import math
import os
import random
import select
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline
from camp_planner.domains.dinner.domain import DinnerDomain
from camp_planner.pddl.mdp import StripsMDP
from camp_planner.planners import fast_downward
from camp_planner.planners.fast_downward import FastDownward, FDRunner, _ResidentTranslator

pytestmark = pytest.mark.fast_downward

DOMAIN = """(define (domain two) (:requirements :strips) (:predicates (p) (q))
  (:action make-p :parameters () :precondition () :effect (p))
  (:action make-q :parameters () :precondition () :effect (q)))"""
# Two tasks with different plans, so that a reply given to the wrong request shows.
MAKE_P = "(define (problem wants-p) (:domain two) (:init) (:goal (p)))"
MAKE_Q = "(define (problem wants-q) (:domain two) (:init) (:goal (q)))"
# A goal on an undeclared predicate: the translator refuses it (a non-zero code).
BROKEN = "(define (problem broken) (:domain two) (:init) (:goal (r)))"


def _task(folder: Path, problem: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "domain.pddl").write_text(DOMAIN)
    (folder / "problem.pddl").write_text(problem)
    return folder


@pytest.fixture
def translator() -> Iterator[_ResidentTranslator]:
    """A helper of the test's own: a protocol broken by one test cannot leak into others."""
    helper = _ResidentTranslator()
    yield helper
    helper.close()


@pytest.fixture
def resident(monkeypatch: pytest.MonkeyPatch, translator: _ResidentTranslator) -> FDRunner:
    """A resident-mode runner whose helper is the test's own."""
    monkeypatch.setattr(fast_downward, "_RESIDENT", translator)
    return FDRunner(mode="resident")


def _select_failing_once(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Make the next ``select.select`` raise (as a budget too large for it once did); later
    calls wait as usual. Returns the list the failure is recorded in."""
    real = select.select
    failed: list[int] = []

    def select_once(*args: Any) -> Any:
        if not failed:
            failed.append(1)
            raise OverflowError("timestamp out of range for platform time_t")
        return real(*args)

    monkeypatch.setattr(select, "select", select_once)
    return failed


def test_a_wait_that_raises_does_not_hand_its_reply_to_the_next_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, translator: _ResidentTranslator
) -> None:
    broken = _task(tmp_path / "broken", BROKEN)
    good = _task(tmp_path / "good", MAKE_Q)
    translator.warm_up()
    failed = _select_failing_once(monkeypatch)
    with pytest.raises(OverflowError):
        translator.translate(broken, 60.0)
    assert failed
    assert translator.proc is None  # killed: it may still have answered the failed call
    code, log = translator.translate(good, 60.0)
    assert (code, log) == (0, "")
    assert (good / "output.sas").exists()


def test_a_stale_reply_in_the_pipe_is_discarded(
    tmp_path: Path, translator: _ResidentTranslator
) -> None:
    broken = _task(tmp_path / "broken", BROKEN)
    good = _task(tmp_path / "good", MAKE_Q)
    translator.warm_up()
    proc = translator.proc
    assert proc is not None and proc.stdin is not None
    # A request whose reply nobody read (its caller gave up): the next call must skip it.
    stale = {
        "id": -1,
        "domain": str(broken / "domain.pddl"),
        "problem": str(broken / "problem.pddl"),
        "sas": str(broken / "output.sas"),
    }
    os.write(proc.stdin.fileno(), (json.dumps(stale) + "\n").encode())
    assert translator.translate(good, 60.0) == (0, "")
    assert translator.translate(broken, 60.0)[0] != 0


@pytest.mark.parametrize("budget", [1e10, 1e300, math.inf])
def test_a_huge_budget_translates_normally(
    tmp_path: Path, translator: _ResidentTranslator, budget: float
) -> None:
    good = _task(tmp_path / "good", MAKE_Q)
    assert translator.translate(good, budget) == (0, "")
    broken = _task(tmp_path / "broken", BROKEN)
    assert translator.translate(broken, 60.0)[0] != 0


def test_the_runner_plans_the_next_task_after_a_failed_call(
    monkeypatch: pytest.MonkeyPatch, resident: FDRunner
) -> None:
    _select_failing_once(monkeypatch)
    with pytest.raises(OverflowError):
        resident.solve(DOMAIN, MAKE_P, Deadline(60.0))
    plan = resident.solve(DOMAIN, MAKE_Q, Deadline(60.0))
    assert [line for line in plan if not line.startswith(";")] == ["(make-q )"]
    plan = resident.solve(DOMAIN, MAKE_P, Deadline(60.0))
    assert [line for line in plan if not line.startswith(";")] == ["(make-p )"]


@pytest.mark.parametrize("mode", ["driver", "resident"])
@pytest.mark.parametrize("budget", [1e10, 1e300])
def test_the_runner_plans_with_a_huge_budget(
    mode: str, budget: float, monkeypatch: pytest.MonkeyPatch, translator: _ResidentTranslator
) -> None:
    monkeypatch.setattr(fast_downward, "_RESIDENT", translator)
    runner = FDRunner(mode=mode)
    plan = runner.solve(DOMAIN, MAKE_Q, Deadline(budget))
    assert [line for line in plan if not line.startswith(";")] == ["(make-q )"]


@pytest.mark.parametrize("mode", ["driver", "resident"])
def test_the_planner_plans_normally_with_a_timeout_of_1e10_s(
    mode: str, monkeypatch: pytest.MonkeyPatch, translator: _ResidentTranslator
) -> None:
    monkeypatch.setattr(fast_downward, "_RESIDENT", translator)
    domain = DinnerDomain()
    cfg = domain.default_config()
    mdp = domain.make_mdp(domain.make_tasks(cfg, "train")[1], cfg)
    assert isinstance(mdp, StripsMDP)
    reference = run_episode(
        mdp, FastDownward(mode=mode), lam=0.0, timeout_s=60, rng=random.Random(0)
    )
    huge = run_episode(mdp, FastDownward(mode=mode), lam=0.0, timeout_s=1e10, rng=random.Random(0))
    assert reference.success and huge.success
    assert huge.actions == reference.actions


def test_a_deadline_of_1e10_s_is_far_from_expired() -> None:
    for seconds in (1e10, 1e300, math.inf):
        deadline = Deadline(seconds)
        assert deadline.remaining > 1e9 and not deadline.expired()
        deadline.check()


def test_a_deadline_of_nan_seconds_is_refused() -> None:
    """NaN compares false with everything, so such a budget would never expire."""
    with pytest.raises(ValueError, match="NaN"):
        Deadline(math.nan)
