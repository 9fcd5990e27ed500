"""Dinner (D2): the PDDL world, its MDP, CAMPs as smaller PDDL, and Fast Downward on both."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context, Term
from camp_planner.core.objective import run_episode
from camp_planner.core.planner import Deadline, NoPlanFound, PlanningTimeout
from camp_planner.domains.dinner.domain import DinnerDomain
from camp_planner.pddl.export import export
from camp_planner.pddl.mdp import StripsMDP
from camp_planner.planners.fast_downward import FastDownward

D = DinnerDomain()
CFG = D.default_config()


def _mdp(index: int = 0, **world: int) -> StripsMDP:
    cfg = {**CFG, "world": {**CFG["world"], **world}}
    mdp = D.make_mdp(D.make_tasks(cfg, "train")[index], cfg)
    assert isinstance(mdp, StripsMDP)
    return mdp


def _stay_out(*places: str) -> Context:
    terms = tuple(Term(f"agent-at({p})", 0) for p in places)
    return Context("single", terms) if len(terms) == 1 else Context("conjunction", terms)


def _plan(mdp: StripsMDP, *actions: str) -> float:
    """Execute a plan in the MDP; the return."""
    state, total = mdp.initial_state(), 0.0
    for name in actions:
        assert mdp.applicable(state, name), name
        nxt = mdp.successor(state, (name,))
        total += mdp.reward(state, (name,), nxt)
        state = nxt
    assert mdp.is_goal(state)
    return total


def test_meals_take_2_16_and_22_actions_and_return_reward_minus_step_costs() -> None:
    mdp = _mdp()
    task = D.make_tasks(CFG, "train")[0]
    ramen = _plan(mdp, "make-ramen()", "eat(ramen)")
    assert ramen == task.rewards[0] - 10
    sandwich = ["walk(living-room,kitchen)"]
    sandwich += [f"take({i},kitchen)" for i in ("bread", "ham", "cheese", "lettuce", "tomato")]
    sandwich += [f"take({i},kitchen)" for i in ("mayo", "knife", "plate")]
    sandwich += ["slice(bread)", "slice(cheese)", "slice(tomato)", "wash(lettuce)"]
    sandwich += ["toast(bread)", "make-sandwich()", "eat(sandwich)"]
    assert len(sandwich) == 16
    assert _plan(mdp, *sandwich) == task.rewards[1] - 150


def test_features_are_the_meal_rewards_and_tasks_are_seeded() -> None:
    a, b = D.make_tasks(CFG, "test"), D.make_tasks(CFG, "test")
    assert a == b and len(a) == 25 and len(D.make_tasks(CFG, "train")) == 20
    assert D.features(a[0]).tolist() == list(a[0].rewards)


def test_a_camp_that_stays_home_is_a_smaller_pddl_problem() -> None:
    mdp = _mdp(extra_items=10)
    full = export(mdp)
    relevant = frozenset(
        f for f in (v.name for v in mdp.state_vars) if "store" not in f and "product" not in f
    )
    camp = CAMP.build(mdp, _stay_out("garage", "store"), relevant | {"dinner-done()"})
    small = export(camp)
    assert small.n_fluents < full.n_fluents and small.n_operators < full.n_operators
    assert not any("product" in o or "drive" in o for o in small.action_names.values())
    assert "product3" in full.objects and "product3" not in small.objects


@pytest.mark.fast_downward
def test_fast_downward_finds_the_optimal_meal_and_the_camp_plan_executes() -> None:
    mdp = _mdp()
    task = D.make_tasks(CFG, "train")[0]
    best_return = max(task.rewards[0] - 10, task.rewards[1] - 150, task.rewards[2] - 210)
    result = run_episode(mdp, FastDownward(), lam=0.0, timeout_s=60, rng=random.Random(0))
    assert result.success and result.discounted_return == best_return
    # Kept in the living room, only ramen is possible: the CAMP's plan is ramen's.
    camp = CAMP.build(mdp, _stay_out("kitchen", "hall"), None)
    planner = FastDownward()
    in_camp = run_episode(mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0), camp=camp)
    assert in_camp.success and in_camp.discounted_return == task.rewards[0] - 10
    assert planner.last_stats["input"] == "ground"


@pytest.mark.fast_downward
def test_impossible_camps_are_failed_planning_calls_not_crashes() -> None:
    # Out of the living room from the start: the initial state violates the context.
    violated = CAMP.build(_mdp(), _stay_out("living-room"), None)
    with pytest.raises(NoPlanFound, match="sink"):
        FastDownward().prepare(violated, Deadline(30))
    # No kettle for ramen, and every other meal forbidden: Fast Downward proves it unsolvable.
    stuck = CAMP.build(_mdp_without_kettle(), _stay_out("kitchen", "hall"), None)
    with pytest.raises(NoPlanFound, match="unsolvable"):
        FastDownward().prepare(stuck, Deadline(30))


def _mdp_without_kettle() -> StripsMDP:
    from camp_planner.domains.dinner import domain as dinner
    from camp_planner.pddl.grounding import ground
    from camp_planner.pddl.parser import parse_problem

    task = D.make_tasks(CFG, "train")[0]
    text = task.problem_text().replace("(at kettle living-room)", "")
    grounded = ground(dinner.parsed_domain(), parse_problem(text, "no-kettle"))
    return StripsMDP.from_task(grounded, "no-kettle", horizon=25, goal_reward=420.0)


def test_render_writes_a_png(tmp_path: Path) -> None:
    from camp_planner.domains.base import RenderPanel

    mdp = _mdp()
    result = run_episode(mdp, _Ramen(), lam=0.0, timeout_s=None, rng=random.Random(0))
    task = D.make_tasks(CFG, "train")[0]
    out = tmp_path / "dinner.png"
    D.render(task, [RenderPanel("ramen", _stay_out("kitchen"), None, result)], out)
    assert out.read_bytes()[:4] == b"\x89PNG"


class _Ramen(FastDownward):
    """A scripted two-step plan (no planner needed for the render test)."""

    def prepare(self, mdp, deadline):  # type: ignore[no-untyped-def]
        self._steps = iter([("make-ramen()",), ("eat(ramen)",)])

    def act(self, state, deadline):  # type: ignore[no-untyped-def]
        return next(self._steps)


@pytest.mark.fast_downward
def test_the_resident_translator_plans_exactly_what_the_driver_plans() -> None:
    mdp = _mdp(1)
    for camp in (None, CAMP.build(mdp, _stay_out("garage", "store"), None)):
        plans = []
        for mode in ("driver", "resident"):
            planner = FastDownward(mode=mode)
            result = run_episode(
                mdp, planner, lam=0.0, timeout_s=60, rng=random.Random(0), camp=camp
            )
            assert result.success
            plans.append((result.actions, result.discounted_return))
        assert plans[0] == plans[1]
    with pytest.raises(ValueError, match="aliases need the driver"):
        FastDownward(mode="resident", alias="lama-first")
    with pytest.raises(PlanningTimeout):
        FastDownward(mode="resident").prepare(mdp, Deadline(0.001))


@pytest.mark.fast_downward
def test_learned_universal_relevance_drops_distractors_without_losing_return(
    tmp_path: Path,
) -> None:
    from camp_planner.workflow import Pipeline

    pipe = Pipeline.create("dinner", None, tmp_path)
    pipe.config["world"]["extra_items"] = 8
    pipe.config["csi"]["k1"] = 800
    pipe.config["camp"]["universal_relevance"] = "learned"
    pipe = Pipeline.from_config("dinner", pipe.config, tmp_path)
    mdp = pipe.domain.make_mdp(pipe.task("test", 1), pipe.config)
    universal = Context.universal()
    camp = pipe.build_camp(mdp, universal)
    assert any("product" in v for v in camp.dropped_variables)
    assert not any(v.startswith(("holding(beef", "ready(")) for v in camp.dropped_variables)
    pure = run_episode(mdp, FastDownward(), lam=0.0, timeout_s=60, rng=random.Random(0))
    small = run_episode(mdp, FastDownward(), lam=0.0, timeout_s=60, rng=random.Random(0), camp=camp)
    assert small.success and small.discounted_return == pure.discounted_return
