"""Planning in a child process, so a cancelled or overdue request stops at once.

The planners check their deadline between steps but have no cancellation points inside a
motion query or a Fast Downward search; a planning request therefore runs in a long-lived
worker process (started once, warm), and cancelling means terminating that process and
starting a fresh one. Uses the ``spawn`` start method: forking a process that runs DDS
threads is unsafe.

The pipe protocol: the worker sends ``("ready", None, None)`` once its service is loaded (or
``("fatal", None, why)`` and exits); each request goes as ``(id, PlanRequest)`` and every
message about it, ``("progress", id, stage)`` and ``("result", id, PlanResult)``, carries
that id, so a message about any other request is never taken for this one's answer. A
:class:`RankRequest` asks instead for the contexts a race plans
(:meth:`~camp_planner.service.planning.CampService.race_contexts`); its result is a list of
contexts, or a failed ``PlanResult``.

Besides the blocking :meth:`PlanWorker.run`, a worker offers the non-blocking steps a caller
that waits on several workers at once needs (:mod:`camp_planner.service.race`):
:meth:`PlanWorker.poll_ready`, :meth:`PlanWorker.send`, :meth:`PlanWorker.poll_answer` and
the pipe and process handles to wait on.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Scene
from camp_planner.service.types import PlanResult
from camp_planner.sim.quiet import import_pybullet_quietly

# The longest single wait on the pipe: ``Connection.poll`` raises OverflowError beyond about
# 2**31 ms, so a longer ``poll_s`` is cut to this (``start_timeout_s`` and ``limit_s`` are
# compared with the clock between waits, never waited for in one piece).
_MAX_WAIT_S = 3600.0
# How often ``start`` looks at a loading worker (it has no cancel to check, only the clock).
_START_POLL_S = 0.5
_STOPPED = "the planning worker was stopped while the request waited"


class _WorkerDied(Exception):
    """The worker process exited while a request waited for it."""


@dataclass(frozen=True)
class PlanRequest:
    scene: Scene
    context_id: str = ""
    allow_fallback: bool = True
    lam: float | None = None
    timeout_s: float | None = None
    seed: int = 0  # the planner's seed (passed on only when not 0)


@dataclass(frozen=True)
class RankRequest:
    """Which contexts a race of ``k`` plans for ``scene`` (``first``, then the selector's top
    ones, ``k`` in all, and the universal one)."""

    scene: Scene
    k: int
    first: str = ""  # a context the request names, raced first


def _exit_with_parent(poll_s: float = 0.5) -> None:
    """End this process group when the parent dies (a node killed with SIGKILL stops
    nothing): a worker mid-plan would otherwise plan on, and its Fast Downward children with
    it, for a node that is gone."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="camp-planner-orphan-watch", daemon=True).start()


