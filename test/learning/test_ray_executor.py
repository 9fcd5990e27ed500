"""The Ray executor on a local 2-CPU Ray (one session for the module): the same scores and
CSIs as inline, a killed driver resumes with unique checkpoint lines, a failing job and a
missing CSI are clear errors, and no Ray process outlives the tests."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from camp_planner.core.errors import CampError
from camp_planner.eval.evaluate import evaluate
from camp_planner.learning import ray_executor
from camp_planner.learning.executor import ExecutorSpec, make_executor
from camp_planner.learning.labels import ScoreJob, run_job
from camp_planner.learning.train import score_split
from camp_planner.workflow import CSIPayload, Pipeline

# No skip without Ray: `make setup` installs the pinned extra, so its absence is a failure.
pytestmark = [pytest.mark.ray]

# BFS-replan replanning only when the world deviates: a job takes about 0.5 s.
TINY = """\
tasks: {train: 3, test: 2}
contexts: {max_contexts: 4}
csi: {k1: 10, k2: 5, tasks: 2}
selector: {max_iterations: 50}
planners: {bfs_replan: {replan: on_deviation}}
"""
# Enough jobs (12 tasks × 4 contexts) that a driver killed early has work left.
LONGER = TINY.replace("train: 3", "train: 12")
JOBS = 48
# What two runs of one job agree on whatever the machine: not its times, nor the objective
# that charges them, nor the host.
DETERMINISTIC = ("discounted_return", "success", "outcome", "fallbacks", "plan", "work_s")


def ray_processes(tmpdir: str) -> list[int]:
    """Every live process of the Ray sessions under ``RAY_TMPDIR=tmpdir``: started with
    that variable, or holding a file of the session open (Ray's agents rewrite their
    environment's memory with their process title, but keep their logs open)."""
    mark = f"RAY_TMPDIR={tmpdir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if mark in (entry / "environ").read_bytes().split(b"\0") or any(
                _target(fd).startswith(tmpdir) for fd in (entry / "fd").iterdir()
            ):
                found.append(int(entry.name))
    return found


def _target(link: Path) -> str:
    try:
        return os.readlink(link)
    except OSError:
        return ""


