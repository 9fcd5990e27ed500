"""Timing CSI learning: the learned CSIs' digest is the same run after run, and a smaller
budget learns different ones."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.pybullet


def test_the_digest_names_what_was_learned(
    tmp_path: Path, load_script: Callable[[str], ModuleType]
) -> None:
    script = load_script("time_csi_learning")
    runs = []
    for name, k1 in (("a", 2), ("b", 2), ("c", 3)):
        out = tmp_path / f"{name}.json"
        assert script.main(["--k1", str(k1), "--json", str(out)]) == 0
        runs.append(json.loads(out.read_text()))
    assert runs[0]["k1"] == 2 and runs[2]["k1"] == 3
    assert runs[0]["context"].startswith("robot_room")
    assert runs[0]["csi_digest"] == runs[1]["csi_digest"] != runs[2]["csi_digest"]
    assert runs[0]["seconds"] > 0
