"""Fuzzing selector bundles: whatever file ``load_bundle`` is given, it returns a bundle
that works (its selector ranks contexts with finite probabilities) or raises a
:class:`CampError` naming the file, never another exception; a bundle that is certainly
broken (truncated, random bytes, a required field gone, weights of the wrong shape or with
NaN, another domain or version) is refused; and the valid bundle loads the same afterwards.

The valid bundle is the tiny one of ``test/learning/test_selector_bundle.py``: two contexts
and an MLP over four features, trained for a few hundred iterations.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from camp_planner.core.context import Context, Term
from camp_planner.core.context_space import ContextSpace
from camp_planner.core.csi import CSIResult
from camp_planner.core.errors import CampError
from camp_planner.learning.bundle import Bundle, load_bundle
from camp_planner.learning.selector import ContextSelector, SelectorConfig

# Random bytes may look like a pickle of an exotic protocol; torch warns before refusing it.
pytestmark = pytest.mark.filterwarnings("ignore:Detected pickle protocol:UserWarning")

DOMAIN, VERSION = "gridworld", "2"
TINY = SelectorConfig(learning_rate=1e-2, max_iterations=200, seed=3)
FEATURES = np.random.default_rng(0).normal(size=(30, 4)).astype(np.float32)
REQUIRED = ("format", "domain", "domain_version", "contexts", "csis", "input_shape")

JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**20), 10**20),
        st.floats(allow_nan=False),
        st.text(max_size=8),
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
TENSORS = st.builds(
    lambda shape, fill, dtype: torch.full(shape, fill, dtype=dtype),
    st.lists(st.integers(0, 4), max_size=3).map(tuple),
    st.sampled_from([0.0, 1.0, -3.0, math.nan, math.inf]),
    st.sampled_from([torch.float32, torch.float64, torch.float16]),
)
OBJECTS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8), TENSORS),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.sampled_from(["meta", "selector", "weights", "x"]), inner)
    ),
    max_leaves=6,
)


def _build(folder: Path) -> Path:
    space = ContextSpace((Context.universal(), Context("single", (Term("agent_room", 1),))))
    labels = (FEATURES[:, 0] > 0).astype(int)
    selector = ContextSelector((4,), 2, TINY)
    selector.fit(FEATURES, labels)
    csi = CSIResult(space[1], ("agent_room",), frozenset({("agent_room", "agent_room")}), 50, 0.1)
    path = folder / "good.pt"
    Bundle(DOMAIN, VERSION, space, {csi.context.id: csi}, selector, {"planner": "vi"}).save(path)
    return path


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, np.ndarray]:
    """The valid bundle's path, its bytes and its selector's probabilities on FEATURES."""
    path = _build(tmp_path_factory.mktemp("fuzz_bundle"))
    probs = load_bundle(path, DOMAIN, VERSION).selector.predict_proba(FEATURES)
    return path, path.read_bytes(), probs


def _payload(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the metadata as a dict, the selector state) of a saved bundle."""
    payload = torch.load(io.BytesIO(data), weights_only=True)
    return json.loads(payload["meta"]), payload["selector"]


def _save(path: Path, meta: Any, state: Any) -> None:
    torch.save({"meta": json.dumps(meta), "selector": state}, path)


def _outcome(path: Path) -> Bundle | None:
    """The bundle at ``path`` if it loads and works, or None after checking the refusal is a
    CampError naming the file."""
    try:
        bundle = load_bundle(path, DOMAIN, VERSION)
    except CampError as exc:
        assert str(path) in str(exc), str(exc)
        return None
    probs = bundle.selector.predict_proba(FEATURES)
    assert probs.shape == (len(FEATURES), len(bundle.space)) and np.isfinite(probs).all()
    assert bundle.selector.ranked(FEATURES[0])
    return bundle


def _still_works(good: tuple[Path, bytes, np.ndarray]) -> None:
    path, _, probs = good
    assert np.array_equal(
        load_bundle(path, DOMAIN, VERSION).selector.predict_proba(FEATURES), probs
    )


def _refused(path: Path, good: tuple[Path, bytes, np.ndarray]) -> None:
    assert _outcome(path) is None, "a broken bundle was accepted"
    _still_works(good)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.floats(0.0, 0.9999))
def test_a_truncated_bundle_is_refused(cut: float, good: tuple[Path, bytes, np.ndarray]) -> None:
    data = good[1]
    path = good[0].with_name("cut.pt")
    path.write_bytes(data[: int(cut * len(data))])
    _refused(path, good)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=3000))
def test_random_bytes_are_refused(data: bytes, good: tuple[Path, bytes, np.ndarray]) -> None:
    path = good[0].with_name("random.pt")
    path.write_bytes(data)
    _refused(path, good)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(flips=st.lists(st.tuples(st.floats(0.0, 0.9999), st.integers(0, 255)), max_size=8))
def test_flipped_bytes_load_or_are_refused(
    flips: list[tuple[float, int]], good: tuple[Path, bytes, np.ndarray]
) -> None:
    data = bytearray(good[1])
    for where, byte in flips:
        data[int(where * len(data))] = byte
    path = good[0].with_name("flipped.pt")
    path.write_bytes(bytes(data))
    _outcome(path)
    _still_works(good)


