"""Progress reports for long jobs: plain lines when stderr is not a terminal."""

from __future__ import annotations

import io

import pytest

from camp_planner.progress import LineProgress, progress_bar


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_lines_come_at_most_once_per_interval_with_an_eta() -> None:
    out, clock = io.StringIO(), _Clock()
    bar = LineProgress(10, "scoring", interval_s=60.0, stream=out, clock=clock)
    # The job says at once that it started, before any item is done.
    assert out.getvalue().splitlines() == ["scoring: 0/10 (0 %), elapsed 00:00 [started]"]
    clock.t = 30.0
    bar.update()  # too soon for a line
    assert len(out.getvalue().splitlines()) == 1
    clock.t = 61.0
    bar.update()
    assert out.getvalue().splitlines()[-1] == "scoring: 2/10 (20 %), elapsed 01:01, ETA 04:04"
    clock.t = 3700.0
    bar.update(8)  # the last item always gets its line, without an ETA
    assert out.getvalue().splitlines()[-1] == "scoring: 10/10 (100 %), elapsed 1:01:40"
    bar.close()
    assert len(out.getvalue().splitlines()) == 3


def test_reused_items_are_reported_and_do_not_inflate_the_rate() -> None:
    out, clock = io.StringIO(), _Clock()
    bar = LineProgress(100, "labels", initial=90, interval_s=0.0, stream=out, clock=clock)
    clock.t = 10.0
    bar.update()
    lines = out.getvalue().splitlines()
    assert lines[0] == "labels: 90/100 (90 %), elapsed 00:00 [90 already done]"
    # One item in 10 s: the 9 left take 90 s, whatever the 90 reused ones were.
    assert lines[1] == "labels: 91/100 (91 %), elapsed 00:10, ETA 01:30"


def test_an_interrupted_job_says_where_it_stopped() -> None:
    out, clock = io.StringIO(), _Clock()
    bar = LineProgress(5, "eval", interval_s=60.0, stream=out, clock=clock)
    bar.update(2)
    bar.close()
    bar.close()
    assert out.getvalue().splitlines()[1:] == ["eval: 2/5 (40 %), elapsed 00:00 [stopped]"]


def test_off_a_terminal_the_bar_is_a_line_logger(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert isinstance(progress_bar(3, "x"), LineProgress)
