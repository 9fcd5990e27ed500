"""The pipeline learns only the CSIs that are missing and needed, once each, offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from camp_planner.core.context import Context
from camp_planner.workflow import Pipeline


def test_learn_csis_learns_each_missing_needed_context_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipe = Pipeline.create("gridworld", None, tmp_path)
    pipe.config["csi"].update({"k1": 5, "k2": 5})  # a quick CSI test: only counts matter here
    pipe = Pipeline.from_config("gridworld", pipe.config, tmp_path)
    universal, first, second = pipe.space[0], pipe.space[1], pipe.space[2]
    assert universal.is_universal and not pipe.needs_csis(universal)
    # The universal context needs none; a context named twice is learned once.
    assert pipe.learn_csis([universal, first, first], label=None) == 1
    assert pipe.store.cached(first) is not None and pipe.store.cached(second) is None
    assert pipe.learn_csis([first], label=None) == 0  # cached now
    assert pipe.learn_csis([first, second], label="learning CSIs") == 1
    assert "learning CSIs: 1/1" in capsys.readouterr().err
    # And the cache outlives the pipeline: a new one learns nothing for them.
    again = Pipeline.from_config("gridworld", pipe.config, tmp_path)
    assert again.learn_csis([first, second], label=None) == 0


def _learned(pipe: Pipeline, contexts: list[Context]) -> list[dict[str, Any]]:
    """What was learned per context, without how long it took."""
    out = []
    for context in contexts:
        result = pipe.store.cached(context)
        assert result is not None
        out.append({k: v for k, v in result.to_json().items() if k != "seconds"})
    return out


@pytest.mark.parametrize(
    "domain, csi",
    [
        ("gridworld", {"k1": 8, "k2": 5}),
        pytest.param("namo", {"k1": 4, "k2": 3, "tasks": 2}, marks=pytest.mark.pybullet),
    ],
)
def test_csis_learned_in_worker_processes_are_those_learned_in_one(
    tmp_path: Path, domain: str, csi: dict[str, int]
) -> None:
    base = Pipeline.create(domain, None, tmp_path / "base")
    base.config["csi"].update(csi)
    one = Pipeline.from_config(domain, base.config, tmp_path / "one")
    contexts = [c for c in one.space if not c.is_universal][:3]
    assert one.learn_csis(contexts, label=None) == 3
    two = Pipeline.from_config(domain, base.config, tmp_path / "two")
    done: list[str] = []
    two.store.learn(contexts, workers=2, done=lambda c: done.append(c.id))
    assert sorted(done) == sorted(c.id for c in contexts)
    assert _learned(two, contexts) == _learned(one, contexts)
    # Saved as they came: a new pipeline finds all three on disk.
    again = Pipeline.from_config(domain, base.config, tmp_path / "two")
    assert again.learn_csis(contexts, label=None, workers=2) == 0
    assert _learned(again, contexts) == _learned(one, contexts)
