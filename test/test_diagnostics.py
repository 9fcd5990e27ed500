"""The overrun watch names the step a call was in after its budget, and nothing before."""

from __future__ import annotations

import time

import pytest

from camp_planner.diagnostics import OverrunWatch, lateness


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


def test_lateness_says_how_late_and_where_only_past_the_margin() -> None:
    stacks = [["tamp.py:870:_ways_ahead <- stilman.py:185:_clear", 41]]
    assert lateness({"compute_time_s": 60.04, "past_timeout_stacks": stacks}, 60.0) is None
    text = lateness({"compute_time_s": 60.6, "past_timeout_stacks": stacks}, 60.0)
    assert text == (
        "returned 0.60 s past its 60 s, mostly in tamp.py:870:_ways_ahead <- "
        "stilman.py:185:_clear (41 samples)"
    )
    assert "not sampled (0 samples)" in str(lateness({"compute_time_s": 31.0}, 30.0))
