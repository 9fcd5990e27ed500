"""Labels for the context selector: every candidate context scored on every training task.

This is the expensive step (contexts × tasks planning runs). Jobs run on an executor (local
processes or Ray actors, which plan with the CSIs the driver sends them); every finished
(task, context) score is appended to a JSON-lines checkpoint and flushed to disk, so an
interrupted run resumes without recomputing or losing any finished score. The driver is the
checkpoint's only writer and holds a lock on it while it scores (a second run on the same
checkpoint stops with a clear error); a pair's first score is the one kept, so a job that ran
twice (a worker lost with its node and its job retried) is recorded once. The whole score
matrix is kept (objective, return, compute time, success), not only the argmax.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.errors import CampError
from camp_planner.core.objective import EpisodeResult
from camp_planner.learning.executor import Executor
from camp_planner.learning.jsonl import append_record, corrupt, read_records
from camp_planner.progress import progress_bar
from camp_planner.workflow import CSIPayload, Pipeline

PURE = "pure"
# Outcomes of an episode whose planning call gave up (the CAMP method then falls back to the
# next context); "horizon" and "terminal" episodes acted to the end and have no fallback.
PLANNING_FAILURES = frozenset({"timeout", "no_plan", "planner_error", "too_long", "capped"})
REPEAT_SEED = 7919  # planner-seed stride between repeated scores of one (task, context)


@dataclass(frozen=True)
class ScoreJob:
    """One planning run to score: everything a fresh worker process needs."""

    domain: str
    config_json: str
    artifacts: str
    split: str
    task: int
    context_id: str  # a context id, or "pure" for planning in the full MDP
    planner: str
    seed: int
    ablation: bool = False
    # The k-th independent score of the pair: the planner runs with seed + REPEAT_SEED·k.
    repeat: int = 0

    def label(self) -> str:
        """The job as an error names it."""
        return f"{self.split} task {self.task}, context {self.context_id} ({self.planner})"


@dataclass(frozen=True)
class Score:
    """The outcome of one (task, context) run."""

    task: int
    context_id: str
    objective: float
    discounted_return: float
    compute_time_s: float
    success: bool
    outcome: str
    fallbacks: int = 0
    # Where the planner's time went (seconds per stage, e.g. task vs motion planning); empty
    # for planners that report no stages and for scores checkpointed before it was recorded.
    stage_times_s: dict[str, float] = field(default_factory=dict)
    # The executed trajectory (JSON values), kept for the learned baselines that imitate it.
    states: list[Any] | None = None
    actions: list[Any] | None = None
    # A digest of the executed actions (``plan_digest``): two runs with the same digest made
    # the same plan. Empty for a mean of several runs and for older checkpoints.
    plan: str = ""
    # The planner's count of its work, in nominal seconds (``EpisodeResult.work_s``): None
    # for planners that do not count it and for older checkpoints.
    work_s: float | None = None
    # The machine that planned it (a cluster mixes node speeds; the wall clock differs by
    # node, the work does not): empty for runs in the driver and for older checkpoints.
    host: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def seconds(self, cost: str = "wall") -> float:
        """The run's time on ``cost``: "wall" (its wall-clock compute time) or "work" (the
        planner's count of its work, the same for the same plan on any machine)."""
        if cost != "work":
            return self.compute_time_s
        if self.work_s is None:
            raise CampError(
                f"the score of task {self.task}, context {self.context_id} records no work: "
                "scored before label format 3, or by a planner that does not count its work "
                "(TAMP and Stilman's algorithm do); value it on the wall clock instead"
            )
        return self.work_s

    def value(self, lam: float | None, cost: str = "wall") -> float:
        """The run's objective with its time on ``cost`` charged at ``lam`` (None: the
        objective as scored, on the wall clock; on work ``lam`` is required)."""
        if cost == "work":
            if lam is None:
                raise CampError("selector.label_cost: work needs λ to weigh the work (none given)")
            return self.discounted_return - lam * self.seconds("work")
        return self.objective if lam is None else self.discounted_return - lam * self.compute_time_s

    def without_trajectory(self) -> Score:
        return Score(
            self.task,
            self.context_id,
            self.objective,
            self.discounted_return,
            self.compute_time_s,
            self.success,
            self.outcome,
            self.fallbacks,
            dict(self.stage_times_s),
            plan=self.plan,
            work_s=self.work_s,
            host=self.host,
        )

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Score:
        return Score(
            task=int(data["task"]),
            context_id=str(data["context_id"]),
            objective=float(data["objective"]),
            discounted_return=float(data["discounted_return"]),
            compute_time_s=float(data["compute_time_s"]),
            success=bool(data["success"]),
            outcome=str(data["outcome"]),
            fallbacks=int(data.get("fallbacks", 0)),
            stage_times_s={str(k): float(v) for k, v in (data.get("stage_times_s") or {}).items()},
            states=data.get("states"),
            actions=data.get("actions"),
            plan=str(data.get("plan", "")),
            work_s=None if data.get("work_s") is None else float(data["work_s"]),
            host=str(data.get("host", "")),
        )


