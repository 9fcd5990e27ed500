"""The pipeline learns only the CSIs that are missing and needed, once each, offline."""

from __future__ import annotations

from pathlib import Path

import pytest

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
