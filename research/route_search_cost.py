"""What one grid route search costs pure planning and the CAMP as the world grows: on each
test task, the reachability test (``_connected``) and a fewest-boxes query
(``_fewest_boxes_path``) from the start to the middle of the fourth room of the task's
lightest route, timed in the planning interface with every room allowed (pure planning)
and with the route's rooms allowed (the CAMP, which searches the crop of the grid around
them), with the crop's size.

    .venv/bin/python research/route_search_cost.py --config config/namo/grid20.yaml --tasks 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from camp_planner.config import with_test_seed
from camp_planner.core.errors import CampError
from camp_planner.domains.namo.domain import route_context
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="a NAMO configuration")
    parser.add_argument("--tasks", type=int, default=3, help="test tasks")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls of each")
    parser.add_argument("--task-seed", type=int, help="draw the test tasks from this seed")
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.repeats < 1:
        parser.error("--tasks and --repeats must be at least 1")
    try:
        pipe = Pipeline.create("namo", args.config, args.artifacts)
    except CampError as exc:
        print(f"route_search_cost: error: {exc}", file=sys.stderr)
        return 2
    from camp_planner.domains.namo.mdp import NamoMDP
    from camp_planner.domains.namo.tamp import NamoTampInterface
    from camp_planner.planners.tamp import InterfaceSettings

    if args.task_seed is not None:
        pipe.config = with_test_seed(pipe.config, args.task_seed)
    pipe.config["tasks"]["test"] = args.tasks
    times: dict[str, list[tuple[float, float]]] = {"pure": [], "CAMP": []}
    for task in pipe.domain.make_tasks(pipe.config, "test"):
        mdp = pipe.domain.make_mdp(task, pipe.config)
        assert isinstance(mdp, NamoMDP)
        rooms = frozenset(int(str(v)) for v in route_context(task).allowed_values()["robot_room"])
        x0, y0, x1, y1 = task.room_rect(sorted(rooms)[min(3, len(rooms) - 1)])
        goal = ((x0 + x1) / 2, (y0 + y1) / 2, 0.0)
        for label, allowed in (("pure", None), ("CAMP", rooms)):
            iface = NamoTampInterface(
                mdp, mdp.initial_state(), allowed, seed=0, settings=InterfaceSettings()
            )
            iface._connected(task.start, goal, False, "")  # the grids built once, untimed
            iface._fewest_boxes_path(task.start, goal, "")
            t0 = time.perf_counter()
            for _ in range(args.repeats):
                iface._connected(task.start, goal, False, "")
            t1 = time.perf_counter()
            for _ in range(args.repeats):
                iface._fewest_boxes_path(task.start, goal, "")
            t2 = time.perf_counter()
            crop = iface._view(scoped=True).static.shape
            n_rooms = len(allowed) if allowed else task.settings.n_rooms
            times[label].append(((t1 - t0) / args.repeats, (t2 - t1) / args.repeats))
            print(
                f"task {task.task_id} {label:<4} rooms {n_rooms:>3}"
                f" grid {crop[0]}×{crop[1]}: reachability {1000 * times[label][-1][0]:6.1f} ms,"
                f" fewest-boxes path {1000 * times[label][-1][1]:6.1f} ms",
                flush=True,
            )
            iface.close()
        mdp.close()
    for label, rows in times.items():
        print(
            f"{label:<4} median: reachability "
            f"{1000 * statistics.median(r[0] for r in rows):.1f} ms, fewest-boxes path "
            f"{1000 * statistics.median(r[1] for r in rows):.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
