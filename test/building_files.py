"""A user's building as a world file, written by hand (imported as ``building_files``): the
floor plan docs/your-building.md walks through, at a training size that takes a minute."""

from __future__ import annotations

from pathlib import Path

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


def write_building(folder: Path, text: str = BUILDING) -> Path:
    """``text`` as ``folder/building.yaml``."""
    path = folder / "building.yaml"
    path.write_text(text)
    return path
