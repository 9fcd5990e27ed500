"""Test episodes of the compared methods, on the same executor as label scoring.

`camp eval` and `camp sweep` plan each (test task, method) pair once, and the pairs are
independent. With one local worker they run in this process on the driver's pipeline; with
more, or on Ray, the driver fits the methods, hands them to every worker once together with
the CSIs it learned (a worker never learns one), and gathers the scores. The driver stays
the only process that writes caches.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from camp_planner.eval.methods import Method
from camp_planner.learning.executor import ExecutorSpec, Workers, make_executor
from camp_planner.learning.labels import Score, worker_pipeline
from camp_planner.workflow import CSIPayload, Pipeline


@dataclass(frozen=True)
class EpisodeJob:
    """One test episode: ``method`` on test task ``task`` of the configuration."""

    domain: str
    config_json: str
    artifacts: str
    planner: str
    method: str
    task: int
    seed: int

    def label(self) -> str:
        return f"{self.method} on test task {self.task}"


@dataclass(frozen=True)
class FittedMethods:
    """What every worker gets once: the fitted methods and the driver's CSIs."""

    methods: tuple[Method, ...]
    csis: CSIPayload


def run_episode_job(job: EpisodeJob, shared: FittedMethods) -> tuple[str, int, Score]:
    """Run one test episode inside a worker: (method, task, its score)."""
    pipe = worker_pipeline(job.domain, job.config_json, job.artifacts, shared.csis)
    method = next(m for m in shared.methods if m.name == job.method)
    score = method.evaluate(pipe, job.planner, job.task, job.seed).without_trajectory()
    return job.method, job.task, replace(score, host=socket.gethostname())


def run_episodes(
    pipe: Pipeline,
    artifacts: Path,
    planner: str,
    pairs: Sequence[tuple[int, Method]],
    seed: int,
    workers: Workers,
    done: Callable[[], None] | None = None,
) -> dict[tuple[str, int], Score]:
    """Each (test task, method) pair's score, keyed (method name, task); ``done`` is called
    as each finishes (a progress bar). Pairs are handed out in the order given: an eval
    interleaves methods task by task, so the runs it compares pair by pair are close in time
    on any executor."""
    spec = ExecutorSpec.of(workers)
    out: dict[tuple[str, int], Score] = {}
    if not spec.parallel:
        for t, method in pairs:
            out[(method.name, t)] = method.evaluate(pipe, planner, t, seed).without_trajectory()
            if done is not None:
                done()
        return out
    methods: dict[str, Method] = {}
    for _, method in pairs:
        methods.setdefault(method.name, method)
    config_json = json.dumps(pipe.config, sort_keys=True, default=str)
    jobs = [
        EpisodeJob(pipe.domain.name, config_json, str(artifacts), planner, m.name, t, seed)
        for t, m in pairs
    ]
    shared = FittedMethods(tuple(methods.values()), pipe.csi_payload())
    executor = make_executor(spec.capped(len(jobs)))
    for name, t, score in executor.map_shared(run_episode_job, jobs, shared):
        out[(name, t)] = score
        if done is not None:
            done()
    return out
