"""Executors for embarrassingly parallel jobs (CSI learning, label scoring), and their spec.

A command takes an :class:`ExecutorSpec` (``--executor {process,ray}``, ``--workers``,
``--ray-address``) and passes it down instead of a bare worker count; a plain ``int`` still
means that many local processes. Three executors share one protocol:

* :class:`InlineExecutor` runs jobs one after another in this process (one worker, tests);
* :class:`ProcessExecutor` runs them in forked local processes;
* the Ray executor (``learning/ray_executor.py``, the only module that imports Ray, lazily)
  runs them on warm Ray actors, one CPU each, locally or on a cluster.

Jobs and their function must be picklable (a module-level function, a frozen dataclass):
nothing reaches a worker by inheritance except what :meth:`Executor.map_shared` hands over.
Results come back to the driver, the only process that writes checkpoints and caches.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import multiprocessing
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from camp_planner.core.errors import CampError

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")

EXECUTORS = ("process", "ray")
# What a user without Ray is told to run: the extra pins the version CI tests.
# A job whose worker dies is retried in a fresh worker; past this many deaths the command
# stops (a job that kills its worker every time would otherwise loop). Ray's executor uses it
# for lost actors too.
MAX_RESTARTS = 3
RAY_INSTALL = "pip install 'camp_planner[ray]' (or `make setup`, which installs ray==2.60.0)"


@dataclass(frozen=True)
class ExecutorSpec:
    """Where parallel jobs run: ``kind`` (``process`` or ``ray``), how many ``workers``, and
    for Ray the cluster to join (``ray_address``; None: a Ray started on this machine's
    loopback for this command only)."""

    kind: str = "process"
    workers: int = 1
    ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise CampError(
                f"unknown executor '{self.kind}'; choose one of: {', '.join(EXECUTORS)}"
            )
        if self.workers < 1:
            raise CampError("--workers must be at least 1")
        if self.ray_address is not None and self.kind != "ray":
            raise CampError("--ray-address joins a Ray cluster: it needs --executor ray")
        if self.ray_address is not None and not self.ray_address.strip():
            raise CampError("--ray-address is empty; give `auto` or the head's host:port")

    @staticmethod
    def of(workers: Workers) -> ExecutorSpec:
        """``workers`` as a spec: an ``int`` is that many local processes."""
        return workers if isinstance(workers, ExecutorSpec) else ExecutorSpec(workers=workers)

    def capped(self, jobs: int) -> ExecutorSpec:
        """The spec for ``jobs`` jobs: no more local processes than jobs. Ray's actors are
        started once per command and kept warm, so their number stays."""
        if self.kind == "ray":
            return self
        return replace(self, workers=max(1, min(self.workers, jobs)))

    @property
    def parallel(self) -> bool:
        """Whether jobs leave this process (any Ray executor, or more than one process)."""
        return self.kind == "ray" or self.workers > 1


# What the learning functions accept for their ``workers`` argument.
Workers = int | ExecutorSpec


class Executor(Protocol):
    """Runs ``fn`` over ``items`` and yields results as they finish (any order)."""

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]: ...

    def map_shared(self, fn: Callable[[T, S], R], items: Sequence[T], shared: S) -> Iterator[R]:
        """Like :meth:`map_unordered` with ``fn(item, shared)``: ``shared`` (e.g. the CSIs
        the driver learned) reaches each worker once, not once per job."""
        ...


@dataclass(frozen=True)
class WithoutShared(Generic[T, R]):
    """``fn`` of a job alone, as the picklable ``fn(job, shared)`` that ``map_shared`` calls."""

    fn: Callable[[T], R]

    def __call__(self, item: T, _shared: Any) -> R:
        return self.fn(item)


class InlineExecutor:
    """Runs jobs one after another in this process."""

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        return self.map_shared(WithoutShared(fn), items, None)

    def map_shared(self, fn: Callable[[T, S], R], items: Sequence[T], shared: S) -> Iterator[R]:
        for item in items:
            yield fn(item, shared)


# The value ``map_shared`` hands a process pool's workers, set in each by the pool's
# initializer (a forked worker gets it without pickling; it is per pool, so per call).
_WORKER_SHARED: Any = None


def _set_shared(shared: Any) -> None:
    global _WORKER_SHARED
    _WORKER_SHARED = shared
    # A crash in native code (PyBullet, OMPL, torch) prints the worker's Python stack to
    # stderr before the pool reports the death. On the descriptor: ``sys.stderr`` may be an
    # object without one (a test's captured output), and an initializer that raises ends
    # the worker before its first job.
    faulthandler.enable(file=2)
    # The workers already fill the CPUs: torch's own threads (a selector, a policy) would
    # only compete with them, as on a Ray actor.
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _call_shared(fn: Callable[[T, Any], R], item: T) -> R:
    # The driver shows one line naming the job, as with Ray; the same job in one process
    # (--workers 1) raises where it fails, with its traceback.
    try:
        return fn(item, _WORKER_SHARED)
    except CampError as exc:
        raise CampError(f"{exc} (worker process, {describe_job(item)})") from None
    except Exception as exc:
        raise CampError(
            f"a worker process failed on {describe_job(item)}: {type(exc).__name__}: {exc} "
            "(with --workers 1 it runs in this process and shows where)"
        ) from None


class ProcessExecutor:
    """Runs jobs in ``workers`` local processes; at most ``2 × workers`` are queued at once so
    an interrupt loses little queued work and memory stays flat."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        return self.map_shared(WithoutShared(fn), items, None)

    def map_shared(self, fn: Callable[[T, S], R], items: Sequence[T], shared: S) -> Iterator[R]:
        # A worker that dies (a crash in native code, the out-of-memory killer) takes the
        # pool with it: a fresh pool retries the unfinished jobs, as Ray retries a lost
        # actor's, up to MAX_RESTARTS times (a job that kills its worker every time stops).
        remaining = dict(enumerate(items))
        restarts = 0
        while True:
            try:
                yield from self._run_pool(fn, remaining, shared)
                return
            except _PoolBroken as broken:
                restarts += 1
                if restarts > MAX_RESTARTS:
                    raise CampError(
                        f"a worker process died ({broken.why}) {restarts} times; the same "
                        "command resumes from the finished work"
                    ) from None
                print(
                    f"camp: a worker process died ({broken.why}); retrying its "
                    f"{len(remaining)} unfinished jobs in fresh workers "
                    f"(restart {restarts} of {MAX_RESTARTS})",
                    file=sys.stderr,
                    flush=True,
                )

    def _run_pool(self, fn: Callable[[T, S], R], remaining: dict[int, T], shared: S) -> Iterator[R]:
        """Runs ``remaining``'s jobs in one pool, deleting each as its result is yielded;
        raises :class:`_PoolBroken` if a worker dies."""
        # fork keeps start-up cheap and inherits the ROS wheels' library path.
        ctx = multiprocessing.get_context("fork")
        # Objects this process already holds (a simulator client, a ROS handle) are frozen
        # out of the garbage collector while workers fork: a worker collecting its inherited
        # copy runs their native finalizers and crashed (SIGSEGV while "Garbage-collecting").
        gc.freeze()
        try:
            yield from self._serve_pool(ctx, fn, remaining, shared)
        finally:
            gc.unfreeze()

    def _serve_pool(
        self, ctx: Any, fn: Callable[[T, S], R], remaining: dict[int, T], shared: S
    ) -> Iterator[R]:
        broken = False
        with ProcessPoolExecutor(
            max_workers=self.workers, mp_context=ctx, initializer=_set_shared, initargs=(shared,)
        ) as pool:
            # The pool's own record of its workers, read after it is shut down for how the
            # one that broke it ended (the pool offers no public way to ask).
            # (The dict itself: it is empty until the first submit fills it.)
            processes: dict[int, Any] = getattr(pool, "_processes", {})
            pending: dict[Future[R], int] = {}

            def submit(index: int) -> bool:
                # A pool broken meanwhile (a worker died, even before its first job)
                # refuses new work at once.
                try:
                    pending[pool.submit(_call_shared, fn, remaining[index])] = index
                except BrokenProcessPool:
                    return False
                return True

            queue = iter(list(remaining))
            for index in queue:
                if not submit(index):
                    broken = True
                    break
                if len(pending) >= 2 * self.workers:
                    break
            while pending and not broken:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    index = pending.pop(future)
                    try:
                        result = future.result()
                    except BrokenProcessPool:
                        broken = True
                        break
                    del remaining[index]
                    yield result
                    nxt = next(queue, None)
                    if nxt is not None and not submit(nxt):
                        broken = True
                        break
        if broken:
            raise _PoolBroken(_how_workers_ended(list(processes.values())))


