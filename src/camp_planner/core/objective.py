"""Executing a planner in the real MDP and scoring it with the paper's objective (eq. 1).

J = discounted return − λ · compute time, where compute time is wall-clock seconds spent
before acting (context selection, CAMP construction, offline planning) plus every per-step
planning call. Each planning call gets its own timeout.

Beyond the paper, an episode may carry a chain of fallbacks: when planning in the chosen CAMP
fails (timeout, no plan, planner error), the agent switches to the next abstraction (e.g. the
next-ranked context, finally the universal one) and carries on from the state it is in, so
the method keeps the planner's completeness. Fallbacks are counted and their cost charged.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator
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
    # "goal" | "horizon" | "terminal" | "timeout" | "no_plan" | "planner_error" | "too_long"
    # (the last attempt's plan needed more steps than the horizon left) | "capped" (its
    # attempt used up the compute that could still pay) | "gave_up" (no attempt was worth
    # making; set by the CAMP runtime)
    outcome: str
    planning_calls: int = 0
    context_violations: int = 0
    fallbacks: int = 0
    used: list[str] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    stage_times_s: dict[str, float] = field(default_factory=dict)
    # Why each abandoned attempt stopped ("<attempt label>: <planner's message>"), so that a
    # failure can be explained without rerunning it.
    failures: list[str] = field(default_factory=list)
    # The planners' own count of the work they did, in nominal seconds
    # (:attr:`Planner.work_total`, summed over attempts); None when they do not count it.
    work_s: float | None = None

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
            "fallbacks": self.fallbacks,
            "used": list(self.used),
            "stage_times_s": {k: round(v, 6) for k, v in self.stage_times_s.items()},
            "failures": list(self.failures),
            "work_s": None if self.work_s is None else round(self.work_s, 6),
        }


@dataclass
class Attempt:
    """One abstraction to plan in: a label, the CAMP (None = the full MDP) and its planner.

    ``budget_s`` caps each of its planning calls below the episode's timeout (None: no cap),
    so that a fallback can take over from an abstraction that is running long.
    ``horizon_fallback``: abandon the attempt (outcome "too_long") as soon as its planner's
    plan needs more steps than the horizon leaves, so that the next abstraction can try a
    shorter route; the last resort keeps it off and follows its plan as far as it goes."""

    label: str
    camp: CAMP | None
    planner: Planner
    setup_time_s: float = 0.0
    budget_s: float | None = None
    horizon_fallback: bool = False
    # The attempt's total compute (its set-up and every planning call) past which it is
    # abandoned with outcome "capped" (:func:`attempt_cap`); None: no cap.
    cap_s: float | None = None

    def deadline(
        self, timeout_s: float | None, clock: Callable[[], float], spent_s: float = 0.0
    ) -> Deadline:
        """The deadline of one planning call: the timeout, the budget or what is left of the
        cap after ``spent_s``, whichever is shortest."""
        left = None if self.cap_s is None else max(0.0, self.cap_s - spent_s)
        limits = [t for t in (timeout_s, self.budget_s, left) if t is not None]
        return Deadline(min(limits) if limits else None, clock)

    def capped(self, spent_s: float) -> bool:
        """Whether ``spent_s`` of compute has used up the attempt's cap."""
        return self.cap_s is not None and spent_s >= self.cap_s


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
    label = camp.context.id if camp is not None and camp.context is not None else "pure"
    attempt = Attempt(label, camp, planner, setup_time_s)
    return run_with_fallbacks(mdp, [attempt], lam=lam, timeout_s=timeout_s, rng=rng, clock=clock)


