"""Benchmark: TAMP planning time in NAMO, pure planning vs the CAMP of a small context.

For each NAMO test task the context is chosen structurally, before planning (not by the
learned selector): among the contexts whose rooms join the start and goal rooms through
doorways, the one whose rooms hold the fewest boxes, then the fewest rooms (ties: lowest
index), i.e. the smallest CAMP that can still reach the goal. Its CSIs are learned first
(offline work, not timed). Then the TAMP planner runs once in the full task and once in
that CAMP, and Stilman's algorithm once in the full task, each executed in the full simulated
world. Prints a per-task table, the median
ratio of planning time (pure ÷ CAMP) and the collision-check rate.

    .venv/bin/python scripts/bench_namo.py [--tasks 10] [--timeout 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10, help="number of test tasks")
    parser.add_argument("--timeout", type=float, default=60.0, help="per planning call (s)")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--json", type=Path, help="also write the raw rows here")
    args = parser.parse_args(argv)
    if args.tasks < 1 or not args.timeout > 0:
        parser.error("--tasks must be at least 1 and --timeout positive")
    try:
        return _run(args)
    except CampError as exc:
        print(f"bench_namo: error: {exc}", file=sys.stderr)
        return 2


def smallest_reachable_context(pipe: Pipeline, task: Any) -> Context:
    """The context whose rooms hold the fewest boxes (then: the fewest rooms) among those
    that still join start and goal."""
    graph = pipe.domain.region_graph(task)
    assert graph is not None
    candidates = [c for c in pipe.space if not c.is_universal and graph.can_reach_goal(c)]
    if not candidates:
        return Context.universal()

    def size(c: Context) -> tuple[int, int, int]:
        rooms = {int(str(t.value)) for t in c.terms}
        boxes = sum(1 for b in task.boxes if b.room in rooms)
        return (boxes, len(rooms), pipe.space.index_of(c))

    return min(candidates, key=size)


def checks_per_second(pipe: Pipeline, task: Any, n: int = 2000, lazy: bool = False) -> float:
    """Collision checks per second of the full NAMO scene at random poses: ``collisions``
    (the robot moved to every pose) or, with ``lazy``, ``collisions_at`` as the motion
    planners call it (moved only when something is near)."""
    mdp = pipe.domain.make_mdp(task, pipe.config)
    scene = mdp.scene()  # type: ignore[attr-defined]
    check = scene.collisions_at if lazy else scene.collisions
    rng = random.Random(0)
    size = task.settings.world_size
    poses = [(rng.uniform(0, size), rng.uniform(0, size), rng.uniform(-3, 3)) for _ in range(n)]
    t0 = time.perf_counter()
    for pose in poses:
        check(pose)
    rate = n / (time.perf_counter() - t0)
    mdp.close()  # type: ignore[attr-defined]
    return rate


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    pipe = Pipeline.create("namo", args.config, args.artifacts)
    pipe.config["tasks"]["test"] = args.tasks
    tasks = pipe.domain.make_tasks(pipe.config, "test")
    chosen = [smallest_reachable_context(pipe, t) for t in tasks]
    for ctx in chosen:  # CSIs are offline work: learn them before timing anything
        if not ctx.is_universal:
            pipe.store.get(ctx)
    rows: list[dict[str, Any]] = []
    print(
        f"{'task':>4}  {'context':<28} {'pure s':>7} {'ok':>3} {'CAMP s':>7} {'ok':>3}  "
        f"{'boxes kept':>10}  {'ratio':>6}",
        flush=True,
    )
    for i, (task, ctx) in enumerate(zip(tasks, chosen, strict=True)):
        row: dict[str, Any] = {"task": i, "context": ctx.name}
        for label, planner, context in (
            ("pure", "tamp", None),
            ("camp", "tamp", ctx),
            ("stilman", "stilman", None),
        ):
            result, camp = pipe.run(task, planner, context, timeout_s=args.timeout)
            row[label] = {
                "compute_time_s": result.compute_time_s,
                "success": result.success,
                "outcome": result.outcome,
                "stage_times_s": result.stage_times_s,
                "fallbacks": result.fallbacks,
            }
            if camp is not None:
                row["boxes_kept"] = sum(1 for v in camp.state_vars if v.name.startswith("box_"))
        ratio = row["pure"]["compute_time_s"] / max(row["camp"]["compute_time_s"], 1e-9)
        row["ratio"] = ratio
        rows.append(row)
        print(
            f"{i:>4}  {ctx.name:<28} {row['pure']['compute_time_s']:>7.2f} "
            f"{'y' if row['pure']['success'] else 'n':>3} {row['camp']['compute_time_s']:>7.2f} "
            f"{'y' if row['camp']['success'] else 'n':>3}  "
            f"{row['stilman']['compute_time_s']:>9.2f} "
            f"{'y' if row['stilman']['success'] else 'n':>3}  {row.get('boxes_kept', 40):>10}  "
            f"{ratio:>5.1f}×",
            flush=True,
        )
    rate = checks_per_second(pipe, tasks[0])
    lazy_rate = checks_per_second(pipe, tasks[0], lazy=True)
    summary = {
        "median_ratio_pure_over_camp": statistics.median(r["ratio"] for r in rows),
        "pure_success": sum(r["pure"]["success"] for r in rows) / len(rows),
        "camp_success": sum(r["camp"]["success"] for r in rows) / len(rows),
        "stilman_success": sum(r["stilman"]["success"] for r in rows) / len(rows),
        "stilman_median_s": statistics.median(r["stilman"]["compute_time_s"] for r in rows),
        "pure_median_s": statistics.median(r["pure"]["compute_time_s"] for r in rows),
        "camp_median_s": statistics.median(r["camp"]["compute_time_s"] for r in rows),
        "collision_checks_per_s": rate,
        "planner_collision_queries_per_s": lazy_rate,
        "wall_time_s": time.perf_counter() - started,
        "machine": f"{platform.machine()}, {platform.python_version()}",
    }
    print(
        f"\nmedian planning time: pure {summary['pure_median_s']:.2f} s, CAMP "
        f"{summary['camp_median_s']:.2f} s; median ratio pure ÷ CAMP "
        f"{summary['median_ratio_pure_over_camp']:.1f}×\n"
        f"Stilman {summary['stilman_median_s']:.2f} s\n"
        f"success: pure {summary['pure_success']:.0%}, CAMP {summary['camp_success']:.0%}, "
        f"Stilman {summary['stilman_success']:.0%}; "
        f"collision checks {rate:,.0f}/s (as motion planning queries them: {lazy_rate:,.0f}/s); "
        f"wall time {summary['wall_time_s']:.0f} s"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
