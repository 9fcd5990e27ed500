"""Top-view PNG renders of manipulation tasks: the two tables, the bins (allowed ones tinted,
chosen ones outlined), the objects by colour (dropped ones greyed, a red's widest section
drawn dashed over its stem when they differ), the robot's base, and chosen grasps as arrows.
Drawn from the pure task geometry, so rendering needs no simulator."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyArrowPatch, Polygon, Rectangle

from camp_planner.domains.manip.world import ManipTask, Pose2D, Rgba

TABLE = "#d6c3a5"
BIN_WALL = "#6b7280"
BIN_ALLOWED = "#fef3c7"  # the paper's Figure 1 tints a context's bins yellow
CHOSEN = "#f59e0b"
DROPPED = "#9ca3af"
ROBOT = "#111827"
GRASP_COLOURS = {"top": "#7c3aed", "side": "#0891b2"}


def _hex(rgba: Rgba) -> str:
    r, g, b, _ = rgba
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def draw_scene(
    ax: Any,
    task: ManipTask,
    *,
    dropped: Collection[str] = (),
    allowed_bins: Collection[int] | None = None,
    chosen_bins: Collection[int] = (),
    grasps: Mapping[str, str] | None = None,
    grasp_poses: Mapping[str, Pose2D] | None = None,
    base_poses: Sequence[Pose2D] = (),
    base_path: Sequence[Pose2D] = (),
    title: str = "",
) -> None:
    """Draw ``task`` on ``ax``.

    ``dropped``: object names drawn grey (what a CAMP ignores); ``allowed_bins``: bins a
    context allows, tinted; ``chosen_bins``: bins a plan places into, outlined; ``grasps``:
    object name → grasp style ("top": a dot in a ring, "side": an arrow from the robot's
    side: from its base pose in ``grasp_poses``, else the first of ``base_poses``);
    ``base_poses``: robot poses drawn as squares with a heading tick (the first is the
    start); ``base_path``: the base's way through them, a dotted line."""
    st = task.settings
    for t in task.tables:
        ax.add_patch(
            Rectangle((t.x0, t.y0), t.x1 - t.x0, t.y1 - t.y0, facecolor=TABLE, edgecolor="none")
        )
    allowed = set(range(len(task.bins))) if allowed_bins is None else set(allowed_bins)
    for b in task.bins:
        outer = b.inner / 2 + b.wall
        face = BIN_ALLOWED if b.index in allowed and allowed_bins is not None else "white"
        edge, lw = (CHOSEN, 2.2) if b.index in chosen_bins else (BIN_WALL, 1.0)
        ax.add_patch(
            Rectangle((b.x - outer, b.y - outer), 2 * outer, 2 * outer, fc=face, ec=edge, lw=lw)
        )
        ax.text(b.x - outer + 0.01, b.y - outer + 0.01, str(b.index), fontsize=6, color=BIN_WALL)
    for x, y in task.staging_spots():
        ax.plot([x], [y], marker="+", color=BIN_WALL, ms=6)
    for obj in task.objects:
        colour = DROPPED if obj.name in dropped else _hex(obj.rgba)
        narrow = min(r for _, _, r in obj.sections)
        ax.add_patch(Circle((obj.x, obj.y), narrow, color=colour, zorder=3))
        if obj.radius > narrow:  # a cap wider than the stem: its outline
            ax.add_patch(
                Circle((obj.x, obj.y), obj.radius, fill=False, ec=colour, ls="--", zorder=3)
            )
    for name, style in (grasps or {}).items():
        obj = task.obj(name)
        colour = GRASP_COLOURS.get(style, CHOSEN)
        if style == "top":
            ax.add_patch(Circle((obj.x, obj.y), obj.radius + 0.03, fill=False, ec=colour, lw=2))
        else:
            start = (obj.x + obj.radius + 0.12, obj.y)
            origin = (grasp_poses or {}).get(name) or (base_poses[0] if base_poses else None)
            if origin is not None:
                bx, by, _ = origin
                d = math.hypot(bx - obj.x, by - obj.y) or 1.0
                start = (obj.x + (bx - obj.x) / d * 0.2, obj.y + (by - obj.y) / d * 0.2)
            ax.add_patch(
                FancyArrowPatch(start, (obj.x, obj.y), arrowstyle="->", color=colour, lw=2)
            )
    h = st.base_half_extent
    if len(base_path) > 1:
        ax.plot([p[0] for p in base_path], [p[1] for p in base_path], ":", color=ROBOT, lw=1)
    poses = list(base_poses) or [task.start]
    for k, (x, y, yaw) in enumerate(poses):
        c, s = math.cos(yaw), math.sin(yaw)
        corners = [
            (x + c * dx - s * dy, y + s * dx + c * dy)
            for dx, dy in ((-h, -h), (h, -h), (h, h), (-h, h))
        ]
        # The start solid, the poses the plan stood at faint: they overlap near the tables.
        alpha = 1.0 if k == 0 else 0.45
        ax.add_patch(Polygon(corners, fill=False, ec=ROBOT, lw=1.0, alpha=alpha))
        ax.plot([x, x + c * h], [y, y + s * h], color=ROBOT, lw=1.0, alpha=alpha)
    left, right = task.left_table, task.right_table
    xs = [left.x0, right.x1, *(p[0] for p in poses)]
    ys = [left.y0, right.y0, left.y1, right.y1, *(p[1] for p in poses)]
    ax.set_xlim(min(xs) - h - 0.1, max(xs) + h + 0.1)
    ax.set_ylim(min(ys) - h - 0.1, max(ys) + h + 0.1)
    ax.set_aspect("equal")
    ax.axis("off")
    if dropped or grasps or chosen_bins:
        ax.text(
            0.0,
            0.0,
            "grey: dropped by the CAMP   ring: top grasp   arrow: side grasp   "
            "orange: bins placed into   yellow: bins the context allows",
            transform=ax.transAxes,
            fontsize=6,
            color=BIN_WALL,
        )
    if title:
        ax.set_title(title, fontsize=9)


def render_scene(task: ManipTask, path: Path, **kwargs: Any) -> None:
    """One scene (see :func:`draw_scene` for the options) written to ``path`` as a PNG."""
    fig, ax = plt.subplots(figsize=(7.0, 3.8))
    draw_scene(ax, task, **kwargs)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
