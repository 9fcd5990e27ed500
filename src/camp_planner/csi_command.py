"""The ``camp csi`` command: learned CSIs per context, the variables each CAMP keeps and
drops, and why (the chain of learned dependencies joining a variable to the reward or the
context); for a space of context templates, what their instances keep by role."""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Sequence
from typing import Any

from camp_planner.core.context import Context
from camp_planner.core.csi import CSIResult
from camp_planner.core.errors import CampError
from camp_planner.core.relevance import relevance_chains_from_csis, relevant_from_csis
from camp_planner.progress import progress_bar
from camp_planner.workflow import Pipeline


def csi_command(args: argparse.Namespace, pipe: Pipeline) -> int:
    """`camp csi`: the CSIs of the contexts asked for (learned and cached if missing), what
    each CAMP keeps and drops, and (``--why``) the chains of dependencies that decide it."""
    if pipe.basis is not None:
        return _csi_roles(pipe, args)
    if args.all:
        contexts: list[Context] = list(pipe.space)
    elif args.context:
        contexts = [pipe.space.resolve(ref) for ref in args.context]
    else:
        raise CampError("say which contexts: --context REF (repeatable) or --all")
    reward_vars = pipe.store.training_mdps()[0].reward_vars
    why = list(args.why or [])
    records = []
    bar = progress_bar(len(contexts), "learning CSIs", leave=False)
    for ctx in contexts:
        result = pipe.store.get(ctx)
        # As the pipeline builds CAMPs: the universal context keeps every variable.
        relevant = (
            relevant_from_csis(result, reward_vars)
            if pipe.needs_csis(ctx)
            else frozenset(result.variables)
        )
        dropped = [v for v in result.variables if v not in relevant]
        records.append((ctx, result, relevant, dropped))
        bar.update(1)
    bar.close()
    unknown = sorted({v for v in why for _, r, _, _ in records if v not in r.variables})
    if unknown:
        names = records[0][1].variables if records else []
        raise CampError(
            f"--why: no state variable {', '.join(unknown)}; the variables are: {', '.join(names)}"
        )
    explained = {c.id: _why(pipe, c, r, reward_vars, why) for c, r, _, _ in records if why}
    if args.json:
        out = [
            {
                **r.to_json(),
                "name": c.name,
                "relevant_variables": sorted(rel),
                "dropped_variables": dropped,
                **({"why": explained[c.id]} if why else {}),
            }
            for c, r, rel, dropped in records
        ]
        print(json.dumps(out, indent=1, default=str))
        return 0
    print(f"CSIs cached in {pipe.store.path}")
    for c, r, rel, dropped in records:
        print(
            f"  {c.id:<10} {c.name:<34} dependencies {len(r.dependencies):4d}  "
            f"relevant {len(rel):3d}  dropped {len(dropped):3d}  ({r.seconds:.2f} s)"
        )
        for var, answer in explained.get(c.id, {}).items():
            print(f"      {var}: {answer['reason']}")
    return 0


def _csi_roles(pipe: Pipeline, args: argparse.Namespace) -> int:
    """`camp csi` for a space of templates: the basis's CSIs, summarised by role."""
    if args.why:
        raise CampError(
            "--why explains one context's learned CSIs; the instances of templates keep "
            "variables by role (run without --why to see the roles)"
        )
    roles = pipe.role_relevance()
    if args.json:
        print(json.dumps({"csi_cache": str(pipe.store.path), **roles.to_json()}))
        return 0
    print(f"CSIs of the {roles.basis} basis contexts cached in {pipe.store.path}")
    print("every template's instance keeps, by the role the instance gives them:")
    for name, position in sorted(roles.roles):
        print(f"  {name} slots, variable {position} of the slot")
    print(f"and {len(roles.free)} variables in no role: {', '.join(sorted(roles.free))}")
    return 0


def _why(
    pipe: Pipeline,
    context: Context,
    csis: CSIResult,
    reward_vars: Collection[str],
    variables: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """Per variable: whether the CAMP of ``context`` keeps it, and the chain of learned
    dependencies that makes it matter (each variable in it influences the next)."""
    if not pipe.needs_csis(context):
        reason = "kept: the universal context keeps every variable"
        return {v: {"relevant": True, "chain": None, "reason": reason} for v in variables}
    chains = relevance_chains_from_csis(csis, reward_vars)
    out: dict[str, dict[str, Any]] = {}
    for v in variables:
        chain = chains.get(v)
        if chain is None:
            reason = (
                "dropped: no learned dependency leads from it to the reward "
                f"({', '.join(sorted(reward_vars))}) or to the context's variables"
            )
        else:
            root = chain[-1]
            kind = "a reward variable" if root in reward_vars else "a context variable"
            reason = f"kept: {' → '.join(chain)} ({root} is {kind})"
        out[v] = {
            "relevant": chain is not None,
            "chain": list(chain or ()) or None,
            "reason": reason,
        }
    return out
