"""The executor spec and the checkpoint's exactly-once rules, without Ray: bad flags are one
`camp: error:` line, a pair is recorded once, two runs cannot write one checkpoint, and a
worker pipeline plans with the CSIs it was sent and never learns one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from camp_planner.cli import main
from camp_planner.core.errors import CampError
from camp_planner.learning.executor import (
    MAX_RESTARTS,
    RAY_INSTALL,
    ExecutorSpec,
    InlineExecutor,
    ProcessExecutor,
    make_executor,
)
from camp_planner.learning.labels import Checkpoint, Score, ScoreJob, run_job, score
from camp_planner.workflow import CSIPayload, Pipeline

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")


def _add(x: int, shared: int) -> int:
    return x + shared


def test_the_spec_checks_its_flags_and_an_int_means_local_processes() -> None:
    assert ExecutorSpec.of(3) == ExecutorSpec("process", 3)
    assert ExecutorSpec.of(3).capped(2).workers == 2
    assert ExecutorSpec("ray", 4).capped(1).workers == 4  # warm actors stay
    assert not ExecutorSpec.of(1).parallel and ExecutorSpec("ray", 1).parallel
    assert isinstance(make_executor(1), InlineExecutor)
    assert isinstance(make_executor(ExecutorSpec("process", 2)), ProcessExecutor)
    for bad, message in (
        (lambda: ExecutorSpec("dask", 2), "unknown executor"),
        (lambda: ExecutorSpec("ray", 0), "at least 1"),
        (lambda: ExecutorSpec("process", 2, "auto"), "needs --executor ray"),
        (lambda: ExecutorSpec("ray", 2, " "), "empty"),
    ):
        with pytest.raises(CampError, match=message):
            bad()


def test_shared_values_reach_every_worker() -> None:
    items = list(range(7))
    for executor in (InlineExecutor(), ProcessExecutor(2)):
        assert sorted(executor.map_shared(_add, items, 10)) == [i + 10 for i in items]


@dataclass(frozen=True)
class Job:
    n: int

    def label(self) -> str:
        return f"job {self.n}"


def _fail_on_three(job: Job, _shared: Any) -> int:
    if job.n == 3:
        raise ZeroDivisionError("division by zero")
    if job.n == 4:
        raise CampError("no CSIs for context x")
    return job.n


def _die_on_three(job: Job, _shared: Any) -> int:
    if job.n == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return job.n


def test_a_failing_worker_process_is_one_line_naming_the_job() -> None:
    executor = ProcessExecutor(2)
    with pytest.raises(CampError) as raised:
        list(executor.map_shared(_fail_on_three, [Job(i) for i in range(4)], None))
    assert str(raised.value) == (
        "a worker process failed on job 3: ZeroDivisionError: division by zero "
        "(with --workers 1 it runs in this process and shows where)"
    )
    with pytest.raises(CampError, match=r"^no CSIs for context x \(worker process, job 4\)$"):
        list(executor.map_shared(_fail_on_three, [Job(4)], None))
    # Inline, the job raises where it fails.
    with pytest.raises(ZeroDivisionError):
        list(InlineExecutor().map_shared(_fail_on_three, [Job(3)], None))


def _torch_threads(_job: int, _shared: Any) -> int:
    import torch

    return int(torch.get_num_threads())


def test_worker_processes_run_torch_on_one_thread() -> None:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)  # a forked worker would inherit this
    try:
        assert set(ProcessExecutor(2).map_shared(_torch_threads, [0, 1, 2], None)) == {1}
        assert torch.get_num_threads() == 2  # the driver keeps its own
    finally:
        torch.set_num_threads(before)


def test_a_job_that_kills_its_worker_every_time_is_an_error_saying_the_command_resumes(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(CampError) as raised:
        list(ProcessExecutor(2).map_shared(_die_on_three, [Job(i) for i in range(5)], None))
    assert str(raised.value) == (
        f"a worker process died (SIGKILL, killed: out of memory?) {MAX_RESTARTS + 1} times; "
        "the same command resumes from the finished work"
    )
    retries = [line for line in capfd.readouterr().err.splitlines() if "retrying" in line]
    assert len(retries) == MAX_RESTARTS
    assert retries[-1].endswith(f"(restart {MAX_RESTARTS} of {MAX_RESTARTS})")


@dataclass(frozen=True)
class OnceJob:
    n: int
    mark: Path  # exists once a worker has died on job 3

    def label(self) -> str:
        return f"job {self.n}"


def _die_once_on_three(job: OnceJob, _shared: Any) -> int:
    if job.n == 3 and not job.mark.exists():
        job.mark.touch()
        os.kill(os.getpid(), signal.SIGSEGV)
    return job.n


def test_a_worker_that_dies_once_is_replaced_and_every_job_finishes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    jobs = [OnceJob(i, tmp_path / "died") for i in range(8)]
    assert sorted(ProcessExecutor(2).map_shared(_die_once_on_three, jobs, None)) == list(range(8))
    err = capfd.readouterr().err
    assert "a worker process died (SIGSEGV, a crash in native code); retrying its" in err
    assert "(restart 1 of 3)" in err
    # faulthandler in the worker showed where it crashed.
    assert "Fatal Python error: Segmentation fault" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "--ray-address", "auto"], "--ray-address joins a Ray cluster"),
        (["eval", "--workers", "0", "--executor", "ray"], "--workers must be at least 1"),
        (["sweep", "lambda", "--executor", "dask"], "invalid choice"),
        (
            ["train", "--executor", "ray", "--ray-address", "head-node"],
            "--ray-address head-node: expected `auto` or the head's host:port",
        ),
        (
            ["eval", "--executor", "ray", "--ray-address", "127.0.0.1:1"],
            "no Ray cluster answers at 127.0.0.1:1 (Connection refused)",
        ),
    ],
)
def test_bad_executor_flags_are_one_line_errors(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = main([*argv, "--artifacts", str(tmp_path)])
    except SystemExit as exc:  # argparse's own refusal
        status = int(str(exc.code))
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("camp") and "error:" in err and message in err
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "gridworld").exists()  # refused before any work


def test_ray_missing_names_the_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # as if it were not installed
    assert main(["train", "--executor", "ray", "--artifacts", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("camp: error: --executor ray needs Ray")
    assert "pip install 'camp_planner[ray]'" in err and "make setup" in err
    assert len(err.splitlines()) == 1


def test_the_cli_never_imports_ray() -> None:
    code = "import sys, camp_planner.cli, camp_planner.learning.train; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _score(task: int, context: str, ret: float) -> Score:
    return Score(task, context, ret, ret, 0.1, True, "goal")


def test_a_pair_recorded_twice_keeps_its_first_score(tmp_path: Path) -> None:
    cp = Checkpoint(tmp_path / "c.jsonl")
    cp.append(_score(0, "universal", 1.0))
    cp.append(_score(0, "universal", 2.0))  # a retried job's second result
    assert cp.load()[(0, "universal")].objective == 1.0


class _Twice:
    """An executor that delivers every result twice, as a retried job on a lost node can."""

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        raise AssertionError("scoring sends its jobs through map_shared")

    def map_shared(self, fn: Callable[[T, S], R], items: Sequence[T], shared: S) -> Iterator[R]:
        for item in items:
            first = fn(item, shared)
            yield first
            yield first


def _jobs(n: int) -> list[ScoreJob]:
    return [ScoreJob("gridworld", "{}", "", "train", t, "universal", "x", 0) for t in range(n)]


def test_the_driver_writes_each_pair_once_and_holds_the_lock_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from camp_planner.learning import labels

    cp = Checkpoint(tmp_path / "c.jsonl")
    seen_locked: list[bool] = []

    def fake_run(job: ScoreJob, csis: Any) -> Score:
        # While the driver scores, a second run on the checkpoint is refused.
        with pytest.raises(CampError, match="in use by pid"), cp.writing():
            pass
        seen_locked.append(True)
        return _score(job.task, job.context_id, float(job.task))

    monkeypatch.setattr(labels, "run_job", fake_run)
    _matrix, stats = score(_jobs(3), cp, _Twice(), [0, 1, 2], ["universal"], progress=False)
    assert stats.computed == 3 and seen_locked == [True] * 3
    lines = cp.path.read_text().splitlines()
    assert len(lines) == len({(json.loads(x)["task"], json.loads(x)["context_id"]) for x in lines})
    assert len(lines) == 3
    with cp.writing():  # released when the scoring ended
        pass


def test_a_second_process_cannot_write_a_checkpoint_in_use(tmp_path: Path) -> None:
    cp = Checkpoint(tmp_path / "c.jsonl")
    holder = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from camp_planner.learning.labels import Checkpoint\n"
        f"with Checkpoint(Path({str(cp.path)!r})).writing():\n"
        "    print('locked', flush=True)\n"
        "    time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(CampError, match=f"in use by pid {proc.pid}"), cp.writing():
            pass
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 5
    while True:  # the lock died with its holder: no stale lock
        try:
            with cp.writing():
                break
        except CampError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


TINY = {"tasks": {"train": 2, "test": 1}, "contexts": {"max_contexts": 3}}


def test_a_worker_pipeline_plans_with_the_sent_csis_and_never_learns(tmp_path: Path) -> None:
    base = Pipeline.create("gridworld", None, tmp_path / "driver")
    base.config.update(TINY)
    base.config["csi"].update({"k1": 4, "k2": 3, "tasks": 1})
    driver = Pipeline.from_config("gridworld", base.config, tmp_path / "driver")
    config_json = json.dumps(driver.config, sort_keys=True, default=str)
    context = next(c for c in driver.space if not c.is_universal)
    work = str(tmp_path / "w")
    job = ScoreJob("gridworld", config_json, work, "train", 0, context.id, "bfs_replan", 0)
    with pytest.raises(CampError, match="never learns"):
        run_job(job, CSIPayload.of([], None))
    assert not (tmp_path / "w").exists()  # nothing learned, nothing written
    # With the driver's CSIs the same job plans, and records where it ran.
    driver.learn_csis([context], label=None)
    result = run_job(job, driver.csi_payload())
    assert result.context_id == context.id and result.host and result.plan
    assert not (tmp_path / "w").exists()


def test_the_ray_extra_and_make_setup_pin_the_same_ray() -> None:
    root = Path(__file__).resolve().parents[2]
    setup = (root / "setup.py").read_text()
    requirements = (root / "requirements.txt").read_text().splitlines()
    (pin,) = [line for line in requirements if line.startswith("ray==")]
    assert f'"ray": ["{pin}"]' in setup
    assert pin in RAY_INSTALL


def test_workers_start_when_stderr_has_no_file_descriptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A test's captured output (capsys) has no descriptor: the workers' crash reports go
    to descriptor 2 instead, and every job runs."""
    import io

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert sorted(ProcessExecutor(2).map_shared(_add, [1, 2, 3], 10)) == [11, 12, 13]


def _broken_start(_shared: Any) -> None:
    raise RuntimeError("no start")


def test_a_worker_whose_start_up_fails_is_named_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from camp_planner.learning import executor

    monkeypatch.setattr(executor, "_set_shared", _broken_start)
    with pytest.raises(CampError, match=r"ended before its first job: its start-up failed"):
        list(ProcessExecutor(2).map_shared(_add, [1, 2, 3], 10))