def run_with_fallbacks(
    mdp: FactoredMDP,
    attempts: Iterable[Attempt],
    *,
    lam: float,
    timeout_s: float | None,
    rng: random.Random,
    clock: Callable[[], float] = time.perf_counter,
) -> EpisodeResult:
    """Act in ``mdp`` for H steps, planning in the first attempt's abstraction and moving on
    to the next one whenever a planning call fails. ``attempts`` may be a lazy iterator:
    fallbacks are only built when needed (their construction time belongs in
    ``setup_time_s``, which is charged when the attempt is taken up)."""
    chain: Iterator[Attempt] = iter(attempts)
    state = mdp.initial_state()
    states, actions, used = [state], [], []
    ret, discount, compute = 0.0, 1.0, 0.0
    calls, violations, fallbacks, t = 0, 0, 0, 0
    stages = {"setup": 0.0, "prepare": 0.0, "act": 0.0}
    failures: list[str] = []
    work: float | None = None
    outcome = "horizon"

    current = next(chain, None)
    while current is not None:
        used.append(current.label)
        compute += current.setup_time_s
        stages["setup"] += current.setup_time_s
        own = current.setup_time_s  # this attempt's compute, which its cap limits
        camp = current.camp
        status, message, spent = _prepare(
            current, _plan_mdp(mdp, current), current.deadline(timeout_s, clock, own)
        )
        compute += spent
        stages["prepare"] += spent
        own += spent
        status, message = _cap(current, own, status, message)
        outcome = status or "horizon"
        while outcome == "horizon" and t < mdp.horizon and not mdp.is_terminal(state):
            abstract = camp.sigma(state) if camp is not None else state
            chosen, status, message, spent = _act(
                current, abstract, current.deadline(timeout_s, clock, own)
            )
            compute += spent
            stages["act"] += spent
            calls += 1
            own += spent
            status, message = _cap(current, own, status, message)
            if chosen is None or status == "capped":
                outcome = status or "planner_error"
                break
            status, message = _too_long(current, mdp.horizon - t)
            if status is not None:
                outcome = status
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
            t += 1
        for stage, seconds in current.planner.stage_times.items():
            stages[stage] = stages.get(stage, 0.0) + seconds
        if current.planner.work_total is not None:
            work = (work or 0.0) + current.planner.work_total
        if status is not None:
            failures.append(f"{current.label}: {message}")
        if outcome == "horizon" or t >= mdp.horizon or mdp.is_terminal(state):
            break
        current = next(chain, None)
        if current is not None:
            fallbacks += 1

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
        fallbacks=fallbacks,
        used=used,
        states=states,
        actions=actions,
        stage_times_s=stages,
        failures=failures,
        work_s=work,
    )


def _plan_mdp(mdp: FactoredMDP, attempt: Attempt) -> FactoredMDP:
    return attempt.camp if attempt.camp is not None else mdp


def _prepare(
    attempt: Attempt, mdp: FactoredMDP, deadline: Deadline
) -> tuple[str | None, str, float]:
    """Run ``prepare``; return (failure outcome or None, its message, seconds spent)."""
    try:
        attempt.planner.prepare(mdp, deadline)
        status, message = None, ""
    except PlanningError as exc:
        status, message = _failure(exc), str(exc)
    return status, message, deadline.elapsed


def _act(
    attempt: Attempt, state: State, deadline: Deadline
) -> tuple[Action | None, str | None, str, float]:
    """Run one ``act`` call; return (action or None, failure outcome or None, its message,
    seconds spent)."""
    try:
        action: Action | None = attempt.planner.act(state, deadline)
        status, message = None, ""
    except PlanningError as exc:
        action, status, message = None, _failure(exc), str(exc)
    return action, status, message, deadline.elapsed


def _cap(
    attempt: Attempt, spent_s: float, status: str | None, message: str
) -> tuple[str | None, str]:
    """("capped", why) when the attempt has used up its cap (a timeout it hit because of
    the cap included); the failure as it was otherwise."""
    if status not in (None, "timeout") or not attempt.capped(spent_s):
        return status, message
    assert attempt.cap_s is not None
    return "capped", (
        f"abandoned after {spent_s:.2f} s: past {attempt.cap_s:.2f} s no plan can earn "
        "more than it costs"
    )


def _too_long(attempt: Attempt, remaining: int) -> tuple[str | None, str]:
    """("too_long", why) when the attempt falls back on the horizon and its plan needs more
    than the ``remaining`` steps; (None, "") otherwise."""
    if not attempt.horizon_fallback:
        return None, ""
    needed = attempt.planner.steps_to_go()
    if needed is None or needed <= remaining:
        return None, ""
    return "too_long", f"its plan needs {needed} more steps and the horizon leaves {remaining}"


def _failure(exc: PlanningError) -> str:
    if isinstance(exc, PlanningTimeout):
        return "timeout"
    if isinstance(exc, NoPlanFound):
        return "no_plan"
    return "planner_error"


def attempt_cap(
    mdp: FactoredMDP, lam: float, may_give_up: bool = True, give_up_value: float = 0.0
) -> float | None:
    """The seconds past which planning one attempt cannot pay: once λ·elapsed exceeds the
    best return still reachable (:meth:`FactoredMDP.return_bound`) minus the value of giving
    up, even a perfect plan found then earns less than stopping: 0 s when no plan can earn
    more than giving up. None: no such bound (λ = 0, a domain without a return bound, or one
    that may not give up whose plans can never earn more than nothing, like a PDDL task of
    costs only, where the robot plans anyway)."""
    if lam <= 0:
        return None
    best = mdp.return_bound()
    if best is None:
        return None
    if best <= give_up_value:
        return 0.0 if may_give_up else None
    return (float(best) - give_up_value) / lam
