"""The structural selector: CAMP sizes from task-specific value counts, its inputs, and a
selector trained on them that picks the cheap context and round-trips through a bundle."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from camp_planner.core.camp import log_state_count
from camp_planner.core.context import Context, Term
from camp_planner.core.context_space import ContextSpace
from camp_planner.core.errors import CampError
from camp_planner.eval.methods import CampMethod
from camp_planner.learning.bundle import Bundle, load_bundle
from camp_planner.learning.selector import ContextSelector, SelectorConfig
from camp_planner.learning.structural import FEATURES, context_features, selector_input
from camp_planner.workflow import Pipeline


def _pipe(tmp_path: Path) -> Pipeline:
    pipe = Pipeline.create("gridworld", None, tmp_path)
    pipe.config["csi"].update({"k1": 10, "k2": 5, "tasks": 2})
    return pipe


def _without(rooms: set[int]) -> Context:
    return Context("disjunction", tuple(Term("agent_room", r) for r in range(9) if r not in rooms))


def test_log_state_count_counts_each_task_s_own_values(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    task = pipe.task("train", 0)
    mdp = pipe.domain.make_mdp(task, pipe.config)
    # Agent cell and room, then each occupied enemy slot's loop cells plus "removed"; an
    # empty slot can only ever be "absent" and adds nothing.
    expected = math.log(81) + math.log(9)
    expected += sum(math.log(len(e.cycle) + 1) for e in task.enemies)
    assert log_state_count(mdp) == pytest.approx(expected)
    assert log_state_count(mdp, {"agent_pos"}) == pytest.approx(math.log(81))
    assert log_state_count(mdp, set()) == 0.0


def test_context_features_see_which_enemies_a_camp_keeps(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    task = pipe.task("train", 0)
    mdp = pipe.domain.make_mdp(task, pipe.config)
    enemy_rooms = {e.room for e in task.enemies}
    avoid = _without(enemy_rooms) if len(enemy_rooms) <= 2 else _without(set())
    contexts = [Context.universal(), avoid, _without({0})]
    graph = pipe.domain.region_graph(task)
    x = context_features(mdp, contexts, lambda c: pipe.relevant(mdp, c), graph)
    assert x.shape == (3, len(FEATURES))
    universal, camp, no_start = x
    assert universal[0] == pytest.approx(log_state_count(mdp)) == pytest.approx(universal[2])
    assert camp[0] < universal[0]  # the CAMP drops the avoided rooms' enemies
    assert universal[1] == 1.0 and no_start[1] == 0.0  # the start room is 0
    same = selector_input(pipe, task, "structural", contexts, pipe.relevant)
    assert np.array_equal(same, x)
    assert selector_input(pipe, task, "net", contexts, pipe.relevant).shape == (4, 19, 19)


def _synthetic() -> tuple[np.ndarray, np.ndarray]:
    """Tasks × 3 contexts × features; the objective falls with the first feature (the CAMP's
    size) as an enumerating planner's would, so the smallest CAMP is best."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, size=(40, 3, 3)).astype(np.float32)
    x[:, :, 1] = 1.0
    objective = 90.0 - 30.0 * np.exp(x[:, :, 0] / 2.0)
    return x, objective


def test_structural_selector_picks_the_cheapest_context_and_round_trips(tmp_path: Path) -> None:
    x, objective = _synthetic()
    cfg = SelectorConfig(
        model="structural", labels="regression", learning_rate=1e-2, max_iterations=3000
    )
    sel = ContextSelector((3, 3), 3, cfg)
    sel.fit(x[:30], objective[:30])
    held_out = [sel.ranked(row)[0][0] for row in x[30:]]
    assert held_out == [int(np.argmin(row[:, 0])) for row in x[30:]]
    space = ContextSpace((Context.universal(), _without({1}), _without({2})))
    path = tmp_path / "selector.pt"
    Bundle("gridworld", "2", space, {}, sel, {}).save(path)
    back = load_bundle(path, "gridworld", "2").selector
    assert back.cfg.model == "structural"
    assert np.allclose(back.predict_objective(x[30:]), sel.predict_objective(x[30:]))


def test_without_the_per_context_bias_a_context_is_judged_by_its_inputs_alone() -> None:
    x, objective = _synthetic()
    # Context 2 scores 500 more on every task for no structural reason: only a per-context
    # bias can learn that.
    objective = objective.copy()
    objective[:, 2] += 500.0
    base = {"model": "structural", "labels": "regression", "learning_rate": 1e-2}
    for bias in (True, False):
        cfg = SelectorConfig.from_mapping(
            {**base, "max_iterations": 3000, "structural_context_bias": bias}
        )
        sel = ContextSelector((3, 3), 3, cfg)
        sel.fit(x[:30], objective[:30])
        bias_values = sel.net.bias.detach().numpy()
        assert np.any(bias_values != 0.0) == bias
        # Two tasks with identical rows for every context: only the bias tells them apart.
        same = np.repeat(x[30:31, :1, :], 3, axis=1)
        predicted = sel.predict_objective(same)[0]
        if bias:
            assert int(np.argmax(predicted)) == 2
        else:
            assert np.allclose(predicted, predicted[0])


def test_structural_shape_and_model_errors() -> None:
    cfg = SelectorConfig(model="structural", labels="regression")
    with pytest.raises(CampError, match="one row of features per context"):
        ContextSelector((4, 3), 3, cfg)
    with pytest.raises(CampError, match=r"selector\.model"):
        SelectorConfig.from_mapping({"model": "forest"})


@pytest.mark.slow
def test_camp_method_selects_with_a_structural_selector(tmp_path: Path) -> None:
    pipe = _pipe(tmp_path)
    contexts = [Context.universal(), _without({0})]
    space = ContextSpace(tuple(contexts))
    tasks = pipe.tasks("train")[:4]
    x = np.stack([selector_input(pipe, t, "structural", contexts, pipe.relevant) for t in tasks])
    # Teach it "universal good, the context without the start room bad".
    targets = np.tile(np.array([50.0, -50.0]), (len(tasks), 1))
    cfg = SelectorConfig(
        model="structural", labels="regression", learning_rate=1e-2, max_iterations=500
    )
    sel = ContextSelector(x.shape[1:], 2, cfg)
    sel.fit(x, targets)
    csis = {contexts[1].id: pipe.store.get(contexts[1])}
    method = CampMethod(Bundle("gridworld", "2", space, csis, sel, {}))
    kept, _, _ = method.runtime(pipe, "bfs_replan").rank(pipe.task("test", 0))
    assert kept[0][0] == Context.universal()
    assert method.evaluate(pipe, "bfs_replan", 0, seed=0).context_id == "universal"


def test_training_mask_keeps_the_pairs_the_screen_keeps(tmp_path: Path) -> None:
    from camp_planner.learning.train import training_mask

    pipe = _pipe(tmp_path)
    tasks = [pipe.task("train", i) for i in range(3)]
    contexts = [Context.universal(), _without({0}), _without({4})]
    cfg = SelectorConfig(labels="regression")
    assert training_mask(pipe, tasks, contexts, cfg) is None  # off unless asked for
    mask = training_mask(
        pipe, tasks, contexts, SelectorConfig(labels="regression", learn_screened_only=True)
    )
    assert mask is not None and mask.shape == (3, 3) and mask.dtype == np.bool_
    for row, task in zip(mask, tasks, strict=True):
        graph = pipe.domain.region_graph(task)
        assert list(row) == [graph.can_reach_goal(c) for c in contexts]
    assert mask[:, 0].all() and not mask[:, 1].any()  # the start room is 0
