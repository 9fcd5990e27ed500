"""The end-to-end CAMP pipeline for one domain: context space, cached CSIs, CAMPs, episodes.

This is what the CLI (and later the ROS nodes) call; it holds no global state (a worker
keeps the training MDPs of the last configuration it learned CSIs for). CSIs are cached in
one JSON file per (domain, version, CSI and context settings), written atomically by the
driver after every learned context so an interrupted run loses nothing. Contexts can be
learned in parallel on any executor (local processes, Ray actors), each as a picklable
:class:`CSIJob`: each context's CSIs depend only on its own seeded sampler, so the cache is
the same with any number and kind of workers.

A worker that plans (label scoring) gets its CSIs from the driver (:class:`CSIPayload`): a
pipeline built on them never learns, so a CSI missing on a remote node is an error, not an
hour of silent relearning there.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from camp_planner.config import load_config
from camp_planner.core.camp import CAMP
from camp_planner.core.context import Context
from camp_planner.core.context_space import ContextSpace, ContextSpaceSpec, generate_context_space
from camp_planner.core.csi import CSIConfig, CSIResult, learn_csis
from camp_planner.core.errors import CampError
from camp_planner.core.mdp import FactoredMDP
from camp_planner.core.objective import EpisodeResult, run_episode
from camp_planner.core.relevance import relevant_from_csis
from camp_planner.core.role_relevance import RoleRelevance
from camp_planner.domains import get_domain
from camp_planner.domains.base import Domain
from camp_planner.learning.executor import ExecutorSpec, Workers, make_executor
from camp_planner.planners import make_planner, planner_names
from camp_planner.progress import progress_bar

DEFAULT_ARTIFACTS = Path("artifacts")
# Bump when CSI learning changes what it finds, so stale caches are not reused.
CSI_ALGORITHM_VERSION = 2


def csi_config(config: Mapping[str, Any]) -> CSIConfig:
    settings = {k: v for k, v in config["csi"].items() if k != "tasks"}
    return CSIConfig.from_mapping(settings)


class CSIStore:
    """Learned CSIs per context, cached on disk and learned on demand."""

    def __init__(
        self,
        domain: Domain,
        config: Mapping[str, Any],
        artifacts: Path,
        frozen: Iterable[CSIResult] | None = None,
    ) -> None:
        """``frozen``: the only CSIs this store has (a worker's, sent by the driver); it then
        neither reads nor writes the cache file, and learns nothing."""
        self.domain = domain
        self.config = config
        self.csi = csi_config(config)
        key = json.dumps(
            {
                "domain": domain.name,
                "version": domain.csi_version or domain.version,
                "algorithm": CSI_ALGORITHM_VERSION,
                "csi": config["csi"],
                "world": config.get("world"),
                "mdp": config.get("mdp"),
                "seed": config["seed"],
            },
            sort_keys=True,
        )
        digest = hashlib.sha1(key.encode()).hexdigest()[:10]
        self.path = artifacts / "csi" / f"{domain.name}-{digest}.json"
        self._results: dict[str, CSIResult] = {}
        self._mdps: list[FactoredMDP] | None = None
        self.frozen = frozen is not None
        if frozen is not None:
            self._results = {r.context.id: r for r in frozen}
        elif self.path.exists():
            self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
            records = data["contexts"]
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
            raise CampError(
                f"CSI cache {self.path} is corrupt ({exc.__class__.__name__}); delete it to relearn"
            ) from exc
        for record in records:
            result = CSIResult.from_json(record)
            self._results[result.context.id] = result

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "domain": self.domain.name,
            "version": self.domain.csi_version or self.domain.version,
            "csi": self.csi.to_json(),
            "contexts": [r.to_json() for r in self._results.values()],
        }
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(payload, indent=1, default=str))
        os.replace(tmp, self.path)

    def training_mdps(self) -> list[FactoredMDP]:
        if self._mdps is None:
            self._mdps = self._make_training_mdps()
        return self._mdps

    def _make_training_mdps(self) -> list[FactoredMDP]:
        return training_mdps(self.domain, self.config)

    def cached(self, context: Context) -> CSIResult | None:
        return self._results.get(context.id)

    def results(self) -> list[CSIResult]:
        """Every CSI result the store holds (cached or learned)."""
        return list(self._results.values())

    def get(self, context: Context) -> CSIResult:
        """CSIs of ``context``, learned (and saved) if not cached yet."""
        result = self._results.get(context.id)
        if result is None:
            self._refuse([context])
            result = learn_csis(self.training_mdps(), context, self.csi)
            self._results[context.id] = result
            self._save()
        return result

    def _refuse(self, missing: Sequence[Context]) -> None:
        if self.frozen and missing:
            names = ", ".join(f"{c.name} ({c.id})" for c in missing[:3])
            more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
            raise CampError(
                f"a worker has no CSIs for {names}{more}: the driver sent none, and a worker "
                "never learns them (the driver learns every context's CSIs before scoring)"
            )

    def learn(
        self,
        contexts: Sequence[Context],
        workers: Workers = 1,
        done: Callable[[Context], None] | None = None,
    ) -> None:
        """Learn (and save, one by one) the CSIs of ``contexts`` the cache lacks on the
        executor ``workers`` names (an ``int``: that many local processes); ``done`` is
        called as each context's CSIs are saved."""
        missing = list(dict.fromkeys(c for c in contexts if c.id not in self._results))
        self._refuse(missing)
        spec = ExecutorSpec.of(workers).capped(len(missing))
        if not missing:
            return
        if not spec.parallel:
            for context in missing:
                self.get(context)
                if done is not None:
                    done(context)
            return
        config_json = json.dumps(self.config, sort_keys=True, default=str)
        jobs = [
            CSIJob(self.domain.name, config_json, json.dumps(c.to_json(), sort_keys=True))
            for c in missing
        ]
        for record in make_executor(spec).map_unordered(learn_csi_job, jobs):
            result = CSIResult.from_json(record)
            self._results[result.context.id] = result
            self._save()  # the driver is the only writer of the cache
            if done is not None:
                done(result.context)


def training_mdps(domain: Domain, config: Mapping[str, Any]) -> list[FactoredMDP]:
    """The training tasks CSIs are learned on (``csi.tasks`` of them) as MDPs."""
    tasks = domain.make_tasks(config, "train")
    n = max(1, min(int(config["csi"]["tasks"]), len(tasks)))
    return [domain.make_mdp(t, config) for t in tasks[:n]]


@dataclass(frozen=True)
class CSIJob:
    """One context's CSI learning, all a fresh worker (a process, a Ray actor) needs."""

    domain: str
    config_json: str
    context_json: str

    def label(self) -> str:
        return f"the CSIs of context {Context.from_json(json.loads(self.context_json)).name}"


# The training MDPs of the last configuration this worker learned CSIs for: built once per
# worker, not per context (a worker's own simulators, never a parent's).
_WORKER_MDPS: dict[tuple[str, str], list[FactoredMDP]] = {}


def learn_csi_job(job: CSIJob) -> dict[str, Any]:
    """Learn one context's CSIs in a worker; the driver saves the result."""
    config = json.loads(job.config_json)
    key = (job.domain, job.config_json)
    mdps = _WORKER_MDPS.get(key)
    if mdps is None:
        _WORKER_MDPS.clear()  # one configuration at a time: simulators hold memory
        mdps = _WORKER_MDPS[key] = training_mdps(get_domain(job.domain), config)
    context = Context.from_json(json.loads(job.context_json))
    return learn_csis(mdps, context, csi_config(config)).to_json()


@dataclass(frozen=True)
class CSIPayload:
    """The CSIs a planning worker uses, learned by the driver and sent with the jobs (once
    per worker): every cached result and, for a space of templates, the role relevance."""

    digest: str
    results: tuple[dict[str, Any], ...]
    roles: dict[str, Any] | None = None

    @staticmethod
    def of(results: Iterable[CSIResult], roles: RoleRelevance | None) -> CSIPayload:
        records = tuple(sorted((r.to_json() for r in results), key=lambda r: r["context_id"]))
        role_json = None if roles is None else roles.to_json()
        text = json.dumps([records, role_json], sort_keys=True, default=str)
        return CSIPayload(hashlib.sha1(text.encode()).hexdigest()[:16], records, role_json)


@dataclass
class Pipeline:
    """A domain with its configuration, context space and CSI cache.

    With ``contexts.templates`` the space is the universal context and those templates, and
    the generated space is the ``basis``: the contexts whose learned CSIs, summarised by role
    (:class:`RoleRelevance`), give each template's instance its relevant variables."""

    domain: Domain
    config: dict[str, Any]
    space: ContextSpace
    store: CSIStore
    basis: ContextSpace | None = None
    _tasks: dict[tuple[str, str], Sequence[Any]] = field(default_factory=dict, repr=False)
    _roles: RoleRelevance | None = field(default=None, repr=False)

    @staticmethod
    def create(domain_name: str, config_path: Path | None, artifacts: Path) -> Pipeline:

        domain = get_domain(domain_name)
        return Pipeline.from_config(domain_name, load_config(domain, config_path), artifacts)

    @staticmethod
    def from_config(
        domain_name: str,
        config: dict[str, Any],
        artifacts: Path,
        csis: CSIPayload | None = None,
    ) -> Pipeline:
        """A pipeline for an already validated configuration; ``csis``: a worker's pipeline,
        which plans with the CSIs the driver sent and never learns any."""
        domain = get_domain(domain_name)
        tasks = domain.make_tasks(config, "train")
        if not tasks:
            raise CampError("the configuration asks for zero training tasks")
        probe = domain.make_mdp(tasks[0], config)
        settings = dict(config["contexts"])
        templates = list(settings.pop("templates", None) or [])
        space = generate_context_space(probe, ContextSpaceSpec.from_mapping(settings))
        frozen = None if csis is None else [CSIResult.from_json(r) for r in csis.results]
        store = CSIStore(domain, config, artifacts, frozen)
        if not templates:
            return Pipeline(domain, config, space, store)
        known = domain.context_templates()
        unknown = [t for t in templates if t not in known]
        if unknown or len(set(templates)) != len(templates):
            raise CampError(
                f"contexts.templates must name distinct templates of {domain.name} "
                f"({', '.join(known) or 'it has none'}), got {templates}"
            )
        chosen = ContextSpace((Context.universal(), *map(Context.template, templates)))
        pipe = Pipeline(domain, config, chosen, store, basis=space)
        if csis is not None and csis.roles is not None:
            pipe._roles = RoleRelevance.from_json(csis.roles)
        return pipe

    def tasks(self, split: str) -> Sequence[Any]:
        key = (split, json.dumps(self.config["tasks"], sort_keys=True))
        cached = self._tasks.get(key)
        if cached is None:
            cached = self._tasks[key] = self.domain.make_tasks(self.config, split)
        return cached

    def task(self, split: str, index: int) -> Any:
        tasks = self.tasks(split)
        if not 0 <= index < len(tasks):
            raise CampError(f"task {index} out of range: the {split} split has {len(tasks)} tasks")
        return tasks[index]

    def learn_csis(
        self,
        contexts: Iterable[Context] | None = None,
        label: str | None = "learning CSIs",
        workers: Workers = 1,
    ) -> int:
        """Learn and cache the CSIs that ``contexts`` (default: the whole space) need and the
        cache lacks, on the executor ``workers`` names (an ``int``: that many local
        processes), with a progress bar named ``label``
        (``None``: silent). This is offline work: call it before timing anything. Returns how
        many contexts were learned."""
        wanted = list(self.space if contexts is None else dict.fromkeys(contexts))
        if self.basis is not None:
            # With a basis every concrete context (a template's instance, or one a benchmark
            # builds) keeps its variables by role: the basis's CSIs are all it needs.
            wanted = list(self.basis)
        missing = [c for c in wanted if self.needs_csis(c) and self.store.cached(c) is None]
        if not missing:
            return 0
        bar = progress_bar(len(missing), label, leave=False) if label else None
        self.store.learn(missing, workers, None if bar is None else lambda _c: bar.update(1))
        if bar is not None:
            bar.close()
        return len(missing)

    def needs_csis(self, context: Context) -> bool:
        """Whether ``context``'s relevant variables come from learned CSIs. Under the
        universal context every variable is relevant in the paper's domains, so it is
        skipped unless the domain says otherwise (``camp.universal_relevance: learned``, for
        tasks with objects that never matter, like the distractors of a PDDL problem)."""
        if not context.is_universal:
            return True
        return bool(self.config["camp"].get("universal_relevance", "all") == "learned")

    def csi_payload(self) -> CSIPayload:
        """The CSIs learned so far (and the role relevance of a space of templates), for
        workers to plan with: call :meth:`learn_csis` first."""
        roles = self.role_relevance() if self.basis is not None else None
        return CSIPayload.of(self.store.results(), roles)

    def role_relevance(self) -> RoleRelevance:
        """The basis's CSIs summarised by role (learned first if the cache lacks them)."""
        if self.basis is None:
            raise CampError("role relevance is for a space of context templates")
        if self._roles is None:
            self.learn_csis(list(self.basis), label="learning the CSIs of the templates' basis")
            probe = self.domain.make_mdp(self.tasks("train")[0], self.config)
            results = [self.store.get(c) for c in self.basis if not c.is_universal]
            self._roles = RoleRelevance.learn(probe, results)
        return self._roles

    def relevant(self, mdp: FactoredMDP, context: Context) -> frozenset[str]:
        """The relevant variables of a concrete ``context``: from its own CSIs, or, for the
        instance of a template (a space with a basis), by role."""
        if not self.needs_csis(context):
            return frozenset(v.name for v in mdp.variables)
        if self.basis is not None:
            return self.role_relevance().relevant(mdp, context)
        return relevant_from_csis(self.store.get(context), mdp.reward_vars)

    def build_camp(
        self, mdp: FactoredMDP, context: Context, ablation: bool = False, task: Any = None
    ) -> CAMP:
        """The CAMP of ``context`` on ``mdp``; a template is instantiated on ``task`` first."""
        if context.is_template:
            if task is None:
                raise CampError(f"{context.name} needs the task to instantiate it on")
            context = self.domain.instantiate(context, task)
        relevant = None if ablation else self.relevant(mdp, context)
        return CAMP.build(mdp, context, relevant, float(self.config["camp"]["sink_reward"]))

    def lam(self, planner: str) -> float:
        return float(self.config["lambda"].get(planner, 0.0))

    def planner_settings(self, planner: str) -> dict[str, Any]:
        if planner not in planner_names():
            raise CampError(
                f"unknown planner '{planner}'; choose one of: {', '.join(planner_names())}"
            )
        return dict(self.config["planners"].get(planner) or {})

    def run(
        self,
        task: Any,
        planner: str,
        context: Context | None,
        seed: int = 0,
        ablation: bool = False,
        lam: float | None = None,
        timeout_s: float | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> tuple[EpisodeResult, CAMP | None]:
        """Build the CAMP of ``context`` (None: pure planning), plan and execute one episode.

        ``overrides`` replace planner settings of the configuration for this run."""
        settings = {**self.planner_settings(planner), **(overrides or {})}
        mdp = self.domain.make_mdp(task, self.config)
        # Learning CSIs is offline work, not charged to the task.
        if context is not None and not ablation and self.needs_csis(context):
            if self.basis is not None:
                self.role_relevance()
            elif self.store.cached(context) is None:
                self.store.get(context)
        t0 = time.perf_counter()
        camp = self.build_camp(mdp, context, ablation, task) if context is not None else None
        setup = time.perf_counter() - t0
        try:
            solver = make_planner(planner, seed=seed, **settings)
        except ValueError as exc:
            raise CampError(str(exc)) from exc
        result = run_episode(
            mdp,
            solver,
            lam=self.lam(planner) if lam is None else lam,
            timeout_s=float(self.config["timeout_s"]) if timeout_s is None else timeout_s,
            rng=random.Random(seed),
            camp=camp,
            setup_time_s=setup,
        )
        return result, camp

    def score_contexts(
        self,
        task: Any,
        planner: str,
        seed: int = 0,
        contexts: Sequence[Context] | None = None,
        progress: Callable[[int, int], None] | None = None,
        timeout_s: float | None = None,
    ) -> list[tuple[Context, EpisodeResult]]:
        """Every context's episode on ``task``, best objective first (the oracle's view)."""
        chosen = list(contexts) if contexts is not None else list(self.space)
        scored = []
        for i, ctx in enumerate(chosen):
            result, _ = self.run(task, planner, ctx, seed=seed, timeout_s=timeout_s)
            scored.append((ctx, result))
            if progress is not None:
                progress(i + 1, len(chosen))
        scored.sort(key=lambda cr: cr[1].objective, reverse=True)
        return scored
