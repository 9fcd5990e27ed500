"""The planning worker's pipe protocol, with a stand-in service that loads and plans when the
test says so: an answer always belongs to its own request, a cancel is answered while a
restarted worker still loads, a worker that cannot start is a failure (not an exception),
and no process outlives ``stop``."""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Pose, Scene
from camp_planner.service.types import PlanResult
from camp_planner.service.worker import PlanRequest, PlanWorker

SCENE = Scene(domain="namo", robot_pose=Pose.planar(0.0, 0.0, 0.0), objects=())


def _wait_for(path: Path, limit_s: float = 120.0) -> None:
    """Block until ``path`` exists (a bounded wait, so a broken test cannot hang a worker)."""
    end = time.monotonic() + limit_s
    while not path.exists():
        if time.monotonic() > end:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.01)


class FakeService:
    """Stands in for ``CampService`` in the worker process. Loading records the process id
    (``started-PID`` in ``folder``) and then waits until the test creates ``folder/open``.
    ``plan`` reports the stage "planning"; for the context id "block" it waits for
    ``folder/unblock``, for "search" on a 300 s child process (recorded as ``search-PID``);
    it answers with a message naming the context id and its own process."""

    def __init__(self, folder: str, fatal: str = "") -> None:
        self.folder = Path(folder)
        (self.folder / f"started-{os.getpid()}").touch()
        if fatal:
            raise RuntimeError(fatal)
        _wait_for(self.folder / "open")

    def plan(
        self,
        scene: Scene,
        context_id: str = "",
        allow_fallback: bool = True,
        lam: float | None = None,
        timeout_s: float | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> PlanResult:
        if progress is not None:
            progress("planning")
        if context_id == "search":
            # A long search in a process of its own, as Fast Downward's runs.
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            (self.folder / f"search-{child.pid}").touch()
            child.wait()
        if context_id == "block":
            _wait_for(self.folder / "unblock")
        return PlanResult(True, ErrorCode.NONE, f"{context_id} {os.getpid()}")


def _request(context_id: str) -> PlanRequest:
    return PlanRequest(SCENE, context_id=context_id)


def _answer(result: PlanResult) -> tuple[str, int]:
    """(the context id a result answers, the process that planned it)."""
    assert result.success, result.message
    context_id, pid = result.message.split()
    return context_id, int(pid)


def _planners() -> list[mp.process.BaseProcess]:
    return [p for p in mp.active_children() if p.name == "camp-planner"]


def _started(folder: Path) -> list[Path]:
    return sorted(folder.glob("started-*"))


@pytest.fixture
def make_worker(tmp_path: Path) -> Iterator[Callable[..., PlanWorker]]:
    """Workers with the stand-in service in ``tmp_path``; all stopped, and checked to have
    left no process behind, at the end of the test."""
    workers: list[PlanWorker] = []

    def make(start_timeout_s: float = 60.0, **kwargs: str) -> PlanWorker:
        worker = PlanWorker(
            {"folder": str(tmp_path), **kwargs},
            start_timeout_s=start_timeout_s,
            service_factory=FakeService,
        )
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.stop()
    assert _planners() == []


def test_a_cancel_during_a_restart_is_answered_while_the_new_worker_loads(
    make_worker: Callable[..., PlanWorker], tmp_path: Path
) -> None:
    gate = tmp_path / "open"
    gate.touch()
    worker = make_worker()
    worker.start()
    _, first_pid = _answer(worker.run(_request("warm")))
    gate.unlink()  # from now on a new worker cannot finish loading until the test allows it
    stages: list[str] = []
    result = worker.run(
        _request("block"), cancelled=lambda: "planning" in stages, progress=stages.append
    )
    assert result.code == ErrorCode.CANCELED
    # The busy worker is replaced at once, in the background, before any next request.
    _wait_for_count(tmp_path, 2)
    # Its load is held up on the gate: the cancel and the timeout are answered meanwhile.
    result = worker.run(_request("cancelled"), cancelled=lambda: True)
    assert result.code == ErrorCode.CANCELED
    result = worker.run(_request("overdue"), limit_s=0.2)
    assert result.code == ErrorCode.TIMEOUT and "loading" in result.message
    assert not gate.exists()
    gate.touch()
    context_id, pid = _answer(worker.run(_request("next")))
    assert context_id == "next" and pid != first_pid
    # The half-started worker was kept and answered; none was started after it.
    assert [p.name for p in _started(tmp_path)] == sorted(
        [f"started-{first_pid}", f"started-{pid}"]
    )


def _wait_for_count(folder: Path, count: int, limit_s: float = 60.0) -> None:
    end = time.monotonic() + limit_s
    while len(_started(folder)) < count:
        assert time.monotonic() < end, f"no worker number {count} was started"
        time.sleep(0.01)


@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt])
def test_a_failure_inside_run_never_hands_its_answer_to_the_next_request(
    make_worker: Callable[..., PlanWorker], tmp_path: Path, failure: type[BaseException]
) -> None:
    (tmp_path / "open").touch()
    worker = make_worker()
    worker.start()

    def broken_feedback(stage: str) -> None:
        raise failure("the feedback channel is gone")

    with pytest.raises(failure):
        worker.run(_request("first"), progress=broken_feedback)
    # The first request's answer was on its way when the caller stopped reading.
    context_id, _ = _answer(worker.run(_request("second")))
    assert context_id == "second"
    context_id, _ = _answer(worker.run(_request("third")))
    assert context_id == "third"


