from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from camp_planner.core.context import Context, Term
from camp_planner.core.context_space import ContextSpace
from camp_planner.core.errors import CampError
from camp_planner.learning.bundle import Bundle, load_bundle
from camp_planner.learning.selector import ContextSelector, SelectorConfig

FAST = SelectorConfig(learning_rate=1e-2, max_iterations=2000, seed=3)


def _vector_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(int) + 2 * (x[:, 1] > 0).astype(int)
    return x, y


def test_mlp_fits_to_the_loss_target_and_is_seeded() -> None:
    x, y = _vector_data()
    a = ContextSelector((4,), 4, FAST)
    report = a.fit(x, y)
    assert report.reached_target and report.final_loss <= 1e-3
    assert (a.predict_proba(x).argmax(axis=1) == y).all()
    b = ContextSelector((4,), 4, FAST)
    b.fit(x, y)
    assert np.allclose(a.predict_proba(x), b.predict_proba(x))


def test_training_reports_its_progress_until_it_stops() -> None:
    x, y = _vector_data()
    done: list[int] = []
    capped = SelectorConfig(learning_rate=1e-4, max_iterations=350, loss_target=0.0, seed=3)
    report = ContextSelector((4,), 4, capped).fit(x, y, done.append)
    assert report.iterations == 350 and sum(done) == 300 and set(done) == {100}
    done.clear()
    early = ContextSelector((4,), 4, FAST).fit(x, y, done.append)
    assert early.reached_target and sum(done) == early.iterations // 100 * 100