@dataclass
class ScoreMatrix:
    """task × context → score, for a fixed list of tasks and contexts."""

    tasks: list[int]
    context_ids: list[str]
    scores: dict[tuple[int, str], Score]

    def get(self, task: int, context_id: str) -> Score:
        return self.scores[(task, context_id)]

    def best_index(self, task: int) -> int:
        """Index (into ``context_ids``) of the best-objective context; ties: earlier wins."""
        values = [self.scores[(task, c)].objective for c in self.context_ids]
        return max(range(len(values)), key=lambda i: (values[i], -i))

    def labels(self) -> list[int]:
        return [self.best_index(t) for t in self.tasks]

    def targets(
        self,
        kind: str,
        temperature: float,
        lam: float | None = None,
        tasks: Sequence[int] | None = None,
        fallback: str | None = None,
        cost: str = "wall",
    ) -> np.ndarray:
        """Selector targets of ``kind`` (hard, soft, multilabel, regression) for ``tasks``
        (default all); ``lam`` re-weighs compute time (None: the objective as scored).
        ``cost`` "work" charges ``lam`` times the planner's count of its work instead of
        the wall-clock time (``lam`` is then required, and every score must record work).

        ``fallback`` (a context id, e.g. the universal context's) values each context as the
        deployed CAMP method experiences it: when planning in a context fails, the agent
        falls back and ends with the fallback's objective, less the failed attempt's
        compute time. Without it a failed context counts as a lost episode (return 0), so
        a context that reaches the goal quickly on most tasks and fails fast on the rest
        looks far worse than the universal context, although trying it first costs only
        the failed attempt's few tenths of a second where it fails."""
        rows: list[Any] = []
        for t in self.tasks if tasks is None else tasks:
            values = np.array(
                [self._value_with_fallback(t, c, lam, fallback, cost) for c in self.context_ids]
            )
            if kind == "hard":
                rows.append(int(max(range(len(values)), key=lambda i: (values[i], -i))))
            elif kind == "multilabel":
                rows.append((values >= values.max() - temperature).astype(np.float32))
            elif kind == "regression":
                rows.append(values.astype(np.float64))
            else:
                weights = np.exp((values - values.max()) / temperature)
                rows.append(weights / weights.sum())
        return np.asarray(rows) if kind == "hard" else np.stack(rows)

    def _value_with_fallback(
        self,
        task: int,
        context_id: str,
        lam: float | None,
        fallback: str | None,
        cost: str = "wall",
    ) -> float:
        value = self._value(task, context_id, lam, cost)
        if fallback is None or context_id == fallback:
            return value
        s = self.scores[(task, context_id)]
        if s.outcome not in PLANNING_FAILURES:
            return value
        spent = s.discounted_return - value  # λ·t of the failed attempt
        return self._value(task, fallback, lam, cost) - spent

    def _value(self, task: int, context_id: str, lam: float | None, cost: str = "wall") -> float:
        return self.scores[(task, context_id)].value(lam, cost)

    @staticmethod
    def mean(matrices: Sequence[ScoreMatrix]) -> ScoreMatrix:
        """One matrix of the per-pair means of several independent scorings (objective,
        return, compute time; success only if every run succeeded; the most frequent
        outcome), without trajectories. A randomised planner's time for one pair spreads
        over an order of magnitude from run to run; labels from the mean of a few runs
        separate what a context does from what one run's luck did."""
        if not matrices:
            raise ValueError("no score matrices to average")
        first = matrices[0]
        scores: dict[tuple[int, str], Score] = {}
        for key in first.scores:
            runs = [m.scores[key] for m in matrices]
            outcomes = [r.outcome for r in runs]
            scores[key] = Score(
                task=key[0],
                context_id=key[1],
                objective=float(np.mean([r.objective for r in runs])),
                discounted_return=float(np.mean([r.discounted_return for r in runs])),
                compute_time_s=float(np.mean([r.compute_time_s for r in runs])),
                success=all(r.success for r in runs),
                outcome=max(outcomes, key=outcomes.count),
                fallbacks=max(r.fallbacks for r in runs),
                work_s=(
                    None
                    if any(r.work_s is None for r in runs)
                    else float(np.mean([r.work_s for r in runs]))
                ),
            )
        return ScoreMatrix(list(first.tasks), list(first.context_ids), scores)

    def to_json(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "contexts": self.context_ids,
            "scores": [s.without_trajectory().to_json() for s in self.scores.values()],
        }


