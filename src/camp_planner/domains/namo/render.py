"""Top-down PNG renders of NAMO scenes: rooms the context allows, dropped boxes greyed, the
robot's base path and the boxes it moved (drawn from the pure task geometry, so rendering
needs no simulator).

The paper's 3×3 world is drawn as it always was. A larger grid (up to 20×20: 400 rooms,
about 1000 boxes) gets a figure that grows with it, so that a room keeps enough pixels for its
boxes, and marks that stay visible at that size: rooms outside the context darker, the
allowed ones outlined, the path haloed. Boxes carry no name labels at larger sizes (hundreds of
them would overlap); rooms carry their number.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib import patheffects
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
# Beyond the paper's grid: a stronger contrast between the rooms a context allows and the
# others, which at 10×10 are most of the picture.
FORBIDDEN_LARGE = "#cbd5e1"
ALLOWED_EDGE = "#3b82f6"
ROOM_VARIABLE = "robot_room"  # the context variable that confines the robot to rooms

PAPER_GRID = 3  # the world every size below was chosen for
PANEL_INCHES = (4.8, 5.2)  # one panel of render_panels in the paper's world
SCENE_INCHES = (5.0, 5.0)  # render_scene in the paper's world
DPI = 110


def scale(grid: int) -> float:
    """How much larger than in the paper's world a figure is drawn for ``grid`` rooms per
    side (1 up to 3×3). Sub-linear: at 10×10 a room gets about 120 px rather than 170, which
    still shows its boxes, and the PNG stays under 1400 px a side per panel."""
    return float(max(1.0, grid / PAPER_GRID) ** 0.75)


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
    st = task.settings
    k = scale(st.grid)
    large = st.grid > PAPER_GRID
    rooms = range(st.n_rooms)
    allowed = set(rooms) if allowed_rooms is None else set(allowed_rooms)
    restricted = allowed_rooms is not None and allowed != set(rooms)
    forbidden = FORBIDDEN_LARGE if large else FORBIDDEN
    moved = dict(moved or {})
    for room in rooms:
        x0, y0, x1, y1 = task.room_rect(room)
        colour = ALLOWED if room in allowed else forbidden
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=colour, edgecolor="none"))
        ax.text(
            x0 + 0.12, y0 + 0.12, str(room), fontsize=6 if large else 7, color="#6b7280", zorder=4
        )
    for x0, y0, x1, y1 in task.walls():
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, facecolor=WALL, edgecolor="none"))
    if large and restricted:
        # Drawn over the walls: at this size the tint alone is easy to miss.
        for room in sorted(allowed):
            x0, y0, x1, y1 = task.room_rect(room)
            inset = st.wall_thickness
            ax.add_patch(
                Rectangle(
                    (x0 + inset, y0 + inset),
                    x1 - x0 - 2 * inset,
                    y1 - y0 - 2 * inset,
                    fill=False,
                    ec=ALLOWED_EDGE,
                    lw=1.2,
                    zorder=3,
                )
            )
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
    ax.add_patch(Circle((gx, gy), st.reach, fill=False, ls=":", ec=GOAL, lw=1.5 if large else 1))
    # The goal grows with the figure's scale (not the world's): it must stay a visible dot.
    ax.add_patch(Circle((gx, gy), 0.12 * k, color=GOAL, zorder=4))
    sx, sy, _ = task.start
    h = st.base_half_extent
    ax.add_patch(Rectangle((sx - h, sy - h), 2 * h, 2 * h, fill=False, ec="#111827", lw=1.2))
    if base_path:
        xs, ys = [p[0] for p in base_path], [p[1] for p in base_path]
        if large:
            # A white halo keeps the path readable where it crosses walls and boxes.
            halo = [patheffects.withStroke(linewidth=4.5, foreground="white")]
            ax.plot(xs, ys, color=PATH, lw=2.5, zorder=5, path_effects=halo)
        else:
            ax.plot(xs, ys, color=PATH, lw=2)
    size = st.world_size
    ax.set_xlim(-0.2, size + 0.2)
    ax.set_ylim(-0.2, size + 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9 * k**0.4)


def render_scene(task: NamoTask, path: Path, **kwargs: Any) -> None:
    """One scene (see :func:`draw_scene` for the options) written to ``path`` as a PNG."""
    k = scale(task.settings.grid)
    fig, ax = plt.subplots(figsize=(SCENE_INCHES[0] * k, SCENE_INCHES[1] * k))
    draw_scene(ax, task, **kwargs)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _pose(value: tuple[object, ...]) -> Pose2D:
    return (float(str(value[0])), float(str(value[1])), float(str(value[2])))


def panel_rooms(panel: RenderPanel) -> set[int] | None:
    """The rooms ``panel``'s context allows (None: every room). The CAMP's context comes
    first: it is the concrete one the episode ran under, where the panel's may be a template
    (a rule that names no rooms until it is instantiated for a task)."""
    ctx = panel.camp.context if panel.camp is not None else None
    if ctx is None:
        ctx = panel.context
    if ctx.is_universal or ROOM_VARIABLE not in ctx.variables:
        return None
    return {int(str(v)) for v in ctx.allowed_values()[ROOM_VARIABLE]}


def render_panels(task: NamoTask, panels: Sequence[RenderPanel], path: Path) -> None:
    """One scene per episode panel, side by side: the rooms its context allows, the boxes its
    CAMP dropped, the base path driven and the boxes moved."""
    k = scale(task.settings.grid)
    width, height = PANEL_INCHES
    fig, axes = plt.subplots(
        1, len(panels), figsize=(width * k * len(panels), height * k), squeeze=False
    )
    for ax, panel in zip(axes[0], panels, strict=True):
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
            allowed_rooms=panel_rooms(panel),
            dropped=dropped,
            base_path=base_path,
            moved=moved,
            title=title,
        )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
