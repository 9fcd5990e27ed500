"""Structural selector inputs: what each candidate context's CAMP would be, before planning.

The paper's selector sees only the task (an image or a feature vector) and must learn from
a few dozen training tasks which contexts make the planner cheap. Much of that is known
before planning, from the learned CSIs and the task itself: which variables the CAMP of each
context keeps, how many values they can take in this task, and whether the context's
allowed regions can join start and goal at all. A structural selector (``selector.model:
structural``) is trained on these per-context inputs instead of the image:

* ``log_camp_states``: :func:`~camp_planner.core.camp.log_state_count` of the CAMP (its
  relevant variables and the context's own), the quantity an enumerating planner's cost
  grows with;
* ``reaches_goal``: 1 when the context's regions can join start and goal
  (:mod:`camp_planner.core.feasibility`), 0 when they cannot, 1 without a map;
* ``log_task_states``: the same count for the full task, so the model can tell a hard task
  from an easy one.

Computing them for every context costs microseconds per context (relevant sets are cached
per context by the caller), far less than a planning call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from camp_planner.core.camp import log_state_count
from camp_planner.core.context import Context
from camp_planner.core.feasibility import RegionGraph
from camp_planner.core.mdp import FactoredMDP

if TYPE_CHECKING:
    from camp_planner.workflow import Pipeline

FEATURES = ("log_camp_states", "reaches_goal", "log_task_states")


def context_features(
    mdp: FactoredMDP,
    contexts: Sequence[Context],
    relevant: Callable[[Context], frozenset[str]],
    graph: RegionGraph | None,
) -> np.ndarray:
    """A ``len(contexts) × len(FEATURES)`` array of the inputs above for one task."""
    full = log_state_count(mdp)
    rows = []
    for context in contexts:
        kept = relevant(context) | context.variables
        reaches = graph is None or graph.can_reach_goal(context)
        rows.append((log_state_count(mdp, kept), 1.0 if reaches else 0.0, full))
    return np.asarray(rows, dtype=np.float32)


def selector_input(
    pipe: Pipeline,
    task: Any,
    model: str,
    contexts: Sequence[Context],
    relevant: Callable[[FactoredMDP, Context], frozenset[str]],
    mdp: FactoredMDP | None = None,
) -> np.ndarray:
    """What a selector of ``model`` reads for ``task``: the domain's task features for the
    paper's networks, the contexts' structural inputs for the structural model (from
    ``mdp``, the task's MDP, built here if the caller has none)."""
    if model != "structural":
        return pipe.domain.features(task)
    if mdp is None:
        mdp = pipe.domain.make_mdp(task, pipe.config)
    return context_features(
        mdp, contexts, lambda c: relevant(mdp, c), pipe.domain.region_graph(task)
    )
