"""namo_sim: NAMO's task simulated in PyBullet, over ROS (the ``namo_sim`` executable).

The generic sim node (:mod:`camp_planner.ros.sim_node`) with NAMO's simulator: it publishes
the task's scene on ``camp/scene``, executes every ``camp/plan`` with every box present and reports
on ``camp/execution_report``.
"""

from __future__ import annotations

from camp_planner.ros.sim_node import main as sim_main


def main(args: list[str] | None = None) -> None:
    sim_main(args, domain="namo")


if __name__ == "__main__":
    main()
