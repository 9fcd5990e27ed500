"""What the boxes of the rooms next to a route cost the CAMP: each test task's route CAMP
planned as role relevance builds it (the boxes of the route's rooms and of the rooms next
door), and again without the next-door boxes (the ``beside`` role dropped: what the CSIs
would say if evidence through doorways were never seen), paired per task and planner seed.

The second CAMP is not sound in general (a box just past a doorway can touch the robot or
the box it carries); it is the measure of what soundness costs, run on the same tasks.

    .venv/bin/python research/beside_boxes_cost.py --config config/namo/grid10.yaml \
        --tasks 10 --task-seed 7000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
from pathlib import Path

from camp_planner.config import with_test_seed
from camp_planner.core.camp import CAMP
from camp_planner.core.errors import CampError
from camp_planner.core.objective import run_episode
from camp_planner.domains.namo.domain import route_context
from camp_planner.eval.paired import paired_difference
from camp_planner.planners import make_planner
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--config", type=Path, required=True, help="a NAMO configuration with templates"
    )
    parser.add_argument("--tasks", type=_positive, default=10, help="test tasks")
    parser.add_argument("--repeats", type=_positive, default=1, help="planner seeds per task")
    parser.add_argument("--task-seed", type=int, help="draw the test tasks from this seed")
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    try:
        pipe = Pipeline.create("namo", args.config, args.artifacts)
        if pipe.basis is None:
            raise CampError(f"{args.config} names no context templates: nothing keeps by role")
        if args.task_seed is not None:
            pipe.config = with_test_seed(pipe.config, args.task_seed)
        roles = pipe.role_relevance()
    except CampError as exc:
        print(f"beside_boxes_cost: error: {exc}", file=sys.stderr)
        return 2
    inside = dataclasses.replace(roles, roles=frozenset(r for r in roles.roles if r[0] != "beside"))
    settings = pipe.planner_settings("tamp")
    sink = float(pipe.config["camp"]["sink_reward"])
    rows = []
    print("task seed  kept  without  CAMP s  without s  ok  ok-without")
    for index in range(args.tasks):
        task = pipe.task("test", index)
        context = route_context(task)
        for seed in range(args.repeats):
            row: dict[str, object] = {"task": index, "seed": seed}
            for name, summary in (("roles", roles), ("inside", inside)):
                mdp = pipe.domain.make_mdp(task, pipe.config)
                camp = CAMP.build(mdp, context, summary.relevant(mdp, context), sink)
                result = run_episode(
                    mdp,
                    make_planner("tamp", seed=seed, **settings),
                    lam=pipe.lam("tamp"),
                    timeout_s=float(pipe.config["timeout_s"]),
                    rng=random.Random(seed),
                    camp=camp,
                )
                row[name] = {
                    "kept": len(camp.state_vars),
                    "compute_time_s": result.compute_time_s,
                    "success": result.success,
                    "stage_times_s": result.stage_times_s,
                }
                mdp.close()  # type: ignore[attr-defined]
            rows.append(row)
            a, b = row["roles"], row["inside"]
            assert isinstance(a, dict) and isinstance(b, dict)
            print(
                f"{index:4d} {seed:4d} {a['kept']:5d} {b['kept']:8d} {a['compute_time_s']:7.2f} "
                f"{b['compute_time_s']:10.2f}  {'y' if a['success'] else 'n':>2}  "
                f"{'y' if b['success'] else 'n':>10}"
            )
    times = {
        k: [float(r[k]["compute_time_s"]) for r in rows]  # type: ignore[index]
        for k in ("roles", "inside")
    }
    diff = paired_difference(times["roles"], times["inside"])
    print(
        f"median CAMP {statistics.median(times['roles']):.2f} s, without the next-door boxes "
        f"{statistics.median(times['inside']):.2f} s; paired, with minus without "
        f"{diff['mean']:+.2f} s [{diff['ci_low']:+.2f}, {diff['ci_high']:+.2f}] over "
        f"{len(rows)} runs (faster without on {diff['a_wins']})"
    )
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "config": str(args.config)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
