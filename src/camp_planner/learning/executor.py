"""A small executor interface for embarrassingly parallel jobs (label scoring).

Local worker processes by default; an inline executor for one worker and for tests. Another
backend (e.g. a cluster) only needs ``map_unordered``.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    """Runs ``fn`` over ``items`` and yields results as they finish (any order)."""

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]: ...


class InlineExecutor:
    """Runs jobs one after another in this process."""

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        for item in items:
            yield fn(item)


class ProcessExecutor:
    """Runs jobs in ``workers`` local processes; at most ``2 × workers`` are queued at once so
    an interrupt loses little queued work and memory stays flat."""

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        # fork keeps start-up cheap and inherits the ROS wheels' library path.
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx) as pool:
            pending: set[Future[R]] = set()
            queue = iter(items)
            for item in queue:
                pending.add(pool.submit(fn, item))
                if len(pending) >= 2 * self.workers:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(fn, nxt))


def make_executor(workers: int) -> Executor:
    return InlineExecutor() if workers <= 1 else ProcessExecutor(workers)
