"""The picture of a closed-loop execution is drawn from scenes alone: the world at the start
and the end, a moved object's arrow, the path driven and each replan with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from toy_execution import World

from camp_planner.execution.render import ExecutionPicture, draw_execution, render_execution


def test_an_execution_with_a_moved_box_and_a_replan_is_drawn(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    world = World()
    start = world.scene()
    world.boxes["side"] = (3.5, 0.0)  # pushed into the way
    world.robot = (5.0, 0.0, 0.0)
    picture = ExecutionPicture(
        start,
        end=world.scene(),
        path=[(0.0, 0.0, 0.0), (2.0, 0.0, 0.0), (5.0, 0.0, 0.0)],
        replans=[((2.0, 0.0, 0.0), "step 2/5 (move): base: blocked by side")],
        title="p: goal reached (5 steps, 1 replans)",
    )
    fig, ax = plt.subplots()
    try:
        draw_execution(ax, picture)
        texts = [t.get_text() for t in ax.texts]
        assert texts == ["", "1"]  # one arrow, one replan
        assert ax.get_title() == (
            "p: goal reached (5 steps, 1 replans)\nreplan 1: step 2/5 (move): base: blocked by side"
        )
        # The start's three boxes dashed, the end's solid.
        styles = sorted(p.get_linestyle() for p in ax.patches)
        assert styles.count("--") == 3 and styles.count("-") == 3
    finally:
        plt.close(fig)
    out = tmp_path / "deep" / "toy_closed_loop_1.png"
    render_execution(picture, out)
    with Image.open(out) as im:
        assert im.size[0] > 300 and im.size[1] > 100


@pytest.mark.parametrize("moved", [0.0, 0.04])
def test_an_object_within_the_tolerance_has_no_arrow(moved: float) -> None:
    import matplotlib.pyplot as plt

    world = World()
    start = world.scene()
    world.boxes["a"] = (2.5 + moved, 0.0)
    fig, ax = plt.subplots()
    try:
        draw_execution(ax, ExecutionPicture(start, end=world.scene()))
        assert list(ax.texts) == []
    finally:
        plt.close(fig)
