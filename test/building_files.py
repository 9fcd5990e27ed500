"""A user's building and work cell as world files, written by hand (imported as
``building_files``): the NAMO floor plan and the manipulation tables and bins
docs/your-building.md walks through, at training sizes that take a minute."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml

from camp_planner.config import load_world_file

# 3×3 rooms of 3.5 m (room r = row·3 + col from the bottom left). The doorways make one
# corridor 0-1-2-5 with a side way 0-3-6-7 and the goal room 4 opening onto 7 only:
#   6 ─ 7   8
#   │   │
#   3   4   5
#   │       │
#   0 ─ 1 ─ 2
BUILDING = """\
domain: namo
world:
  grid: 3
  room_size: 3.5
  doors:
    - {rooms: [0, 1], at: 1.2}
    - {rooms: [1, 2]}
    - {rooms: [2, 5], at: 2.0}
    - {rooms: [0, 3]}
    - {rooms: [3, 6]}
    - {rooms: [6, 7], at: 1.0}
    - {rooms: [4, 7]}
  start_room: 0
  goal_room: 4
contexts: {required_values: [0, 4], max_contexts: 3}
tasks: {train: 2, test: 2}
csi: {tasks: 2}
timeout_s: 20.0
selector: {max_iterations: 200}
"""


# Two tables 0.65 m high, the bins' table nearer the start than the paper's, a 2 × 2 grid of
# bins 0.22 m apart, and six distractors beside the two reds.
WORKCELL = """\
domain: manip
world:
  n_distractors: 6
  tables: {height: 0.65, left_gap: 0.55, right_gap: 0.5, staging_depth: 0.2}
  bins: {per_side: 2, pitch: 0.22, inner: 0.18, margin: 0.05}
contexts: {max_contexts: 4}
tasks: {train: 2, test: 1}
csi: {tasks: 1, k1: 5, k2: 5}
timeout_s: 30.0
selector: {max_iterations: 200}
"""


def write_building(folder: Path, text: str = BUILDING) -> Path:
    """``text`` as ``folder/building.yaml``."""
    path = folder / "building.yaml"
    path.write_text(text)
    return path


def write_workcell(folder: Path, text: str = WORKCELL) -> Path:
    """``text`` as ``folder/workcell.yaml``."""
    return write_building(folder, text).rename(folder / "workcell.yaml")


def load_world_data(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the domain, the configuration) of the world file holding ``data``."""
    with tempfile.TemporaryDirectory() as folder:
        return load_world_file(write_building(Path(folder), yaml.safe_dump(data)))
