"""The NAMO profile: the package's functions, pure beside CAMP, above a share of the run."""

from __future__ import annotations

import cProfile
from collections.abc import Callable
from types import ModuleType


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
