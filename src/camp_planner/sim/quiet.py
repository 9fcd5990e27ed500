"""Loading pybullet without its start-up line.

pybullet's C module prints "pybullet build time: …" when it is first imported, into C's
stdio buffers. Every process that loads it printed the line again, so a node and its
planning workers filled one log with copies of it.
"""

from __future__ import annotations

import ctypes
import os
import sys


def import_pybullet_quietly() -> None:
    """Import pybullet with stdout and stderr sent to /dev/null, and C's stdio buffers
    flushed there before they are restored (a no-op once pybullet is loaded)."""
    if "pybullet" in sys.modules:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        import pybullet  # noqa: F401

        ctypes.CDLL(None).fflush(None)
    finally:
        for fd, copy in zip((1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(devnull)
