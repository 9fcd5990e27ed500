"""Wall and CPU time to learn the CSIs of a NAMO configuration's context space (or its first
``--limit`` contexts, or the route contexts of ``--routes`` test tasks) in a fresh artifacts
folder, with ``--workers`` processes, and the CSI settings the configuration gives (or
``--set key=value`` overrides). CPU time is this process's plus its workers' (user + sys).

    .venv/bin/python research/time_csi_space.py --config config/namo/grid10.yaml \
        --artifacts artifacts/csi-scale --workers 2
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import yaml

from camp_planner.config import load_config
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.domains import get_domain
from camp_planner.domains.namo.domain import route_context
from camp_planner.workflow import Pipeline


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, required=True)
    ap.add_argument("--artifacts", type=Path, required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, help="only the first N contexts needing CSIs")
    ap.add_argument("--routes", type=int, default=0, help="also the route contexts of N tests")
    ap.add_argument("--set", action="append", default=[], help="csi.KEY=VALUE (YAML value)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    dom = get_domain("namo")
    cfg = load_config(dom, args.config)
    for item in args.set:
        key, value = item.split("=", 1)
        cfg["csi"][key] = yaml.safe_load(value)
    pipe = Pipeline.from_config("namo", cfg, args.artifacts)
    contexts = [c for c in pipe.space if pipe.needs_csis(c)]
    if args.limit is not None:
        contexts = contexts[: args.limit]
    if args.routes:
        pipe.config["tasks"]["test"] = max(args.routes, int(pipe.config["tasks"]["test"]))
        routes = [route_context(t) for t in pipe.tasks("test")[: args.routes]]
        contexts += [c for c in dict.fromkeys(routes) if c not in contexts]
    load = os.getloadavg()
    wall0, (own0, kids0) = time.perf_counter(), _cpu()
    learned = pipe.learn_csis(contexts, label=None, workers=args.workers)
    wall = time.perf_counter() - wall0
    own1, kids1 = _cpu()
    mdp = pipe.store.training_mdps()[0]
    sizes = [len(relevant_from_csis(pipe.store.get(c), mdp.reward_vars)) for c in contexts]
    out: dict[str, Any] = {
        "config": str(args.config),
        "csi": pipe.config["csi"],
        "contexts": len(contexts),
        "learned": learned,
        "workers": args.workers,
        "wall_s": round(wall, 1),
        "cpu_s": round(own1 - own0 + kids1 - kids0, 1),
        "cpu_parent_s": round(own1 - own0, 1),
        "loadavg_before": load,
        "loadavg_after": os.getloadavg(),
        "relevant_min_mean_max": [min(sizes), round(sum(sizes) / len(sizes), 1), max(sizes)],
        "cache": str(pipe.store.path),
    }
    print(json.dumps(out, indent=1))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
