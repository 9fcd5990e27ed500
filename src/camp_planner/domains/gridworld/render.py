"""PNG renders of gridworld episodes: rooms the context allows, dropped enemies, the path."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Circle, Rectangle

from camp_planner.core.camp import SINK
from camp_planner.domains.base import RenderPanel
from camp_planner.domains.gridworld.world import GridworldTask


def _allowed_rooms(panel: RenderPanel) -> set[int]:
    ctx = panel.context
    if ctx.is_universal or "agent_room" not in ctx.variables:
        return set(range(9))
    return {int(str(v)) for v in ctx.allowed_values()["agent_room"]}


def render_panels(task: GridworldTask, panels: Sequence[RenderPanel], path: Path) -> None:
    """One subplot per panel, side by side, written to ``path``."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 5.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        _draw(ax, task, panel)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw(ax: Any, task: GridworldTask, panel: RenderPanel) -> None:
    allowed = _allowed_rooms(panel)
    dropped = set(panel.camp.dropped_variables) if panel.camp is not None else set()
    for r, c in task.cells():
        room = task.room_of((r, c))
        colour = "#dbeafe" if room in allowed else "#e5e7eb"
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colour, edgecolor="#f8fafc", lw=0.5))
    # Walls: a thick segment between neighbouring cells that are not passable.
    for r, c in task.cells():
        if c + 1 < task.width and not task.passable((r, c), (r, c + 1)):
            ax.plot([c + 1, c + 1], [r, r + 1], color="#1f2937", lw=2.5)
        if r + 1 < task.height and not task.passable((r, c), (r + 1, c)):
            ax.plot([c, c + 1], [r + 1, r + 1], color="#1f2937", lw=2.5)
    ax.add_patch(Rectangle((0, 0), task.width, task.height, fill=False, lw=3, color="#1f2937"))
    for room in range(9):
        r0, c0 = task.room_origin(room)
        ax.text(c0 + 0.08, r0 + 0.3, str(room), fontsize=7, color="#6b7280")
    for enemy in task.enemies:
        r, c = enemy.cycle[0]
        gone = enemy.name in dropped
        ax.add_patch(
            Circle((c + 0.5, r + 0.5), 0.3, color="#9ca3af" if gone else "#dc2626", alpha=0.9)
        )
        cyc = [(cc + 0.5, rr + 0.5) for rr, cc in (*enemy.cycle, enemy.cycle[0])]
        ax.plot(*zip(*cyc, strict=True), color="#9ca3af" if gone else "#fca5a5", lw=0.8, ls=":")
    sr, sc = task.start
    gr, gc = task.goal
    ax.text(sc + 0.5, sr + 0.5, "S", ha="center", va="center", fontsize=12, weight="bold")
    ax.plot(gc + 0.5, gr + 0.5, marker="*", markersize=18, color="#16a34a")
    if panel.episode is not None:
        cells = [s[0] for s in panel.episode.states if s != SINK]
        xs = [float(c[1]) + 0.5 for c in cells if isinstance(c, tuple)]
        ys = [float(c[0]) + 0.5 for c in cells if isinstance(c, tuple)]
        ax.plot(xs, ys, color="#2563eb", lw=2.2, marker="o", markersize=3)
    ax.set_xlim(-0.2, task.width + 0.2)
    ax.set_ylim(task.height + 0.2, -0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    title = panel.title
    if panel.episode is not None:
        ep = panel.episode
        title += (
            f"\nreturn {ep.discounted_return:.1f}, compute {ep.compute_time_s * 1000:.0f} ms"
            f", {'goal' if ep.success else ep.outcome}"
        )
    ax.set_title(title, fontsize=9)