class _PoolBroken(Exception):
    """A worker of a process pool died; ``why`` says how, as far as the pool knows."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _how_workers_ended(processes: list[Any]) -> str:
    """How the workers of a broken pool ended, the ones the pool itself terminated (SIGTERM)
    left out: a signal's name with its usual cause, or an exit code."""
    causes = {
        signal.SIGKILL: "killed: out of memory?",
        signal.SIGSEGV: "a crash in native code",
        signal.SIGABRT: "aborted by native code",
        signal.SIGBUS: "a crash in native code",
    }
    seen = []
    for proc in processes:
        code = getattr(proc, "exitcode", None)
        if code is None or code == -signal.SIGTERM:
            continue
        if code == 0:  # what a worker whose initializer raised exits with
            seen.append("ended before its first job: its start-up failed")
            continue
        if code < 0:
            sig = signal.Signals(-code)
            cause = causes.get(sig)
            seen.append(f"{sig.name}, {cause}" if cause else sig.name)
        else:
            seen.append(f"exit code {code}")
    return "; ".join(sorted(set(seen))) or "out of memory, or killed?"


# The executors of other modules, by kind, imported on first use (Ray is an optional extra,
# and importing it costs a second). Each module has ``make(spec)``, ``require()`` (a clear
# error if its backend is missing) and ``shutdown()``.
_BACKENDS = {"ray": "camp_planner.learning.ray_executor"}


def make_executor(workers: Workers) -> Executor:
    """The executor ``workers`` asks for (one local worker: inline, in this process)."""
    spec = ExecutorSpec.of(workers)
    if spec.kind in _BACKENDS:
        executor: Executor = importlib.import_module(_BACKENDS[spec.kind]).make(spec)
        return executor
    return InlineExecutor() if spec.workers <= 1 else ProcessExecutor(spec.workers)


def require(spec: ExecutorSpec) -> None:
    """Fail now, with the install command, if ``spec`` needs a backend that is missing
    (before any work, not at the first parallel step)."""
    if spec.kind in _BACKENDS:
        importlib.import_module(_BACKENDS[spec.kind]).require(spec)


def close_executors() -> None:
    """Stop what executors keep between calls (a command's Ray session and its actors);
    safe to call when none was started, and when Ray is not installed."""
    for name in _BACKENDS.values():
        module = sys.modules.get(name)
        if module is not None:
            module.shutdown()


def describe_job(item: Any) -> str:
    """A job as an error names it: its ``label()`` when it has one."""
    label = getattr(item, "label", None)
    if callable(label):
        return str(label())
    text = repr(item)
    return text if len(text) <= 80 else text[:77] + "..."
