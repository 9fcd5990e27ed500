"""Append-only JSON-lines files for checkpoints that must survive being killed mid-write.

Each finished unit of work is one line, flushed and fsynced before the next starts. The only
damage a kill can do is a last line without its newline: reading drops it and truncates the
file there, so the next append starts on a clean line. Any other unreadable line is real
corruption and is reported with the file and line number.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from camp_planner.core.errors import CampError


def read_records(path: Path, repair: bool = True) -> list[tuple[int, Any]]:
    """``(line number, parsed JSON)`` for every complete line of ``path`` (none if missing).

    ``repair`` (for the writer about to append) truncates a last line without its newline.
    A reader that only looks (an offline study, say) passes False: the last line may be one
    a running job is writing at this moment, and is skipped, not cut off under it."""
    if not path.exists():
        return []
    data = path.read_bytes()
    complete = data.rfind(b"\n") + 1
    if repair and complete < len(data):
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


class RunCheckpoint:
    """The finished units of one long run (a benchmark's runs, say), so that a run that is
    killed resumes where it stopped instead of measuring everything again.

    The file lives in ``directory`` and is named by a hash of ``identity``: everything that
    decides a unit's result (configuration, settings, code versions). Another run therefore
    never resumes from it, and needs no check that it matches. A unit is named by a tuple of
    JSON scalars, e.g. ``(task, seed)``; its result is any JSON value.
    """

    def __init__(self, directory: Path, name: str, identity: Mapping[str, Any]) -> None:
        key = json.dumps(identity, sort_keys=True, default=str)
        digest = hashlib.sha1(key.encode()).hexdigest()[:10]
        self.path = directory / f"{name}-{digest}.jsonl"
        self._done: dict[tuple[Any, ...], Any] = {}
        for number, record in read_records(self.path):
            unit = record.get("unit") if isinstance(record, dict) else None
            if not isinstance(unit, list) or "result" not in record:
                raise corrupt(self.path, number)
            self._done[tuple(unit)] = record["result"]

    def __len__(self) -> int:
        return len(self._done)

    def get(self, unit: tuple[Any, ...]) -> Any | None:
        """The result of ``unit`` if an earlier run finished it, else ``None``."""
        return self._done.get(tuple(unit))

    def add(self, unit: tuple[Any, ...], result: Any) -> None:
        """Record a finished unit, durably, before the run goes on."""
        append_record(self.path, {"unit": list(unit), "result": result})
        self._done[tuple(unit)] = result

    def resuming(self) -> str:
        """What to tell the user when a run starts: which units it will not redo ("" if none)."""
        if not self._done:
            return ""
        return (
            f"resuming: {len(self)} runs finished earlier are read from {self.path} "
            "(delete it to measure them again)"
        )

    def interrupted(self) -> str:
        """What to tell the user when the run is stopped before it completes."""
        return (
            f"interrupted: the {len(self)} finished runs are kept in {self.path}; "
            "the same command resumes from them"
        )

    def discard(self) -> None:
        """Forget every unit: the run is complete (a rerun measures again) or unwanted."""
        self.path.unlink(missing_ok=True)
        self._done.clear()
