"""Run checkpoints: units survive a new process, only the same run resumes, bad files are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from camp_planner.core.errors import CampError
from camp_planner.learning.jsonl import RunCheckpoint


def test_finished_units_are_read_back_by_the_same_run_only(tmp_path: Path) -> None:
    identity = {"config": {"grid": 5}, "timeout": 60.0}
    first = RunCheckpoint(tmp_path, "bench", identity)
    first.add((0, 1), {"time": 1.5})
    first.add((2, 0), [1, 2])
    again = RunCheckpoint(tmp_path, "bench", dict(reversed(identity.items())))
    assert len(again) == 2 and again.path == first.path
    assert "2 runs finished earlier" in again.resuming() and str(first.path) in again.resuming()
    assert "the 2 finished runs are kept" in again.interrupted()
    assert again.get((0, 1)) == {"time": 1.5} and again.get((2, 0)) == [1, 2]
    assert again.get((1, 1)) is None
    other = RunCheckpoint(tmp_path, "bench", {**identity, "timeout": 30.0})
    assert len(other) == 0 and other.path != first.path and other.resuming() == ""
    again.discard()
    assert not first.path.exists() and len(again) == 0
    assert len(RunCheckpoint(tmp_path, "bench", identity)) == 0


def test_a_torn_last_unit_is_dropped_and_a_malformed_one_is_named(tmp_path: Path) -> None:
    cp = RunCheckpoint(tmp_path, "bench", {})
    cp.add((0,), 1.0)
    with cp.path.open("a") as handle:
        handle.write('{"unit": [1], "res')  # killed mid-write
    assert len(RunCheckpoint(tmp_path, "bench", {})) == 1
    for bad in ('{"result": 2}', '{"unit": 3, "result": 2}', '{"unit": [3]}', "[1]"):
        cp.path.write_text('{"unit": [0], "result": 1.0}\n' + bad + "\n")
        with pytest.raises(CampError, match=r"bench-.*\.jsonl line 2 is corrupt"):
            RunCheckpoint(tmp_path, "bench", {})


def test_a_reader_that_only_looks_leaves_a_line_being_written_alone(tmp_path: Path) -> None:
    from camp_planner.learning.jsonl import append_record, read_records

    path = tmp_path / "scores.jsonl"
    append_record(path, {"task": 0})
    with path.open("a") as handle:
        handle.write('{"task": 1, "con')  # a running scoring, mid-line
    torn = path.read_text()
    assert read_records(path, repair=False) == [(1, {"task": 0})]
    assert path.read_text() == torn
    # The writer's read cuts the torn line off, so its next append starts a clean line.
    assert read_records(path) == [(1, {"task": 0})]
    assert path.read_text() == '{"task": 0}\n'
