"""The work NAMO's TAMP interface counts (``domains/namo/tamp/work.py``): collision checks,
IK requests and grid cells at fixed costs, and OMPL's budget as a count of checks."""

import math

import pytest

from camp_planner.core.planner import Deadline
from camp_planner.planners.tamp import InterfaceSettings

pytestmark = [pytest.mark.pybullet]


def test_namo_work_counts_checks_ik_and_grid_cells_and_sets_ompls_budget_in_checks() -> None:
    from camp_planner.domains.namo.mdp import NamoMDP
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.domains.namo.tamp import work as namo_work
    from camp_planner.domains.namo.world import generate_task

    task = generate_task(0, 1000)
    mdp = NamoMDP.from_task(task)
    try:
        iface = NamoTampInterface(
            mdp, mdp.initial_state(), None, seed=0, settings=InterfaceSettings()
        )
        assert iface.work() == 0.0
        scene = iface._scene()
        for k in range(5):
            scene.blocked_at((1.0 + 0.1 * k, 1.0, 0.0), 0.0, frozenset())
        scene.arm_solution(1.5, 1.0, 0.3)
        scene.arm_solution(1.5, 1.0, 0.3)  # remembered, and still counted: the same work
        # Reachability is tested on the grid: its cells count too.
        assert iface._connected(task.start, (1.5, 1.5, 0.0), False, "")
        assert iface.grid_cells > 0
        expected = (
            5 * namo_work.CHECK_WORK_S
            + 2 * namo_work.IK_WORK_S
            + iface.grid_cells * namo_work.GRID_CELL_WORK_S
        )
        assert iface.work() == pytest.approx(expected)
        limits = iface._ompl_limits(0.5, Deadline(60.0))
        assert limits["max_checks"] == math.ceil(0.5 / namo_work.CHECK_WORK_S)
        assert 59.0 < limits["timeout_s"] <= 60.0
        iface.close()
    finally:
        mdp.close()
