"""Planning in a child process, so a cancelled or overdue request stops at once.

The planners check their deadline between steps but have no cancellation points inside a
motion query or a Fast Downward search; a planning request therefore runs in a long-lived
worker process (started once, warm), and cancelling means terminating that process and
starting a fresh one. Uses the ``spawn`` start method: forking a process that runs DDS
threads is unsafe.
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from camp_planner.service.errors import ErrorCode, ServiceError
from camp_planner.service.scene import Scene
from camp_planner.service.types import PlanResult


@dataclass(frozen=True)
class PlanRequest:
    scene: Scene
    context_id: str = ""
    allow_fallback: bool = True
    lam: float | None = None
    timeout_s: float | None = None


def _serve(conn: Connection, service_kwargs: dict[str, Any]) -> None:
    from camp_planner.service.planning import CampService

    try:
        service = CampService(**service_kwargs)
    except Exception as exc:  # report why the worker cannot start, then stop
        conn.send(("fatal", f"{exc.__class__.__name__}: {exc}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        try:
            result = service.plan(
                request.scene,
                request.context_id,
                request.allow_fallback,
                request.lam,
                request.timeout_s,
                progress=lambda stage: conn.send(("progress", stage)),
            )
            conn.send(("result", result))
        except ServiceError as exc:
            conn.send(("result", PlanResult.failure(exc.code, exc.message)))
        except Exception as exc:
            detail = traceback.format_exc(limit=3)
            conn.send(("result", PlanResult.failure(ErrorCode.INTERNAL, f"{exc!r}\n{detail}")))


class PlanWorker:
    """One planning worker process: ``run`` a request, cancellable and time-limited."""

    def __init__(self, service_kwargs: dict[str, Any], start_timeout_s: float = 120.0) -> None:
        self.service_kwargs = service_kwargs
        self.start_timeout_s = start_timeout_s
        self._ctx = mp.get_context("spawn")
        self._proc: Any = None
        self._conn: Connection | None = None

    def start(self) -> None:
        """Start the worker (and wait until its service is loaded) if it is not running."""
        if self._proc is not None and self._proc.is_alive():
            return
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=_serve, args=(child, self.service_kwargs), daemon=True, name="camp-planner"
        )
        proc.start()
        child.close()
        if not parent.poll(self.start_timeout_s):
            proc.terminate()
            raise ServiceError(ErrorCode.INTERNAL, "the planning worker did not start in time")
        kind, detail = parent.recv()
        if kind != "ready":
            proc.join(5)
            raise ServiceError(ErrorCode.INTERNAL, f"the planning worker failed to start: {detail}")
        self._proc, self._conn = proc, parent

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def run(
        self,
        request: PlanRequest,
        cancelled: Callable[[], bool] = lambda: False,
        limit_s: float | None = None,
        progress: Callable[[str], None] | None = None,
        poll_s: float = 0.05,
    ) -> PlanResult:
        """Plan ``request``; returns early (and restarts the worker) when ``cancelled()``
        turns true or ``limit_s`` wall-clock seconds pass."""
        self.start()
        assert self._conn is not None
        conn = self._conn
        t0 = time.monotonic()
        conn.send(request)
        while True:
            if conn.poll(poll_s):
                try:
                    kind, payload = conn.recv()
                except EOFError:
                    self.stop()
                    return PlanResult.failure(ErrorCode.INTERNAL, "the planning worker died")
                if kind == "progress":
                    if progress is not None:
                        progress(str(payload))
                    continue
                assert isinstance(payload, PlanResult)
                return payload
            if cancelled():
                self.stop()
                return PlanResult.failure(ErrorCode.CANCELED, "the request was cancelled")
            if limit_s is not None and time.monotonic() - t0 > limit_s:
                self.stop()
                return PlanResult.failure(
                    ErrorCode.TIMEOUT, f"planning took longer than {limit_s:.1f} s and was stopped"
                )
            if not self._proc.is_alive():
                self.stop()
                return PlanResult.failure(ErrorCode.INTERNAL, "the planning worker died")
