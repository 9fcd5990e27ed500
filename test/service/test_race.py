"""Context racing with a stand-in service whose contexts say how they end: the first verified
plan wins, the losers are stopped and reaped (checked with the OS), a worker that crashes or
fails does not lose the race for the others, all failing is a clear failure, a cancel or an
interrupt stops every worker, and CPU time is counted; then one real NAMO race through
``camp plan --race 1``."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from camp_planner.core.context import Context, Term
from camp_planner.domains.interface.errors import ErrorCode
from camp_planner.domains.interface.scene import Pose, Scene
from camp_planner.service.race import RacePool, RaceResult, race_once, worker_timeout
from camp_planner.service.types import PlanResult

SCENE = Scene(domain="namo", robot_pose=Pose.planar(0.0, 0.0, 0.0), objects=())


def _context(behaviour: str) -> Context:
    return Context("single", (Term("behaviour", behaviour),))


class RaceService:
    """Stands in for ``CampService`` in a worker. A context id (or, for a context made by
    :func:`_context`, its term's value) says what ``plan`` does: ``ok:S`` succeeds after S
    seconds, ``fail:S`` finds no plan after S seconds, ``exit:S`` ends the process after S
    seconds, ``raise:S`` raises, ``spin:S`` / ``spinexit:S`` use S CPU seconds and then
    succeed / end the process, ``search:S`` waits on a child process of its own (as Fast
    Downward's search) for S seconds and then succeeds. ``universal`` behaves as the
    ``universal`` argument says. Each plan records ``plan-<pid>-<child pid>`` in ``folder``.
    ``race_contexts`` answers the contexts ``ranked`` names (then the universal one)."""

    def __init__(self, folder: str, universal: str = "fail:0", ranked: tuple[str, ...] = ()):
        self.folder = Path(folder)
        self.universal = universal
        self.ranked = [_context(b) for b in ranked]
        self.by_id = {c.id: str(c.terms[0].value) for c in self.ranked}

    def race_contexts(self, scene: Scene, k: int, first: str = "") -> list[Context]:
        named = [c for c in self.ranked if c.id == first]
        return [*[*named, *(c for c in self.ranked if c not in named)][:k], Context.universal()]

    def plan(
        self,
        scene: Scene,
        context_id: str = "",
        allow_fallback: bool = True,
        lam: float | None = None,
        timeout_s: float | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> PlanResult:
        assert not allow_fallback
        behaviour = self.universal if context_id == "universal" else context_id
        kind, seconds = self.by_id.get(behaviour, behaviour).split(":")
        if progress is not None:
            progress("planning")
        child = 0
        if kind == "search":
            proc = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})"])
            child = proc.pid
        (self.folder / f"plan-{os.getpid()}-{child}").touch()
        if kind == "search":
            proc.wait()
        elif kind.startswith("spin"):
            end = time.process_time() + float(seconds)
            while time.process_time() < end:
                pass
        else:
            time.sleep(float(seconds))
        if kind in ("exit", "spinexit"):
            os._exit(3)
        if kind == "raise":
            raise RuntimeError("the planner broke")
        if kind == "fail":
            return PlanResult(False, ErrorCode.NO_PLAN, f"{context_id} found no plan", lam=1.0)
        return PlanResult(
            True, ErrorCode.NONE, f"{context_id} {os.getpid()}", expected_return=10.0, lam=2.0
        )


def _gone(pid: int) -> bool:
    """The process ``pid`` no longer exists (not even as a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _planners() -> list[mp.process.BaseProcess]:
    return [p for p in mp.active_children() if p.name == "camp-planner"]


def _outcomes(race: RaceResult) -> dict[str, str]:
    return {w.context_id: w.outcome for w in race.workers}


@pytest.fixture
def make_pool(tmp_path: Path) -> Iterator[Callable[..., RacePool]]:
    """Started pools of the stand-in service in ``tmp_path``; all closed, and checked to have
    left no process behind, at the end of the test."""
    pools: list[RacePool] = []

    def make(size: int, respawn: bool = False, **kwargs: Any) -> RacePool:
        pool = RacePool(
            {"folder": str(tmp_path), **kwargs},
            size,
            start_timeout_s=120.0,
            service_factory=RaceService,
            respawn=respawn,
        )
        pools.append(pool)
        pool.start()
        return pool

    yield make
    for pool in pools:
        pool.close()
    assert _planners() == []


def test_the_first_verified_plan_wins_and_a_fast_failure_does_not(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(4)
    race = pool.race(SCENE, ["fail:0", "ok:20", "ok:0.5", "universal"])
    assert race.success and race.winner_id == "ok:0.5"
    assert race.result.message.startswith("ok:0.5 ")
    assert _outcomes(race) == {
        "fail:0": "failed",
        "ok:20": "cancelled",
        "ok:0.5": "won",
        "universal": "failed",  # the universal context's stand-in fails at once
    }
    assert race.wall_s < 15.0  # the 20 s worker was not waited for
    assert race.objective == pytest.approx(10.0 - 2.0 * race.wall_s)
    assert race.winner is None  # raced by id: no Context object to give


def test_the_losers_are_stopped_and_reaped_and_no_process_is_left(
    make_pool: Callable[..., RacePool], tmp_path: Path
) -> None:
    pool = make_pool(3)
    before = pool.pids()
    race = pool.race(SCENE, ["search:300", "ok:1", "ok:300"])
    assert race.winner_id == "ok:1"
    winner = pool.workers[1].pid
    assert winner == before[1] and not _gone(winner)  # the winner stays warm
    losers = [before[0], before[2]]
    assert all(_gone(pid) for pid in losers), "a loser's process is still there"
    assert [w.pid for w in pool.workers] == [None, winner, None]  # respawn=False: not restarted
    # The loser's own child (a search in its process group) is killed with it.
    (search,) = [int(p.name.split("-")[2]) for p in tmp_path.glob("plan-*") if p.name[-2:] != "-0"]
    deadline = time.monotonic() + 10
    while not _gone(search) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(search)
    pool.close()
    assert _gone(winner) and _planners() == []


def test_a_pool_that_respawns_has_fresh_warm_workers_for_the_next_race(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(2, respawn=True)
    before = pool.pids()
    assert pool.race(SCENE, ["ok:0", "ok:300"]).winner_id == "ok:0"
    after = pool.pids()
    assert after[0] == before[0] and after[1] != before[1] and _gone(before[1])
    assert pool.race(SCENE, ["ok:300", "ok:0.2"]).winner_id == "ok:0.2"


def test_a_worker_that_crashes_or_raises_does_not_lose_the_race(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(3)
    crashing = pool.workers[0].pid
    race = pool.race(SCENE, ["exit:0", "raise:0", "ok:1"])
    assert race.success and race.winner_id == "ok:1"
    outcomes = {w.context_id: w for w in race.workers}
    assert outcomes["exit:0"].outcome == "crashed"
    assert outcomes["raise:0"].outcome == "failed"
    assert outcomes["raise:0"].code == ErrorCode.INTERNAL
    assert "the planner broke" in outcomes["raise:0"].message
    assert crashing is not None and _gone(crashing)


def test_when_every_worker_fails_the_race_fails_with_the_universal_workers_failure(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(3)
    race = pool.race(SCENE, ["fail:0", "exit:0", "universal"])
    assert not race.success and race.winner_id == "" and race.winner is None
    assert race.result.code == ErrorCode.NO_PLAN
    assert "no raced context reached the goal" in race.result.message
    assert "universal found no plan" in race.result.message
    assert sorted(_outcomes(race).values()) == ["crashed", "failed", "failed"]
    # Without a universal worker: the last failure.
    race = pool.race(SCENE, ["fail:0", "fail:0.5"])
    assert not race.success and race.result.message.endswith("fail:0.5 found no plan")


def test_a_cancel_or_an_interrupt_stops_every_busy_worker(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(2)
    pids = pool.pids()
    t0 = time.monotonic()
    race = pool.race(SCENE, ["ok:300", "ok:300"], cancelled=lambda: time.monotonic() - t0 > 0.5)
    assert race.result.code == ErrorCode.CANCELED
    assert set(_outcomes(race).values()) == {"cancelled"}
    assert all(_gone(pid) for pid in pids)
    race = pool.race(SCENE, ["ok:300"], limit_s=0.5)
    assert race.result.code == ErrorCode.TIMEOUT

    def interrupt() -> bool:
        if time.monotonic() - t1 > 0.5:
            raise KeyboardInterrupt
        return False

    pool.start()
    pids = pool.pids()
    t1 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        pool.race(SCENE, ["ok:300", "ok:300"], cancelled=interrupt)
    assert all(_gone(pid) for pid in pids) and _planners() == []


def test_cpu_seconds_count_every_worker_also_one_that_exited(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(3)
    race = pool.race(SCENE, ["spinexit:0.6", "fail:0", "spin:1.2"])
    assert race.winner_id == "spin:1.2"
    assert race.cpu_s >= 1.6, race.cpu_s  # 0.6 s of the exited worker + 1.2 s of the winner
    won = next(w for w in race.workers if w.outcome == "won")
    assert won.cpu_s is not None and won.cpu_s >= 1.1
    assert next(w for w in race.workers if w.outcome == "crashed").cpu_s is None


def test_plan_races_the_ranked_contexts_and_the_universal_one(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(3, ranked=("fail:0", "ok:0.3", "ok:0.1"), universal="ok:300")
    stages: list[str] = []
    race = pool.plan(SCENE, 2, timeout_s=10.0, progress=stages.append)
    assert race.success and race.winner == _context("ok:0.3")
    assert [w.context_name for w in race.workers] == [
        _context("fail:0").name,
        _context("ok:0.3").name,
        "universal",
    ]
    assert stages == ["selection", "planning", "done"]
    assert race.note == ""
    # A context the request names is raced first.
    race = pool.plan(SCENE, 2, first=_context("ok:0.1").id)
    assert race.winner == _context("ok:0.1")
    assert race.workers[0].context_name == _context("ok:0.1").name
    # More contexts than the pool has workers for: a note, and as many as it has.
    race = pool.plan(SCENE, 5)
    assert "at most 2 contexts" in race.note and len(race.workers) == 3


def test_plan_notes_when_fewer_contexts_than_asked_for_are_left(
    make_pool: Callable[..., RacePool],
) -> None:
    pool = make_pool(3, ranked=("ok:0.1",), universal="ok:300")
    race = pool.plan(SCENE, 2)
    assert race.winner == _context("ok:0.1") and len(race.workers) == 2
    assert "only 1 context(s)" in race.note


def test_race_once_leaves_no_process(tmp_path: Path) -> None:
    race, load_s = race_once(
        {"folder": str(tmp_path), "ranked": ("ok:0.2",), "universal": "ok:300"},
        SCENE,
        1,
        service_factory=RaceService,
    )
    assert race.success and race.winner == _context("ok:0.2") and load_s > 0
    pids = {int(p.name.split("-")[1]) for p in tmp_path.glob("plan-*")}
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)
    assert mp.active_children() == []


def test_a_workers_timeout_is_stretched_by_its_share_of_the_cores() -> None:
    assert worker_timeout(10.0, 4, cores=2) == 20.0
    assert worker_timeout(10.0, 2, cores=2) == 10.0
    assert worker_timeout(10.0, 1, cores=8) == 10.0


@pytest.mark.pybullet
@pytest.mark.slow
def test_camp_plan_race_1_reaches_the_goal_in_namo_and_leaves_no_worker(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from camp_planner.cli import main

    argv = ["plan", "--domain", "namo", "--task", "0", "--race", "1", "--json"]
    assert main([*argv, "--artifacts", str(tmp_path), "--timeout", "60"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["success"] and record["outcome"] == "goal"
    assert record["race"]["k"] == 1 and len(record["race"]["workers"]) == 2
    won = [w for w in record["race"]["workers"] if w["outcome"] == "won"]
    assert len(won) == 1 and record["context"]["id"] == won[0]["context_id"]
    assert record["race"]["wall_s"] > 0 and record["race"]["cpu_s"] > 0
    assert mp.active_children() == []


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--race", "x"], "camp: error: --race takes a whole number of contexts ≥ 0"),
        (["--race", "-1"], "camp: error: --race takes a whole number of contexts ≥ 0"),
        (["--race", "1", "--pure"], "camp: error: --race races the selector's contexts"),
        (["--race", "1", "--domain", "gridworld"], "needs a domain with a robot plug-in"),
    ],
)
def test_camp_plan_refuses_a_bad_race(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from camp_planner.cli import main

    domain = [] if "--domain" in argv else ["--domain", "namo"]
    assert main(["plan", *domain, *argv, "--artifacts", str(tmp_path)]) == 2
    assert error in capsys.readouterr().err
    assert mp.active_children() == []


@pytest.mark.pybullet
def test_camp_plan_clamps_a_race_larger_than_the_contexts_with_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from camp_planner.cli import main

    # No bundle ships for Stilman's planner: no selector, so only the universal context races.
    argv = ["plan", "--domain", "namo", "--planner", "stilman", "--task", "0", "--race", "3"]
    assert main([*argv, "--artifacts", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "--race 3: there are only 0 contexts other than the universal one" in captured.err
    assert "winner: universal" in captured.out and "worker: universal: won" in captured.out
    assert "CPU s:" in captured.out and "wall-clock s:" in captured.out
    assert mp.active_children() == []