class Checkpoint:
    """An append-only JSON-lines file of finished scores."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, repair: bool = True) -> dict[tuple[int, str], Score]:
        """The finished scores, a pair's first if it was recorded twice; ``repair`` as in
        :func:`read_records` (False to only read a checkpoint a running scoring may be
        appending to)."""
        found: dict[tuple[int, str], Score] = {}
        for number, row in read_records(self.path, repair):
            try:
                score = Score.from_json(row)
            except (KeyError, TypeError, ValueError):
                raise corrupt(self.path, number) from None
            found.setdefault((score.task, score.context_id), score)
        return found

    def append(self, score: Score) -> None:
        append_record(self.path, score.to_json())

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the checkpoint's lock while this process appends to it; another run (on
        this machine or sharing the folder) that asks meanwhile gets a clear error."""
        with exclusive(self.lock_path, f"checkpoint {self.path}"):
            yield


# The locks this process holds: POSIX record locks never conflict within one process.
_HELD: set[str] = set()


@contextlib.contextmanager
def exclusive(lock: Path, what: str) -> Iterator[None]:
    """An exclusive lock on the file ``lock`` for as long as the block runs, or a
    :class:`CampError` naming who holds it.

    A POSIX record lock (``lockf``), not ``flock``: it belongs to this process alone, so the
    worker processes it forks never hold it, and it ends with the process however it ends (a
    killed run leaves no stale lock behind)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    key = str(lock.resolve())
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if key in _HELD:
            raise BlockingIOError
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another run"
        os.close(fd)
        raise CampError(
            f"{what} is in use by {holder} (it holds {lock}); wait for that run to end or "
            "stop it: the same command then resumes from what it finished"
        ) from None
    _HELD.add(key)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        _HELD.discard(key)
        os.close(fd)  # releases the lock


def checkpoint_path(artifacts: Path, domain: str, key: Mapping[str, Any]) -> Path:
    """Where the scores of one (configuration, planner, split, seed) live."""
    digest = hashlib.sha1(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return artifacts / domain / "labels" / f"{key.get('planner', 'x')}-{digest}.jsonl"


# A worker builds the pipeline once per configuration and set of CSIs, not once per job, and
# keeps only the last (a warm Ray actor serves one run after another).
_WORKER_PIPELINES: dict[tuple[str, str, str, str], Pipeline] = {}


def worker_pipeline(
    domain: str, config_json: str, artifacts: str, csis: CSIPayload | None
) -> Pipeline:
    """The pipeline a worker plans with for one configuration and set of CSIs, built on its
    first job and kept for the next (only the last is kept)."""
    key = (domain, config_json, artifacts, "" if csis is None else csis.digest)
    pipe = _WORKER_PIPELINES.get(key)
    if pipe is None:
        _WORKER_PIPELINES.clear()
        pipe = Pipeline.from_config(domain, json.loads(config_json), Path(artifacts), csis)
        _WORKER_PIPELINES[key] = pipe
    return pipe


def run_job(job: ScoreJob, csis: CSIPayload | None = None) -> Score:
    """Score one (task, context) pair; runs inside a worker (a process or a Ray actor).

    ``csis``: the CSIs the driver learned; the worker's pipeline plans with those alone and
    refuses to learn one it lacks. None: it reads (and may learn into) the cache under
    ``job.artifacts``, as a single local process may."""
    pipe = worker_pipeline(job.domain, job.config_json, job.artifacts, csis)
    task = pipe.task(job.split, job.task)
    context = None if job.context_id == PURE else pipe.space.resolve(job.context_id)
    seed = job.seed + REPEAT_SEED * job.repeat
    result, _ = pipe.run(
        task,
        job.planner,
        context,
        seed=seed,
        ablation=job.ablation,
        timeout_s=pipe.config.get("label_timeout_s"),
    )
    return replace(score_of(job.task, job.context_id, result), host=socket.gethostname())


def score_of(task: int, context_id: str, result: EpisodeResult) -> Score:
    """A score (with its trajectory as JSON values) from an episode."""
    actions = [list(a) for a in result.actions]
    return Score(
        task=task,
        context_id=context_id,
        objective=result.objective,
        discounted_return=result.discounted_return,
        compute_time_s=result.compute_time_s,
        success=result.success,
        outcome=result.outcome,
        fallbacks=result.fallbacks,
        stage_times_s={k: round(v, 6) for k, v in result.stage_times_s.items()},
        states=[list(s) for s in result.states],
        actions=actions,
        plan=plan_digest(actions),
        work_s=None if result.work_s is None else round(result.work_s, 6),
    )


def plan_digest(actions: Sequence[Any]) -> str:
    """A short digest of a run's actions: two runs with the same digest made the same plan."""
    return hashlib.sha256(json.dumps(actions, default=repr).encode()).hexdigest()[:12]