def test_cnn_for_images_has_the_papers_layers() -> None:
    rng = np.random.default_rng(1)
    x = rng.random(size=(12, 4, 19, 19)).astype(np.float32)
    y = np.arange(12) % 3
    sel = ContextSelector((4, 19, 19), 3, FAST)
    convs = [m for m in sel.net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 1 and convs[0].out_channels == 10 and convs[0].kernel_size == (2, 2)
    assert sel.fit(x, y).final_loss < 0.05
    ranked = sel.ranked(x[0])
    assert ranked[0][0] == y[0]
    assert sum(p for _, p in ranked) == pytest.approx(1.0)


def test_bad_features_are_clear_errors() -> None:
    sel = ContextSelector((4,), 2, FAST)
    with pytest.raises(CampError, match="shape"):
        sel.predict_proba(np.zeros((1, 5)))
    with pytest.raises(CampError, match="NaN"):
        sel.predict_proba(np.full((1, 4), np.nan))


def _bundle() -> Bundle:
    space = ContextSpace((Context.universal(), Context("single", (Term("agent_room", 1),))))
    x, y = _vector_data()
    sel = ContextSelector((4,), 2, FAST)
    sel.fit(x, y % 2)
    return Bundle("gridworld", "2", space, {}, sel, {"planner": "bfs_replan"})


def test_bundle_round_trip(tmp_path: Path) -> None:
    bundle = _bundle()
    path = tmp_path / "b" / "selector.pt"
    bundle.save(path)
    back = load_bundle(path, "gridworld", "2")
    x, _ = _vector_data()
    assert np.allclose(back.selector.predict_proba(x), bundle.selector.predict_proba(x))
    assert [c.id for c in back.space] == [c.id for c in bundle.space]
    assert back.metadata["planner"] == "bfs_replan"


def test_bundle_errors(tmp_path: Path) -> None:
    path = tmp_path / "selector.pt"
    with pytest.raises(CampError, match="no selector bundle"):
        load_bundle(path)
    _bundle().save(path)
    with pytest.raises(CampError, match="is for domain 'gridworld', not 'namo'"):
        load_bundle(path, "namo")
    with pytest.raises(CampError, match="version"):
        load_bundle(path, "gridworld", "1")
    path.write_bytes(b"not a torch file at all")
    with pytest.raises(CampError, match="corrupt"):
        load_bundle(path)
    torch.save({"meta": '{"format": 99}', "selector": {}}, path)
    with pytest.raises(CampError, match="format 99"):
        load_bundle(path)


def test_soft_labels_train_to_the_target_distribution() -> None:
    x, y = _vector_data()
    targets = np.full((len(y), 4), 0.1)
    targets[np.arange(len(y)), y] = 0.7
    sel = ContextSelector((4,), 4, FAST)
    report = sel.fit(x, targets)
    probs = sel.predict_proba(x)
    assert (probs.argmax(axis=1) == y).all()
    assert report.final_loss < 0.05  # KL to the soft targets, not the raw cross-entropy
    with pytest.raises(CampError, match="soft labels"):
        sel.fit(x, targets[:, :3])
    with pytest.raises(CampError, match="labels"):
        SelectorConfig.from_mapping({"labels": "fuzzy"})


def test_multilabel_selector_scores_each_context_independently() -> None:
    x, y = _vector_data()
    targets = np.zeros((len(y), 4), dtype=np.float32)
    targets[np.arange(len(y)), y] = 1.0
    targets[:, 3] = 1.0  # context 3 is near-best everywhere
    cfg = SelectorConfig(learning_rate=1e-2, max_iterations=3000, seed=1, labels="multilabel")
    sel = ContextSelector((4,), 4, cfg)
    sel.fit(x, targets)
    probs = sel.predict_proba(x)
    assert (probs[:, 3] > 0.9).all()
    assert ((probs > 0.5) == (targets > 0.5)).mean() > 0.95
    with pytest.raises(CampError, match="multilabel"):
        sel.fit(x, targets * 0.5)


def test_regression_selector_ranks_by_predicted_objective() -> None:
    x, y = _vector_data()
    # Objectives with a heavy tail: the best context scores ~60, the others lose hundreds to
    # thousands (a timed-out value iteration), as in the gridworld's VI score matrix.
    objectives = np.full((len(y), 4), -2000.0)
    objectives[:, 3] = -300.0
    objectives[np.arange(len(y)), y] = 60.0
    cfg = SelectorConfig(learning_rate=1e-2, max_iterations=3000, seed=2, labels="regression")
    sel = ContextSelector((4,), 4, cfg)
    sel.fit(x, objectives)
    assert (sel.predict_proba(x).argmax(axis=1) == y).all()
    assert sel.predict_proba(x).sum(axis=1) == pytest.approx(np.ones(len(y)), abs=1e-5)
    predicted = sel.predict_objective(x)
    assert np.median(predicted[np.arange(len(y)), y]) == pytest.approx(60.0, rel=0.2)
    # The runner-up is ordered by its predicted objective even where its softmax
    # probability underflows to zero next to the winner's.
    task = int(np.flatnonzero(y != 3)[0])
    assert [i for i, _ in sel.ranked(x[task])[:2]] == [y[task], 3]
    with pytest.raises(CampError, match="regression targets"):
        sel.fit(x, objectives[:, :3])
    with pytest.raises(CampError, match="does not predict"):
        ContextSelector((4,), 4, FAST).predict_objective(x)


def test_symlog_is_an_order_preserving_inverse_pair() -> None:
    from camp_planner.learning.selector import symexp, symlog

    values = np.array([-2000.0, -5.0, 0.0, 3.0, 60.0])
    squashed = symlog(values, 5.0)
    assert (np.diff(squashed) > 0).all()
    assert symexp(squashed, 5.0) == pytest.approx(values)


def test_a_loss_mask_leaves_out_the_pairs_selection_never_ranks() -> None:
    x, _ = _vector_data()
    rng = np.random.default_rng(5)
    # Context 0 is best (+60) wherever it can reach the goal, and an instant failure where
    # it cannot (a sink, here -5000); which tasks those are does not show in the features
    # (the map's doors), so only the screen knows. Context 3 is a safe -20 everywhere.
    reachable = rng.random(len(x)) < 0.5
    objectives = np.full((len(x), 4), -2000.0)
    objectives[:, 3] = -20.0
    objectives[:, 0] = np.where(reachable, 60.0, -5000.0)
    mask = np.ones((len(x), 4), dtype=bool)
    mask[:, 0] = reachable
    cfg = SelectorConfig(learning_rate=1e-2, max_iterations=3000, seed=2, labels="regression")
    plain = ContextSelector((4,), 4, cfg)
    plain.fit(x, objectives)
    masked = ContextSelector((4,), 4, cfg)
    masked.fit(x, objectives, mask=mask)
    # On new tasks, unmasked, the failures it memorised drag context 0 under the safe
    # context on many; masked, it is learned from the tasks it can serve and ranked first
    # on all (the screen removes it where it cannot reach the goal).
    fresh = rng.normal(size=(200, 4)).astype(np.float32)
    assert (plain.predict_proba(fresh).argmax(axis=1) == 0).mean() < 0.8
    assert (masked.predict_proba(fresh).argmax(axis=1) == 0).all()
    with pytest.raises(CampError, match="boolean tasks × contexts"):
        masked.fit(x, objectives, mask=mask[:, :3])
    empty = mask.copy()
    empty[0] = False
    with pytest.raises(CampError, match="no context"):
        masked.fit(x, objectives, mask=empty)
    with pytest.raises(CampError, match="regression or multilabel"):
        ContextSelector((4,), 4, FAST).fit(x, np.zeros(len(x), dtype=int), mask=mask)
    with pytest.raises(CampError, match="learn_screened_only"):
        SelectorConfig.from_mapping({"learn_screened_only": True, "labels": "hard"})
    with pytest.raises(CampError, match="learn_screened_only"):
        SelectorConfig.from_mapping(
            {"learn_screened_only": True, "labels": "regression", "screen": False}
        )


def test_the_prior_ranks_contexts_by_mean_objective_on_every_task(tmp_path: Path) -> None:
    x, _ = _vector_data()
    # Context 0 is the better one on most tasks (900 against 800) and a catastrophe on a
    # few (-2000, a run that went to the deadline): its median is higher, its mean lower.
    # Context 2 fails where the screen would have removed it (the mask).
    objectives = np.tile([900.0, 800.0, 950.0], (len(x), 1))
    objectives[:4, 0] = -2000.0
    objectives[:10, 2] = -1000.0
    cfg = SelectorConfig.from_mapping({"model": "prior", "labels": "regression", "temperature": 50})
    prior = ContextSelector((4,), 3, cfg)
    report = prior.fit(x, objectives)
    assert report.reached_target and report.iterations == 0
    means = objectives.mean(axis=0)
    assert prior.predict_objective(x) == pytest.approx(np.tile(means, (len(x), 1)))
    assert [i for i, _ in prior.ranked(x[0])] == [1, 0, 2]
    # A symlog regression fitted to the same targets ranks by the compressed values, where
    # the rare catastrophe weighs little: context 0 above context 1.
    net = ContextSelector(
        (4,),
        3,
        SelectorConfig(learning_rate=1e-2, max_iterations=3000, seed=2, labels="regression"),
    )
    net.fit(x, objectives)
    assert (net.predict_objective(x)[:, 0] > net.predict_objective(x)[:, 1]).mean() > 0.5
    # The mask: each context's mean over the tasks it keeps; one kept nowhere ranks last.
    mask = np.ones(objectives.shape, dtype=bool)
    mask[:10, 2] = False
    mask[:, 0] = False
    masked = ContextSelector((4,), 3, cfg)
    with pytest.raises(CampError, match="no context"):
        masked.fit(x, objectives, mask=np.zeros_like(mask))
    masked.fit(x, objectives, mask=mask)
    assert masked.predict_objective(x[:1])[0] == pytest.approx([799.0, 800.0, 950.0])
    # It is saved and loaded like any selector.
    space = ContextSpace(
        (Context.universal(), *(Context("single", (Term("agent_room", i),)) for i in (1, 2)))
    )
    path = tmp_path / "prior.pt"
    Bundle("gridworld", "2", space, {}, prior, {"planner": "bfs_replan"}).save(path)
    back = load_bundle(path, "gridworld", "2")
    assert back.selector.predict_objective(x) == pytest.approx(prior.predict_objective(x))
    with pytest.raises(CampError, match="needs regression labels"):
        SelectorConfig.from_mapping({"model": "prior", "labels": "multilabel"})


def test_bundle_round_trips_set_conjunctions_and_their_csis(tmp_path: Path) -> None:
    from camp_planner.core.csi import CSIResult

    # Issue 50: D4's contexts, with mixed-type values ("none" beside bin numbers).
    sets = Context(
        "set_conjunction",
        (
            Term("bin", "none"),
            Term("bin", 2),
            Term("bin", 5),
            Term("grasp", "none"),
            Term("grasp", "top"),
        ),
    )
    space = ContextSpace(
        (Context.universal(), sets, Context("disjunction", (Term("bin", 2), Term("bin", 5))))
    )
    csis = CSIResult(sets, ("bin", "grasp", "blue"), frozenset({("bin", "bin")}), 10, 0.1)
    x, y = _vector_data()
    sel = ContextSelector((4,), 3, FAST)
    sel.fit(x, y % 3)
    path = tmp_path / "sets.pt"
    Bundle("manip", "1", space, {sets.id: csis}, sel, {}).save(path)
    back = load_bundle(path, "manip", "1")
    assert [c.to_json() for c in back.space] == [c.to_json() for c in space]
    assert [(c.id, c.name) for c in back.space] == [(c.id, c.name) for c in space]
    assert back.space[1].kind == "set_conjunction"
    assert back.space[1].allowed("bin") == ("none", 2, 5)
    assert back.csis[sets.id].context == sets
    assert back.csis[sets.id].dependencies == csis.dependencies
