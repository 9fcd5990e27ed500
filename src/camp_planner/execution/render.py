"""A picture of one closed-loop execution, drawn from scenes alone (any domain, a real robot's
perception too): the world at the start faded, the world at the end solid, an arrow for every
object that moved, the path the base drove, and where each replan began with its reason."""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: a robot's computer has no display

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Polygon

from camp_planner.domains.interface.scene import Pose2, Scene, SceneObject

MOVED_M = 0.05  # an object further than this from its start is drawn as moved
_COLOURS = {"static": "#1f2937", "movable": "#2563eb", "goal": "#dc2626", "path": "#f59e0b"}
# Objects whose class names a colour (manipulation's reds, blues, greens) are drawn in it.
_CLASS_COLOURS = {"red": "#dc2626", "blue": "#2563eb", "green": "#16a34a"}
_FURNITURE = "#d1d5db"  # tables, bins: static and large, drawn light beneath the rest
DPI = 110


@dataclass
class ExecutionPicture:
    """What one execution leaves to draw; the executor fills it as the execution goes."""

    start: Scene
    end: Scene | None = None
    path: list[Pose2] = field(default_factory=list)
    replans: list[tuple[Pose2, str]] = field(default_factory=list)  # where, and why
    title: str = ""


def _corners(obj: SceneObject) -> list[tuple[float, float]]:
    x, y, yaw = obj.pose.as_planar()
    hx, hy = obj.size[0] / 2, obj.size[1] / 2
    c, s = math.cos(yaw), math.sin(yaw)
    return [
        (x + c * u - s * v, y + s * u + c * v)
        for u, v in ((-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy))
    ]


def _style(obj: SceneObject, goal_id: str) -> tuple[str, str, int]:
    """Face colour, edge colour and drawing order of ``obj``."""
    if obj.id == goal_id or obj.object_class == "goal":
        return _COLOURS["goal"], _COLOURS["goal"], 3
    if obj.movable:
        colour = _CLASS_COLOURS.get(obj.object_class, _COLOURS["movable"])
        return colour, colour, 2
    if obj.object_class == "wall":
        return _COLOURS["static"], _COLOURS["static"], 1
    return _FURNITURE, _COLOURS["static"], 0


def _draw_world(ax: Axes, scene: Scene, alpha: float, outline_only: bool) -> None:
    for obj in scene.objects:
        face, edge, order = _style(obj, scene.goal_object_id)
        if outline_only and not obj.movable:
            continue  # the static world is drawn once, from the end scene
        ax.add_patch(
            Polygon(
                _corners(obj),
                closed=True,
                facecolor="none" if outline_only else face,
                edgecolor=edge,
                alpha=alpha,
                linestyle="--" if outline_only else "-",
                linewidth=0.8,
                zorder=order + (0.5 if outline_only else 0.0),
            )
        )


def draw_execution(ax: Axes, picture: ExecutionPicture) -> None:
    """The execution on ``ax`` (see the module docstring)."""
    end = picture.end or picture.start
    starts = {o.id: o for o in picture.start.objects if o.movable}
    _draw_world(ax, picture.start, 0.6, outline_only=True)
    _draw_world(ax, end, 0.9, outline_only=False)
    for obj in end.objects:
        before = starts.get(obj.id)
        if before is None:
            continue
        (x0, y0, _), (x1, y1, _) = before.pose.as_planar(), obj.pose.as_planar()
        if math.hypot(x1 - x0, y1 - y0) > MOVED_M:
            ax.annotate(
                "",
                xy=(x1, y1),
                xytext=(x0, y0),
                arrowprops={"arrowstyle": "->", "color": _COLOURS["movable"], "lw": 1.2},
            )
    if picture.start.goal_pose is not None and not picture.start.goal_object_id:
        gx, gy, _ = picture.start.goal_pose.as_planar()
        ax.plot([gx], [gy], marker="*", markersize=14, color=_COLOURS["goal"], label="goal")
    if picture.path:
        xs, ys = [p[0] for p in picture.path], [p[1] for p in picture.path]
        ax.plot(xs, ys, color=_COLOURS["path"], linewidth=2.0, label="base driven", zorder=4)
        ax.plot([xs[0]], [ys[0]], marker="o", color="#111827", label="start", zorder=4)
        ax.plot([xs[-1]], [ys[-1]], marker="s", color="#111827", label="end", zorder=4)
    for k, ((x, y, _), _why) in enumerate(picture.replans, start=1):
        ax.plot([x], [y], marker="X", markersize=11, color=_COLOURS["goal"], zorder=5)
        ax.annotate(
            str(k),
            (x, y),
            xytext=(6, 6),
            textcoords="offset points",
            fontsize=9,
            color=_COLOURS["goal"],
            zorder=5,
        )
    ax.set_aspect("equal")
    ax.autoscale_view()
    ax.set_xlabel(f"x ({end.frame_id}, m)")
    ax.set_ylabel("y (m)")
    # The reasons under the title, where long ones do not run off the picture.
    reasons = [f"replan {k}: {why}" for k, (_, why) in enumerate(picture.replans, start=1)]
    ax.set_title(
        "\n".join([picture.title, *(textwrap.shorten(r, 110) for r in reasons)]), fontsize=8
    )
    if picture.path:
        ax.legend(loc="upper right", fontsize=7)


def render_execution(picture: ExecutionPicture, out: Path) -> None:
    """Write the execution to ``out`` as a PNG (its folders made)."""
    corners = [c for o in picture.start.objects for c in _corners(o)] + [
        (p[0], p[1]) for p in picture.path
    ]
    xs, ys = [c[0] for c in corners] or [0.0, 1.0], [c[1] for c in corners] or [0.0, 1.0]
    # About 36 square inches whatever the world's shape, none of its sides under 3 inches.
    aspect = max(0.25, min(4.0, (max(xs) - min(xs)) / max(max(ys) - min(ys), 1e-6)))
    fig, ax = plt.subplots(figsize=(6.0 * math.sqrt(aspect), 6.0 / math.sqrt(aspect)))
    try:
        draw_execution(ax, picture)
        fig.tight_layout()
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=DPI)
    finally:
        plt.close(fig)
