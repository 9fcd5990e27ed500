from __future__ import annotations

from pathlib import Path

import numpy as np

from camp_planner.core.context import Context, Term
from camp_planner.core.context_space import ContextSpace
from camp_planner.eval.methods import CampMethod, StateEncoder
from camp_planner.learning.bundle import Bundle
from camp_planner.learning.selector import ContextSelector, SelectorConfig
from camp_planner.runtime.camp_runtime import CampRun
from camp_planner.workflow import Pipeline


def _pipe(tmp_path: Path) -> Pipeline:
    pipe = Pipeline.create("gridworld", None, tmp_path)
    pipe.config["csi"].update({"k1": 10, "k2": 5, "tasks": 2})
    # Compute free: no attempt cap, so what these tests check does not depend on how fast
    # the machine plans.
    pipe.config["lambda"]["bfs_replan"] = 0.0
    return pipe


def test_a_failing_first_choice_falls_back_to_the_next_ranked_context(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    # Ranked first: stay out of the start room, an immediate violation → no plan → fallback.
    bad = Context("disjunction", tuple(Term("agent_room", r) for r in range(1, 9)))
    space = ContextSpace((Context.universal(), bad))
    features = np.stack([pipe.domain.features(t) for t in pipe.tasks("train")[:4]])
    cfg = SelectorConfig(learning_rate=1e-2, screen=False)
    selector = ContextSelector(features.shape[1:], 2, cfg)
    selector.fit(features, np.ones(4, dtype=int))  # always "bad"
    bundle = Bundle("gridworld", "2", space, {bad.id: pipe.store.get(bad)}, selector, {})
    score = CampMethod(bundle).evaluate(pipe, "bfs_replan", 0, seed=0)
    assert score.context_id == bad.id
    assert score.fallbacks == 1 and score.success


def test_screening_skips_a_context_that_cannot_reach_the_goal(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    bad = Context("disjunction", tuple(Term("agent_room", r) for r in range(1, 9)))
    space = ContextSpace((Context.universal(), bad))
    features = np.stack([pipe.domain.features(t) for t in pipe.tasks("train")[:4]])
    selector = ContextSelector(features.shape[1:], 2, SelectorConfig(learning_rate=1e-2))
    selector.fit(features, np.ones(4, dtype=int))  # always "bad"
    bundle = Bundle("gridworld", "2", space, {bad.id: pipe.store.get(bad)}, selector, {})
    method = CampMethod(bundle)
    kept, screened, _ = method.runtime(pipe, "bfs_replan").rank(pipe.task("test", 0))
    assert [c for c, _ in kept] == [Context.universal()] and screened == [bad]
    score = method.evaluate(pipe, "bfs_replan", 0, seed=0)
    assert score.context_id == "universal" and score.fallbacks == 0 and score.success


def test_state_encoder_is_one_hot_per_variable(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    mdp = pipe.domain.make_mdp(pipe.task("train", 0), pipe.config)
    enc = StateEncoder(mdp)
    x = enc.encode(mdp.initial_state())
    assert x.shape == (81 + 9 + 21 * 11,)
    assert x.sum() == len(mdp.state_vars)


def test_policy_learning_training_stops_at_the_domains_iteration_bound(tmp_path: Path) -> None:
    from camp_planner.eval.methods import PolicyLearning, TrainingData
    from camp_planner.learning.labels import Score, ScoreMatrix

    pipe = _pipe(tmp_path)
    mdp = pipe.domain.make_mdp(pipe.task("train", 0), pipe.config)
    s0 = list(mdp.initial_state())
    actions = list(mdp.applicable_actions(mdp.initial_state()))[:3]
    scores = {
        (t, "universal"): Score(
            t, "universal", 1.0, 1.0, 0.1, True, "goal", 0, {}, [s0] * 3, actions
        )
        for t in range(2)
    }
    matrix = ScoreMatrix([0, 1], ["universal"], scores)
    features = np.stack([pipe.domain.features(pipe.task("train", t)) for t in range(2)])
    pipe.config["baselines"] = {"policy_max_iterations": 7}
    method = PolicyLearning(task_conditioned=True)
    method.fit(TrainingData(pipe, "bfs_replan", matrix, features, seed=0))
    assert method.report.iterations == 7 and not method.report.reached_target


def test_attempt_budget_is_read_from_the_camp_settings_and_checked(tmp_path: Path) -> None:
    import pytest

    from camp_planner.config import load_config
    from camp_planner.core.errors import CampError
    from camp_planner.domains import get_domain
    from camp_planner.runtime.camp_runtime import attempt_budget

    domain = get_domain("namo")
    assert attempt_budget(domain.default_config()) is None  # off unless asked for
    cfg = tmp_path / "budget.yaml"
    cfg.write_text("camp: {attempt_budget_s: 3}\n")
    assert attempt_budget(load_config(domain, cfg)) == 3.0
    for bad in ("0", "-1", "'soon'", "true"):
        cfg.write_text(f"camp: {{attempt_budget_s: {bad}}}\n")
        with pytest.raises(CampError, match="attempt_budget_s"):
            attempt_budget(load_config(domain, cfg))


def test_the_budget_leaves_the_label_checkpoints_alone(tmp_path: Path) -> None:
    from camp_planner.learning.train import score_checkpoint

    pipe = _pipe(tmp_path)
    before = score_checkpoint(pipe, tmp_path, "bfs_replan", "train", 0).path
    pipe.config["camp"]["attempt_budget_s"] = 2.0
    assert score_checkpoint(pipe, tmp_path, "bfs_replan", "train", 0).path == before
    pipe.config["camp"]["sink_reward"] = -5.0  # a setting that does change every score
    assert score_checkpoint(pipe, tmp_path, "bfs_replan", "train", 0).path != before


def test_a_camp_method_from_a_bundle_takes_the_settings_and_a_missing_bundle_is_a_clear_error(
    tmp_path: Path,
) -> None:
    import pytest

    from camp_planner.core.errors import CampError
    from camp_planner.eval.methods import bundled_camp_method

    pipe = Pipeline.create("gridworld", None, tmp_path)
    # The package ships a bundle for NAMO with TAMP only.
    with pytest.raises(CampError, match="ships no selector bundle for gridworld"):
        bundled_camp_method(pipe, "bfs_replan")
    with pytest.raises(CampError, match="no selector bundle at"):
        bundled_camp_method(pipe, "bfs_replan", tmp_path / "none.pt")
    namo = Pipeline.create("namo", None, tmp_path)
    method = bundled_camp_method(namo, "tamp", settings={"relaxed": "ompl"}, timeout_s=5.0)
    assert isinstance(method, CampMethod) and method.bundle.space
    assert namo.planner_settings("tamp")["relaxed"] == "ompl" and namo.config["timeout_s"] == 5.0


def _always(pipe: Pipeline, context: Context, gains: dict[str, list[float]] | None) -> Bundle:
    """A bundle whose selector always ranks ``context`` first, with ``gains`` as its gate's
    gain table (None: a bundle trained before the gate)."""
    space = ContextSpace((Context.universal(), context))
    features = np.stack([pipe.domain.features(t) for t in pipe.tasks("train")[:4]])
    selector = ContextSelector(features.shape[1:], 2, SelectorConfig(learning_rate=1e-2))
    selector.fit(features, np.ones(4, dtype=int))
    meta = {} if gains is None else {"gain_table": {"cost": "wall", "gains": gains}}
    return Bundle("gridworld", "2", space, {context.id: pipe.store.get(context)}, selector, meta)


def _run(method: CampMethod, pipe: Pipeline) -> CampRun:
    return method.runtime(pipe, "bfs_replan").run(pipe.task("test", 0), seed=0)


def test_the_gate_plans_with_the_universal_context_when_the_gain_is_noise(
    tmp_path: Path,
) -> None:
    pipe = _pipe(tmp_path)
    rooms = Context("disjunction", tuple(Term("agent_room", r) for r in range(9)))
    noisy = {rooms.id: [30.0, -28.0] * 10}
    run = _run(CampMethod(_always(pipe, rooms, noisy)), pipe)
    gate = run.selection.gate
    assert gate is not None and not gate.committed and gate.proposed == rooms
    assert run.first == Context.universal() and run.result.used == ["universal"]
    # The paper's CAMP (the ungated method) plans in the selector's choice regardless.
    ungated = CampMethod(_always(pipe, rooms, noisy), rule="ungated")
    assert ungated.name == "camp_ungated"
    assert _run(ungated, pipe).first == rooms


def test_the_gate_commits_to_a_context_whose_gain_clearly_beats_its_noise(
    tmp_path: Path,
) -> None:
    pipe = _pipe(tmp_path)
    rooms = Context("disjunction", tuple(Term("agent_room", r) for r in range(9)))
    run = _run(CampMethod(_always(pipe, rooms, {rooms.id: [10.0, 11.0, 9.0] * 5})), pipe)
    gate = run.selection.gate
    assert gate is not None and gate.committed and run.first == rooms
    assert run.result.used[0] == rooms.id
    # A bundle trained before the gate keeps the selector's choice, and says why.
    old = _run(CampMethod(_always(pipe, rooms, None)), pipe)
    assert old.first == rooms and old.selection.gate is not None
    assert "no gain table" in old.selection.gate.reason


def test_the_universal_context_plans_in_the_tasks_own_mdp(tmp_path: Path) -> None:
    """The universal CAMP keeping every variable is the task itself: no CAMP mapping to pay."""
    pipe = _pipe(tmp_path)
    rooms = Context("disjunction", tuple(Term("agent_room", r) for r in range(9)))
    runtime = CampMethod(_always(pipe, rooms, None)).runtime(pipe, "bfs_replan")
    mdp = pipe.domain.make_mdp(pipe.task("test", 0), pipe.config)
    universal = Context.universal()
    task = pipe.task("test", 0)
    assert runtime.planned_in(universal, runtime.build(mdp, universal, task)) is None
    camp = runtime.build(mdp, rooms, task)
    assert runtime.planned_in(rooms, camp) is camp
    # Where the domain learns the universal context's relevance, its CAMP drops variables.
    pipe.config["camp"]["universal_relevance"] = "learned"
    assert runtime.planned_in(universal, camp) is camp