def gone(tmpdir: str, within_s: float = 30.0) -> list[int]:
    """The processes of ``tmpdir`` still alive after up to ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while (left := ray_processes(tmpdir)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def _cmdlines(pids: list[int]) -> list[str]:
    out = []
    for pid in pids:
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text().split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            out.append(f"{pid} {stat[2]} ppid {stat[3]}: {cmd[:120]}")
    return out


@dataclass
class RaySession:
    spec: ExecutorSpec
    tmpdir: str


@pytest.fixture(scope="module")
def ray_session() -> Iterator[RaySession]:
    # A short private temp dir (Ray's socket paths have a length limit) marks its processes.
    tmpdir = tempfile.mkdtemp(prefix="cr", dir="/tmp")
    old = os.environ.get("RAY_TMPDIR")
    os.environ["RAY_TMPDIR"] = tmpdir
    spec = ExecutorSpec("ray", 2)
    try:
        ray_executor.session(spec)  # started once for the module; the tests reuse it warm
        yield RaySession(spec, tmpdir)
    finally:
        ray_executor.shutdown()
        if old is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = old
        left = gone(tmpdir)
        shutil.rmtree(tmpdir, ignore_errors=True)
        assert not left, f"Ray processes left after shutdown: {left}"


def _pipeline(root: Path, text: str = TINY) -> Pipeline:
    root.mkdir(parents=True, exist_ok=True)
    config = root / "tiny.yaml"
    config.write_text(text)
    return Pipeline.create("gridworld", config, root / "artifacts")


def _csis(pipe: Pipeline) -> dict[str, Any]:
    return {
        r.context.id: {k: v for k, v in r.to_json().items() if k != "seconds"}
        for r in pipe.store.results()
    }


def test_ray_learns_the_csis_and_scores_of_inline(tmp_path: Path, ray_session: RaySession) -> None:
    inline = _pipeline(tmp_path / "inline")
    ray = _pipeline(tmp_path / "ray")
    contexts = list(inline.space)
    a, stats_a = score_split(
        inline, tmp_path / "inline" / "artifacts", "bfs_replan", "train", contexts, 0, 1, False
    )
    b, stats_b = score_split(
        ray, tmp_path / "ray" / "artifacts", "bfs_replan", "train", contexts, 0, ray_session.spec
    )
    assert stats_a.computed == stats_b.computed == 12
    # CSI learning ran as picklable jobs on the actors and found what one process finds.
    assert _csis(ray) == _csis(inline) and len(_csis(ray)) == 3
    for key, score in a.scores.items():
        assert {f: getattr(score, f) for f in DETERMINISTIC} == {
            f: getattr(b.scores[key], f) for f in DETERMINISTIC
        }, key
    assert {s.host for s in b.scores.values()} == {socket.gethostname()}


LOOPBACK = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}


def listening(pids: list[int]) -> list[tuple[int, str]]:
    """(pid, local address in /proc/net hex) of every TCP socket ``pids`` listen on."""
    inodes: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes[target[8:-1]] = pid
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            cols = row.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                found.append((inodes[cols[9]], cols[1].split(":")[0]))
    return found


def test_a_local_ray_stays_on_loopback(ray_session: RaySession) -> None:
    ray = ray_executor.import_ray()
    assert {n["NodeManagerAddress"] for n in ray.nodes()} == {"127.0.0.1"}
    sockets = listening(ray_processes(ray_session.tmpdir))
    assert sockets, "no listening socket found: the check is broken"
    assert [s for s in sockets if s[1] not in LOOPBACK] == []


def _job(pipe: Pipeline, root: Path, **change: Any) -> ScoreJob:
    context = next(c for c in pipe.space if not c.is_universal)
    fields: dict[str, Any] = {
        "domain": "gridworld",
        "config_json": json.dumps(pipe.config, sort_keys=True, default=str),
        "artifacts": str(root / "worker"),
        "split": "train",
        "task": 0,
        "context_id": context.id,
        "planner": "bfs_replan",
        "seed": 0,
    }
    return ScoreJob(**{**fields, **change})


def test_a_failing_job_is_one_clear_error(tmp_path: Path, ray_session: RaySession) -> None:
    pipe = _pipeline(tmp_path)
    pipe.learn_csis(label=None)
    executor = make_executor(ray_session.spec)
    with pytest.raises(CampError, match=r"out of range.*Ray worker on .*train task 99") as err:
        list(executor.map_shared(run_job, [_job(pipe, tmp_path, task=99)], pipe.csi_payload()))
    assert "\n" not in str(err.value)
    # An exception that is not the planner's own error names the job and the exception.
    broken = _job(pipe, tmp_path, config_json="{")
    with pytest.raises(CampError, match=r"failed on train task 0.*JSONDecodeError") as err:
        list(executor.map_shared(run_job, [broken], pipe.csi_payload()))
    assert "\n" not in str(err.value)


def test_a_worker_without_the_csis_refuses_to_learn_them(
    tmp_path: Path, ray_session: RaySession
) -> None:
    pipe = _pipeline(tmp_path)
    executor = make_executor(ray_session.spec)
    with pytest.raises(CampError, match="never learns"):
        list(executor.map_shared(run_job, [_job(pipe, tmp_path)], CSIPayload.of([], None)))
    assert not (tmp_path / "worker").exists()  # nothing learned on the worker, nothing saved
    assert not (tmp_path / "artifacts" / "csi").exists()


def test_test_episodes_on_ray_are_those_of_one_process(
    tmp_path: Path, ray_session: RaySession
) -> None:
    base = _pipeline(tmp_path, TINY + "camp: {selection: {rule: ungated}}\n")
    artifacts = tmp_path / "artifacts"
    methods = ["camp", "pure", "policy", "oracle_rerun"]

    def episodes(workers: ExecutorSpec | int) -> dict[str, Any]:
        for cache in artifacts.glob("gridworld/bfs_replan/seed0/eval-*.json"):
            cache.unlink()  # the episodes run again; the labels and the selector are reused
        out = tmp_path / "eval"
        evaluate(base, artifacts, "bfs_replan", methods, 1, workers, out, "test", False)
        runs = json.loads((out / "results.json").read_text())["episodes"]
        fields = ("task", "context_id", "success", "fallbacks", "plan")
        return {m: [{f: r[f] for f in fields} for r in runs[m][0]] for m in methods}

    inline = episodes(1)
    assert episodes(ray_session.spec) == inline
    assert all(len(rows) == 2 for rows in inline.values())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_command_joins_a_running_cluster_and_leaves_it_running(tmp_path: Path) -> None:
    """The docs' cluster steps on this machine's loopback: token authentication, `ray
    start --head`, then `--ray-address auto` and host:port. One node: a second would need
    the machine's network address (Ray joins nodes only there)."""
    tmpdir = tempfile.mkdtemp(prefix="cc", dir="/tmp")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "RAY_TMPDIR": tmpdir, "HOME": str(home), "RAY_AUTH_MODE": "token"}
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    env.pop("RAY_ADDRESS", None)
    ray_cli = str(Path(sys.executable).parent / "ray")
    port = _free_port()
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY)

    def camp(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "camp_planner.cli", "train", "--config", str(config)]
        argv += ["--planner", "bfs_replan", "--executor", "ray", *args]
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)

    try:
        subprocess.run([ray_cli, "get-auth-token", "--generate"], env=env, check=True, timeout=60)
        head = [ray_cli, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}"]
        head += ["--num-cpus=2", "--include-dashboard=false"]
        subprocess.run(head, env=env, check=True, capture_output=True, timeout=120)
        before = set(ray_processes(tmpdir))

        first = camp("--ray-address", "auto", "--workers", "2", "--artifacts", str(tmp_path / "a"))
        assert first.returncode == 0, first.stderr
        records = _labels(tmp_path / "a")
        assert len(records) == 12 and {r["host"] for r in records} == {socket.gethostname()}
        # The driver joined: the cluster it leaves runs on, on loopback.
        assert before <= set(ray_processes(tmpdir))
        sockets = listening(ray_processes(tmpdir))
        assert sockets and [s for s in sockets if s[1] not in LOOPBACK] == []

        address = f"127.0.0.1:{port}"
        again = camp("--ray-address", address, "--workers", "2", "--artifacts", str(tmp_path / "b"))
        assert again.returncode == 0, again.stderr
        assert len(_labels(tmp_path / "b")) == 12

        more = camp("--ray-address", "auto", "--workers", "3", "--artifacts", str(tmp_path / "c"))
        assert more.returncode == 2
        assert "the Ray cluster has 2 CPUs, fewer than --workers 3" in more.stderr
    finally:
        # Not `ray stop`: it stops every Ray on the machine, other users' too.
        for pid in ray_processes(tmpdir):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(tmpdir, ignore_errors=True)


