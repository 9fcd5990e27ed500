"""Learn NAMO CSIs of a few room contexts with and without ``csi.local_probes`` and compare
the dependencies, relevant variables and CPU/wall time (the local-probe audit, by hand).

    .venv/bin/python research/compare_local_probes.py --config config/namo/grid5.yaml \
        --k1 25 --tasks 4 --contexts 3
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

from camp_planner.config import load_config
from camp_planner.core.context import Context
from camp_planner.core.csi import CSIConfig, CSIResult, learn_csis
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.domains import get_domain
from camp_planner.domains.namo.domain import route_context
from camp_planner.workflow import csi_config


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", type=Path)
    ap.add_argument("--k1", type=int)
    ap.add_argument("--tasks", type=int, default=4)
    ap.add_argument("--contexts", type=int, default=3, help="route contexts of test tasks")
    ap.add_argument("--only-local", action="store_true")
    ap.add_argument("--shared", action="store_true", help="local: also csi.shared_terms")
    ap.add_argument("--ties", action="store_true", help="local: also csi.context_ties")
    ap.add_argument("--space", type=int, default=0, help="also the first N space contexts")
    ap.add_argument("--direct-cache", type=Path, help="reuse direct results (JSON file)")
    args = ap.parse_args()
    dom = get_domain("namo")
    cfg = load_config(dom, args.config)
    base = csi_config(cfg)
    over: dict[str, Any] = {"local_probes": False, "shared_terms": False, "context_ties": False}
    if args.k1:
        over["k1"] = args.k1
    direct_cfg = CSIConfig(**{**base.__dict__, **over})
    local_cfg = CSIConfig(
        **{
            **direct_cfg.__dict__,
            "local_probes": True,
            "shared_terms": args.shared,
            "context_ties": args.ties,
        }
    )
    tasks = dom.make_tasks(cfg, "train")[: args.tasks]
    mdps = [dom.make_mdp(t, cfg) for t in tasks]
    cfg["tasks"]["test"] = max(args.contexts, 1)
    contexts: list[Context] = list(
        dict.fromkeys(route_context(t) for t in dom.make_tasks(cfg, "test"))
    )[: args.contexts]
    if args.space:
        from camp_planner.core.context_space import ContextSpaceSpec, generate_context_space

        space = generate_context_space(mdps[0], ContextSpaceSpec.from_mapping(cfg["contexts"]))
        contexts += [c for c in space if not c.is_universal][: args.space]
    known: dict[str, Any] = {}
    if args.direct_cache is not None and args.direct_cache.exists():
        known = json.loads(args.direct_cache.read_text())
    rows = []
    for ctx in contexts:
        row: dict[str, Any] = {"context": ctx.name}
        results = {}
        for label, c in (("direct", direct_cfg), ("local", local_cfg)):
            if label == "direct" and args.only_local:
                continue
            key = f"{ctx.id}:{c.k1}:{args.tasks}:{args.config}"
            if label == "direct" and key in known:
                results[label] = CSIResult.from_json(known[key])
                continue
            w, u = time.perf_counter(), _cpu()
            r = learn_csis(mdps, ctx, c)
            if label == "direct" and args.direct_cache is not None:
                known[key] = r.to_json()
                args.direct_cache.write_text(json.dumps(known, default=str))
            row[f"{label}_wall"] = round(time.perf_counter() - w, 1)
            row[f"{label}_cpu"] = round(_cpu() - u, 1)
            row[f"{label}_sim_calls"] = r.samples
            results[label] = r
        if "direct" in results:
            d, loc = results["direct"], results["local"]
            rd = relevant_from_csis(d, mdps[0].reward_vars)
            rl = relevant_from_csis(loc, mdps[0].reward_vars)
            row["same_dependencies"] = d.dependencies == loc.dependencies
            row["deps_only_direct"] = len(d.dependencies - loc.dependencies)
            row["deps_only_local"] = len(loc.dependencies - d.dependencies)
            row["relevant_direct"] = len(rd)
            row["relevant_local"] = len(rl)
            row["same_relevant"] = rd == rl
            row["kept_only_direct"] = sorted(rd - rl)
            row["kept_only_local"] = sorted(rl - rd)
        rows.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
