"""Progress reporting for long jobs (label scoring, CSI learning, evaluation).

On a terminal this is a tqdm bar. Redirected to a file (``nohup camp eval ... > log``, CI),
a tqdm bar either stays silent (tqdm disables itself off a terminal) or writes
carriage-return updates that a log shows as one unreadable line. There a
:class:`LineProgress` writes one plain line per interval instead: done/total, percent,
elapsed time and an ETA, so that a job of hours can be followed with ``tail -f``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

LOG_INTERVAL_S = 60.0


def _clock_text(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class LineProgress:
    """A progress report as plain lines, at most one per ``interval_s`` (and one at the
    end). The ETA extrapolates the rate of the items done in this run (``initial`` items
    were done before it started, e.g. reused from a checkpoint)."""

    def __init__(
        self,
        total: int,
        desc: str,
        initial: int = 0,
        interval_s: float = LOG_INTERVAL_S,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.desc = desc
        self.n = initial
        self._initial = initial
        self._interval = interval_s
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._start = self._last = clock()
        self._closed = False
        self._written = -1  # the count the last line reported
        # A first line at once: a job whose items take minutes each (a 10x10 CSI context
        # takes tens of minutes) would otherwise leave its log empty until one is done.
        self._write(f"{initial} already done" if initial else "started")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self._clock()
        if now - self._last >= self._interval or self.n >= self.total:
            self._last = now
            self._write()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.n != self._written:
                self._write("stopped" if self.n < self.total else "")

    def _write(self, note: str = "") -> None:
        elapsed = self._clock() - self._start
        done_here = self.n - self._initial
        pct = 100.0 * self.n / self.total if self.total else 100.0
        line = f"{self.desc}: {self.n}/{self.total} ({pct:.0f} %), elapsed {_clock_text(elapsed)}"
        if done_here > 0 and self.n < self.total and elapsed > 0:
            eta = elapsed / done_here * (self.total - self.n)
            line += f", ETA {_clock_text(eta)}"
        if note:
            line += f" [{note}]"
        self._written = self.n
        print(line, file=self._stream, flush=True)


def progress_bar(
    total: int, desc: str, initial: int = 0, leave: bool = True, smoothing: float = 0.3
) -> Any:
    """A tqdm bar on a terminal, a :class:`LineProgress` anywhere else."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(
            total=total,
            initial=initial,
            desc=desc,
            file=sys.stderr,
            leave=leave,
            smoothing=smoothing,
        )
    return LineProgress(total, desc, initial)
