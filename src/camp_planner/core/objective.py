"""Executing a planner in the real MDP and scoring it with the paper's objective (eq. 1).

J = discounted return − λ · compute time, where compute time is wall-clock seconds spent
before acting (context selection, CAMP construction, offline planning) plus every per-step
planning call. Each planning call gets its own timeout; when one runs out the agent stops.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from camp_planner.core.camp import CAMP
from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.planner import Deadline, NoPlanFound, Planner, PlanningError, PlanningTimeout


@dataclass
class EpisodeResult:
    """What one episode earned, what it cost, and what happened."""

    discounted_return: float
    objective: float
    compute_time_s: float
    steps: int
    success: bool
    outcome: str  # "goal" | "horizon" | "terminal" | "timeout" | "no_plan" | "planner_error"
    planning_calls: int = 0
    context_violations: int = 0
    states: list[State] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    stage_times_s: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "return": round(self.discounted_return, 4),
            "objective": round(self.objective, 4),
            "compute_time_s": round(self.compute_time_s, 6),
            "steps": self.steps,
            "success": self.success,
            "outcome": self.outcome,
            "planning_calls": self.planning_calls,
            "context_violations": self.context_violations,
            "stage_times_s": {k: round(v, 6) for k, v in self.stage_times_s.items()},
        }


def objective(discounted_return: float, compute_time_s: float, lam: float) -> float:
    """Equation 1 for one episode."""
    return discounted_return - lam * compute_time_s


def run_episode(
    mdp: FactoredMDP,
    planner: Planner,
    *,
    lam: float,
    timeout_s: float | None,
    rng: random.Random,
    camp: CAMP | None = None,
    setup_time_s: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
) -> EpisodeResult:
    """Plan (in ``camp`` if given, else in ``mdp``) and act in the real ``mdp`` for H steps.

    ``setup_time_s`` is compute already spent before acting (e.g. selecting the context and
    building the CAMP) and is charged to the objective.
    """
    plan_mdp: FactoredMDP = camp if camp is not None else mdp
    state = mdp.initial_state()
    states, actions = [state], []
    ret, discount, compute = 0.0, 1.0, setup_time_s
    outcome, calls, violations = "horizon", 0, 0
    stages = {"setup": setup_time_s, "prepare": 0.0, "act": 0.0}

    t0 = clock()
    try:
        planner.prepare(plan_mdp, Deadline(timeout_s, clock))
    except PlanningTimeout:
        outcome = "timeout"
    except NoPlanFound:
        outcome = "no_plan"
    except PlanningError:
        outcome = "planner_error"
    spent = clock() - t0
    compute += spent
    stages["prepare"] = spent

    if outcome == "horizon":
        for _ in range(mdp.horizon):
            if mdp.is_terminal(state):
                outcome = "goal" if mdp.is_goal(state) else "terminal"
                break
            abstract = camp.sigma(state) if camp is not None else state
            t0 = clock()
            try:
                chosen = planner.act(abstract, Deadline(timeout_s, clock))
            except PlanningTimeout:
                outcome = "timeout"
            except NoPlanFound:
                outcome = "no_plan"
            except PlanningError:
                outcome = "planner_error"
            spent = clock() - t0
            compute += spent
            stages["act"] += spent
            calls += 1
            if outcome != "horizon":
                break
            action = camp.tau_inv(chosen) if camp is not None else chosen
            if camp is not None and not camp.in_context(state, action):
                violations += 1
            nxt = mdp.sample_next_state(state, action, rng)
            ret += discount * mdp.reward(state, action, nxt)
            discount *= mdp.gamma
            state = nxt
            states.append(state)
            actions.append(action)
        else:
            if mdp.is_terminal(state):
                outcome = "goal" if mdp.is_goal(state) else "terminal"

    return EpisodeResult(
        discounted_return=ret,
        objective=objective(ret, compute, lam),
        compute_time_s=compute,
        steps=len(actions),
        success=mdp.is_goal(state),
        outcome=outcome,
        planning_calls=calls,
        context_violations=violations,
        states=states,
        actions=actions,
        stage_times_s=stages,
    )
