"""The NAMO profile: the package's functions, pure beside CAMP, above a share of the run."""

from __future__ import annotations

import cProfile
import re
from collections.abc import Callable
from types import ModuleType

import pytest


def test_the_table_lists_the_functions_above_the_share_of_either_run(
    load_script: Callable[[str], ModuleType],
) -> None:
    prof = load_script("profile_namo")
    pure = {"domains/namo/tamp.py:_fewest_boxes_path": (100, 2.0), "mdp.py:step": (10, 0.01)}
    camp = {
        "domains/namo/tamp.py:_fewest_boxes_path": (50, 0.5),
        "domains/namo/tamp.py:_ways_ahead": (5, 0.3),
    }
    text = prof.table({"pure": pure, "CAMP": camp}, {"pure": 4.0, "CAMP": 1.0}, 0.05)
    lines = text.splitlines()
    assert lines[0].startswith("| function | pure calls |")
    # 20 ms a call in pure planning, 10 in the CAMP; the step is under 5 % of either run,
    # and the ways-ahead searches are over 5 % of the CAMP's alone.
    assert (
        lines[2]
        == "| domains/namo/tamp.py:_fewest_boxes_path | 100 | 2.00 | 20.00 | 50 | 0.50 | 10.00 |"
    )
    assert lines[3] == "| domains/namo/tamp.py:_ways_ahead | 0 | 0.00 | – | 5 | 0.30 | 60.00 |"
    assert len(lines) == 4


def test_only_the_packages_own_functions_are_counted(
    load_script: Callable[[str], ModuleType],
) -> None:
    from camp_planner.core.context import Context

    prof = load_script("profile_namo")
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(3):
        Context.universal()
    sorted(range(10))
    profiler.disable()
    functions = prof.package_functions(profiler)
    assert functions["core/context.py:universal"][0] == 3
    assert all(".py:" in key for key in functions) and "sorted" not in str(functions)


def test_each_sides_time_is_split_at_ompls_queries(
    load_script: Callable[[str], ModuleType],
) -> None:
    prof = load_script("profile_namo")
    profiles = {
        "pure": {prof.OMPL_QUERY: (10, 3.0), prof.OMPL_CHECK: (100_000, 2.5)},
        "CAMP": {prof.OMPL_QUERY: (4, 1.0), prof.OMPL_CHECK: (20_000, 0.8)},
    }
    totals = {
        "pure": {"runs": 2, "planning_s": 5.0, "work_s": 4.0},
        "CAMP": {"runs": 2, "planning_s": 2.5, "work_s": 0.0},
    }
    lines = prof.split_at_ompl(profiles, totals).splitlines()
    # 3 s of 5 inside OMPL's queries, 30 µs per check inside them; no work counted: a dash.
    assert lines[3] == "| pure | 2 | 5.00 | 4.00 | 1.25 | 3.00 | 2.00 | 100000 | 30.0 |"
    assert lines[4] == "| CAMP | 2 | 2.50 | 0.00 | – | 1.00 | 1.50 | 20000 | 50.0 |"


@pytest.mark.pybullet
def test_the_selectors_camps_are_profiled_beside_pure_planning(
    load_script: Callable[[str], ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--context", "selector", "--task", "0", "--tasks", "2", "--seeds", "2"]
    assert load_script("profile_namo").main(argv) == 0
    out = capsys.readouterr().out
    # Both planner seeds of the one task, the CAMP side named by the context the gated
    # selector planned in (universal when the gate keeps it, a room set otherwise).
    assert re.search(r"task 0, planner seed 1, CAMP \((universal|robot_room[^)]*)\)", out)
    assert "task 1," not in out
    assert "| pure | 2 |" in out and "| CAMP | 2 |" in out
    assert "motion/ompl_se2.py:_attempt" in out
