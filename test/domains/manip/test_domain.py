"""The manipulation domain class (``camp_planner.domains.manip.domain``): seeded tasks, its
configuration, the context space over grasp style and target bin, features and renders.

The domain is not in the registry yet (``test/domains/test_domain_registry.py`` pins the
registered names); the CLI test registers it for its own duration only."""

import json
from pathlib import Path

import numpy as np
import pytest

from camp_planner.cli import main
from camp_planner.config import load_config
from camp_planner.core.context import Context
from camp_planner.core.context_space import ContextSpaceSpec, generate_context_space
from camp_planner.domains import _DOMAINS
from camp_planner.domains.base import RenderPanel
from camp_planner.domains.manip.domain import ManipDomain
from camp_planner.domains.manip.mdp import ManipMDP

DOMAIN = ManipDomain()
CONFIG = DOMAIN.default_config()


def test_tasks_are_seeded_and_the_splits_disjoint() -> None:
    train = DOMAIN.make_tasks(CONFIG, "train")
    test = DOMAIN.make_tasks(CONFIG, "test")
    assert (len(train), len(test)) == (50, 10)
    assert train == DOMAIN.make_tasks(CONFIG, "train")  # the same tasks every time
    assert not {t.seed for t in train} & {t.seed for t in test}
    assert DOMAIN.make_tasks({**CONFIG, "seed": 1}, "train") != train


def test_the_mdp_follows_the_configuration() -> None:
    task = DOMAIN.make_tasks(CONFIG, "test")[0]
    mdp = DOMAIN.make_mdp(task, CONFIG)
    assert isinstance(mdp, ManipMDP)
    assert (mdp.horizon, mdp.gamma) == (25, 0.99)
    assert mdp.reward_vars == {"red_0_loc", "red_1_loc"}


def test_the_context_space_has_bin_pairs_grasp_sets_and_set_conjunctions() -> None:
    task = DOMAIN.make_tasks(CONFIG, "train")[0]
    space = generate_context_space(
        DOMAIN.make_mdp(task, CONFIG), ContextSpaceSpec.from_mapping(CONFIG["contexts"])
    )
    assert 100 <= len(space) <= 120
    kinds = [c.kind for c in space]
    assert kinds[0] == "universal" and "set_conjunction" in kinds and "disjunction" in kinds
    names = {c.name for c in space}
    assert "grasp ∈ {none,top}" in names
    assert any("∧" in n for n in names)
    for c in space:
        assert c.variables <= {"grasp", "bin"}
        for variable in c.variables:
            assert "none" in c.allowed(variable)  # "none" is always allowed


def test_features_are_the_red_radius_and_the_bins() -> None:
    task = DOMAIN.make_tasks(CONFIG, "train")[0]
    theta = DOMAIN.features(task)
    assert theta.shape == (10,) and theta.dtype == np.float32
    assert theta[0] == pytest.approx(task.reds[0].radius)
    assert list(theta[1:]) == [float(o) for o in task.occupied]


def test_render_writes_a_png_per_context(tmp_path: Path) -> None:
    task = DOMAIN.make_tasks(CONFIG, "train")[0]
    out = tmp_path / "manip.png"
    panels = [
        RenderPanel("universal", Context.universal(), None, None),
        RenderPanel("bins", Context.from_json(_bin_pair()), None, None),
    ]
    DOMAIN.render(task, panels, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _bin_pair() -> dict[str, object]:
    return {
        "kind": "disjunction",
        "terms": [
            {"variable": "bin", "value": "none"},
            {"variable": "bin", "value": 2},
            {"variable": "bin", "value": 5},
        ],
    }


def test_the_default_configuration_validates(tmp_path: Path) -> None:
    json.dumps(CONFIG)  # plain data, as config files and bundles store it
    override = tmp_path / "manip.yaml"
    override.write_text("csi:\n  k1: 5\n")
    config = load_config(DOMAIN, override)
    assert config["csi"]["k1"] == 5 and config["contexts"]["max_set_size"] == 3


def test_camp_contexts_lists_the_space(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setitem(_DOMAINS, "manip", "camp_planner.domains.manip.domain:ManipDomain")
    code = main(["contexts", "--domain", "manip", "--json", "--artifacts", str(tmp_path)])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["id"] == "universal" and 100 <= len(rows) <= 120