@st.composite
def mutated_metadata(draw: st.DrawFn, meta: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(metadata with fields removed or replaced, whether it is certainly broken)."""
    meta = dict(meta)
    broken = False
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from([*meta, "extra"]))
        if key in meta and draw(st.booleans()):
            del meta[key]
            broken = broken or key in (*REQUIRED, "selector_config")
            continue
        value = draw(
            st.one_of(
                JSON,
                st.sampled_from(
                    [
                        [2],
                        [4, 4],
                        [4, 1, 1],
                        [0],
                        [-1],
                        [10**9],
                        "namo",
                        "1",
                        2,
                        {"hidden": [10**9]},
                        {"hidden": [-5]},
                        {"hidden": [7]},
                        {"seed": 2**70},
                        {"seed": 7},
                        {"model": "structural"},
                        {"labels": "regression"},
                        {"conv_kernel": 0},
                        [{"kind": "universal", "terms": []}],
                        [{"kind": "single", "terms": [{"variable": "a", "value": {"x": 1}}]}],
                    ]
                ),
            )
        )
        if key in ("format", "domain", "domain_version", "input_shape", "contexts"):
            # Another format, domain or version is refused by name; another input shape or
            # number of contexts does not fit the weights.
            broken = broken or value != meta.get(key)
        meta[key] = value
    return meta, broken


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_metadata_loads_or_is_refused(
    data: st.DataObject, good: tuple[Path, bytes, np.ndarray]
) -> None:
    meta, state = _payload(good[1])
    mutated, broken = data.draw(mutated_metadata(meta))
    path = good[0].with_name("meta.pt")
    _save(path, mutated, state)
    bundle = _outcome(path)
    assert bundle is None or not broken, f"accepted {mutated}"
    _still_works(good)


@st.composite
def mutated_states(draw: st.DrawFn, state: dict[str, Any]) -> tuple[Any, bool]:
    """(the selector state with tensors replaced, removed or added, whether it is certainly
    broken)."""
    original: dict[str, Any] = {**state["weights"], "mean": state["mean"], "std": state["std"]}
    tensors = dict(original)
    for _ in range(draw(st.integers(1, 3))):
        if not tensors:
            break
        name = draw(st.sampled_from(sorted(tensors)))
        action = draw(st.sampled_from(["replace", "nan", "drop", "add", "double", "garbage"]))
        old = tensors[name]
        if action == "replace":
            tensors[name] = draw(TENSORS)
        elif action == "nan" and isinstance(old, torch.Tensor) and old.numel():
            flat = old.clone().view(-1).index_fill(0, torch.tensor([0]), math.nan)
            tensors[name] = flat.view(old.shape)
        elif action == "drop":
            del tensors[name]
        elif action == "add":
            tensors[f"{name}.extra"] = torch.zeros(2)
        elif action == "double" and isinstance(old, torch.Tensor):
            tensors[name] = old.double()
        elif action == "garbage":
            tensors[name] = draw(OBJECTS)
    # Certainly broken: a tensor missing, added, of another shape, not a float tensor, or
    # not finite, or a feature std that is not positive.
    broken = set(tensors) != set(original) or any(
        not isinstance(t, torch.Tensor)
        or not t.is_floating_point()
        or t.shape != original[name].shape
        or not bool(torch.isfinite(t).all())
        or (name == "std" and not bool((t > 0).all()))
        for name, t in tensors.items()
        if name in original
    )
    out: dict[str, Any] = {"weights": tensors}
    for key in ("mean", "std"):
        if key in tensors:
            out[key] = tensors.pop(key)
    return out, broken


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_weights_load_or_are_refused(
    data: st.DataObject, good: tuple[Path, bytes, np.ndarray]
) -> None:
    meta, state = _payload(good[1])
    mutated, broken = data.draw(mutated_states(state))
    path = good[0].with_name("state.pt")
    _save(path, meta, mutated)
    bundle = _outcome(path)
    assert bundle is None or not broken, "accepted broken weights"
    _still_works(good)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(obj=OBJECTS)
def test_any_saved_object_is_refused(obj: Any, good: tuple[Path, bytes, np.ndarray]) -> None:
    path = good[0].with_name("object.pt")
    torch.save(obj, path)
    _refused(path, good)


def test_named_refusals(good: tuple[Path, bytes, np.ndarray]) -> None:
    meta, state = _payload(good[1])
    path = good[0].with_name("named.pt")
    cases: list[tuple[Any, Any, str]] = [
        ({**meta, "selector_config": {"hidden": [10**9]}}, state, "weights do not fit"),
        ({**meta, "input_shape": [5]}, state, r"0\.weight has shape \(50, 4\).*\(50, 5\)"),
        (meta, {**state, "std": torch.zeros(4)}, "feature std must be positive"),
        (meta, {**state, "mean": torch.full((4,), math.nan)}, "feature mean holds NaN"),
        ([1], state, "not a JSON object"),
        ({**meta, "metadata": [1]}, state, "malformed metadata"),
        ({**meta, "domain": "namo"}, state, "is for domain 'namo'"),
        ({k: v for k, v in meta.items() if k != "csis"}, state, "is missing 'csis'"),
        # JSON's true equals 1 in Python; found by the fuzz test above.
        ({**meta, "format": True}, state, "has format True"),
    ]
    for bad_meta, bad_state, message in cases:
        _save(path, bad_meta, bad_state)
        with pytest.raises(CampError, match=message):
            load_bundle(path, DOMAIN, VERSION)
    # Feature statistics saved as float64 still give float32 features to the network.
    _save(path, meta, {**state, "mean": state["mean"].double(), "std": state["std"].double()})
    assert _outcome(path) is not None
    _still_works(good)
