"""How long CSI learning takes for one NAMO context, learned from scratch, and what it learned.

Learns the CSIs of one test task's route context (the rooms of its doorway route with the
fewest boxes, as ``scripts/bench_namo.py --context route`` chooses) in a fresh artifacts
folder, with the configuration's CSI budget or a smaller ``--k1``, and prints the wall
time and a digest of the learned CSIs (the cache file without its recorded seconds). Two
versions of the code that learn the same CSIs print the same digest; compare their times
run alone on the machine. ``--profile`` also prints the functions that took the most time
(cProfile slows Python code, so profiled times are larger).

    .venv/bin/python research/time_csi_learning.py --config config/namo/grid10.yaml --k1 10
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from camp_planner.core.errors import CampError
from camp_planner.domains.namo.domain import route_context
from camp_planner.workflow import Pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, help="a NAMO configuration (YAML)")
    parser.add_argument("--task", type=int, default=0, help="test task index (default 0)")
    parser.add_argument("--tasks", type=int, default=10, help="test tasks drawn (default 10)")
    parser.add_argument("--k1", type=int, help="samples per context (default: the config's)")
    parser.add_argument("--profile", action="store_true", help="also print a cProfile table")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    if not 0 <= args.task < args.tasks:
        parser.error("--task must lie in [0, --tasks)")
    if args.k1 is not None and args.k1 < 1:
        parser.error("--k1 must be positive")
    try:
        result = _run(args)
    except CampError as exc:
        print(f"time_csi_learning: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=1))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


def _run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        config = args.config
        if args.k1 is not None:
            data: dict[str, Any] = {}
            if config is not None:
                try:
                    data = yaml.safe_load(config.read_text()) or {}
                except (OSError, yaml.YAMLError) as exc:
                    raise CampError(f"cannot read {config}: {exc}") from exc
            data.setdefault("domain", "namo")
            data["csi"] = {**(data.get("csi") or {}), "k1": args.k1}
            config = Path(scratch) / "config.yaml"
            config.write_text(yaml.safe_dump(data))
        pipe = Pipeline.create("namo", config, Path(scratch) / "artifacts")
        pipe.config["tasks"]["test"] = args.tasks
        ctx = route_context(pipe.tasks("test")[args.task])
        profiler = cProfile.Profile() if args.profile else None
        started = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        pipe.learn_csis([ctx], label=None)
        if profiler is not None:
            profiler.disable()
        seconds = time.perf_counter() - started
        cache = json.loads(pipe.store.path.read_text())
    for record in cache["contexts"]:
        record.pop("seconds", None)
    digest = hashlib.sha256(json.dumps(cache, sort_keys=True).encode()).hexdigest()[:16]
    if profiler is not None:
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(15)
    return {
        "config": None if args.config is None else str(args.config),
        "task": args.task,
        "context": ctx.name,
        "k1": pipe.store.csi.k1,
        "seconds": round(seconds, 1),
        "csi_digest": digest,
    }


if __name__ == "__main__":
    raise SystemExit(main())
