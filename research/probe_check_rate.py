"""Probe: does planning in a process slow the collision checks that follow it?

``bench_namo.py`` times the collision-check rate before and after its runs, and after long
runs it has read a third lower. This probe tells the machine from the process. In one
process it times the rate first, then plans NAMO tasks one after the other (pure TAMP,
then Stilman's algorithm, each with ``--timeout``) for about ``--seconds`` seconds. After
every task it times the rate again: three times with 2,000 checks and once with 20,000.
It also prints the peak memory, the PyBullet clients still connected and the live Python
objects. If readings fall as the process ages, and stay low after ``gc.collect()``, the
process is to blame. If they come and go, the machine is.

    .venv/bin/python research/probe_check_rate.py [SECONDS] \
        [--config research/config/namo-grid6.yaml]
        [--timeout 30] [--set relaxed=ompl ...]
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from pathlib import Path
from typing import Any

from camp_planner.config import add_settings_argument, settings_or_usage_error
from camp_planner.core.errors import CampError
from camp_planner.sim.pybullet_servers import connected_clients
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline

CONFIG = Path(__file__).resolve().parent / "config" / "namo-grid6.yaml"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "seconds", type=float, nargs="?", default=300.0, help="planning time (default 300)"
    )
    parser.add_argument("--config", type=Path, default=CONFIG, help="a NAMO configuration")
    parser.add_argument("--timeout", type=float, default=30.0, help="per planning call (s)")
    add_settings_argument(
        parser,
        "a planner setting (repeatable; default relaxed=ompl, as the long runs had)",
        default=("relaxed=ompl",),
    )
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    args = parser.parse_args(argv)
    if not args.seconds > 0 or not args.timeout > 0:
        parser.error("SECONDS and --timeout must be positive")
    overrides = settings_or_usage_error(parser, args.set)
    try:
        return _probe(args, overrides)
    except CampError as exc:
        print(f"probe_check_rate: error: {exc}", file=sys.stderr)
        return 2


def _probe(args: argparse.Namespace, overrides: dict[str, Any]) -> int:
    # The rate is timed exactly as the benchmark times it.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from bench_namo import checks_per_second

    pipe = Pipeline.create("namo", args.config, args.artifacts)
    pipe.config["tasks"]["test"] = 10
    tasks = pipe.domain.make_tasks(pipe.config, "test")

    def report(tag: str) -> None:
        rates = "  ".join(f"{checks_per_second(pipe, tasks[0]):>6,.0f}" for _ in range(3))
        long = checks_per_second(pipe, tasks[0], n=20_000)
        alive = connected_clients()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024  # KiB on Linux
        print(
            f"{tag:<20} checks/s {rates}  (20,000: {long:,.0f})  clients connected {alive}  "
            f"peak memory {peak} MB  objects {len(gc.get_objects()):,}",
            flush=True,
        )

    report("start")
    started = time.perf_counter()
    done = 0
    while time.perf_counter() - started < args.seconds:
        task = tasks[done % len(tasks)]
        for planner in ("tamp", "stilman"):
            pipe.run(task, planner, None, seed=done, timeout_s=args.timeout, overrides=overrides)
        done += 1
        report(f"after {done} task{'s' if done > 1 else ''}")
    gc.collect()
    report("after gc.collect()")
    return 0


if __name__ == "__main__":
    sys.exit(main())
