"""NAMO renders stay readable at 10×10 (figure grows, allowed rooms stand out, no box
labels) while the paper's 3×3 renders keep their size, and a panel shows the rooms of its
CAMP's concrete context before its own (which may be a template)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_hex
from matplotlib.patches import Rectangle
from PIL import Image

from camp_planner.core.context import Context, Term
from camp_planner.core.objective import EpisodeResult
from camp_planner.domains.base import RenderPanel
from camp_planner.domains.namo.render import (
    ALLOWED,
    ALLOWED_EDGE,
    FORBIDDEN_LARGE,
    draw_scene,
    panel_rooms,
    render_panels,
    render_scene,
)
from camp_planner.domains.namo.world import NamoSettings, NamoTask, generate_task

ROUTE = [0, 1, 11, 12, 22, 23, 33, 34, 44, 45, 55, 56, 66, 67, 77, 78, 88, 89, 99]


def _rooms(rooms: list[int]) -> Context:
    return Context("disjunction", tuple(Term("robot_room", r) for r in rooms))


def _camp(context: Context | None, dropped: Sequence[str] = ()) -> Any:
    # What render_panels reads of a CAMP; a real one needs an MDP built for the task.
    return SimpleNamespace(context=context, dropped_variables=list(dropped))


def _panels(task: NamoTask, rooms: list[int]) -> list[RenderPanel]:
    states = []
    for room in rooms:
        x0, y0, x1, y1 = task.room_rect(room)
        states.append((((x0 + x1) / 2, (y0 + y1) / 2, 0.0),))
    episode = EpisodeResult(1000.0, 900.0, 1.0, len(states), True, "goal", states=states)
    dropped = [b.name for b in task.boxes if b.room not in rooms]
    return [
        RenderPanel("universal", Context.universal(), None, None),
        RenderPanel("route", Context.template("route"), _camp(_rooms(rooms), dropped), episode),
    ]


@pytest.fixture(scope="module")
def task10() -> NamoTask:
    task = generate_task(0, 5, NamoSettings(grid=10))
    assert len(task.boxes) > 200  # the world this is about
    return task


def test_a_panel_shows_its_camps_concrete_rooms_before_its_own_context() -> None:
    template = Context.template("route")
    assert panel_rooms(RenderPanel("t", template, _camp(_rooms([0, 1, 4])), None)) == {0, 1, 4}
    # No CAMP, or a CAMP without a context: the panel's own context.
    assert panel_rooms(RenderPanel("t", _rooms([0, 3]), None, None)) == {0, 3}
    assert panel_rooms(RenderPanel("t", _rooms([0, 3]), _camp(None), None)) == {0, 3}
    # A template names no rooms: every room is drawn as allowed.
    assert panel_rooms(RenderPanel("t", template, None, None)) is None
    assert panel_rooms(RenderPanel("t", Context.universal(), None, None)) is None


def test_a_10x10_render_is_larger_than_a_3x3_one_which_keeps_its_size(
    tmp_path: Path, task10: NamoTask
) -> None:
    task3 = generate_task(0, 5)
    render_panels(task3, _panels(task3, [0, 1, 4, 5, 8]), tmp_path / "grid3.png")
    render_panels(task10, _panels(task10, ROUTE), tmp_path / "grid10.png")
    with Image.open(tmp_path / "grid3.png") as im3, Image.open(tmp_path / "grid10.png") as im10:
        # 2 panels of 4.8 × 5.2 in at 110 dpi, as before 10×10 worlds existed.
        assert im3.size == (1056, 572)
        width, height = im10.size
    # A room of the 10×10 world gets at least 100 px (at 3×3's scale it would get 50).
    assert width / 2 / 10 > 100 and height > 1.5 * 572
    render_scene(task10, tmp_path / "scene10.png", allowed_rooms=set(ROUTE))
    with Image.open(tmp_path / "scene10.png") as scene:
        assert scene.size[0] > 1.5 * 550


def test_a_10x10_scene_labels_rooms_only_and_marks_the_allowed_ones(task10: NamoTask) -> None:
    fig, ax = plt.subplots()
    try:
        draw_scene(ax, task10, allowed_rooms=set(ROUTE), base_path=[task10.start, (15, 15, 0)])
        texts = sorted(t.get_text() for t in ax.texts)
        rects = [p for p in ax.patches if isinstance(p, Rectangle)]
        fills = [to_hex(p.get_facecolor()) for p in rects if p.get_fill()]
        outlines = [
            p for p in rects if not p.get_fill() and to_hex(p.get_edgecolor()) == ALLOWED_EDGE
        ]
    finally:
        plt.close(fig)
    # No box names: 250 of them would overlap; each room its number, once.
    assert texts == sorted(str(r) for r in range(100))
    assert fills.count(ALLOWED) == len(ROUTE)
    assert fills.count(FORBIDDEN_LARGE) == 100 - len(ROUTE)
    assert len(outlines) == len(ROUTE)
