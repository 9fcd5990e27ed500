"""manip_sim: the manipulation task (paper domain D4) simulated in PyBullet, over ROS (the
``manip_sim`` executable).

The generic sim node (:mod:`camp_planner.ros.sim_node`) with the manipulation domain's
simulator: it publishes the task's scene on ``camp/scene``, executes every ``camp/plan`` (moves,
picks, regrasps, places) with every blue and green present and reports on
``camp/execution_report``.
"""

from __future__ import annotations

from camp_planner.ros.sim_node import main as sim_main


def main(args: list[str] | None = None) -> None:
    sim_main(args, domain="manip")


if __name__ == "__main__":
    main()
