"""CampService: select a context for a scene, build its CAMP, plan, report.

One instance per process holds the domain, its robot plug-in (scene adapter and plan
geometry, :mod:`camp_planner.domains.interface.plugin`), its configuration, the selector
bundle and a warm selector. Every request is checked first and refused with a named
:class:`ErrorCode`; a failed planning run still returns what it executed, with the reason.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.core.feasibility import screen
from camp_planner.core.objective import Attempt, run_with_fallbacks
from camp_planner.domains import get_plugin
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.plugin import Rect
from camp_planner.domains.interface.scene import Scene
from camp_planner.planners import make_planner
from camp_planner.service.limits import MAX_FEATURE_ABS, check_plan_request
from camp_planner.service.types import PlanResult, SelectionResult
from camp_planner.workflow import Pipeline

if TYPE_CHECKING:
    from camp_planner.learning.methods import CampMethod

Progress = Callable[[str], None]


class CampService:
    """The CAMP pipeline behind the ROS nodes, for scenes of one domain (any domain with a
    robot plug-in: :func:`camp_planner.domains.plugin_domains`)."""

    def __init__(
        self,
        domain: str = "namo",
        config_path: Path | None = None,
        bundle_path: Path | None = None,
        artifacts: Path = Path("artifacts"),
        planner: str = "tamp",
        max_fallbacks: int = 2,
        frame_id: str = "map",
    ) -> None:
        self.plugin = get_plugin(domain)  # no plug-in: refused with UNKNOWN_DOMAIN
        self.pipe = Pipeline.create(domain, config_path, artifacts)
        self.planner = planner
        self.pipe.planner_settings(planner)  # unknown planner: a clear error now
        self.max_fallbacks = max_fallbacks
        self.frame_id = frame_id  # the map frame every scene must be given in
        self.bundle_error = "no selector bundle configured"
        self.method: CampMethod | None = None
        if bundle_path is not None and str(bundle_path):
            # torch loads only for a service with a selector (a node without one starts faster).
            from camp_planner.learning.bundle import load_bundle
            from camp_planner.learning.methods import CampMethod

            try:
                self.method = CampMethod(
                    load_bundle(Path(bundle_path), self.pipe.domain.name, self.pipe.domain.version)
                )
            except CampError as exc:
                self.bundle_error = str(exc)
        self._probe = self.pipe.domain.make_mdp(self.pipe.task("train", 0), self.pipe.config)

    @property
    def domain(self) -> str:
        return self.pipe.domain.name

    @property
    def has_selector(self) -> bool:
        return self.method is not None

    def feature_length(self) -> int:
        if self.method is None:
            raise ServiceError(ErrorCode.NO_SELECTOR, self.bundle_error)
        return int(np.prod(self.method.bundle.selector.input_shape))

    def contexts(self) -> list[Context]:
        """Every context a request may name: the bundle's, or only the universal one."""
        if self.method is None:
            return [Context.universal()]
        return list(self.method.bundle.space)

    def resolve_context(self, ref: str) -> Context:
        for c in self.contexts():
            if ref in (c.id, c.name) or (ref == "universal" and c.is_universal):
                return c
        if ref == "universal":
            return Context.universal()
        raise ServiceError(
            ErrorCode.UNKNOWN_CONTEXT,
            f"unknown context '{ref}'"
            + ("" if self.method else f" ({self.bundle_error}: only 'universal' is available)"),
        )

    # --- scenes ---------------------------------------------------------------------------
    def task_of(self, scene: Scene) -> tuple[Any, dict[str, str]]:
        """(the domain task of ``scene``, scene object id → model variable)."""
        if scene.domain and scene.domain != self.domain:
            raise ServiceError(
                ErrorCode.UNKNOWN_DOMAIN,
                f"the scene is for domain '{scene.domain}', this service plans '{self.domain}'",
            )
        return self.plugin.task_from_scene(scene, self.pipe.config, self.frame_id)

    def allowed_regions(self, task: Any, context: Context) -> list[tuple[int, Rect]]:
        """The regions (NAMO: rooms) ``context`` lets the robot enter in ``task`` (from
        :meth:`task_of`), each with its floor rectangle (x0, y0, x1, y1): what a viewer tints
        to show the constraint the robot imposed on itself."""
        return self.plugin.allowed_regions(task, self.pipe.domain.instantiate(context, task))

    def _variables(
        self, context: Context, mdp: Any, slot_of: dict[str, str], task: Any
    ) -> tuple[list[str], list[str], list[str]]:
        assert self.method is not None or context.is_universal
        if self.method is None:
            names = [v.name for v in mdp.variables]
            return names, [], []
        if context.is_template:
            if task is None:  # task features alone: no rooms to instantiate it on
                return [], [], []
            context = self.pipe.domain.instantiate(context, task)
        # What the CAMP of ``context`` keeps, without building it (CAMP.build keeps the
        # relevant variables and the context's own): a selection answers in about 1 ms.
        kept = self.method.relevant(self.pipe, mdp, context) | context.variables
        relevant = [v.name for v in mdp.variables if v.name in kept]
        dropped = [v.name for v in mdp.variables if v.name not in kept]
        gone = set(dropped)
        ids = [oid for oid, slot in slot_of.items() if slot in gone]
        return relevant, dropped, sorted(ids)

    # --- selection --------------------------------------------------------------------------
    def check_features(self, features: Sequence[float]) -> np.ndarray:
        """``features`` as the selector's input array, or a refusal naming what is wrong."""
        if self.method is None:
            raise ServiceError(ErrorCode.NO_SELECTOR, self.bundle_error)
        selector = self.method.bundle.selector
        expected = self.feature_length()
        if len(features) != expected:
            raise ServiceError(
                ErrorCode.WRONG_FEATURE_LENGTH,
                f"task_features has {len(features)} values; the selector takes {expected} "
                f"(shape {list(selector.input_shape)})",
            )
        array = np.asarray(features, dtype=np.float64)
        if not np.all(np.isfinite(array)):
            raise ServiceError(ErrorCode.INVALID_SCENE, "task_features has a NaN or infinite value")
        if np.abs(array).max(initial=0.0) > MAX_FEATURE_ABS:
            raise ServiceError(
                ErrorCode.INVALID_REQUEST,
                f"task_features has a value of magnitude {np.abs(array).max():.3g}; the "
                f"selector takes values in [-{MAX_FEATURE_ABS:g}, {MAX_FEATURE_ABS:g}]",
            )
        return array.astype(np.float32).reshape(selector.input_shape)

    def _rank(
        self, task: Any, mdp: Any, features: Sequence[float] | None
    ) -> tuple[list[tuple[Context, float]], list[Context]]:
        """(ranked contexts, contexts screened out) for ``task``, from ``features`` when
        given (a scene's or a request's own), else from the task itself."""
        assert self.method is not None
        if features:
            x = self.check_features(features)
            ranked = [
                (self.method.bundle.space[i], p) for i, p in self.method.bundle.selector.ranked(x)
            ]
            screened: list[Context] = []
            if task is not None:
                ranked, screened = screen(ranked, self.pipe.domain.region_graph(task))
        else:
            ranked, screened = self.method.selection(self.pipe, task, mdp)
        if not all(math.isfinite(p) for _, p in ranked):
            raise ServiceError(
                ErrorCode.INVALID_REQUEST,
                "the selector's probabilities are not finite for these task features: they are "
                "outside the range it was trained on",
            )
        return ranked, screened

    def select(
        self, scene: Scene | None, features: Sequence[float] | None = None
    ) -> SelectionResult:
        """Rank the contexts for a scene (or for precomputed task features)."""
        if self.method is None:
            raise ServiceError(ErrorCode.NO_SELECTOR, self.bundle_error)
        task, slot_of = (None, {}) if scene is None else self.task_of(scene)
        features = tuple(features) if features is not None else ()
        if scene is not None and scene.task_features:
            self.check_features(scene.task_features)  # a scene's own features must fit
            features = features or scene.task_features
        if not features and task is None:
            raise ServiceError(ErrorCode.INVALID_SCENE, "give a scene or task features")
        t0 = time.perf_counter()
        ranked, screened = self._rank(task, None, features or None)
        decision = self.method.decide(self.pipe, ranked)
        latency = time.perf_counter() - t0
        if not ranked:
            ranked = [(Context.universal(), 1.0)]
        context = decision.context
        prob = next((p for c, p in ranked if c.id == context.id), 0.0)
        mdp = self.pipe.domain.make_mdp(task, self.pipe.config) if task else self._probe
        relevant, dropped, dropped_ids = self._variables(context, mdp, slot_of, task)
        return SelectionResult(
            context, prob, ranked, relevant, dropped, dropped_ids, latency, screened, decision
        )

    # --- planning ---------------------------------------------------------------------------
    def plan(
        self,
        scene: Scene,
        context_id: str = "",
        allow_fallback: bool = True,
        lam: float | None = None,
        timeout_s: float | None = None,
        seed: int = 0,
        progress: Progress | None = None,
    ) -> PlanResult:
        """Plan ``scene``'s task in the CAMP of the named (or selected) context and execute
        the plan in the simulator; refusals raise :class:`ServiceError`."""
        say = progress or (lambda stage: None)
        check_plan_request(lam, timeout_s)
        lam = self.pipe.lam(self.planner) if lam is None or lam <= 0 else lam
        timeout = (
            float(self.pipe.config["timeout_s"]) if not timeout_s or timeout_s <= 0 else timeout_s
        )
        task, slot_of = self.task_of(scene)
        if scene.task_features and self.method is not None:
            self.check_features(scene.task_features)  # refused before the MDP is built
        mdp = self.pipe.domain.make_mdp(task, self.pipe.config)
        say("selection")
        t0 = time.perf_counter()
        if context_id:
            order = [self.resolve_context(context_id)]
            ranked = [(c, 0.0) for c in self.contexts() if c.id != order[0].id]
        elif self.method is not None:
            ranked, _ = self._rank(task, mdp, scene.task_features or None)
            # The do-no-harm gate (learning/gate.py) decides the first context and which of
            # the ranked ones may follow it.
            gated = self.method.plan_order(self.pipe, ranked, self.method.decide(self.pipe, ranked))
            order, ranked = gated[:1], [(c, 0.0) for c in gated[1:]]
        else:
            order, ranked = [Context.universal()], []
        selection = time.perf_counter() - t0
        if allow_fallback:
            order += [c for c, _ in ranked if c.id != order[0].id][: self.max_fallbacks]
            if not any(c.is_universal for c in order):
                order.append(Context.universal())
        settings = self.pipe.planner_settings(self.planner)
        construction = 0.0

        def attempts() -> Iterator[Attempt]:
            nonlocal construction
            for i, context in enumerate(order):
                say("camp_construction")
                start = time.perf_counter()
                if self.method is not None:
                    camp = self.method.build(self.pipe, mdp, context, task)
                else:
                    camp = self.pipe.build_camp(mdp, context, task=task)
                spent = time.perf_counter() - start
                construction += spent
                say("planning")
                planner = make_planner(self.planner, seed=seed, **settings)
                plan_in = (
                    self.method.planned_in(self.pipe, context, camp)
                    if self.method is not None
                    else camp
                )
                yield Attempt(
                    context.id,
                    plan_in,
                    planner,
                    spent + (selection if i == 0 else 0.0),
                    # A context whose plan cannot finish in the horizon hands over to the
                    # next; the universal context, the last resort, follows its plan.
                    horizon_fallback=not context.is_universal and i + 1 < len(order),
                )

        result = run_with_fallbacks(
            mdp, attempts(), lam=lam, timeout_s=timeout, rng=random.Random(seed)
        )
        say("done")
        used = order[min(len(result.used), len(order)) - 1] if result.used else order[0]
        inverse = {slot: oid for oid, slot in slot_of.items()}
        geometry = self.plugin.plan_geometry(mdp, result.states, result.actions, inverse)
        relevant, dropped, dropped_ids = self._variables(used, mdp, slot_of, task)
        stages = {"selection": selection, "camp_construction": construction}
        for key, value in result.stage_times_s.items():
            if key not in ("setup", "prepare", "act"):
                stages[key] = value
        stages["planning"] = result.stage_times_s.get("prepare", 0.0) + result.stage_times_s.get(
            "act", 0.0
        )
        code = ErrorCode.NONE
        message = "reached the goal in the simulator"
        if not result.success:
            code = ErrorCode.TIMEOUT if result.outcome == "timeout" else ErrorCode.NO_PLAN
            message = f"no plan reached the goal (outcome: {result.outcome})"
        # A simulator-backed MDP (NAMO's PyBullet client) is released now, not at GC.
        close = getattr(mdp, "close", None)
        if callable(close):
            close()
        return PlanResult(
            success=result.success,
            code=code,
            message=message,
            context=used,
            fallbacks=result.fallbacks,
            base_path=geometry.base_path,
            joint_names=geometry.joint_names,
            arm_waypoints=geometry.arm_waypoints,
            steps=geometry.steps,
            stage_times=stages,
            planning_time=result.compute_time_s,
            expected_return=result.discounted_return,
            objective=result.objective,
            lam=lam,
            relevant=relevant,
            dropped=dropped,
            dropped_objects=dropped_ids,
            outcome=result.outcome,
            contexts_tried=list(result.used),
        )

    # --- racing -------------------------------------------------------------------------------
    def race_contexts(self, scene: Scene, k: int, first: str = "") -> list[Context]:
        """The contexts a race of ``k`` plans at once (:mod:`camp_planner.service.race`): up to
        ``k`` other than the universal one, the context named ``first`` (a request's own
        choice, if any) and then the selector's, ranked as :meth:`plan` ranks them (after the
        screen); then the universal context. Without a selector: the named one (if any) and
        the universal one."""
        task, _ = self.task_of(scene)
        top: list[Context] = []
        if first:
            named = self.resolve_context(first)
            top += [] if named.is_universal else [named]
        if self.method is not None and len(top) < k:
            if scene.task_features:
                self.check_features(scene.task_features)
            mdp = self.pipe.domain.make_mdp(task, self.pipe.config)
            try:
                ranked, _ = self._rank(task, mdp, scene.task_features or None)
            finally:
                close = getattr(mdp, "close", None)
                if callable(close):
                    close()
            top += [c for c, _ in ranked if not c.is_universal and c not in top]
        return [*top[: max(k, 0)], Context.universal()]
