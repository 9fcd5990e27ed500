"""Where a planning call spends the time past its deadline.

A planner looks at its deadline between steps, so a step with no bound of its own (a path
shortcut, a grid search, a stalled machine) shows up only as a call that returns late.
:class:`OverrunWatch` names that step: a watcher thread sleeps until the budget is spent,
then samples the calling thread's stack every ``interval_s`` until the call returns. A call
that keeps to its budget is never sampled, so the watch costs nothing then.

The watcher needs the GIL to sample: while a C extension holds it (an OMPL query, a
PyBullet batch), the sample is taken when it is released, in the Python frame that called
it. That is the frame to blame, so the sampling stays meaningful.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

# A run returning later than this past its timeout is reported (with where it was): below
# it, the lateness is the granularity of the planner's deadline checks.
LATE_S = 0.05


class OverrunWatch:
    """Samples the stack of the thread that enters it once ``budget_s`` has passed.

    ``depth`` innermost frames make one sample's key (``file:line:function``, innermost
    first, joined by `` <- ``)."""

    def __init__(
        self,
        budget_s: float,
        interval_s: float = 0.01,
        depth: int = 6,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if budget_s < 0 or interval_s <= 0 or depth < 1:
            raise ValueError(
                f"OverrunWatch needs budget_s >= 0, interval_s > 0, depth >= 1; got "
                f"{budget_s}, {interval_s}, {depth}"
            )
        self.budget_s = budget_s
        self.interval_s = interval_s
        self.depth = depth
        self.clock = clock
        self.samples: Counter[str] = Counter()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self._target = 0
        self._start = 0.0

    def __enter__(self) -> OverrunWatch:
        self._target = threading.get_ident()
        self._start = self.clock()
        self._done.clear()
        self._thread = threading.Thread(target=self._watch, name="overrun-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _watch(self) -> None:
        wait = self.budget_s - (self.clock() - self._start)
        if wait > 0 and self._done.wait(wait):
            return
        while not self._done.is_set():
            frame = sys._current_frames().get(self._target)
            if frame is None:
                return
            stack = traceback.extract_stack(frame)[-self.depth :]
            key = " <- ".join(
                f"{Path(f.filename).name}:{f.lineno}:{f.name}" for f in reversed(stack)
            )
            self.samples[key] += 1
            self._done.wait(self.interval_s)

    def top(self, n: int = 3) -> list[list[str | int]]:
        """The ``n`` most sampled stacks past the budget, as ``[stack, samples]`` pairs
        (JSON-ready); empty if the call kept to its budget."""
        return [[key, count] for key, count in self.samples.most_common(n)]


def lateness(run: dict[str, Any], timeout: float) -> str | None:
    """For a benchmark run's record (``compute_time_s`` and, from :meth:`OverrunWatch.top`,
    ``past_timeout_stacks``): how late it returned and mostly where, or None if it returned
    within ``LATE_S`` of ``timeout``."""
    late = float(run["compute_time_s"]) - timeout
    if late <= LATE_S:
        return None
    stack, samples = (run.get("past_timeout_stacks") or [["not sampled", 0]])[0]
    return f"returned {late:.2f} s past its {timeout:g} s, mostly in {stack} ({samples} samples)"