def _serve(
    conn: Connection,
    service_factory: Callable[..., Any] | None,
    service_kwargs: dict[str, Any],
) -> None:
    """The worker process: load the service, then answer requests until the pipe closes.

    ``service_factory`` builds the service from ``service_kwargs`` (None: ``CampService``,
    imported here, in the child, because it loads torch and PyBullet)."""
    # A process group of its own, which the processes it starts (Fast Downward's search and
    # translator) join: ``stop`` kills the group, since they would outlive a terminated
    # worker and run to the end of their search.
    os.setsid()
    _exit_with_parent()
    # The node has printed pybullet's start-up line already: one log, one line.
    import_pybullet_quietly()
    try:
        if service_factory is None:
            from camp_planner.service.planning import CampService

            service_factory = CampService
        service = service_factory(**service_kwargs)
    except Exception as exc:  # report why the worker cannot start, then stop
        conn.send(("fatal", None, f"{exc.__class__.__name__}: {exc}"))
        return
    conn.send(("ready", None, None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the node closed the pipe, or died
            return
        if message is None:
            return
        request_id, request = message

        def progress(stage: str, request_id: int = request_id) -> None:
            conn.send(("progress", request_id, stage))

        result: Any
        try:
            if isinstance(request, RankRequest):
                result = list(service.race_contexts(request.scene, request.k, request.first))
            else:
                result = service.plan(
                    request.scene,
                    request.context_id,
                    request.allow_fallback,
                    request.lam,
                    request.timeout_s,
                    progress=progress,
                    **({"seed": request.seed} if request.seed else {}),
                )
        except ServiceError as exc:
            result = PlanResult.failure(exc.code, exc.message)
        except Exception as exc:
            detail = traceback.format_exc(limit=3)
            result = PlanResult.failure(ErrorCode.INTERNAL, f"{exc!r}\n{detail}")
        conn.send(("result", request_id, result))


class PlanWorker:
    """One planning worker process: ``run`` a request, cancellable and time-limited.

    A worker stopped by a cancel or a timeout is replaced at once by a fresh process that
    loads in the background, so the next request finds it warm (or waits for it inside
    ``run``, where a cancel is still answered within ``poll_s``).

    ``service_factory``: what the worker process builds its service with (default
    ``CampService``); it must be picklable, i.e. a module-level class or function.

    One ``run`` at a time; ``stop`` may also come from another thread while a ``run``
    waits, which then returns an INTERNAL failure and starts no new worker.
    """

    def __init__(
        self,
        service_kwargs: dict[str, Any],
        start_timeout_s: float = 120.0,
        service_factory: Callable[..., Any] | None = None,
    ) -> None:
        self.service_kwargs = service_kwargs
        self.start_timeout_s = start_timeout_s
        self.service_factory = service_factory
        self._ctx = mp.get_context("spawn")
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._ready = False  # the current process has sent "ready"
        self._spawned_at = 0.0
        self._last_id = 0
        # Counts the calls of ``stop``, so that a ``run`` can tell that another thread
        # stopped its worker while it waited (and then must not start a new one).
        self._stops = 0

    # --- the process ------------------------------------------------------------------------
    def _alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def _spawn(self) -> None:
        """Start a fresh worker process (stopping the current one), without waiting for it
        to load."""
        self.stop()
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=_serve,
            args=(child, self.service_factory, self.service_kwargs),
            daemon=True,
            name="camp-planner",
        )
        proc.start()
        child.close()
        self._proc, self._conn = proc, parent
        self._ready, self._spawned_at = False, time.monotonic()

    def _check_start(self, wait_s: float) -> str | None:
        """Wait up to ``wait_s`` for the loading worker's "ready". None: it is ready (then
        ``_ready`` is set) or still loading; otherwise why it will not start (then it is
        stopped)."""
        assert self._conn is not None and self._proc is not None
        why = None
        if self._conn.poll(_bounded(wait_s)):
            try:
                kind, _, detail = self._conn.recv()
            except EOFError:
                why = "the planning worker exited while starting"
            else:
                if kind == "ready":
                    self._ready = True
                    return None
                why = f"the planning worker failed to start: {detail}"
        elif not self._proc.is_alive():
            why = "the planning worker exited while starting"
        elif time.monotonic() - self._spawned_at > self.start_timeout_s:
            why = "the planning worker did not start in time"
        if why is not None:
            self.stop()
        return why

    def start(self) -> None:
        """Start the worker if it is not running, and wait until its service is loaded;
        raises :class:`ServiceError` (INTERNAL) if it cannot start."""
        if not self._alive():
            self._spawn()
        while not self._ready:
            why = self._check_start(_START_POLL_S)
            if why is not None:
                raise ServiceError(ErrorCode.INTERNAL, why)

    def stop(self) -> None:
        """Stop the worker process (loaded, loading or busy) and wait until it is gone."""
        proc, conn = self._proc, self._conn
        self._proc, self._conn, self._ready = None, None, False
        self._stops += 1
        if proc is not None:
            _kill_group(proc)
            proc.terminate()  # a worker stopped before it made its group
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
            if not proc.is_alive():
                proc.close()  # its sentinel's file descriptor, at once rather than at GC
        if conn is not None:
            conn.close()

    def kill(self) -> None:
        """Send the worker process (and its group) SIGKILL without waiting for it: a caller
        stopping several workers signals them all first, then :meth:`stop` reaps each."""
        if self._proc is not None:
            _kill_group(self._proc)
            self._proc.kill()

    # --- non-blocking steps, for a caller that waits on several workers at once -------------
    @property
    def pid(self) -> int | None:
        """The id of the current worker process (None: none is running)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def ready(self) -> bool:
        """The current worker process has loaded its service (and may take a request)."""
        return self._ready

    def waitables(self) -> list[Any]:
        """What :func:`multiprocessing.connection.wait` watches for this worker: its pipe (a
        message came) and its process sentinel (it exited)."""
        out: list[Any] = []
        if self._conn is not None:
            out.append(self._conn)
        if self._proc is not None:
            out.append(self._proc.sentinel)
        return out

    def poll_ready(self) -> str | None:
        """Start a worker if none is running, and look (without waiting) whether it has
        loaded, which :attr:`ready` then says. Returns why it cannot start (it is then
        stopped), else None (ready, or still loading)."""
        if self._proc is not None and self._ready and not self._proc.is_alive():
            self.stop()  # died while idle: a fresh one loads
        if self._proc is None:
            self._spawn()
        if self._ready:
            return None
        return self._check_start(0.0)

    def send(self, request: PlanRequest) -> int:
        """Send ``request`` to the loaded worker; returns its id for :meth:`poll_answer`.
        Raises :class:`ServiceError` (INTERNAL) if the worker is gone (it is then stopped)."""
        assert self._ready and self._conn is not None
        self._last_id += 1
        try:
            self._conn.send((self._last_id, request))
        except OSError as exc:
            self.stop()
            raise ServiceError(ErrorCode.INTERNAL, "the planning worker died") from exc
        return self._last_id

    def poll_answer(
        self, request_id: int, progress: Callable[[str], None] | None = None
    ) -> PlanResult | None:
        """The answer to request ``request_id`` if it has come, without waiting (progress
        messages that came are passed on); None if it has not. A worker that died (or was
        stopped) gives an INTERNAL failure; a dead one is stopped, i.e. reaped."""
        while True:
            if self._conn is None or self._proc is None:
                return PlanResult.failure(ErrorCode.INTERNAL, _STOPPED)
            try:
                answer = self._receive(request_id, 0.0, progress)
            except (_WorkerDied, OSError):
                self.stop()
                return PlanResult.failure(ErrorCode.INTERNAL, "the planning worker died")
            if answer is not None:
                assert isinstance(answer, PlanResult)
                return answer
            if not self._conn.poll(0):
                return None

    # --- requests ---------------------------------------------------------------------------
    def run(
        self,
        request: PlanRequest,
        cancelled: Callable[[], bool] = lambda: False,
        limit_s: float | None = None,
        progress: Callable[[str], None] | None = None,
        poll_s: float = 0.05,
    ) -> PlanResult:
        """Plan ``request``; returns early (and restarts the worker) when ``cancelled()``
        turns true or ``limit_s`` wall-clock seconds pass, counted from this call (waiting
        for a restarting worker to load included). A worker that cannot start or dies gives an
        INTERNAL failure, not an exception."""
        result = self._call(request, cancelled, limit_s, progress, poll_s)
        assert isinstance(result, PlanResult)
        return result

    def rank(
        self,
        request: RankRequest,
        cancelled: Callable[[], bool] = lambda: False,
        limit_s: float | None = None,
        poll_s: float = 0.05,
    ) -> list[Any] | PlanResult:
        """The contexts a race plans (see :class:`RankRequest`), or why there are none (a
        failed ``PlanResult``: a refused scene, a cancel, a timeout, a dead worker), waited
        for as :meth:`run` waits."""
        result = self._call(request, cancelled, limit_s, None, poll_s)
        assert isinstance(result, (list, PlanResult))
        return result

    def _call(
        self,
        request: PlanRequest | RankRequest,
        cancelled: Callable[[], bool],
        limit_s: float | None,
        progress: Callable[[str], None] | None,
        poll_s: float,
    ) -> Any:
        t0 = time.monotonic()
        self._last_id += 1
        request_id = self._last_id
        if not self._alive():
            self._spawn()
        stops = self._stops
        sent = False
        try:
            while True:
                if self._stops != stops:
                    return PlanResult.failure(ErrorCode.INTERNAL, _STOPPED)
                if not self._ready:
                    why = self._check_start(poll_s)
                    if why is not None:
                        return PlanResult.failure(ErrorCode.INTERNAL, why)
                if self._ready and not sent:
                    assert self._conn is not None
                    self._conn.send((request_id, request))
                    sent = True
                elif sent:
                    try:
                        outcome = self._receive(request_id, poll_s, progress)
                    except _WorkerDied:
                        if self._stops != stops:
                            return PlanResult.failure(ErrorCode.INTERNAL, _STOPPED)
                        self._spawn()  # a fresh worker for the next request
                        return PlanResult.failure(ErrorCode.INTERNAL, "the planning worker died")
                    if outcome is not None:
                        return outcome
                stop = self._stop_reason(cancelled, t0, limit_s, sent)
                if stop is not None:
                    if sent and self._stops == stops:
                        # Busy with a request nobody waits for: replaced at once, so that
                        # the next request finds a loaded worker.
                        self._spawn()
                    # Else the worker is still loading and has been sent nothing, so it
                    # holds no answer to give anyone: it is kept, and becomes the next warm
                    # worker without starting its load over.
                    return stop
        except Exception:
            if self._stops != stops:
                # Stopped from another thread while this call waited: the failure is the
                # closed pipe's, and nothing is to be started.
                return PlanResult.failure(ErrorCode.INTERNAL, _STOPPED)
            if sent:
                # It may still answer this request: a fresh worker cannot hand that answer
                # to the next call.
                self._spawn()
            raise
        except BaseException:
            # An interrupt: the caller is probably shutting down, so nothing new is started.
            if sent and self._stops == stops:
                self.stop()
            raise

    def _receive(
        self, request_id: int, poll_s: float, progress: Callable[[str], None] | None
    ) -> Any:
        """Wait up to ``poll_s`` for a message about request ``request_id``: its result, or
        None (nothing yet, progress passed on, or a message about another request). Raises
        :class:`_WorkerDied` if the worker exited. (The answer to a :class:`RankRequest` is a
        list of contexts.)"""
        assert self._conn is not None and self._proc is not None
        if self._conn.poll(_bounded(poll_s)):
            try:
                kind, about, payload = self._conn.recv()
            except EOFError as exc:
                raise _WorkerDied from exc
            if about != request_id:
                return None  # about an earlier request, whose caller stopped waiting
            if kind == "progress":
                if progress is not None:
                    progress(str(payload))
                return None
            assert kind == "result" and isinstance(payload, (PlanResult, list))
            return payload
        if not self._proc.is_alive():
            raise _WorkerDied
        return None

    @staticmethod
    def _stop_reason(
        cancelled: Callable[[], bool], t0: float, limit_s: float | None, sent: bool
    ) -> PlanResult | None:
        """The failure to return if the request was cancelled or is overdue, else None."""
        if cancelled():
            return PlanResult.failure(ErrorCode.CANCELED, "the request was cancelled")
        if limit_s is not None and time.monotonic() - t0 > limit_s:
            if sent:
                why = f"planning took longer than {limit_s:.1f} s and was stopped"
            else:
                why = f"the planning worker was still loading after {limit_s:.1f} s"
            return PlanResult.failure(ErrorCode.TIMEOUT, why)
        return None


def _kill_group(proc: BaseProcess) -> None:
    """Kill the worker's process group (made in ``_serve``): the worker and the processes it
    started."""
    pid = proc.pid
    if pid is None or not hasattr(os, "waitid"):
        return
    try:
        # Only while the worker is our unreaped child are its pid, and the group of that id,
        # certainly still its own; once reaped, both ids may be reused by anyone.
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _bounded(wait_s: float) -> float:
    """``wait_s`` as a timeout ``Connection.poll`` accepts (NaN: no wait)."""
    return min(wait_s, _MAX_WAIT_S) if wait_s > 0 else 0.0
