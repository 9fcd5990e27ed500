"""PNG renders of dinner episodes: the house map with the rooms a context allows, and the
plan step by step, coloured by the room the agent is in."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from camp_planner.domains.base import RenderPanel
from camp_planner.domains.dinner.task import MEALS, DinnerTask

# Where each place is drawn on the little map (x, y).
_LAYOUT = {
    "living-room": (0.0, 1.0),
    "kitchen": (0.0, 0.0),
    "hall": (1.0, 1.0),
    "garage": (2.0, 1.0),
    "store": (3.0, 1.0),
}
_COLOURS = {
    "living-room": "#60a5fa",
    "kitchen": "#f59e0b",
    "hall": "#a78bfa",
    "garage": "#9ca3af",
    "store": "#10b981",
}


def _forbidden(panel: RenderPanel) -> set[str]:
    """Places the context keeps the agent out of (terms ``agent-at(p) = 0``)."""
    out = set()
    for term in panel.context.terms:
        if term.variable.startswith("agent-at(") and term.value == 0:
            out.add(term.variable[len("agent-at(") : -1])
    return out


def render_panels(task: DinnerTask, panels: Sequence[RenderPanel], path: Path) -> None:
    """One column per panel: the map on top, the executed plan below."""
    fig, axes = plt.subplots(
        2,
        len(panels),
        figsize=(5.2 * len(panels), 8.0),
        squeeze=False,
        gridspec_kw={"height_ratios": [1, 2.4]},
    )
    for k, panel in enumerate(panels):
        _draw_map(axes[0][k], task, panel)
        _draw_plan(axes[1][k], panel)
    rewards = ", ".join(f"{m} {r}" for m, r in zip(MEALS, task.rewards, strict=True))
    fig.suptitle(f"dinner task {task.task_id}: meal rewards {rewards}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw_map(ax: Any, task: DinnerTask, panel: RenderPanel) -> None:
    forbidden = _forbidden(panel)
    for place, (x, y) in _LAYOUT.items():
        allowed = place not in forbidden
        ax.add_patch(
            FancyBboxPatch(
                (x - 0.4, y - 0.3),
                0.8,
                0.6,
                boxstyle="round,pad=0.02",
                facecolor=_COLOURS[place] if allowed else "#e5e7eb",
                alpha=0.85 if allowed else 1.0,
                edgecolor="#1f2937",
            )
        )
        ax.text(x, y, place, ha="center", va="center", fontsize=8)
    for a, b in (("living-room", "kitchen"), ("living-room", "hall"), ("hall", "kitchen")):
        (xa, ya), (xb, yb) = _LAYOUT[a], _LAYOUT[b]
        ax.plot([xa, xb], [ya, yb], color="#6b7280", lw=1, zorder=0)
    ax.plot([1, 3], [1, 1], color="#6b7280", lw=1, zorder=0)
    if task.extra_rooms or task.extra_items:
        ax.text(
            1.5,
            -0.1,
            f"+{task.extra_rooms} rooms off the hall, +{task.extra_items} store products",
            fontsize=7,
            ha="center",
        )
    dropped = len(panel.camp.dropped_variables) if panel.camp is not None else 0
    ax.set_title(f"{panel.title}\n{dropped} fluents dropped", fontsize=9)
    ax.set_xlim(-0.6, 3.6)
    ax.set_ylim(-0.5, 1.5)
    ax.axis("off")


def _draw_plan(ax: Any, panel: RenderPanel) -> None:
    ax.axis("off")
    episode = panel.episode
    if episode is None:
        return
    place = "living-room"
    lines = []
    for action in episode.actions:
        name = str(action[0])
        if name.startswith(("walk(", "drive(")):
            place = name[name.index("(") + 1 : -1].split(",")[1]
        lines.append((name, place))
    for k, (name, where) in enumerate(lines):
        ax.text(
            0.02,
            1 - (k + 1) / 26,
            f"{k + 1:2d}. {name}",
            fontsize=8,
            family="monospace",
            color=_COLOURS.get(where, "#1f2937"),
            transform=ax.transAxes,
        )
    ax.text(
        0.02,
        0.0,
        f"return {episode.discounted_return:.0f}, compute {episode.compute_time_s:.2f} s, "
        f"objective {episode.objective:.0f}",
        fontsize=8,
        transform=ax.transAxes,
    )
