from __future__ import annotations

import random
from collections.abc import Sequence

from camp_planner.core.mdp import Action, FactoredMDP, State
from camp_planner.core.objective import objective, run_episode
from camp_planner.core.planner import Deadline, Planner, PlanningTimeout
from camp_planner.domains.gridworld.domain import GridworldDomain


class _Ticker:
    """A fake clock: every read advances 0.5 s, so compute time is exact and deterministic."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.5
        return self.t


class _Scripted(Planner):
    def __init__(self, actions: Sequence[Action], slow: bool = False) -> None:
        super().__init__()
        self.actions = list(actions)
        self.slow = slow

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        pass

    def act(self, state: State, deadline: Deadline) -> Action:
        if self.slow:
            deadline.check()
        return self.actions.pop(0)


def test_objective_is_return_minus_lambda_times_compute() -> None:
    assert objective(90.0, 0.25, 100.0) == -(-90.0 + 25.0)


def test_run_episode_charges_setup_prepare_and_every_step() -> None:
    d = GridworldDomain()
    cfg = d.default_config()
    mdp = d.make_mdp(d.make_tasks(cfg, "train")[0], cfg)
    noop = (0,) * 21
    planner = _Scripted([("left", *noop)] * 25)
    clock = _Ticker()
    res = run_episode(
        mdp, planner, lam=10.0, timeout_s=None, rng=random.Random(0), setup_time_s=1.0, clock=clock
    )
    # Each planning call is timed by its deadline: two clock reads, 0.5 s apiece.
    assert res.compute_time_s == 1.0 + 0.5 + 25 * 0.5
    assert res.steps == 25 and res.outcome == "horizon" and not res.success
    assert res.objective == res.discounted_return - 10.0 * res.compute_time_s
    # A planner that does not count its work reports none (not zero).
    assert res.work_s is None and res.summary()["work_s"] is None


def test_a_timed_out_call_stops_the_episode() -> None:
    d = GridworldDomain()
    cfg = d.default_config()
    mdp = d.make_mdp(d.make_tasks(cfg, "train")[0], cfg)
    planner = _Scripted([], slow=True)
    res = run_episode(mdp, planner, lam=1.0, timeout_s=0.1, rng=random.Random(0), clock=_Ticker())
    assert res.outcome == "timeout" and res.steps == 0 and res.discounted_return == 0.0


def test_deadline_check_raises_after_budget() -> None:
    clock = _Ticker()
    d = Deadline(1.0, clock)
    d.check()  # 0.5 s elapsed
    try:
        d.check()
    except PlanningTimeout:
        return
    raise AssertionError("deadline did not expire")


class _Failing(Planner):
    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        pass

    def act(self, state: State, deadline: Deadline) -> Action:
        from camp_planner.core.planner import NoPlanFound

        raise NoPlanFound("nothing here")


def test_fallback_chain_continues_from_the_current_state() -> None:
    from camp_planner.core.objective import Attempt, run_with_fallbacks
    from camp_planner.planners import make_planner

    d = GridworldDomain()
    cfg = d.default_config()
    mdp = d.make_mdp(d.make_tasks(cfg, "test")[0], cfg)
    built: list[str] = []

    def chain():
        yield Attempt("first", None, _Failing(), 0.25)
        built.append("second")
        yield Attempt("second", None, make_planner("bfs_replan"), 0.25)
        built.append("third")
        yield Attempt("third", None, make_planner("bfs_replan"), 0.25)

    res = run_with_fallbacks(mdp, chain(), lam=1.0, timeout_s=None, rng=random.Random(0))
    assert res.success and res.fallbacks == 1
    assert res.used == ["first", "second"] and built == ["second"]  # lazily built
    assert res.stage_times_s["setup"] == 0.5
    assert res.failures == ["first: nothing here"]  # why the abandoned attempt stopped


def test_without_fallbacks_a_failure_ends_the_episode() -> None:
    d = GridworldDomain()
    cfg = d.default_config()
    mdp = d.make_mdp(d.make_tasks(cfg, "test")[0], cfg)
    res = run_episode(mdp, _Failing(), lam=1.0, timeout_s=None, rng=random.Random(0))
    assert res.outcome == "no_plan" and res.fallbacks == 0 and not res.success
    assert res.failures == ["pure: nothing here"] and res.summary()["failures"] == res.failures


class _Stuck(Planner):
    """Plans until its deadline runs out (every clock read of the ticker is 0.5 s)."""

    def __init__(self) -> None:
        super().__init__()
        self.budgets: list[float | None] = []

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        self.budgets.append(deadline.seconds)
        while True:
            deadline.check()

    def act(self, state: State, deadline: Deadline) -> Action:
        raise AssertionError("never reached: prepare does not return")


def test_an_attempt_budget_hands_a_long_run_over_to_the_next_attempt() -> None:
    from camp_planner.core.objective import Attempt, run_with_fallbacks

    d = GridworldDomain()
    cfg = d.default_config()
    mdp = d.make_mdp(d.make_tasks(cfg, "test")[0], cfg)
    stuck, last = _Stuck(), _Stuck()
    attempts = [Attempt("small", None, stuck, 0.0, budget_s=2.0), Attempt("universal", None, last)]
    res = run_with_fallbacks(
        mdp, attempts, lam=1.0, timeout_s=10.0, rng=random.Random(0), clock=_Ticker()
    )
    # The budget caps the first attempt's call below the 10 s timeout, and the fallback
    # still gets the whole timeout.
    assert stuck.budgets == [2.0] and last.budgets == [10.0]
    assert res.used == ["small", "universal"] and res.fallbacks == 1
    assert res.failures[0].startswith("small: planning call exceeded its 2 s budget")
    assert res.outcome == "timeout"


def test_a_budget_longer_than_the_timeout_changes_nothing() -> None:
    from camp_planner.core.objective import Attempt

    clock = _Ticker()
    assert Attempt("a", None, _Stuck(), budget_s=30.0).deadline(10.0, clock).seconds == 10.0
    assert Attempt("a", None, _Stuck(), budget_s=3.0).deadline(None, clock).seconds == 3.0
    assert Attempt("a", None, _Stuck()).deadline(None, clock).seconds is None


class _LongRoute(Planner):
    """Follows BFS-replan's actions but claims its plan needs ``claim`` more steps."""

    def __init__(self, claim: int) -> None:
        super().__init__()
        from camp_planner.planners import make_planner

        self.inner = make_planner("bfs_replan")
        self.claim = claim

    def prepare(self, mdp: FactoredMDP, deadline: Deadline) -> None:
        self.inner.prepare(mdp, deadline)

    def act(self, state: State, deadline: Deadline) -> Action:
        return self.inner.act(state, deadline)

    def steps_to_go(self) -> int | None:
        return self.claim


