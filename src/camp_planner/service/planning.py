"""CampService: select a context for a scene, build its CAMP, plan, report.

One instance per process holds the domain, its robot plug-in (scene adapter and plan
geometry, :mod:`camp_planner.domains.interface.plugin`), its configuration and the CAMP
runtime (:mod:`camp_planner.runtime`) with a warm selector: the service converts scenes and
checks requests, the runtime selects, builds, plans and falls back exactly as ``camp plan``
and ``camp eval`` do. Every request is checked first and refused with a named
:class:`ErrorCode`; a failed planning run still returns what it executed, with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from camp_planner.core.context import Context
from camp_planner.core.errors import CampError
from camp_planner.domains import get_plugin
from camp_planner.domains.interface.errors import ErrorCode, ServiceError
from camp_planner.domains.interface.plugin import Rect
from camp_planner.domains.interface.scene import Scene
from camp_planner.learning.bundle import Bundle
from camp_planner.learning.labels import plan_digest
from camp_planner.runtime.camp_runtime import CampRuntime
from camp_planner.runtime.selection import Selection
from camp_planner.service.limits import MAX_FEATURE_ABS, check_plan_request
from camp_planner.service.types import PlanResult, SelectionResult
from camp_planner.workflow import Pipeline

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
        self.frame_id = frame_id  # the map frame every scene must be given in
        self.bundle_error = "no selector bundle configured"
        bundle: Bundle | None = None
        if bundle_path is not None and str(bundle_path):
            # torch loads only for a service with a selector (a node without one starts faster).
            from camp_planner.learning.bundle import load_bundle

            try:
                bundle = load_bundle(
                    Path(bundle_path), self.pipe.domain.name, self.pipe.domain.version
                )
            except CampError as exc:
                self.bundle_error = str(exc)
        try:
            self.runtime = CampRuntime(self.pipe, planner, bundle, max_fallbacks=max_fallbacks)
        except CampError as exc:
            if bundle is None:
                raise
            self.bundle_error = str(exc)
            self.runtime = CampRuntime(self.pipe, planner, None, max_fallbacks=max_fallbacks)
        self._probe = self.pipe.domain.make_mdp(self.pipe.task("train", 0), self.pipe.config)

    @property
    def domain(self) -> str:
        return self.pipe.domain.name

    @property
    def has_selector(self) -> bool:
        return self.runtime.bundle is not None

    def feature_length(self) -> int:
        bundle = self.runtime.bundle
        if bundle is None:
            raise ServiceError(ErrorCode.NO_SELECTOR, self.bundle_error)
        return int(np.prod(bundle.selector.input_shape))

    def contexts(self) -> list[Context]:
        """Every context a request may name: the bundle's, or only the universal one."""
        return self.runtime.contexts()

    def resolve_context(self, ref: str) -> Context:
        for c in self.contexts():
            if ref in (c.id, c.name) or (ref == "universal" and c.is_universal):
                return c
        if ref == "universal":
            return Context.universal()
        raise ServiceError(
            ErrorCode.UNKNOWN_CONTEXT,
            f"unknown context '{ref}'"
            + (
                ""
                if self.has_selector
                else f" ({self.bundle_error}: only 'universal' is available)"
            ),
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
        self, context: Context | None, mdp: Any, slot_of: dict[str, str], task: Any
    ) -> tuple[list[str], list[str], list[str]]:
        if context is None:  # gave up: nothing was planned
            return [], [], []
        if not self.has_selector:
            names = [v.name for v in mdp.variables]
            return names, [], []
        if context.is_template and task is None:  # task features alone: no rooms
            return [], [], []
        # What the CAMP of ``context`` keeps, without building it: a selection answers in
        # about 1 ms.
        kept = self.runtime.kept(mdp, context, task)
        relevant = [v.name for v in mdp.variables if v.name in kept]
        dropped = [v.name for v in mdp.variables if v.name not in kept]
        gone = set(dropped)
        ids = [oid for oid, slot in slot_of.items() if slot in gone]
        return relevant, dropped, sorted(ids)

    # --- selection --------------------------------------------------------------------------
    def check_features(self, features: Sequence[float]) -> np.ndarray:
        """``features`` as the selector's input array, or a refusal naming what is wrong."""
        bundle = self.runtime.bundle
        if bundle is None:
            raise ServiceError(ErrorCode.NO_SELECTOR, self.bundle_error)
        selector = bundle.selector
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

    def _selection(
        self, task: Any, mdp: Any, features: Sequence[float] | None, named: Context | None = None
    ) -> Selection:
        """The runtime's selection for ``task``, from ``features`` when given (a scene's or a
        request's own), else from the task itself."""
        x = self.check_features(features) if features else None
        try:
            return self.runtime.select(task, mdp, x, named)
        except CampError as exc:
            raise ServiceError(ErrorCode.INVALID_REQUEST, str(exc)) from None

    def select(
        self, scene: Scene | None, features: Sequence[float] | None = None
    ) -> SelectionResult:
        """Rank the contexts for a scene (or for precomputed task features)."""
        if not self.has_selector:
            raise ServiceError(ErrorCode.NO_SELECTOR, self.bundle_error)
        task, slot_of = (None, {}) if scene is None else self.task_of(scene)
        features = tuple(features) if features is not None else ()
        if scene is not None and scene.task_features:
            self.check_features(scene.task_features)  # a scene's own features must fit
            features = features or scene.task_features
        if not features and task is None:
            raise ServiceError(ErrorCode.INVALID_SCENE, "give a scene or task features")
        t0 = time.perf_counter()
        mdp = self.pipe.domain.make_mdp(task, self.pipe.config) if task else self._probe
        selection = self._selection(task, mdp if task else None, features or None)
        latency = time.perf_counter() - t0
        ranked = selection.ranked or [(Context.universal(), 1.0)]
        context = selection.first
        prob = next((p for c, p in ranked if context is not None and c.id == context.id), 0.0)
        relevant, dropped, dropped_ids = self._variables(context, mdp, slot_of, task)
        return SelectionResult(
            context if context is not None else Context.universal(),
            prob,
            ranked,
            relevant,
            dropped,
            dropped_ids,
            latency,
            selection.screened,
            selection.gate,
            selection,
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
        """Plan ``scene``'s task with the CAMP runtime (the named context first, if any) and
        execute the plan in the simulator; refusals raise :class:`ServiceError`."""
        check_plan_request(lam, timeout_s)
        lam = self.pipe.lam(self.planner) if lam is None or lam <= 0 else lam
        timeout = (
            float(self.pipe.config["timeout_s"]) if not timeout_s or timeout_s <= 0 else timeout_s
        )
        task, slot_of = self.task_of(scene)
        x = None
        if scene.task_features and self.has_selector:
            x = self.check_features(scene.task_features)  # refused before the MDP is built
        named = self.resolve_context(context_id) if context_id else None
        mdp = self.pipe.domain.make_mdp(task, self.pipe.config)
        try:
            run = self.runtime.run(
                task,
                seed,
                mdp=mdp,
                x=x,
                named=named,
                allow_fallback=allow_fallback,
                lam=lam,
                timeout_s=timeout,
                progress=progress,
            )
        except CampError as exc:
            _release(mdp)
            raise ServiceError(ErrorCode.INVALID_REQUEST, str(exc)) from None
        result = run.result
        inverse = {slot: oid for oid, slot in slot_of.items()}
        geometry = self.plugin.plan_geometry(mdp, result.states, result.actions, inverse)
        relevant, dropped, dropped_ids = self._variables(run.context, mdp, slot_of, task)
        stages = {
            "selection": run.selection.latency_s,
            "camp_construction": max(
                0.0, result.stage_times_s.get("setup", 0.0) - run.selection.latency_s
            ),
        }
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
        _release(mdp)
        return PlanResult(
            success=result.success,
            code=code,
            message=message,
            context=run.context,
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
            fallback_order=run.selection.fallback_order(),
            plan_digest=plan_digest([list(a) for a in result.actions]),
        )

    # --- racing -------------------------------------------------------------------------------
    def race_contexts(self, scene: Scene, k: int, first: str = "") -> list[Context]:
        """The contexts a race of ``k`` plans at once (:mod:`camp_planner.service.race`): up to
        ``k`` other than the universal one, the context named ``first`` (a request's own
        choice, if any) and then the selector's ranking after the screen; then the universal
        context. Without a selector: the named one (if any) and the universal one."""
        task, _ = self.task_of(scene)
        top: list[Context] = []
        if first:
            named = self.resolve_context(first)
            top += [] if named.is_universal else [named]
        if self.has_selector and len(top) < k:
            x = self.check_features(scene.task_features) if scene.task_features else None
            mdp = self.pipe.domain.make_mdp(task, self.pipe.config)
            try:
                ranked, _, _ = self.runtime.rank(task, mdp, x)
            except CampError as exc:
                raise ServiceError(ErrorCode.INVALID_REQUEST, str(exc)) from None
            finally:
                _release(mdp)
            top += [c for c, _ in ranked if not c.is_universal and c not in top]
        return [*top[: max(k, 0)], Context.universal()]


def _release(mdp: Any) -> None:
    """Release a simulator-backed MDP (NAMO's PyBullet client) now, not at GC."""
    close = getattr(mdp, "close", None)
    if callable(close):
        close()