def _labels(artifacts: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for f in (artifacts / "gridworld" / "labels").glob("*.jsonl")
        for line in f.read_text().splitlines()
    ]


def test_a_killed_driver_resumes_with_unique_checkpoint_lines(
    tmp_path: Path, ray_session: RaySession, capsys: pytest.CaptureFixture[str]
) -> None:
    from camp_planner.cli import main

    config = tmp_path / "longer.yaml"
    config.write_text(LONGER)
    artifacts = tmp_path / "artifacts"
    argv = ["train", "--config", str(config), "--artifacts", str(artifacts), "--json"]
    argv += ["--planner", "bfs_replan", "--executor", "ray", "--workers", "2"]
    # The first driver runs a Ray of its own, marked by its own temp dir.
    killed_tmp = tempfile.mkdtemp(prefix="ck", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": killed_tmp}
    # Output to a file: Ray's processes may hold a pipe open after the driver is gone.
    log = tmp_path / "first.log"
    with log.open("w") as out:
        first = subprocess.Popen(
            [sys.executable, "-m", "camp_planner.cli", *argv], env=env, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 120
        lines = 0
        while time.monotonic() < deadline and first.poll() is None:
            lines = len(_labels(artifacts)) if (artifacts / "gridworld").exists() else 0
            if lines >= 3:
                break
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert 3 <= lines < JOBS, f"killed part-way through its scores? {log.read_text()}"
        finished = len(_labels(artifacts))

        # The same command resumes (on the module's Ray) and recomputes nothing finished.
        assert main(argv) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["scores_reused"] == finished
        assert summary["scores_computed"] == JOBS - finished
        records = _labels(artifacts)
        keys = [(r["task"], r["context_id"]) for r in records]
        assert len(keys) == len(set(keys)) == JOBS
        assert Path(summary["bundle"]).is_file()

        # Nothing of the killed driver's Ray outlives it for long: Ray's reaper stops its
        # services at once, a worker mid-job sees its raylet go and ends, and Ray's agents
        # notice within about a minute.
        left = gone(killed_tmp, within_s=90.0)
        assert not left, f"Ray processes outlived their killed driver: {_cmdlines(left)}"
    finally:
        for pid in ray_processes(killed_tmp):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(killed_tmp, ignore_errors=True)


def test_no_ray_process_is_left(ray_session: RaySession) -> None:
    """Last: the command above ended the module's Ray session, as `camp` does on exit."""
    ray_executor.shutdown()
    assert not gone(ray_session.tmpdir)
