"""PyBullet physics servers for any domain: private DIRECT servers, and a per-process pool
of servers that keep one URDF loaded between scenes.

Loading a robot's URDF is most of what building a scene costs (42 ms of 60 ms for NAMO's
arm in the paper's world), so a domain's scenes take a server from a :class:`ServerPool`
that keeps the robot loaded, and hand it back, emptied of everything else, when they close.
Every call passes its physics client id explicitly; nothing here touches a global client.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import pybullet as pb
import pybullet_data

T = TypeVar("T")


def connect() -> int:
    """A new DIRECT server that finds ``pybullet_data``'s models."""
    client = int(pb.connect(pb.DIRECT))
    pb.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=client)
    return client


@contextmanager
def direct_client() -> Iterator[int]:
    """A private PyBullet physics server (DIRECT mode, no GUI), disconnected on exit."""
    client = connect()
    try:
        yield client
    finally:
        pb.disconnect(physicsClientId=client)


def connected_clients(max_id: int = 256) -> int:
    """How many PyBullet physics servers this process has connected and not yet
    disconnected (ids are small integers handed out in order; ``max_id`` bounds the scan).
    Every :func:`direct_client` is disconnected on exit and every server handed back to a
    pool is kept (up to the pool's size) or disconnected, so a long run holds no more than
    the pools' idle servers between planning calls."""
    return sum(1 for i in range(max_id) if pb.isConnected(physicsClientId=i))


class ServerPool:
    """Idle servers with ``urdf`` loaded (as a fixed-base body), at most ``size`` of them.

    :meth:`take` hands out (client, body) of an idle server, or of a new one; :meth:`give_back`
    keeps it for the next scene, or disconnects it when the pool is full. The caller removes
    everything else it added to the server before giving it back."""

    def __init__(self, urdf: str, size: int) -> None:
        self.urdf = urdf
        self.size = size
        self._idle: list[tuple[int, int]] = []
        # Reentrant: a scene may be garbage-collected, and hand its server back, while this
        # thread is inside the pool.
        self._lock = threading.RLock()
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def _after_fork_in_child(self) -> None:
        # A DIRECT server lives in the process's memory, so a forked worker owns copies of
        # the idle ones; only the lock may have been held by a thread that did not come along.
        self._lock = threading.RLock()

    def new_server(self) -> tuple[int, int]:
        """A new server with the pool's URDF loaded: (client, body)."""
        client = connect()
        return client, int(pb.loadURDF(self.urdf, useFixedBase=True, physicsClientId=client))

    def take(self) -> tuple[int, int]:
        """An idle server's (client, body), or a new server's."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self.new_server()

    def give_back(self, client: int, body: int) -> None:
        """Keep the server for the next :meth:`take`, or disconnect it if the pool is full."""
        with self._lock:
            if len(self._idle) < self.size:
                self._idle.append((client, body))
                return
        pb.disconnect(physicsClientId=client)

    def idle(self) -> int:
        """How many servers the pool holds, ready for :meth:`take`."""
        with self._lock:
            return len(self._idle)


def yaw_quaternion(yaw: float) -> tuple[float, float, float, float]:
    """PyBullet's (x, y, z, w) quaternion of a turn by ``yaw`` about the vertical."""
    return (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2))


def static_box(
    client: int,
    half: tuple[float, float, float],
    at: tuple[float, float, float],
    rgba: tuple[float, float, float, float],
) -> int:
    """A massless (static) box body of half-extents ``half`` centred at ``at``."""
    shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, physicsClientId=client)
    look = pb.createVisualShape(
        pb.GEOM_BOX, halfExtents=half, rgbaColor=rgba, physicsClientId=client
    )
    return int(pb.createMultiBody(0.0, shape, look, at, physicsClientId=client))


def build_in_pool(pool: ServerPool, build: Callable[[int, int], T]) -> T:
    """``build(client, body)`` in a server taken from ``pool``; the server is disconnected
    (not handed back, its contents unknown) if building fails."""
    client, body = pool.take()
    try:
        return build(client, body)
    except BaseException:
        pb.disconnect(physicsClientId=client)
        raise
