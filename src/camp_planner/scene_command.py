"""``camp scene``: write a task's scene as a scene file
(:mod:`camp_planner.domains.interface.scene_file`), the layout ``camp ros select-context
--scene``, ``camp ros plan --scene`` and, with ``--request``, ``ros2 service call
/select_context`` read: a starting point for describing a robot's own scene."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError
from camp_planner.domains import get_plugin, plugin_domains
from camp_planner.domains.interface.scene_file import scene_yaml


def add_scene_parser(sub: Any, common: Callable[[argparse.ArgumentParser], None]) -> None:
    """The ``scene`` subcommand, with the ``common`` arguments every command has."""
    p = sub.add_parser(
        "scene",
        help="write a task's scene as a scene file (YAML laid out as camp_msgs/SceneObservation)",
        description="Write a task's scene file, the layout `camp ros select-context --scene`, "
        "`camp ros plan --scene` and (with --request) `ros2 service call /select_context "
        "camp_msgs/srv/SelectContext` read. Edit it, or write your robot's own in it.",
    )
    common(p)
    p.add_argument("--task", type=int, default=0, help="task index within the split")
    p.add_argument("--split", choices=("train", "test"), default="test")
    p.add_argument(
        "--request", action="store_true", help="as a select_context request (`scene:` on top)"
    )
    p.add_argument("--out", type=Path, help="write here (default: print)")


def scene_command(args: argparse.Namespace, pipe: Any) -> int:
    """Write (or print) the scene of ``pipe``'s task ``args.task``."""
    if pipe.domain.name not in plugin_domains():
        raise CampError(
            f"domain {pipe.domain.name} has no scenes: choose one of {', '.join(plugin_domains())}"
        )
    task = pipe.task(args.split, args.task)
    text = scene_yaml(get_plugin(pipe.domain.name).scene_from_task(task, None, "map"), args.request)
    if args.out is None:
        print(text, end="")
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out} ({args.split} task {args.task})")
    return 0
