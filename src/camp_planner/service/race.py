"""Context racing: plan several contexts at once, in worker processes, and keep the first
plan that is verified in the simulator.

A race of ``k`` plans the selector's top ``k`` contexts (other than the universal one, ranked
after the screen as ``CampService.plan`` ranks them) and the universal context, each in its
own warm :class:`~camp_planner.service.worker.PlanWorker` with no fallbacks inside it (a
worker plans one context and executes its plan in the simulator). The first worker whose
``PlanResult.success`` is true (its plan reached the goal when executed) wins; every other
worker is then stopped at once (its process group killed, the process reaped). A worker that
fails (no plan, timeout, crash, killed) leaves the race to the others; only when all have
failed does the race fail, with the universal worker's failure (else the last one). So a race
never loses a plan that one of its workers would have found on its own, and no worker is left
running past a call, whether it returns, raises or is interrupted (Ctrl-C).

Costs: ``k + 1`` processes share the machine's cores, so on a 2-core computer each worker
plans slower than it would alone; each worker's timeout is therefore the request's times
``max(1, workers / cores)`` (:func:`worker_timeout`). Each warm worker holds its own service
(selector, CSIs, simulator) in memory.

:class:`RacePool` keeps its workers warm across races (``tamp_server``); a stopped loser is
started again at once in the background when ``respawn`` is true, else when it is next
needed. :func:`race_once` is the one-shot form (``camp plan --race K``). Pure of rclpy.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from camp_planner.core.context import Context
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.scene import Scene
from camp_planner.service.types import PlanResult
from camp_planner.service.worker import PlanRequest, PlanWorker, RankRequest

# The stages a worker reports, in order: the race passes a stage on only when it is later
# than the last one passed on, so K+1 workers do not make the feedback jump back and forth.
_STAGES = ("selection", "camp_construction", "planning")
_CLOCK_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# The largest race: each warm worker holds a service of its own in memory (about 0.4 GB in
# NAMO), and on a robot's few cores more workers only slow each other down.
MAX_RACE = 8


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def worker_timeout(timeout_s: float, workers: int, cores: int | None = None) -> float:
    """Each raced worker's timeout: ``timeout_s`` stretched by the share of a core it gets
    when ``workers`` processes plan on ``cores`` cores, so that a plan one worker finds alone
    within ``timeout_s`` is not lost to the sharing."""
    return timeout_s * max(1.0, workers / (cores or usable_cores()))


def process_cpu_s(pid: int | None) -> float | None:
    """CPU seconds (user + system) process ``pid`` and the children it has waited for (Fast
    Downward's search) have used, from ``/proc/<pid>/stat`` (None: no such file)."""
    if pid is None:
        return None
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces, hence the last ")"): state is
    # field 3, utime, stime, cutime, cstime are fields 14-17.
    fields = stat.rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / _CLOCK_TICK


