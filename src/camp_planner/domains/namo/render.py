"""Top-down PNG renders of NAMO scenes: rooms the context allows, dropped boxes greyed, the
robot's base path and the boxes it moved (drawn from the pure task geometry, so rendering
needs no simulator)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

from camp_planner.domains.base import RenderPanel
from camp_planner.domains.namo.layout import N_FIXED
from camp_planner.domains.namo.plan_io import moved_boxes
from camp_planner.domains.namo.world import NamoTask, Pose2D

ALLOWED = "#dbeafe"
FORBIDDEN = "#e5e7eb"
WALL = "#1f2937"
BOX = "#2563eb"
DROPPED = "#9ca3af"
GOAL = "#dc2626"
PATH = "#f59e0b"


def draw_scene(
    ax: Any,
    task: NamoTask,
    *,
    allowed_rooms: Collection[int] | None = None,
    dropped: Collection[str] = (),
    base_path: Sequence[Pose2D] = (),
    moved: Mapping[str, tuple[float, float]] | None = None,
    title: str = "",
) -> None:
    """Draw ``task`` on ``ax``: rooms (allowed ones tinted), walls, boxes (dropped ones grey,
    moved ones at their new place with an arrow from the old), goal, start and base path."""
    rooms = range(task.settings.n_rooms)
    allowed = set(rooms) if allowed_rooms is None else set(allowed_rooms)
    moved = dict(moved or {})
    for room in rooms:
        x0, y0, x1, y1 = task.room_rect(room)
        colour = ALLOWED if room in allowed else FORBIDDEN
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=colour, edgecolor="none"))
        ax.text(x0 + 0.12, y0 + 0.12, str(room), fontsize=7, color="#6b7280")
    for x0, y0, x1, y1 in task.walls():
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=WALL, edgecolor="none"))
    for box in task.boxes:
        colour = DROPPED if box.name in dropped else BOX
        at = moved.get(box.name)
        if at is not None:
            x0, y0, x1, y1 = task.box_rect(box.x, box.y)
            ax.add_patch(
                Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ls="--", ec=colour, lw=1)
            )
            ax.add_patch(FancyArrowPatch((box.x, box.y), at, arrowstyle="->", color=colour, lw=1))
        bx, by = at if at is not None else (box.x, box.y)
        x0, y0, x1, y1 = task.box_rect(bx, by)
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=colour, edgecolor="none"))
    gx, gy = task.goal
    ax.add_patch(Circle((gx, gy), task.settings.reach, fill=False, ls=":", ec=GOAL, lw=1))
    ax.add_patch(Circle((gx, gy), 0.12, color=GOAL))
    sx, sy, _ = task.start
    h = task.settings.base_half_extent
    ax.add_patch(Rectangle((sx - h, sy - h), 2 * h, 2 * h, fill=False, ec="#111827", lw=1.2))
    if base_path:
        ax.plot([p[0] for p in base_path], [p[1] for p in base_path], color=PATH, lw=2)
    size = task.settings.world_size
    ax.set_xlim(-0.2, size + 0.2)
    ax.set_ylim(-0.2, size + 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)


def render_scene(task: NamoTask, path: Path, **kwargs: Any) -> None:
    """One scene (see :func:`draw_scene` for the options) written to ``path`` as a PNG."""
    fig, ax = plt.subplots(figsize=(5.0, 5.0))
    draw_scene(ax, task, **kwargs)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pose(value: tuple[object, ...]) -> Pose2D:
    return (float(str(value[0])), float(str(value[1])), float(str(value[2])))


def render_panels(task: NamoTask, panels: Sequence[RenderPanel], path: Path) -> None:
    """One scene per episode panel, side by side: the rooms its context allows, the boxes its
    CAMP dropped, the base path driven and the boxes moved."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.8 * len(panels), 5.2), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        ctx = panel.context
        allowed = None
        if not ctx.is_universal and "robot_room" in ctx.variables:
            allowed = {int(str(v)) for v in ctx.allowed_values()["robot_room"]}
        dropped = set(panel.camp.dropped_variables) if panel.camp is not None else set()
        base_path: list[Pose2D] = []
        moved: dict[str, tuple[float, float]] = {}
        title = panel.title
        if panel.episode is not None:
            ep = panel.episode
            base_path = [_pose(s[0]) for s in ep.states if isinstance(s[0], tuple)]
            final = ep.states[-1] if ep.states else ()
            if final and len(final) > N_FIXED:
                moved = moved_boxes(task, final)
            title += (
                f"\nreturn {ep.discounted_return:.0f}, compute {ep.compute_time_s:.2f} s, "
                f"{'goal' if ep.success else ep.outcome}, {len(moved)} boxes moved"
            )
        draw_scene(
            ax,
            task,
            allowed_rooms=allowed,
            dropped=dropped,
            base_path=base_path,
            moved=moved,
            title=title,
        )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
