"""The work NAMO's TAMP interface has done, in nominal seconds: the clock its motion
budgets (and the planner's restart cutoffs) are measured on.

Each collision check, IK request, grid node searched and cell labelled counts at a fixed
cost, so a budget ends at the same point on any machine, and the same planning call makes
the same plan on a busy or a slow one.
"""

from __future__ import annotations

import math
from typing import Any

from camp_planner.core.planner import Deadline
from camp_planner.domains.namo.tamp.base import InterfaceBase

# Nominal seconds per unit of work. Measured on the machine of record (2026-11-28, pure
# TAMP on 10 tasks of the paper's world and 3 of the 10×10 one, 2 seeds): 6.7-7.1 µs of
# OMPL query per validity check, 0.5-0.6 ms per IK request, 77-82 ns per node of a grid
# search and 5-9 ns per cell labelled. Those were 70 % of planning time, so each is raised
# to carry its share of the code around it (checks less: grasps and placements check too):
# a planning call's work then came to 0.9-1.1 times its planning time.
CHECK_WORK_S = 8e-6
IK_WORK_S = 0.8e-3
GRID_NODE_WORK_S = 110e-9
GRID_CELL_WORK_S = 10e-9


class WorkAccounting(InterfaceBase):
    """The interface's work clock, and OMPL's limits for a budget on it."""

    def work(self) -> float:
        """The work this interface has done, in nominal seconds: its collision checks, IK
        solves and grid cells searched, each at a fixed cost (``CHECK_WORK_S`` and the
        like). The costs include a share of the code around each (a planning call's work
        came to about its planning time on the machine of record), and counts do not depend
        on the machine: a budget measured on this clock ends at the same point anywhere."""
        scene = self.mdp.scene()
        checks0, ik0 = self._work_from
        return float(
            (scene.checks - checks0) * CHECK_WORK_S
            + (scene.ik_requests - ik0) * IK_WORK_S
            + self.grid_nodes * GRID_NODE_WORK_S
            + self.grid_cells * GRID_CELL_WORK_S
        )

    def _ompl_limits(self, budget: float, deadline: Deadline) -> dict[str, Any]:
        """``plan_base_path``'s limits for a query with ``budget`` of work: validity checks,
        with the planning call's time left as a cap on its seconds."""
        return {
            "timeout_s": max(deadline.call.remaining, 1e-3),
            "max_checks": max(1, math.ceil(budget / CHECK_WORK_S)),
        }