def children_cpu_s() -> float:
    """CPU seconds of this process's reaped children (and their reaped children)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class WorkerOutcome:
    """What one raced worker did: its context, how it ended and when (seconds since the
    race started). ``outcome``: ``won``, ``failed`` (its plan did not reach the goal, or it
    found none), ``crashed`` (the process died or could not start), ``cancelled`` (stopped:
    another won, or the race was cancelled or overdue) or ``not started`` (still loading)."""

    context_id: str
    context_name: str
    outcome: str
    code: ErrorCode
    message: str
    wall_s: float
    cpu_s: float | None = None  # None: it exited during the race (counted in the total only)


@dataclass
class RaceResult:
    """A race's answer. ``result`` is the winner's ``PlanResult`` (else the failure);
    ``wall_s`` the wall-clock seconds of the race (ranking included), which the objective
    charges; ``cpu_s`` the CPU seconds all its workers spent in it."""

    result: PlanResult
    winner: Context | None
    wall_s: float
    cpu_s: float
    workers: list[WorkerOutcome] = field(default_factory=list)
    note: str = ""

    @property
    def success(self) -> bool:
        return self.result.success

    @property
    def winner_id(self) -> str:
        """The id of the context that won ("" if none did)."""
        return next((w.context_id for w in self.workers if w.outcome == "won"), "")

    @property
    def objective(self) -> float:
        """return − λ·wall-clock seconds of the race."""
        return self.result.expected_return - self.result.lam * self.wall_s


@dataclass(eq=False)
class _Entry:
    worker: PlanWorker
    context_id: str
    context_name: str
    is_universal: bool
    pid0: int | None = None  # its process at the start (or since it was started again)
    cpu0: float = 0.0  # that process's CPU seconds then
    reaped0: float = 0.0  # the CPU seconds its reaped processes had spent before the race
    request_id: int | None = None
    outcome: WorkerOutcome | None = None


class RacePool:
    """``size`` warm planning workers (a race of ``k`` uses ``k + 1`` of them).

    ``respawn``: a worker stopped in a race (a loser) starts again at once and loads in the
    background (True: the next race finds it warm), or only when it is next needed (False).
    ``service_factory``, ``service_kwargs``, ``start_timeout_s``: as :class:`PlanWorker`'s.
    Races are run one at a time; :meth:`close` may come from another thread.
    """

    def __init__(
        self,
        service_kwargs: dict[str, Any],
        size: int,
        start_timeout_s: float = 120.0,
        service_factory: Callable[..., Any] | None = None,
        respawn: bool = True,
    ) -> None:
        if size < 1:
            raise ValueError("a race pool needs at least one worker")
        self.respawn = respawn
        self.workers = [
            PlanWorker(service_kwargs, start_timeout_s, service_factory) for _ in range(size)
        ]

    def __enter__(self) -> RacePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start every worker and wait until all are loaded (they load side by side); raises
        :class:`ServiceError` (INTERNAL) if one cannot start."""
        for worker in self.workers:
            why = worker.poll_ready()
            if why is not None:
                raise ServiceError(ErrorCode.INTERNAL, why)
        for worker in self.workers:
            worker.start()

    def close(self) -> None:
        """Stop every worker and wait until all are gone."""
        for worker in self.workers:
            worker.stop()

    def pids(self) -> list[int]:
        """The ids of the worker processes now running."""
        return [pid for pid in (w.pid for w in self.workers) if pid is not None]

    # --- racing -------------------------------------------------------------------------------
    def plan(
        self,
        scene: Scene,
        k: int,
        lam: float | None = None,
        timeout_s: float | None = None,
        seed: int = 0,
        cancelled: Callable[[], bool] = lambda: False,
        limit_s: float | None = None,
        progress: Callable[[str], None] | None = None,
        poll_s: float = 0.05,
        first: str = "",
    ) -> RaceResult:
        """Race ``k`` contexts and the universal one for ``scene``: a warm worker ranks them
        (:meth:`CampService.race_contexts`; ``first``: a context id the request names, raced
        first), then :meth:`race` plans them. ``timeout_s`` is stretched per worker by
        :func:`worker_timeout` (None: each worker plans with the configuration's timeout,
        unstretched); ``limit_s`` bounds the whole call, ranking included."""
        t0 = time.monotonic()
        note = ""
        if k > len(self.workers) - 1:
            note = (
                f"race {k}: this pool races at most {len(self.workers) - 1} contexts and the "
                "universal one"
            )
            k = len(self.workers) - 1
        if progress is not None:
            progress("selection")
        ranker = next((w for w in self.workers if w.ready), self.workers[0])
        ranked = ranker.rank(RankRequest(scene, k, first), cancelled, limit_s, poll_s)
        if isinstance(ranked, PlanResult):
            return RaceResult(ranked, None, time.monotonic() - t0, 0.0, note=note)
        contexts: list[Context] = [c for c in ranked if isinstance(c, Context)][: k + 1]
        if len(contexts) < k + 1:
            note = note or (
                f"race {k}: only {len(contexts) - 1} context(s) other than the universal one "
                "left after the screen"
            )
        if timeout_s is not None and timeout_s > 0:
            timeout_s = worker_timeout(timeout_s, len(contexts))
        left = None if limit_s is None else max(0.0, limit_s - (time.monotonic() - t0))
        result = self.race(
            scene, contexts, lam, timeout_s, seed, cancelled, left, progress, poll_s, started=t0
        )
        result.note = note
        return result

    def race(
        self,
        scene: Scene,
        contexts: Sequence[Context | str],
        lam: float | None = None,
        timeout_s: float | None = None,
        seed: int = 0,
        cancelled: Callable[[], bool] = lambda: False,
        limit_s: float | None = None,
        progress: Callable[[str], None] | None = None,
        poll_s: float = 0.05,
        started: float | None = None,
    ) -> RaceResult:
        """Plan ``scene`` under each of ``contexts`` (ids or contexts; at most one per worker)
        at once, without fallbacks; the first plan verified in the simulator wins and the
        other workers are stopped. Returns early (stopping every busy worker) when
        ``cancelled()`` turns true (CANCELED) or ``limit_s`` wall-clock seconds pass
        (TIMEOUT). ``started``: the ``time.monotonic()`` the race's wall-clock counts from
        (default: now)."""
        if not 1 <= len(contexts) <= len(self.workers):
            raise ValueError(f"a race needs 1 to {len(self.workers)} contexts, got {len(contexts)}")
        t0 = time.monotonic() if started is None else started
        entries = [
            _Entry(
                worker,
                c if isinstance(c, str) else c.id,
                c if isinstance(c, str) else c.name,
                c == "universal" if isinstance(c, str) else c.is_universal,
            )
            for worker, c in zip(self.workers, contexts, strict=False)
        ]
        by_id = {c if isinstance(c, str) else c.id: c for c in contexts}
        # CPU time: a live worker's own counters in /proc/<pid>/stat (read at the start and
        # before it is stopped; a zombie keeps them until it is reaped), because RUSAGE_CHILDREN
        # counts only reaped children, and the winner and the workers that answered stay warm,
        # unreaped. A worker that exits during the race is reaped when its exit is noticed: its
        # whole life's CPU then lands in RUSAGE_CHILDREN, and its share before the race is
        # taken off. (CPU of a Fast Downward search killed with its group is not counted.)
        children0 = children_cpu_s()
        for e in entries:
            e.pid0 = e.worker.pid
            e.cpu0 = process_cpu_s(e.pid0) or 0.0
        stage = [-1]

        def forward(now: str) -> None:
            if progress is not None and now in _STAGES and _STAGES.index(now) > stage[0]:
                stage[0] = _STAGES.index(now)
                progress(now)

        def finish(e: _Entry, outcome: str, result: PlanResult) -> None:
            e.outcome = WorkerOutcome(
                e.context_id,
                e.context_name,
                outcome,
                result.code,
                result.message,
                time.monotonic() - t0,
            )
            answers[id(e)] = result

        answers: dict[int, PlanResult] = {}
        winner: _Entry | None = None
        stop: PlanResult | None = None
        last_failure: PlanResult | None = None
        try:
            while winner is None:
                pending = [e for e in entries if e.outcome is None]
                if not pending:
                    break
                stop = self._stop_reason(cancelled, t0, limit_s)
                if stop is not None:
                    break
                for e in pending:
                    if e.request_id is not None:
                        continue
                    why = e.worker.poll_ready()
                    if e.worker.pid != e.pid0:  # (re)started: any earlier process is reaped
                        e.reaped0 += e.cpu0
                        e.pid0, e.cpu0 = e.worker.pid, 0.0
                    if why is not None:
                        last_failure = PlanResult.failure(ErrorCode.INTERNAL, why)
                        finish(e, "crashed", last_failure)
                    elif e.worker.ready:
                        try:
                            e.request_id = e.worker.send(
                                PlanRequest(scene, e.context_id, False, lam, timeout_s, seed)
                            )
                        except ServiceError as exc:
                            last_failure = PlanResult.failure(exc.code, exc.message)
                            finish(e, "crashed", last_failure)
                waiting = [e for e in entries if e.outcome is None]
                handles = [h for e in waiting for h in e.worker.waitables()]
                if handles:
                    wait(handles, timeout=poll_s)
                for e in waiting:
                    if e.request_id is None:
                        continue
                    answer = e.worker.poll_answer(e.request_id, forward)
                    if answer is None:
                        continue
                    if answer.success:
                        finish(e, "won", answer)
                        winner = e
                        break
                    crashed = answer.code == ErrorCode.INTERNAL and e.worker.pid is None
                    finish(e, "crashed" if crashed else "failed", answer)
                    last_failure = answer
        except BaseException:
            # An exception or an interrupt (Ctrl-C): no busy worker may plan on.
            busy = [e for e in entries if e.outcome is None and e.request_id is not None]
            for e in busy:
                e.worker.kill()
            for e in busy:
                e.worker.stop()
            raise
        # The losers' CPU is read before they are stopped, then the reaped ones' total.
        busy = [e for e in entries if e.outcome is None and e.request_id is not None]
        cpu = 0.0
        cpu_of: dict[int, float] = {}
        for e in entries:
            now = process_cpu_s(e.pid0) if e.pid0 is not None and e.worker.pid == e.pid0 else None
            if now is not None:
                cpu_of[id(e)] = now - e.cpu0
            if now is None or any(e is b for b in busy):  # reaped during the race, or about to be
                e.reaped0 += e.cpu0
            else:  # stays warm: counted here
                cpu += now - e.cpu0
        for e in busy:
            e.worker.kill()  # all at once, then each reaped
        for e in busy:
            e.worker.stop()
        # Every process reaped during the race, its whole life; less its part before the race.
        cpu += max(0.0, children_cpu_s() - children0 - sum(e.reaped0 for e in entries))
        cancel = stop or PlanResult.failure(ErrorCode.CANCELED, "another context won the race")
        for e in entries:
            if e.outcome is None:
                started_ = e.request_id is not None
                finish(e, "cancelled" if started_ else "not started", cancel)
            assert e.outcome is not None
            e.outcome = replace(e.outcome, cpu_s=cpu_of.get(id(e)))
        if self.respawn:
            for e in busy:
                e.worker.poll_ready()  # a fresh process loads in the background
        if progress is not None:
            progress("done")
        outcomes = [e.outcome for e in entries if e.outcome is not None]
        wall = time.monotonic() - t0
        if winner is not None:
            won = answers[id(winner)]
            return RaceResult(won, _context(by_id[winner.context_id]), wall, cpu, outcomes)
        if stop is not None:
            return RaceResult(stop, None, wall, cpu, outcomes)
        universal = next((answers[id(e)] for e in entries if e.is_universal), None)
        failure = universal or last_failure
        assert failure is not None
        failure.message = f"no raced context reached the goal: {failure.message}"
        return RaceResult(failure, None, wall, cpu, outcomes)

    def single(
        self,
        scene: Scene,
        lam: float | None = None,
        timeout_s: float | None = None,
        seed: int = 0,
        cancelled: Callable[[], bool] = lambda: False,
        limit_s: float | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> RaceResult:
        """No racing, measured as a race is: the first worker plans ``scene`` as
        ``CampService.plan`` does (the selector's context, then its fallbacks)."""
        worker = self.workers[0]
        t0 = time.monotonic()
        children0 = children_cpu_s()
        pid0 = worker.pid
        cpu0 = process_cpu_s(pid0) or 0.0
        result = worker.run(
            PlanRequest(scene, "", True, lam, timeout_s, seed), cancelled, limit_s, progress
        )
        wall = time.monotonic() - t0
        now = process_cpu_s(pid0) if worker.pid == pid0 else None
        # Stopped (a timeout, a cancel) or died, and reaped: its CPU is in RUSAGE_CHILDREN.
        reaped = max(0.0, children_cpu_s() - children0 - cpu0)
        cpu = now - cpu0 if now is not None else reaped
        context = result.context
        outcome = "won" if result.success else "failed"
        worker_outcome = WorkerOutcome(
            context.id if context else "",
            context.name if context else "",
            outcome,
            result.code,
            result.message,
            wall,
            cpu if now is not None else None,
        )
        return RaceResult(result, context if result.success else None, wall, cpu, [worker_outcome])

    @staticmethod
    def _stop_reason(
        cancelled: Callable[[], bool], t0: float, limit_s: float | None
    ) -> PlanResult | None:
        if cancelled():
            return PlanResult.failure(ErrorCode.CANCELED, "the request was cancelled")
        if limit_s is not None and time.monotonic() - t0 > limit_s:
            return PlanResult.failure(
                ErrorCode.TIMEOUT, f"the race took longer than {limit_s:.1f} s and was stopped"
            )
        return None


def _context(ref: Context | str) -> Context | None:
    return ref if isinstance(ref, Context) else None


def race_once(
    service_kwargs: dict[str, Any],
    scene: Scene,
    k: int,
    lam: float | None = None,
    timeout_s: float | None = None,
    seed: int = 0,
    start_timeout_s: float = 120.0,
    service_factory: Callable[..., Any] | None = None,
) -> tuple[RaceResult, float]:
    """One race of ``k`` in a pool of ``k + 1`` workers started for it and stopped after it
    (every process reaped, also on an exception or Ctrl-C): (the race, seconds the workers
    took to load, which the race's wall-clock leaves out)."""
    with RacePool(service_kwargs, k + 1, start_timeout_s, service_factory, respawn=False) as pool:
        t0 = time.monotonic()
        pool.start()
        load_s = time.monotonic() - t0
        return pool.plan(scene, k, lam, timeout_s, seed), load_s
