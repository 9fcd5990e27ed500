"""Append-only JSON-lines files for checkpoints that must survive being killed mid-write.

Each finished unit of work is one line, flushed and fsynced before the next starts. The only
damage a kill can do is a last line without its newline: reading drops it and truncates the
file there, so the next append starts on a clean line. Any other unreadable line is real
corruption and is reported with the file and line number.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError


def read_records(path: Path) -> list[tuple[int, Any]]:
    """``(line number, parsed JSON)`` for every complete line of ``path`` (none if missing)."""
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1
    if complete < len(data):
        with path.open("r+b") as handle:
            handle.truncate(complete)
    records = []
    for number, line in enumerate(data[:complete].decode().splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError:
            raise corrupt(path, number) from None
    return records


def corrupt(path: Path, number: int) -> CampError:
    return CampError(f"checkpoint {path} line {number} is corrupt; delete the file to redo it")


def append_record(path: Path, record: Any) -> None:
    """Write one record as a line and make it durable before returning."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())
