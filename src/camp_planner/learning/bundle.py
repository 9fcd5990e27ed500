"""A trained selector as one file: weights, context space, learned CSIs, feature spec, domain
and version, and training metadata.

Stored with ``torch.save`` and read back with ``weights_only=True`` (no pickled code runs on
load); everything but tensors is kept as one JSON string. Loading a corrupt file, a bundle of
another domain, or one written by an incompatible format gives a clear :class:`CampError`.
So does a bundle whose parts disagree: the saved weights must have exactly the shapes of the
network its settings describe (checked on torch's ``meta`` device, which allocates nothing,
so a damaged layer width cannot make loading allocate gigabytes), and every saved number
must be finite.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from camp_planner.core.context_space import ContextSpace
from camp_planner.core.csi import CSIResult
from camp_planner.core.errors import CampError
from camp_planner.learning.selector import ContextSelector, SelectorConfig, build_network

BUNDLE_FORMAT = 1
# Bundles that ship inside the package, as ``<domain>-<planner>.pt``.
SHIPPED_DIR = Path(__file__).resolve().parent.parent / "data"


def trained_bundle(
    artifacts: Path, domain: str, planner: str, seed: int, config: Mapping[str, Any]
) -> Path:
    """Where ``camp train`` (and each seed of ``camp eval``) keeps the bundle it trains for
    ``config``, and where ``camp plan``/``camp select`` look for it.

    Keyed by the configuration: a bundle trained in another world (``config/namo/cluttered.yaml``
    against the default) must neither overwrite this one nor be picked up for it. The
    configuration's own ``seed`` is left out of the key because ``camp eval`` shifts it per
    run to draw new tasks; the run is already in the ``seed<K>`` folder.
    """
    trained_on = {k: v for k, v in config.items() if k != "seed"}
    # Nor do the settings that only act at test time: the test tasks' generator seed and the
    # do-no-harm gate (each left out only where given, so that older keys stay the same).
    if "test_seed" in trained_on.get("tasks", {}):
        trained_on["tasks"] = {k: v for k, v in trained_on["tasks"].items() if k != "test_seed"}
    for key in ("gate", "selection"):
        if key in trained_on.get("camp", {}):
            trained_on["camp"] = {k: v for k, v in trained_on["camp"].items() if k != key}
    key = json.dumps(trained_on, sort_keys=True, default=str)
    digest = hashlib.sha1(key.encode()).hexdigest()[:10]
    return artifacts / domain / planner / f"seed{seed}" / f"selector-{digest}.pt"


def shipped_bundle(domain: str, planner: str, world: str | None = None) -> Path | None:
    """The selector bundle the package ships for ``domain`` and ``planner`` in the paper's
    world, or in the named ``world`` (e.g. NAMO's ``grid10``), if any (today: NAMO and
    manipulation with TAMP, so that the ROS layer and ``camp plan`` work without hours of
    training)."""
    path = SHIPPED_DIR / (
        f"{domain}-{planner}.pt" if world is None else f"{domain}-{world}-{planner}.pt"
    )
    return path if path.is_file() else None


@dataclass
class Bundle:
    """Everything needed to select contexts and build CAMPs at test time."""

    domain: str
    domain_version: str
    space: ContextSpace
    csis: dict[str, CSIResult]
    selector: ContextSelector
    metadata: dict[str, Any]

    def save(self, path: Path) -> None:
        meta = {
            "format": BUNDLE_FORMAT,
            "domain": self.domain,
            "domain_version": self.domain_version,
            "contexts": self.space.to_json(),
            "csis": [r.to_json() for r in self.csis.values()],
            "input_shape": list(self.selector.input_shape),
            "selector_config": self.selector.cfg.to_json(),
            "metadata": self.metadata,
        }
        payload = {"meta": json.dumps(meta, default=str), "selector": self.selector.state()}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        torch.save(payload, tmp)
        os.replace(tmp, path)


def load_bundle(path: Path, domain: str | None = None, domain_version: str | None = None) -> Bundle:
    """Read a bundle, checking it belongs to ``domain`` (and its version) when given."""
    if not path.is_file():
        raise CampError(f"no selector bundle at {path}; run `camp train` first")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a damaged file
        raise CampError(
            f"selector bundle {path} is corrupt or not a bundle ({exc.__class__.__name__})"
        ) from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("meta"), str):
        raise CampError(f"selector bundle {path} is corrupt or not a bundle (no metadata)")
    try:
        meta = json.loads(payload["meta"])
    except ValueError as exc:
        raise CampError(f"selector bundle {path} is corrupt: its metadata is not JSON") from exc
    state = payload.get("selector")
    if not isinstance(meta, dict):
        raise CampError(f"selector bundle {path} is corrupt: its metadata is not a JSON object")
    # JSON's `true` equals 1 in Python: a format is a number, never a boolean.
    if isinstance(meta.get("format"), bool) or meta.get("format") != BUNDLE_FORMAT:
        raise CampError(
            f"selector bundle {path} has format {meta.get('format')!r}; this camp_planner reads "
            f"format {BUNDLE_FORMAT}: retrain with `camp train`"
        )
    if domain is not None and meta.get("domain") != domain:
        raise CampError(
            f"selector bundle {path} is for domain '{meta.get('domain')}', not '{domain}'"
        )
    if domain_version is not None and meta.get("domain_version") != domain_version:
        raise CampError(
            f"selector bundle {path} was trained on {domain} version {meta.get('domain_version')}, "
            f"this is version {domain_version}: retrain with `camp train`"
        )
    try:
        for key in ("domain", "domain_version"):
            if not isinstance(meta[key], str):
                raise CampError(f"malformed {key} {meta[key]!r}")
        metadata = meta.get("metadata", {})
        if not isinstance(metadata, dict):
            raise CampError(f"malformed metadata {metadata!r}")
        space = ContextSpace.from_json(meta["contexts"])
        csis = {r.context.id: r for r in (CSIResult.from_json(d) for d in meta["csis"])}
        cfg = SelectorConfig.from_mapping(meta["selector_config"])
        input_shape = _input_shape(meta["input_shape"])
        weights = _checked_state(state, input_shape, len(space), cfg)
        selector = ContextSelector(input_shape, len(space), cfg)
    except KeyError as exc:
        raise CampError(f"selector bundle {path} is missing {exc}") from exc
    except CampError as exc:
        raise CampError(f"selector bundle {path} is malformed: {exc}") from exc
    except (TypeError, ValueError, RuntimeError) as exc:
        # Well-formed JSON of the wrong shape: a list where a mapping belongs, a seed torch
        # cannot take, settings that describe no network.
        raise CampError(f"selector bundle {path} is malformed: {exc}") from exc
    selector.load_state(weights)
    return Bundle(
        domain=meta["domain"],
        domain_version=meta["domain_version"],
        space=space,
        csis=csis,
        selector=selector,
        metadata=dict(metadata),
    )


def _input_shape(value: Any) -> tuple[int, ...]:
    if not (
        isinstance(value, list)
        and 1 <= len(value) <= 3
        and all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in value)
    ):
        raise CampError(f"input_shape {value!r} is not 1 to 3 positive whole numbers")
    return tuple(value)


def _checked_state(
    state: Any, input_shape: tuple[int, ...], n_contexts: int, cfg: SelectorConfig
) -> dict[str, Any]:
    """``state`` (feature statistics as float32), once it is known to hold finite float
    tensors of exactly the shapes the selector the other fields describe has (else a
    :class:`CampError`)."""
    if not isinstance(state, dict) or not isinstance(state.get("weights"), dict):
        raise CampError("no weights mapping")
    tensors: dict[str, Any] = {**state["weights"]}
    for key in ("mean", "std"):
        if key not in state:
            raise CampError(f"no feature {key}")
        tensors[f"feature {key}"] = state[key]
    try:
        with torch.device("meta"):
            probe = build_network(input_shape, n_contexts, cfg)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise CampError(f"its settings describe no network ({exc})") from None
    expected = {name: tuple(t.shape) for name, t in probe.state_dict().items()}
    expected["feature mean"] = expected["feature std"] = input_shape
    if set(tensors) != set(expected):
        missing = sorted(map(str, set(expected) - set(tensors)))
        extra = sorted(map(str, set(tensors) - set(expected)))
        raise CampError(
            f"the weights do not fit the network (missing {missing}, unexpected {extra})"
        )
    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            raise CampError(f"{name} is not a float tensor")
        if tuple(tensor.shape) != expected[name]:
            raise CampError(
                f"{name} has shape {tuple(tensor.shape)}, the network needs {expected[name]}"
            )
        if not bool(torch.isfinite(tensor).all()):
            raise CampError(f"{name} holds NaN or infinite values")
    if not bool((tensors["feature std"] > 0).all()):
        raise CampError("the feature std must be positive")
    # The selector normalises float32 features with these: other float types would make
    # every prediction fail later on a dtype mismatch.
    return {
        "weights": state["weights"],
        "mean": tensors["feature mean"].float(),
        "std": tensors["feature std"].float(),
    }
