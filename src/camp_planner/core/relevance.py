"""Context-specific variable relevance (paper Definition 2).

A variable is relevant under a context when it can influence a reward variable at a later
step: the backward closure, over learned dependencies, of the reward variables and the
context's own variables (the CAMP must track those to detect violations).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from camp_planner.core.csi import CSIResult


def relevant_variables(
    variables: Iterable[str],
    reward_vars: Iterable[str],
    context_vars: Iterable[str],
    dependencies: Iterable[tuple[str, str]],
) -> frozenset[str]:
    """Backward closure of reward and context variables over ``(parent, child)`` pairs."""
    return frozenset(relevance_chains(variables, reward_vars, context_vars, dependencies))


def relevance_chains(
    variables: Iterable[str],
    reward_vars: Iterable[str],
    context_vars: Iterable[str],
    dependencies: Iterable[tuple[str, str]],
) -> dict[str, tuple[str, ...]]:
    """Why each relevant variable is relevant: the shortest chain of learned dependencies
    from it to a reward or context variable (``(v, child, ..., root)``; a root's chain is
    itself). The keys are exactly :func:`relevant_variables`; a variable with no chain is
    one the CAMP drops."""
    known = set(variables)
    parents: dict[str, set[str]] = {}
    for parent, child in dependencies:
        parents.setdefault(child, set()).add(parent)
    roots = sorted((set(reward_vars) | set(context_vars)) & known)
    chains: dict[str, tuple[str, ...]] = {v: (v,) for v in roots}
    # Breadth first, so each chain is a shortest one; sorted, so the answer is deterministic.
    frontier = deque(chains)
    while frontier:
        child = frontier.popleft()
        for parent in sorted(parents.get(child, ())):
            if parent not in chains and parent in known:
                chains[parent] = (parent, *chains[child])
                frontier.append(parent)
    return chains


def relevant_from_csis(csis: CSIResult, reward_vars: Iterable[str]) -> frozenset[str]:
    """Relevant variables of the context ``csis`` was learned for."""
    return relevant_variables(
        csis.variables, reward_vars, csis.context.variables, csis.dependencies
    )


def relevance_chains_from_csis(
    csis: CSIResult, reward_vars: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """:func:`relevance_chains` of the context ``csis`` was learned for."""
    return relevance_chains(csis.variables, reward_vars, csis.context.variables, csis.dependencies)