def _grid_mdp() -> FactoredMDP:
    d = GridworldDomain()
    cfg = d.default_config()
    return d.make_mdp(d.make_tasks(cfg, "test")[0], cfg)


def test_a_plan_longer_than_the_horizon_left_falls_back() -> None:
    from camp_planner.core.objective import Attempt, run_with_fallbacks
    from camp_planner.planners import make_planner

    mdp = _grid_mdp()
    too_long = mdp.horizon + 1
    attempts = [
        Attempt("detour", None, _LongRoute(too_long), horizon_fallback=True),
        Attempt("universal", None, make_planner("bfs_replan")),
    ]
    res = run_with_fallbacks(mdp, attempts, lam=1.0, timeout_s=None, rng=random.Random(0))
    assert res.success and res.fallbacks == 1 and res.used == ["detour", "universal"]
    assert res.failures == [
        f"detour: its plan needs {too_long} more steps and the horizon leaves {mdp.horizon}"
    ]


def test_the_horizon_check_is_off_unless_asked_and_for_plans_that_fit() -> None:
    from camp_planner.core.objective import Attempt, run_with_fallbacks

    mdp = _grid_mdp()
    for attempt in (
        Attempt("unchecked", None, _LongRoute(mdp.horizon + 1)),
        Attempt("fits", None, _LongRoute(1), horizon_fallback=True),
    ):
        res = run_with_fallbacks(mdp, [attempt], lam=1.0, timeout_s=None, rng=random.Random(0))
        assert res.fallbacks == 0 and res.failures == [] and res.outcome != "too_long"


def test_the_last_attempt_too_long_ends_with_outcome_too_long() -> None:
    from camp_planner.core.objective import Attempt, run_with_fallbacks

    mdp = _grid_mdp()
    attempt = Attempt("detour", None, _LongRoute(mdp.horizon + 1), horizon_fallback=True)
    res = run_with_fallbacks(mdp, [attempt], lam=1.0, timeout_s=None, rng=random.Random(0))
    assert res.outcome == "too_long" and res.steps == 0 and not res.success


def test_bfs_replan_counts_the_steps_its_plan_still_needs() -> None:
    from camp_planner.core.planner import Deadline
    from camp_planner.planners import make_planner

    mdp = _grid_mdp()
    planner = make_planner("bfs_replan")
    assert planner.steps_to_go() is None  # no plan yet
    planner.prepare(mdp, Deadline(None))
    state = mdp.initial_state()
    planner.act(state, Deadline(None))
    length = len(planner.plan)
    assert length >= 1 and planner.steps_to_go() == length
