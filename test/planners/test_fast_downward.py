"""Fast Downward on tasks its default translation cannot search: a delete effect whose fact
the precondition does not require becomes a conditional effect on a multi-valued variable,
which LM-cut refuses (exit code 34). The runner translates such a task again with binary
variables, where the translator drops that condition, and plans it in either mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from camp_planner.core.planner import Deadline, PlanningError
from camp_planner.planners import fast_downward
from camp_planner.planners.fast_downward import FDRunner

pytestmark = pytest.mark.fast_downward

# a1 deletes p1 without requiring it (found by test/fuzz/test_fuzz_pddl.py).
DOMAIN = """(define (domain tiny) (:requirements :strips) (:predicates (p0) (p1) (p2))
  (:action a0 :parameters () :precondition (and (p1)) :effect (and (p2) (not (p1))))
  (:action a1 :parameters () :precondition (and) :effect (and (p0) (not (p1)))))"""
PROBLEM = "(define (problem t) (:domain tiny) (:init (p1)) (:goal (and (p2))))"


@pytest.mark.parametrize("mode", ["driver", "resident"])
def test_a_delete_the_precondition_does_not_require_is_planned(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = FDRunner(mode=mode)
    attempts: list[tuple[str, ...]] = []
    attempt = runner._run_resident if mode == "resident" else runner._run

    def counted(folder: Path, deadline: Deadline, translate: tuple[str, ...]) -> list[str]:
        attempts.append(tuple(translate))
        return attempt(folder, deadline, translate)

    monkeypatch.setattr(runner, "_run_resident" if mode == "resident" else "_run", counted)
    plan = runner.solve(DOMAIN, PROBLEM, Deadline(60.0))
    assert [line for line in plan if not line.startswith(";")] == ["(a0 )"]
    assert attempts == [(), fast_downward._BINARY_VARIABLES]


def test_a_search_refused_for_another_reason_is_not_tried_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A search configuration that does not parse: one attempt, one clear error.
    runner = FDRunner(search="astar(no_such_heuristic())")
    calls: list[int] = []
    run = runner._run

    def counted(folder: Path, deadline: Deadline, translate: tuple[str, ...]) -> list[str]:
        calls.append(1)
        return run(folder, deadline, translate)

    monkeypatch.setattr(runner, "_run", counted)
    with pytest.raises(PlanningError, match="exit code"):
        runner.solve(DOMAIN, PROBLEM, Deadline(60.0))
    assert calls == [1]
