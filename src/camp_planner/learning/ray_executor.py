"""The Ray executor: jobs on warm Ray actors, one CPU each, on this machine or a cluster.

The only module that imports Ray, and only when ``--executor ray`` asks for it, so every
other command works without Ray installed. One session per command: the first parallel step
starts Ray (or joins a cluster) and ``workers`` actors; later steps reuse them warm, so each
actor builds its pipeline, PyBullet pool and resident Fast Downward translator once (they
live in the worker's modules, as in a local worker process). :func:`shutdown` (the CLI calls
it when the command ends) kills the actors and stops a Ray this process started.

Started here, Ray stays on loopback: its node address is 127.0.0.1 and every service it
starts listens there (:data:`LOOPBACK_ONLY`), no dashboard, usage statistics off, token
authentication on. Joining a cluster (``--ray-address``) uses that cluster's settings;
docs/design.md ("Running on a Ray cluster") says how to run one.

A job that raises ends the command with a one-line :class:`CampError` naming the job. A
worker lost with its node is restarted and its job retried by Ray; the driver gets one result
per job either way, and the checkpoints it writes keep only a job's first result.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import socket
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from camp_planner.core.errors import CampError
from camp_planner.learning.executor import (
    MAX_RESTARTS,
    RAY_INSTALL,
    ExecutorSpec,
    WithoutShared,
    describe_job,
)

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")

# A local Ray's object store holds the CSIs sent to the workers (hundreds of kB), not data
# sets: Ray's default would reserve 30 % of the machine's memory.
LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2
# One thread per worker for torch and the BLAS libraries: the workers already fill the CPUs.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# Ray turns a node address of 127.0.0.1 into the machine's own address, found by routing
# towards a public resolver, and binds its services there, unless it is told that it runs
# no cluster (the setting Ray has for single-machine platforms): then 127.0.0.1 stays.
LOOPBACK_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def import_ray(loopback: bool = False) -> Any:
    """The ``ray`` module, with usage statistics off (and, with ``loopback``, a Ray that
    stays on 127.0.0.1); a clear error when it is missing."""
    # Read when Ray is imported and by the processes it starts: set them first.
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    if loopback:
        os.environ[LOOPBACK_ONLY] = "0"
        if "ray" not in sys.modules:
            # Ray's default for a local Ray (a token), said explicitly so that it needs no
            # warning each run; Ray reads the mode when it is imported.
            os.environ.setdefault("RAY_AUTH_MODE", "token")
    try:
        ray = importlib.import_module("ray")
    except ImportError:
        raise CampError(
            f"--executor ray needs Ray, which is not installed: {RAY_INSTALL}"
        ) from None
    if loopback:  # imported earlier without it (read at import): this process needs it too
        constants: Any = importlib.import_module("ray._private.ray_constants")
        constants.ENABLE_RAY_CLUSTER = False
    return ray


def require(spec: ExecutorSpec) -> None:
    """A clear error now if Ray is not installed, or the cluster to join does not answer
    (``--executor ray`` checks before any work)."""
    head = None if spec.ray_address is None else cluster_address(spec.ray_address)
    import_ray(loopback=_on_loopback(head))


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
# How long the head's port may take to accept a connection before the address is refused.
CONNECT_TIMEOUT_S = 5.0


def cluster_address(given: str) -> str:
    """The head's ``host:port`` that ``--ray-address`` names: ``auto`` is ``RAY_ADDRESS`` or
    the cluster ``ray start`` recorded on this machine. Checked to answer, because Ray's own
    client retries a wrong address without end."""
    address = given.strip()
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "").strip()
        if not address:
            tmp = os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp"
            recorded = os.path.join(tmp, "ray", "ray_current_cluster")
            try:
                with open(recorded) as f:
                    address = f.read().strip()
            except OSError:
                raise CampError(
                    f"--ray-address auto found no Ray cluster started on this machine (no "
                    f"{recorded}); run `ray start --head` first, or give the head's host:port"
                ) from None
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise CampError(f"--ray-address {given}: expected `auto` or the head's host:port")
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise CampError(
            f"no Ray cluster answers at {host}:{port} ({exc.strerror or exc}); is "
            "`ray start --head` running there, and the port open to this machine?"
        ) from None
    return f"{host}:{port}"


def make(spec: ExecutorSpec) -> RayExecutor:
    return RayExecutor(spec)


class _Worker:
    """A Ray actor's state: the shared value of the current ``map_shared`` call, fetched
    from the object store once per call, not once per job."""

    def __init__(self) -> None:
        if "torch" in sys.modules:  # imported before the env var could apply
            sys.modules["torch"].set_num_threads(1)
        _exit_with_parent()
        self._token: str | None = None
        self._shared: Any = None

    def call(
        self, fn: Callable[[Any, Any], Any], item: Any, token: str | None, box: list[Any]
    ) -> Any:
        if token is not None and token != self._token:
            self._shared = import_ray().get(box[0])
            self._token = token
        try:
            return fn(item, self._shared if token is not None else None)
        except CampError as exc:
            raise CampError(
                f"{exc} (Ray worker on {socket.gethostname()}, {describe_job(item)})"
            ) from None
        except Exception as exc:
            # The driver shows one line; the traceback goes to the worker's Ray log (and the
            # exception itself may not unpickle on the driver).
            traceback.print_exc()
            raise CampError(
                f"a Ray worker on {socket.gethostname()} failed on {describe_job(item)}: "
                f"{type(exc).__name__}: {exc}"
            ) from None


def _exit_with_parent() -> None:
    """End this worker when its parent (the node's raylet) is gone. A driver killed with its
    local Ray takes the raylet with it, and the worker would otherwise plan on to the end of
    its job (up to the planner's timeout) for a result nobody can receive."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-raylet", daemon=True).start()


@dataclass
class _Session:
    ray: Any
    address: str | None
    owned: bool  # this process connected, so it disconnects (and stops a Ray it started)
    cpus: float = 0.0
    actors: list[Any] = field(default_factory=list)

    def start_actors(self, n: int) -> None:
        self.kill_actors()
        cls = self.ray.remote(_Worker)
        options = cls.options(
            num_cpus=1,
            max_restarts=MAX_RESTARTS,
            max_task_retries=MAX_RESTARTS,
            runtime_env={"env_vars": ONE_THREAD},
        )
        self.actors = [options.remote() for _ in range(n)]

    def kill_actors(self) -> None:
        for actor in self.actors:
            # One already gone with its node has nothing left to stop.
            with contextlib.suppress(Exception):
                self.ray.kill(actor, no_restart=True)
        self.actors = []


_SESSION: _Session | None = None


def _connect(ray: Any, spec: ExecutorSpec, head: str | None) -> _Session:
    """Start a Ray for this command (``head`` None) or join the cluster whose head is at
    ``head`` (resolved by :func:`cluster_address`)."""
    if ray.is_initialized():  # the caller's own Ray session (a notebook, a test): use it
        return _Session(ray, spec.ray_address, owned=False)
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if head is None:
            # "local": a new Ray for this command, never one that happens to run here.
            ray.init(
                address="local",
                num_cpus=spec.workers,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                **quiet,
            )
        else:
            ray.init(address=head, **quiet)
    except (ConnectionError, RuntimeError, ValueError, OSError) as exc:
        where = (
            "start Ray on this machine"
            if spec.ray_address is None
            else f"join the Ray cluster at {spec.ray_address}"
        )
        raise CampError(f"could not {where}: {exc}") from None
    atexit.register(shutdown)
    return _Session(ray, spec.ray_address, owned=True)


def session(spec: ExecutorSpec) -> _Session:
    """This command's Ray session with ``spec.workers`` warm actors, started on first use."""
    global _SESSION
    if _SESSION is not None and (
        _SESSION.address != spec.ray_address
        # A Ray started here has one CPU per worker it was started for: more need a new one.
        or (_SESSION.owned and spec.ray_address is None and _SESSION.cpus < spec.workers)
    ):
        shutdown()
    if _SESSION is None:
        head = None if spec.ray_address is None else cluster_address(spec.ray_address)
        s = _connect(import_ray(loopback=_on_loopback(head)), spec, head)
        s.cpus = float(s.ray.cluster_resources().get("CPU", 0))
        _SESSION = s
    if _SESSION.cpus < spec.workers:
        cpus = _SESSION.cpus
        shutdown()
        # Actors beyond the CPUs would wait for one forever.
        raise CampError(
            f"the Ray cluster has {cpus:g} CPUs, fewer than --workers {spec.workers} "
            "(each worker takes one)"
        )
    if len(_SESSION.actors) != spec.workers:
        _SESSION.start_actors(spec.workers)
    return _SESSION


def _on_loopback(head: str | None) -> bool:
    """Whether this process's Ray must keep 127.0.0.1 as its address: for a Ray of its own
    (``head`` None), and to join a head on loopback (Ray would otherwise call it at the
    machine's network address, where a loopback head does not listen, and retry without
    end)."""
    return head is None or head.rpartition(":")[0].strip("[]") in LOCAL_HOSTS


def shutdown() -> None:
    """Kill the actors and stop (or leave) the Ray this process started (or joined)."""
    global _SESSION
    s, _SESSION = _SESSION, None
    if s is not None:
        s.kill_actors()
        if s.owned:
            s.ray.shutdown()


class RayExecutor:
    """Runs jobs on the session's warm actors, each job on whichever actor is free."""

    def __init__(self, spec: ExecutorSpec) -> None:
        if spec.kind != "ray":
            raise ValueError("RayExecutor needs a ray spec")
        self.spec = spec

    def map_unordered(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]:
        return self.map_shared(WithoutShared(fn), items, None)

    def map_shared(self, fn: Callable[[T, S], R], items: Sequence[T], shared: S) -> Iterator[R]:
        if not items:  # nothing to do: no reason to start Ray
            return
        s = session(self.spec)
        ray = s.ray
        token = None if shared is None else uuid.uuid4().hex
        # In a list, so that Ray hands the actor the reference, not the value every call.
        box = [None if shared is None else ray.put(shared)]
        pool = importlib.import_module("ray.util.actor_pool").ActorPool(s.actors)
        for item in items:
            pool.submit(lambda actor, job: actor.call.remote(fn, job, token, box), item)
        finished = False
        try:
            while pool.has_next():
                try:
                    result = pool.get_next_unordered()
                except ray.exceptions.RayTaskError as exc:
                    raise _task_error(exc) from None
                except ray.exceptions.RayActorError as exc:
                    raise CampError(
                        f"a Ray worker was lost more than {MAX_RESTARTS} times (its node "
                        f"died or ran out of memory?): {_first_line(exc)}; the same command "
                        "resumes from the finished work"
                    ) from None
                except ray.exceptions.RayError as exc:
                    raise CampError(f"Ray failed: {_first_line(exc)}") from None
                yield result
            finished = True
        finally:
            if not finished:
                # Their jobs still run and nobody waits for them: fresh actors next time.
                s.kill_actors()


def _task_error(exc: Any) -> CampError:
    cause = getattr(exc, "cause", None)
    if isinstance(cause, CampError):
        return CampError(str(cause.args[0]) if cause.args else str(cause))
    return CampError(f"a Ray worker failed: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__