@dataclass
class ScoringStats:
    reused: int
    computed: int


def score(
    jobs: Sequence[ScoreJob],
    checkpoint: Checkpoint,
    executor: Executor,
    tasks: list[int],
    context_ids: list[str],
    progress: bool = True,
    desc: str = "scoring contexts",
    csis: CSIPayload | None = None,
) -> tuple[ScoreMatrix, ScoringStats]:
    """Run every job not already in ``checkpoint`` (with ``csis``, the driver's CSIs, in
    every worker: :func:`run_job`); return the full matrix."""
    with checkpoint.writing():
        done = checkpoint.load()
        todo = [j for j in jobs if (j.task, j.context_id) not in done]
        bar = None
        if progress:
            bar = progress_bar(len(jobs), desc, initial=len(jobs) - len(todo), smoothing=0.05)
        try:
            for result in executor.map_shared(run_job, todo, csis):
                key = (result.task, result.context_id)
                if key in done:  # a job that ran twice: its first result stands
                    continue
                checkpoint.append(result)
                done[key] = result
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
    wanted = {(j.task, j.context_id) for j in jobs}
    matrix = ScoreMatrix(tasks, context_ids, {k: v for k, v in done.items() if k in wanted})
    return matrix, ScoringStats(reused=len(jobs) - len(todo), computed=len(todo))
