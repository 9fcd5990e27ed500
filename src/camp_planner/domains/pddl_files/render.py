"""PNG renders for any PDDL task: per panel, the context, what it dropped, and the plan."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from camp_planner.domains.base import RenderPanel


def render_plans(title: str, panels: Sequence[RenderPanel], path: Path) -> None:
    """One column per panel listing the executed operators, with return and compute time."""
    steps = max((len(p.episode.actions) for p in panels if p.episode is not None), default=0)
    height = 1.2 + 0.22 * max(steps, 4)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), height), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        ax.axis("off")
        dropped = len(panel.camp.dropped_variables) if panel.camp is not None else 0
        ax.set_title(f"{panel.title}\n{panel.context.name}\n{dropped} fluents dropped", fontsize=8)
        episode = panel.episode
        if episode is None:
            continue
        lines = [f"{k + 1:3d}. {a[0]}" for k, a in enumerate(episode.actions)]
        lines.append(
            f"return {episode.discounted_return:.1f}, compute {episode.compute_time_s:.3f} s, "
            f"{episode.outcome}"
        )
        ax.text(0, 1, "\n".join(lines), va="top", family="monospace", fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
