"""Writing a STRIPS MDP, or a CAMP built over one, as a (smaller) ground PDDL problem.

The CAMP's semantics carry over exactly to STRIPS:
* a dropped fluent keeps the value the CAMP's right inverse σ⁻¹ gives it (its value in the
  initial state), so an operator whose precondition on a dropped fluent fails there can never
  apply in the CAMP and is removed, and the others lose that precondition;
* a dropped fluent disappears from every effect, the initial state and the goal;
* an operator that makes a context term false (adds a fluent the context wants false, or
  deletes one it wants true) leads to the sink, which no cost-minimising plan enters; it is
  removed. This is exact for single-term and conjunctive contexts over fluents; for other
  contexts violations are left to the CAMP's own check while the plan executes;
* operators left without effects do nothing but cost, and are removed.

Everything is written ground (0-ary predicates, parameterless actions), so the planner sees
only what survives; :class:`ExportedProblem` reports how much that is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.mdp import FactoredMDP, State
from camp_planner.pddl.mdp import StripsMDP

# The largest action cost Fast Downward can read (a C++ int).
MAX_COST = 2**31 - 1


@dataclass(frozen=True)
class ExportedProblem:
    """Ground PDDL text and how to read the planner's answer back."""

    domain_text: str
    problem_text: str
    action_names: dict[str, str]  # PDDL action name → ground operator name
    n_fluents: int
    n_operators: int
    objects: frozenset[str]


def strips_base(mdp: FactoredMDP) -> tuple[StripsMDP, CAMP | None]:
    """The STRIPS task under ``mdp`` (itself or a CAMP's base), or a clear error."""
    if isinstance(mdp, StripsMDP):
        return mdp, None
    if isinstance(mdp, CAMP) and isinstance(mdp.base, StripsMDP):
        return mdp.base, mdp
    raise CampError(f"{mdp.name} is not a PDDL task: this planner needs a STRIPS MDP")


def _name(text: str) -> str:
    # PDDL names: a letter, then letters, digits, '-' and '_'.
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", text.lower()).strip("_")
    return cleaned if cleaned[:1].isalpha() else f"x{cleaned}"


def _context_literals(context: Context | None, base: StripsMDP) -> dict[int, int] | None:
    """Fluent index → the value the context requires, when the context is a single term or a
    conjunction over fluents (None otherwise: nothing can be compiled away)."""
    if context is None or context.kind not in ("single", "conjunction"):
        return None
    out: dict[int, int] = {}
    for term in context.terms:
        if term.variable not in base._state_index:
            return None
        out[base.state_index(term.variable)] = int(term.value)  # type: ignore[call-overload]
    return out


def export(mdp: FactoredMDP, state: State | None = None) -> ExportedProblem:
    """Ground PDDL for planning in ``mdp`` (a StripsMDP or a CAMP over one) from ``state``
    (a state of ``mdp``; default its initial state)."""
    base, camp = strips_base(mdp)
    assert base.task is not None
    task = base.task
    n = len(task.fluents)
    if camp is None:
        keep = list(range(n))
        full_state = state if state is not None else base.initial_state()
        context = None
    else:
        keep = list(camp.keep_state)
        abstract = state if state is not None else camp.initial_state()
        if camp.is_terminal(abstract):
            raise CampError("the CAMP's state is the sink: its context is already violated")
        full_state = camp.sigma_inv(abstract)
        context = camp.context
    kept = set(keep)
    fill = full_state  # the values dropped fluents keep (σ⁻¹ fills them in)
    required = _context_literals(context, base)
    if required is not None and any(full_state[i] != v for i, v in required.items()):
        raise CampError("the state is outside the CAMP's context (it would go to the sink)")

    names = {i: _name(task.fluents[i]) for i in keep}
    if len(set(names.values())) != len(names):
        names = {i: f"f{i}-{_name(task.fluents[i])}" for i in keep}
    actions: list[str] = []
    action_names: dict[str, str] = {}
    objects: set[str] = set()
    negative = False  # whether the output needs :negative-preconditions
    for op in task.operators:
        if any(i not in kept and fill[i] != 1 for i in op.pre_pos) or any(
            i not in kept and fill[i] != 0 for i in op.pre_neg
        ):
            continue
        adds = sorted(i for i in op.add if i in kept)
        dels = sorted(i for i in op.delete - op.add if i in kept)
        if not adds and not dels:
            continue
        if required is not None and (
            any(required.get(i) == 0 for i in adds) or any(required.get(i) == 1 for i in dels)
        ):
            continue
        pre = [f"({names[i]})" for i in sorted(op.pre_pos) if i in kept]
        negated = [f"(not ({names[i]}))" for i in sorted(op.pre_neg) if i in kept]
        negative = negative or bool(negated)
        pre += negated
        eff = [f"({names[i]})" for i in adds] + [f"(not ({names[i]}))" for i in dels]
        eff.append(f"(increase (total-cost) {_cost(op.cost, op.name)})")
        pddl_name = _name(f"a{len(actions)}-{op.name}")
        action_names[pddl_name] = op.name
        objects.update(op.args)
        actions.append(
            f"  (:action {pddl_name}\n    :parameters ()\n"
            f"    :precondition (and {' '.join(pre)})\n"
            f"    :effect (and {' '.join(eff)}))"
        )
    goal = [f"({names[i]})" for i in sorted(task.goal_pos) if i in kept]
    goal += [f"(not ({names[i]}))" for i in sorted(task.goal_neg) if i in kept]
    if not goal:
        raise CampError("every goal fluent was dropped from the CAMP: nothing left to plan for")
    negative = negative or bool(task.goal_neg)
    requirements = ":strips :action-costs" + (" :negative-preconditions" if negative else "")
    domain = "\n".join(
        [
            "(define (domain camp-ground)",
            f"  (:requirements {requirements})",
            f"  (:predicates {' '.join(f'({names[i]})' for i in keep)})",
            "  (:functions (total-cost) - number)",
            *actions,
            ")",
        ]
    )
    init = [f"({names[i]})" for i in keep if full_state[i] == 1]
    problem = "\n".join(
        [
            "(define (problem camp-ground-task) (:domain camp-ground)",
            f"  (:init (= (total-cost) 0) {' '.join(init)})",
            f"  (:goal (and {' '.join(goal)}))",
            "  (:metric minimize (total-cost)))",
        ]
    )
    return ExportedProblem(
        domain, problem, action_names, len(keep), len(actions), frozenset(objects)
    )


def _cost(value: float, op_name: str) -> int:
    if value < 0:
        raise CampError(f"{op_name} costs {value}: classical planners need costs ≥ 0")
    # Fast Downward takes whole-number costs only (its translator refuses the user's lifted
    # files with decimals too); rounding would have it optimise costs the return does not
    # charge.
    if not math.isfinite(value) or not float(value).is_integer():
        raise CampError(
            f"{op_name} costs {value}: Fast Downward plans with whole-number action costs only"
        )
    if value > MAX_COST:
        raise CampError(
            f"{op_name} costs {value:.0f}: Fast Downward reads costs as 32-bit integers "
            f"(at most {MAX_COST})"
        )
    return int(value)


def lifted_plan_names(lines: Sequence[str]) -> list[str]:
    """Plan-file lines ``(op a b)`` as ground operator names ``op(a,b)``."""
    out = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(";"):
            continue
        parts = line.strip("()").lower().split()
        out.append(f"{parts[0]}({','.join(parts[1:])})")
    return out
