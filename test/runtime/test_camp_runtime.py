"""The CAMP runtime: the rule by lower bound (candidates, the universal context scored like
any other, giving up), the fallback order, the attempt cap, and what `camp select` shows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from camp_planner.cli import main
from camp_planner.core.context import Context, Term
from camp_planner.core.context_space import ContextSpace
from camp_planner.core.objective import attempt_cap
from camp_planner.learning.bundle import Bundle
from camp_planner.learning.objective_model import ObjectiveModel
from camp_planner.learning.selector import ContextSelector, SelectorConfig
from camp_planner.runtime.camp_runtime import CampRuntime
from camp_planner.runtime.selection import GIVE_UP, Candidate, bound_order
from camp_planner.workflow import Pipeline

ROOMS = Context("disjunction", tuple(Term("agent_room", r) for r in range(9)))


def _pipe(tmp_path: Path) -> Pipeline:
    pipe = Pipeline.create("gridworld", None, tmp_path)
    pipe.config["csi"].update({"k1": 10, "k2": 5, "tasks": 2})
    return pipe


def _bundle(pipe: Pipeline, rooms: float, universal: float) -> Bundle:
    """A bundle whose selector ranks ROOMS first and whose objective model has learned that
    ROOMS earns about ``rooms`` and the universal context about ``universal``."""
    space = ContextSpace((Context.universal(), ROOMS))
    tasks = pipe.tasks("train")[:8]
    x = np.stack([pipe.domain.features(t) for t in tasks])
    selector = ContextSelector(x.shape[1:], 2, SelectorConfig(learning_rate=1e-2))
    selector.fit(x[:4], np.ones(4, dtype=int))
    noise = np.random.default_rng(0).normal(scale=1.0, size=len(tasks))
    mean = {ROOMS.id: rooms, "universal": universal}
    model = ObjectiveModel.fit(x, [c.id for c in space], lambda i, c: mean[c] + noise[i])
    meta = {"objective_model": model.to_json()}
    return Bundle("gridworld", "2", space, {ROOMS.id: pipe.store.get(ROOMS)}, selector, meta)


def test_bound_order_stops_at_the_universal_context_or_at_giving_up() -> None:
    a = Context("disjunction", (Term("agent_room", 1), Term("agent_room", 2)))
    u = Context.universal()

    def cand(c: Context | None, lower: float) -> Candidate:
        return Candidate(c, 0.5, lower + 1, lower, 10)

    _, order, gives_up = bound_order([cand(a, 5), cand(u, 3), cand(None, 0)], 2)
    assert order == [a, u] and not gives_up
    _, order, gives_up = bound_order([cand(a, 5), cand(u, -30), cand(None, 0)], 2)
    assert order == [a] and gives_up  # planning on past giving up cannot pay
    ranked, order, gives_up = bound_order([cand(a, -5), cand(u, -30), cand(None, 0)], 2)
    assert order == [] and gives_up and ranked[0].name == GIVE_UP
    _, order, _ = bound_order([cand(u, 5), cand(a, 3)], 2)
    assert order == [u]  # below the universal context: it never follows
    no_bound = Candidate(a, 0.9, math.nan, -math.inf, 2)
    _, order, _ = bound_order([no_bound, cand(u, -3)], 2)
    assert order == [u]


def test_the_rule_plans_in_the_context_whose_bound_is_best(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    runtime = CampRuntime(pipe, "bfs_replan", _bundle(pipe, rooms=80.0, universal=-500.0))
    assert runtime.rule_in_use == "bound"
    task = pipe.task("test", 0)
    selection = runtime.select(task)
    assert selection.first == ROOMS
    # Giving up (worth 0) ranks above the universal context, so the order ends there.
    assert selection.fallback_order() == [ROOMS.name, GIVE_UP]
    names = [c.name for c in selection.candidates]
    assert names == [ROOMS.name, GIVE_UP, Context.universal().name]
    scored = {c.name: c for c in selection.candidates}
    assert scored[ROOMS.name].predicted_objective == pytest.approx(80.0, abs=3)
    assert scored["universal"].lower_bound is not None and scored["universal"].lower_bound < -490
    run = runtime.run(task, seed=0, lam=0.0)  # no cap: success does not hang on the clock
    assert run.result.used[0] == ROOMS.id and run.result.success
    # Where the domain may not give up, the universal context ends the order.
    pipe.config["camp"]["selection"] = {"give_up": False}
    plan_on = CampRuntime(pipe, "bfs_replan", runtime.bundle).select(task)
    assert plan_on.fallback_order() == [ROOMS.name, "universal"]


def test_the_runtime_gives_up_when_no_candidate_can_pay(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    runtime = CampRuntime(pipe, "bfs_replan", _bundle(pipe, rooms=-300.0, universal=-500.0))
    run = runtime.run(pipe.task("test", 0), seed=0)
    assert run.first is None and run.selection.winner == GIVE_UP
    assert run.result.outcome == "gave_up" and run.result.steps == 0
    assert run.result.used == [] and run.context is None
    assert "giving up" in run.selection.reason


def test_every_attempt_is_capped_where_planning_longer_cannot_pay(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    mdp = pipe.domain.make_mdp(pipe.task("test", 0), pipe.config)
    cap = attempt_cap(mdp, 100.0)
    best = mdp.value_estimate(mdp.initial_state())
    assert best is not None and cap == pytest.approx(best / 100.0)
    assert attempt_cap(mdp, 0.0) is None  # compute is free: no cap
    # A planner slower than the cap is abandoned at it, and the episode ends (give up).
    pipe.config["planners"]["mcts"] = {"time_per_step": 5.0, "leaf": "estimate"}
    pipe.config["lambda"]["mcts"] = 100.0
    runtime = CampRuntime(pipe, "mcts", None)
    run = runtime.run(pipe.task("test", 0), seed=0)
    assert run.result.outcome == "capped"
    # The attempt ends on the cap, not on the planner's own 5 s step budget.
    assert f"past {cap:.2f} s no plan can earn more than it costs" in run.result.failures[0]


def test_select_json_lists_the_candidates_and_the_fallback_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipe = _pipe(tmp_path)
    path = tmp_path / "b.pt"
    _bundle(pipe, rooms=80.0, universal=-500.0).save(path)
    common = ["--artifacts", str(tmp_path), "--planner", "bfs_replan", "--bundle", str(path)]
    assert main(["select", "--json", *common]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rule"] == "bound" and out["winner"] == ROOMS.name
    assert out["fallback_order"] == [ROOMS.name, GIVE_UP]
    first = out["candidates"][0]
    assert set(first) >= {"context", "predicted_objective", "lower_bound", "training_tasks"}
    assert (
        first["context"]["id"] == ROOMS.id and first["lower_bound"] < first["predicted_objective"]
    )
    assert "joint lower bound" in out["reason"]
    assert main(["select", "--rule", "ungated", "--json", *common]) == 0
    ungated = json.loads(capsys.readouterr().out)
    assert ungated["rule"] == "ungated" and ungated["fallback_order"] == [ROOMS.name, "universal"]
    assert main(["plan", "--json", *common]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["fallback_order"] == [ROOMS.name, GIVE_UP] and record["plan_digest"]


def test_without_evidence_the_universal_context_comes_first() -> None:
    a = Context("disjunction", (Term("agent_room", 1), Term("agent_room", 2)))
    unmeasured = [
        Candidate(a, 0.9, 80.0, -math.inf, 2),
        Candidate(Context.universal(), 0.1, 10.0, -math.inf, 2),
    ]
    _, order, gives_up = bound_order(unmeasured, 2)
    assert order == [Context.universal()] and not gives_up


def test_the_cap_follows_the_return_that_can_still_be_earned() -> None:
    class Bound:
        def __init__(self, best: float | None) -> None:
            self.best = best

        def return_bound(self) -> float | None:
            return self.best

    def cap(best: float | None, lam: float, may_give_up: bool = True) -> float | None:
        return attempt_cap(Bound(best), lam, may_give_up)  # type: ignore[arg-type]

    assert cap(1000.0, 100.0) == pytest.approx(10.0)
    assert cap(1000.0, 0.0) is None  # compute is free
    assert cap(None, 100.0) is None  # no bound: no cap
    assert cap(0.0, 100.0) == 0.0  # nothing to earn: giving up at once is best
    assert cap(0.0, 100.0, may_give_up=False) is None  # a robot that must act plans on
