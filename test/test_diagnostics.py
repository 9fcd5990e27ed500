"""The overrun watch names the step a call was in after its budget, and nothing before."""

from __future__ import annotations

import time

import pytest

from camp_planner.diagnostics import OverrunWatch


def _unbounded_step(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass  # busy, as a search holding the thread is


def _bounded_step() -> None:
    time.sleep(0.01)


def test_the_step_running_past_the_budget_is_named() -> None:
    with OverrunWatch(0.05, interval_s=0.005) as watch:
        _bounded_step()
        _unbounded_step(0.4)
    top = watch.top(3)
    assert top, "a call 0.35 s past its budget must be sampled"
    stack, samples = top[0]
    assert isinstance(stack, str) and stack.split(" <- ")[0].endswith(":_unbounded_step")
    assert isinstance(samples, int) and samples >= 2
    assert not any("_bounded_step" in str(s).split(" <- ")[0] for s, _ in top)


def test_a_call_within_its_budget_is_never_sampled() -> None:
    with OverrunWatch(5.0, interval_s=0.001) as watch:
        _unbounded_step(0.05)
    assert watch.top() == []
    assert watch._thread is None  # the watcher has ended with the call


@pytest.mark.parametrize("budget, interval, depth", [(-1.0, 0.01, 6), (1.0, 0.0, 6), (1, 1, 0)])
def test_bad_settings_are_refused(budget: float, interval: float, depth: int) -> None:
    with pytest.raises(ValueError, match="OverrunWatch"):
        OverrunWatch(budget, interval, depth)
