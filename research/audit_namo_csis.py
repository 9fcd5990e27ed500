"""Audit of NAMO's learned CSIs: does a room context drop boxes the robot may meet?

Under a room context the robot stays in the allowed rooms, so the boxes of those rooms can
block it and must stay in the CAMP. This script learns (or reads from the cache) the CSIs of
every room context of the configuration (``--contexts route``: instead, the route context
``scripts/bench_namo.py --context route`` gives each test task, for worlds larger than the
paper's). It then lists the contexts whose CAMP drops every box of an allowed room. Such a
CAMP plans through boxes that are really there: its plans leave the verified path when
executed, and planning falls back to another context.

    .venv/bin/python research/audit_namo_csis.py [--config FILE] [--contexts space|route]
        [--tasks 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError
from camp_planner.domains.namo.domain import route_context
from camp_planner.workflow import DEFAULT_ARTIFACTS, Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, help="NAMO configuration (default: the domain's)")
    parser.add_argument("--artifacts", type=Path, default=DEFAULT_ARTIFACTS)
    parser.add_argument("--json", type=Path, help="also write the findings here")
    parser.add_argument(
        "--contexts",
        choices=("space", "route"),
        default="space",
        help="the configuration's context space (default), or each test task's route context",
    )
    parser.add_argument(
        "--tasks", type=int, default=10, help="test tasks whose route contexts to audit"
    )
    parser.add_argument(
        "--workers", type=int, default=1, help="processes learning CSIs (default 1)"
    )
    args = parser.parse_args(argv)
    if args.tasks < 1 or args.workers < 1:
        parser.error("--tasks and --workers must be at least 1")
    try:
        report = audit(args.config, args.artifacts, args.contexts, args.tasks, args.workers)
    except CampError as exc:
        print(f"audit_namo_csis: error: {exc}", file=sys.stderr)
        return 2
    for row in report["unsound"]:
        print(f"{row['context']}: every box of allowed room(s) {row['rooms']} dropped")
    print(
        f"{len(report['unsound'])} of {report['contexts']} room contexts drop every box of an "
        f"allowed room ({report['seconds']:.0f} s, {report['learned']} learned now)"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    return 0


def audit(
    config: Path | None,
    artifacts: Path,
    which: str = "space",
    n_tasks: int = 10,
    workers: int = 1,
) -> dict[str, Any]:
    """Every room context's allowed box rooms that its CSIs drop entirely."""
    started = time.perf_counter()
    pipe = Pipeline.create("namo", config, artifacts)
    if pipe.domain.name != "namo":
        raise CampError(f"{config} configures {pipe.domain.name}, not namo")
    # Which variables a CAMP keeps depends on the CSIs, not on the task's boxes.
    mdp = pipe.domain.make_mdp(pipe.tasks("test")[0], pipe.config)
    unsound: list[dict[str, Any]] = []
    contexts = 0
    if which == "route":
        pipe.config["tasks"]["test"] = n_tasks
        candidates = list(dict.fromkeys(route_context(t) for t in pipe.tasks("test")))
    else:
        candidates = list(pipe.space)
    box_rooms = set(mdp.layout.box_rooms)  # type: ignore[attr-defined]
    try:
        learned = pipe.learn_csis(candidates, workers=workers)
        for ctx in candidates:
            if ctx.is_universal:
                continue
            contexts += 1
            kept = pipe.relevant(mdp, ctx)
            allowed = {int(str(t.value)) for t in ctx.terms}
            rooms = sorted(
                r
                for r in allowed
                if r in box_rooms and not any(v.startswith(f"box_r{r}_") for v in kept)
            )
            if rooms:
                unsound.append({"context": ctx.name, "rooms": rooms})
    finally:
        mdp.close()  # type: ignore[attr-defined]
    return {
        "config": str(config) if config else None,
        "context_family": which,
        "contexts": contexts,
        "learned": learned,
        "unsound": unsound,
        "seconds": time.perf_counter() - started,
    }


if __name__ == "__main__":
    sys.exit(main())
