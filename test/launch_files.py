"""What a launch file in ``launch/`` starts, read without the launch system (not installable
here): the domain it passes to ``launch_system.system_names`` and the nodes that names, in
every ``closed_loop`` mode."""

from __future__ import annotations

import ast
from pathlib import Path

from camp_planner.ros.bringup import closed_loop_nodes, system_nodes


def launched_nodes(launch: Path) -> set[str]:
    """Every node ``launch`` can start: the open-loop system and the closed loop's nodes."""
    tree = ast.parse(launch.read_text())
    assert "generate_launch_description" in {
        n.name for n in tree.body if isinstance(n, ast.FunctionDef)
    }
    domains = [
        call.args[1].value
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "system_names"
        and isinstance(call.args[1], ast.Constant)
    ]
    assert len(domains) == 1, f"{launch.name} names its domain once"
    return set(system_nodes(domains[0])) | set(closed_loop_nodes(domains[0]))
