"""Where a TAMP run's planning time went: the stages the planners report, named as the
benchmarks print them, and their means over runs (``bench_namo.py`` writes them,
``plot_bench_namo.py`` tabulates them per world size)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

# (key in a result's ``stage_times_s``, name as printed). Route searches and collision
# checks are parts of the planning stages before them.
STAGES = (
    ("setup", "selection and CAMP construction"),
    ("task_planning", "task planning"),
    ("motion_planning", "motion planning"),
    ("grasp_place", "grasps and placements"),
    ("route_search", "grid route searches"),
    ("collision_checks", "collision checks"),
)
# The stages that do not overlap: what they leave of a run's time is its rest (the
# simulator's steps and the symbolic bookkeeping of refinement).
TOP_STAGES = ("setup", "task_planning", "motion_planning", "grasp_place")


def stage_means(runs: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The mean seconds per run of each stage in :data:`STAGES` that any run (a result as
    ``bench_namo.py --json`` records it) reports; a run that does not report a stage, e.g.
    one resumed from an older checkpoint, counts 0."""
    keys = [k for k, _ in STAGES if any(k in r.get("stage_times_s", {}) for r in runs)]
    return {k: statistics.fmean(r.get("stage_times_s", {}).get(k, 0.0) for r in runs) for k in keys}