def test_a_worker_that_cannot_start_is_an_internal_failure(
    make_worker: Callable[..., PlanWorker],
) -> None:
    worker = make_worker(fatal="no selector bundle at /nowhere.pt")
    result = worker.run(_request("any"))
    assert result.code == ErrorCode.INTERNAL and not result.success
    assert "no selector bundle at /nowhere.pt" in result.message
    with pytest.raises(ServiceError) as info:
        worker.start()
    assert info.value.code == ErrorCode.INTERNAL
    assert "no selector bundle at /nowhere.pt" in info.value.message


def test_start_returns_once_the_service_is_loaded(
    make_worker: Callable[..., PlanWorker], tmp_path: Path
) -> None:
    gate = tmp_path / "open"
    opener = threading.Timer(0.5, gate.touch)
    opener.start()
    worker = make_worker()
    try:
        worker.start()
        assert gate.exists()  # start waited for the load, which waited for the gate
    finally:
        opener.cancel()
    (started,) = _started(tmp_path)
    _, pid = _answer(worker.run(_request("first")))
    assert started.name == f"started-{pid}"  # the started worker plans the first request


def test_huge_limits_and_waits_do_not_overflow(
    make_worker: Callable[..., PlanWorker], tmp_path: Path
) -> None:
    (tmp_path / "open").touch()
    worker = make_worker(start_timeout_s=1e10)
    worker.start()
    for limit_s in (1e10, 1e300, math.inf):
        assert _answer(worker.run(_request("huge"), limit_s=limit_s))[0] == "huge"
    assert _answer(worker.run(_request("long-polls"), poll_s=1e10))[0] == "long-polls"


def test_stop_leaves_no_process_loading_or_busy(
    make_worker: Callable[..., PlanWorker], tmp_path: Path
) -> None:
    worker = make_worker()
    assert worker.run(_request("loading"), cancelled=lambda: True).code == ErrorCode.CANCELED
    assert len(_planners()) == 1  # kept loading, to be the next warm worker
    worker.stop()
    assert _planners() == []
    (tmp_path / "open").touch()
    stages: list[str] = []
    results: list[PlanResult] = []

    def plan() -> None:
        results.append(worker.run(_request("block"), progress=stages.append))

    busy = threading.Thread(target=plan)
    busy.start()
    while not stages:
        assert busy.is_alive()
        time.sleep(0.01)
    worker.stop()  # from another thread, while the request is being planned
    busy.join(60)
    assert not busy.is_alive()
    assert [r.code for r in results] == [ErrorCode.INTERNAL]
    assert "stopped" in results[0].message
    assert _planners() == []  # and the waiting request started no new worker


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_cancel_stops_the_processes_the_worker_started(
    make_worker: Callable[..., PlanWorker], tmp_path: Path
) -> None:
    (tmp_path / "open").touch()
    worker = make_worker()
    worker.start()
    result = worker.run(_request("search"), cancelled=lambda: bool(list(tmp_path.glob("search-*"))))
    assert result.code == ErrorCode.CANCELED
    (search,) = tmp_path.glob("search-*")
    pid = int(search.name.split("-")[1])
    end = time.monotonic() + 30.0
    while _running(pid):
        assert time.monotonic() < end, "the cancelled worker's search is still running"
        time.sleep(0.05)


PARENT = """
import sys
sys.path.insert(0, {here!r})
from test_worker import FakeService, _request
from camp_planner.service.worker import PlanWorker

worker = PlanWorker({{"folder": {folder!r}}}, service_factory=FakeService)
worker.start()
worker.run(_request("search"))
"""


def test_a_worker_whose_node_is_killed_ends_with_what_it_started(tmp_path: Path) -> None:
    """A node killed with SIGKILL stops nothing: its worker, mid-search, must notice and end
    itself and the search."""
    (tmp_path / "open").touch()
    script = PARENT.format(here=str(Path(__file__).parent), folder=str(tmp_path))
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        _wait_for(tmp_path / "open")
        end = time.monotonic() + 120.0
        while not list(tmp_path.glob("search-*")):
            assert parent.poll() is None and time.monotonic() < end, "the search never started"
            time.sleep(0.05)
    finally:
        parent.kill()
        parent.wait()
    (started,) = _started(tmp_path)
    (search,) = tmp_path.glob("search-*")
    pids = [int(started.name.split("-")[1]), int(search.name.split("-")[1])]
    end = time.monotonic() + 30.0
    while any(_running(pid) for pid in pids):
        assert time.monotonic() < end, f"still running after the node died: {pids}"
        time.sleep(0.05)
