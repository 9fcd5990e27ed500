"""Loading experiment configuration: a domain's defaults overridden by a YAML file.

Unknown keys, wrong types, values out of range and malformed YAML are user errors
(:class:`CampError`), reported in one line that names the file and the key. A setting's type
is its default's; what it may hold beyond that (a count is a whole number ≥ 0, a probability
lies in [0, 1], no number is NaN) is in :data:`_RULES`, checked when the file is loaded, so
a bad value is refused before any work starts instead of failing, or being misread, later.
"""

from __future__ import annotations

import argparse
import copy
import math
import reprlib
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

import yaml

from camp_planner.core.errors import CampError
from camp_planner.domains import get_domain
from camp_planner.domains.base import Domain
from camp_planner.domains.gridworld.world import ENEMY_ROOMS
from camp_planner.planners.registry import planner_names

# Settings whose null means "no limit" or "all", even where a domain's default sets a value.
NULLABLE = frozenset({"contexts.max_contexts", "contexts.variables", "contexts.values"})
# Settings a file may give although its domain's defaults do not declare them, with the
# value their absence means (the type a given value must have). They stay out of the
# defaults so that every existing configuration, and the bundle and cache keys derived from
# it, is unchanged until a file opts in.
OPTIONAL: dict[str, Any] = {
    "contexts.values": None,
    "contexts.required_values": None,
    "contexts.max_set_conjunction_variables": 0,
    "contexts.max_set_size": 2,
    # The generator seed of the test split's tasks (``camp eval --task-seed``): fresh draws for
    # a claim, with the training tasks, and every cache keyed on them, left as they were.
    # Absent, the test tasks follow ``seed``; the 0 here only gives the type.
    "tasks.test_seed": 0,
    # The do-no-harm gate (learning/gate.py). Optional, so that configurations written before
    # it keep their keys (the label and bundle caches hash the configuration).
    "camp.gate": {"enabled": True, "confidence": 0.9, "margin": 0.0, "min_tasks": 5},
    # The CAMP runtime's selection rule (runtime/selection.py); give_up's default is the
    # domain's (``Domain.may_give_up``), so the null here only gives the key.
    "camp.selection": {"rule": "auto", "top_k": 3, "confidence": 0.9, "give_up": None},
    # CSI learning at building scale (core/csi.py; on in config/namo/grid5.yaml and
    # grid10.yaml). Optional, so that the default configurations' cache keys stay.
    # Template contexts (core/context.py; on in config/namo/grid10.yaml): the space is the
    # universal context and these, and the generated space becomes the basis whose CSIs
    # role relevance summarises (core/role_relevance.py).
    "contexts.templates": [],
    "csi.local_probes": False,
    "csi.shared_terms": False,
    "csi.context_ties": False,
    # The planning-call timeout when scoring contexts for labels (absent: ``timeout_s``).
    # Where compute is charged (λ > 0), a context still planning after a few seconds already
    # scores far below one that gives up at once, and planning it on only says how far.
    "label_timeout_s": 0.0,
}


# The key, under ``tasks``, of the test split's generator seed (see OPTIONAL).
TEST_SEED = "test_seed"
# Every seed a random generator here accepts (numpy's is the smallest range).
MAX_SEED = 2**32 - 1


def with_test_seed(config: Mapping[str, Any], test_seed: int | None) -> dict[str, Any]:
    """A copy of ``config`` whose test tasks are drawn from generator seed ``test_seed``
    (None: from the configuration's ``seed``, as without the setting).

    An override of the configuration, rather than a separate argument, so that every cache
    keyed on the configuration (an eval's scores, the oracle's test scores) tells fresh draws
    apart, while those keyed on the training configuration stay as they were."""
    tasks = config.get("tasks")
    if not isinstance(tasks, Mapping):
        raise CampError("this domain's configuration has no tasks section to draw tasks from")
    out = copy.deepcopy(dict(config))
    out["tasks"] = {k: v for k, v in tasks.items() if k != TEST_SEED}
    if test_seed is not None:
        out["tasks"][TEST_SEED] = check_task_seed(test_seed)
    return out


def check_task_seed(value: Any, what: str = "--task-seed") -> int:
    """``value`` as a task generator seed: a whole number from 0 to :data:`MAX_SEED`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise CampError(f"{what} must be a whole number from 0 to {MAX_SEED}, got {value!r}")
    return value


def load_config(domain: Domain, path: Path | None) -> dict[str, Any]:
    """The domain's defaults, overridden by ``path`` (if given)."""
    config = domain.default_config()
    if path is None:
        return config
    data = _read_mapping(path)
    if data is None:
        return config
    if "domain" in data and data["domain"] != domain.name:
        raise CampError(
            f"config file {path} is for domain {_show(data['domain'])}, not '{domain.name}'"
        )
    overrides = {k: v for k, v in data.items() if k != "domain"}
    optional = {**OPTIONAL, **domain.optional_settings()}
    merged = _merge(config, overrides, str(path), "", optional)
    _check_values(merged, str(path))
    try:
        domain.check_config(merged)
    except CampError as exc:
        raise CampError(f"config file {path}: {exc}") from None
    return merged


def load_world_file(path: Path, domain_name: str | None = None) -> tuple[str, dict[str, Any]]:
    """(the domain, the configuration) of a world file: a configuration whose ``domain`` key
    names its domain (``domain_name``, if given) and whose ``world`` section describes one
    fixed world of the user's (NAMO: a floor plan, ``world.doors``), as ``camp --world`` and
    the ROS ``world`` parameter take it."""
    data = _read_mapping(path) or {}
    name = data.get("domain")
    if not isinstance(name, str):
        raise CampError(f"world file {path} must name its domain (domain: namo or manip)")
    if domain_name is not None and name != domain_name:
        raise CampError(f"world file {path} is a {_show(name)} world, not {domain_name}")
    domain = get_domain(name)
    config = load_config(domain, path)
    if not domain.is_world_file(config):
        raise CampError(
            f"{path} is a {name} configuration, not a world file: a world file describes one "
            "building (NAMO: world.doors, the floor plan's doorways; manipulation: world.tables or "
            "world.bins, the work cell; docs/your-building.md)"
        )
    return name, config


def world_bundle(path: Path) -> Path:
    """Where ``camp train --world FILE`` puts the selector bundle it trains for the world
    file ``path``, and where the ROS nodes of ``world:=FILE`` look for it: beside the file,
    with ``.pt`` (``building.yaml``: ``building.pt``), so that the two travel together."""
    return Path(path).with_suffix(".pt")


def _read_mapping(path: Path) -> Mapping[str, Any] | None:
    """The YAML mapping in ``path`` (None for an empty file); a :class:`CampError` naming
    the file if it cannot be read or holds anything else."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CampError(f"cannot read config file {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise CampError(f"config file {path} is not UTF-8 text (byte {exc.start})") from None
    data = _parse_yaml(text, path)
    if data is not None and not isinstance(data, Mapping):
        raise CampError(f"config file {path} must hold a mapping at the top level")
    return data


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML would keep
    the last one without a word)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Hashable] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *defaults` then an explicit key is an override, not a repeat
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {key!r} is given twice", key_node.start_mark
            )
        if isinstance(key, Hashable):
            seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(text: str, path: Path) -> Any:
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        detail = f": {problem}" if problem else ""
        raise CampError(f"malformed YAML in {path}{where}{detail}") from exc
    except Exception as exc:
        # PyYAML's constructors let built-in errors out on some malformed documents: a
        # ValueError for the date 2020-13-45, a KeyError for `!!bool x`, a RecursionError
        # for thousands of nested brackets.
        raise CampError(f"malformed YAML in {path}: {type(exc).__name__}: {exc}") from None


def _merge(
    base: dict[str, Any],
    over: Mapping[str, Any],
    path: str,
    prefix: str,
    optional: Mapping[str, Any],
) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        dotted = f"{prefix}{key}"
        if key not in out and dotted not in optional:
            extra = (k[len(prefix) :] for k in optional if k.startswith(prefix))
            known = ", ".join(sorted({*map(str, out), *(k for k in extra if "." not in k)}))
            raise CampError(f"unknown setting {dotted!r} in {path}; known here: {known}")
        current = out[key] if key in out else optional[dotted]
        if isinstance(current, dict):
            if not isinstance(value, Mapping):
                raise CampError(f"setting {dotted!r} in {path} must be a mapping")
            # Planner settings are open-ended (each planner validates its own keys), and a
            # file naming one setting of a planner keeps the domain's others for it.
            if dotted == "planners":
                merged = copy.deepcopy(current)
                for name, settings in value.items():
                    if not isinstance(settings, Mapping):
                        raise CampError(
                            f"setting {f'planners.{name}'!r} in {path} must be a mapping"
                        )
                    merged[name] = {**merged.get(name, {}), **settings}
                out[key] = merged
            else:
                out[key] = _merge(current, value, path, f"{dotted}.", optional)
        elif (
            current is not None
            and not _same_kind(current, value)
            and not (value is None and dotted in NULLABLE)
        ):
            raise CampError(
                f"setting {dotted!r} in {path} should be {type(current).__name__}, "
                f"got {_show(value)}"
            )
        else:
            out[key] = _as_kind(current, value, dotted, path)
    return out


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring = 2, 4, 4, 40


def _show(value: Any) -> str:
    """``repr(value)``, shortened: YAML aliases can nest a list a billion items deep."""
    return _REPR.repr(value)


def _as_kind(default: Any, value: Any, dotted: str, path: str) -> Any:
    """``value`` (of the default's kind) as the default's exact type: a count given as
    ``3.0`` becomes 3, a float setting given as ``60`` becomes 60.0."""
    if isinstance(default, bool) or isinstance(value, bool) or value is None:
        return value
    if isinstance(default, int) and isinstance(value, float):
        if not value.is_integer():
            raise CampError(
                f"setting {dotted!r} in {path} should be a whole number, got {_show(value)}"
            )
        return int(value)
    if isinstance(default, float) and isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            raise CampError(f"setting {dotted!r} in {path} is too large: {_show(value)}") from None
    return value


# --- what settings may hold beyond their type -----------------------------------------------
# A rule is a test and what it asks for, for the error message. A key means the same in every
# domain that has it; keys a domain lacks are never looked at.
_Rule = tuple[Callable[[Any], bool], str]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(low: int, high: float = math.inf) -> _Rule:
    def test(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and low <= v <= high

    bound = f"from {low} to {int(high)}" if math.isfinite(high) else f"≥ {low}"
    return test, f"a whole number {bound}"


def _number(low: float, low_open: bool = False, high: float = math.inf) -> _Rule:
    def test(v: Any) -> bool:
        return _is_number(v) and (v > low if low_open else v >= low) and v <= high

    if math.isfinite(high):
        return test, f"a number in {'(' if low_open else '['}{low:g}, {high:g}]"
    return test, f"a number {'>' if low_open else '≥'} {low:g}"


def _nullable(rule: _Rule) -> _Rule:
    test, what = rule
    return (lambda v: v is None or test(v)), f"null or {what}"


def _list_of(rule: _Rule, what: str) -> _Rule:
    test, _ = rule
    return (lambda v: isinstance(v, list) and all(test(x) for x in v)), what


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int, float)) and not (isinstance(v, float) and math.isnan(v))


def _reward_range(v: Any) -> bool:
    return (
        isinstance(v, list) and len(v) == 2 and all(_is_number(x) for x in v) and 0 <= v[0] <= v[1]
    )


_COUNT = _whole(0)
_POSITIVE_COUNT = _whole(1)
_SEED = _whole(0, MAX_SEED)
_PROBABILITY = _number(0.0, high=1.0)
_POSITIVE = _number(0.0, low_open=True)
_NON_NEGATIVE = _number(0.0)
_ANY_NUMBER: _Rule = (_is_number, "a number")
_NAMES = _list_of((lambda v: isinstance(v, str) and bool(v), ""), "a list of names")
_LAYERS = _list_of(_POSITIVE_COUNT, "a list of layer widths, each a whole number ≥ 1")

_RULES: dict[str, _Rule] = {
    "seed": _SEED,
    "tasks.train": _COUNT,
    "tasks.test": _COUNT,
    "tasks.test_seed": _SEED,
    "mdp.horizon": _POSITIVE_COUNT,
    "mdp.gamma": _number(0.0, low_open=True, high=1.0),
    "timeout_s": _POSITIVE,
    "label_timeout_s": _POSITIVE,
    "lambda.*": _NON_NEGATIVE,
    "world.goal_reward": _ANY_NUMBER,
    "world.move_prob": _PROBABILITY,
    "world.extra_door_prob": _PROBABILITY,
    "world.fill_prob": _PROBABILITY,
    "world.enemy_rooms": _whole(0, len(ENEMY_ROOMS)),
    "world.min_enemies_per_room": _COUNT,
    "world.max_enemies_per_room": _COUNT,
    "world.step_cost": _COUNT,
    "world.extra_items": _COUNT,
    "world.extra_rooms": _COUNT,
    "world.items_per_room": _COUNT,
    "world.ramen_reward": (_reward_range, "[low, high] with 0 ≤ low ≤ high"),
    "world.sandwich_reward": (_reward_range, "[low, high] with 0 ≤ low ≤ high"),
    "world.steak_reward": (_reward_range, "[low, high] with 0 ≤ low ≤ high"),
    "world.door_width": _POSITIVE,
    "world.reach": _POSITIVE,
    "world.grid": _POSITIVE_COUNT,
    "world.room_size": _POSITIVE,
    "world.start_room": _COUNT,
    "world.goal_room": _COUNT,
    "contexts.variables": _nullable(_NAMES),
    "contexts.values": _nullable(_list_of((_scalar, ""), "a list of values")),
    "contexts.required_values": _nullable(_list_of((_scalar, ""), "a list of values")),
    "contexts.max_domain_size": _POSITIVE_COUNT,
    "contexts.min_disjunction_length": _COUNT,
    "contexts.max_disjunction_length": _COUNT,
    "contexts.max_conjunction_length": _COUNT,
    # Set conjunctions (core/context_space.py): off at 0; a domain opts in by declaring both.
    "contexts.max_set_conjunction_variables": _COUNT,
    "contexts.max_set_size": _POSITIVE_COUNT,
    "contexts.max_contexts": _nullable(_POSITIVE_COUNT),
    "contexts.seed": _SEED,
    "csi.k1": _POSITIVE_COUNT,
    "csi.k2": _POSITIVE_COUNT,
    "csi.tasks": _POSITIVE_COUNT,
    "csi.seed": _SEED,
    "camp.sink_reward": _ANY_NUMBER,
    "camp.attempt_budget_s": _nullable(_POSITIVE),
    "camp.universal_relevance": (lambda v: v in ("all", "learned"), "'all' or 'learned'"),
    "camp.gate.confidence": (
        lambda v: _is_number(v) and 0.5 <= v < 1.0,
        "a number in [0.5, 1)",
    ),
    "camp.gate.margin": (lambda v: _is_number(v) and math.isfinite(v), "a finite number"),
    "camp.gate.min_tasks": _POSITIVE_COUNT,
    "camp.selection.rule": (
        lambda v: v in ("auto", "bound", "gate", "ungated"),
        "one of auto, bound, gate, ungated",
    ),
    "camp.selection.top_k": _POSITIVE_COUNT,
    "camp.selection.confidence": (
        lambda v: _is_number(v) and 0.5 <= v < 1.0,
        "a number in [0.5, 1)",
    ),
    "camp.selection.give_up": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
    "selector.hidden": _LAYERS,
    "selector.conv_hidden": _LAYERS,
    "selector.structural_hidden": _LAYERS,
    "selector.conv_channels": _POSITIVE_COUNT,
    "selector.conv_kernel": _POSITIVE_COUNT,
    "selector.learning_rate": _POSITIVE,
    "selector.loss_target": _NON_NEGATIVE,
    "selector.max_iterations": _POSITIVE_COUNT,
    "selector.temperature": _POSITIVE,
    "selector.label_repeats": _POSITIVE_COUNT,
    "baselines.policy_max_iterations": _POSITIVE_COUNT,
    "pddl.goal_reward": _ANY_NUMBER,
    "pddl.train": _list_of((lambda v: isinstance(v, str), ""), "a list of file names"),
    "pddl.test": _list_of((lambda v: isinstance(v, str), ""), "a list of file names"),
}


def _check_values(config: Mapping[str, Any], path: str) -> None:
    """Raise a :class:`CampError` naming the first setting of a merged configuration that
    breaks its rule, holds NaN (or ±inf outside planner settings), or names an unknown
    planner."""
    _check_numbers(config, path, "", set())
    for dotted, value in _flatten(config, ""):
        rule = _RULES.get(dotted) or _RULES.get(dotted.split(".")[0] + ".*")
        if rule is not None and not rule[0](value):
            raise CampError(f"setting {dotted!r} in {path} must be {rule[1]}, got {_show(value)}")
    world = config.get("world", {})
    if isinstance(world, Mapping) and "min_enemies_per_room" in world:
        low, high = world["min_enemies_per_room"], world["max_enemies_per_room"]
        if low > high:
            raise CampError(
                f"settings in {path}: world.min_enemies_per_room ({low}) is above "
                f"world.max_enemies_per_room ({high})"
            )

    known = planner_names()
    for name in config.get("planners", {}):
        if name not in known:
            raise CampError(
                f"unknown planner {f'planners.{name}'!r} in {path}; "
                f"choose one of: {', '.join(known)}"
            )


def _flatten(data: Mapping[str, Any], prefix: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and dotted != "planners":
            out.extend(_flatten(value, f"{dotted}."))
        else:
            out.append((dotted, value))
    return out


def _check_numbers(value: Any, path: str, dotted: str, done: set[tuple[int, bool]]) -> None:
    """No NaN anywhere; no infinity outside ``planners`` (where some planners read
    ``.inf`` as "no limit"). YAML aliases share containers, so each is visited once: a
    document of nested aliases would otherwise take exponential time to walk."""
    infinite_ok = dotted.startswith("planners.")
    if isinstance(value, float):
        if math.isnan(value) or (math.isinf(value) and not infinite_ok):
            raise CampError(f"setting {dotted!r} in {path} must be a finite number, got {value}")
        return
    if not isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return
    if (id(value), infinite_ok) in done:
        return
    done.add((id(value), infinite_ok))
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_numbers(item, path, f"{dotted}.{key}" if dotted else str(key), done)
    else:
        for item in value:
            _check_numbers(item, path, dotted, done)


def _same_kind(default: Any, value: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float))
    return isinstance(value, type(default))


def add_settings_argument(
    parser: argparse.ArgumentParser, help_text: str, default: tuple[str, ...] = ()
) -> None:
    """A script's repeatable ``--set KEY=VALUE`` option (planner settings), read with
    :func:`settings_or_usage_error`. Items given are added to ``default``."""
    parser.add_argument(
        "--set", action="append", default=list(default), metavar="KEY=VALUE", help=help_text
    )


def settings_or_usage_error(parser: argparse.ArgumentParser, items: list[str]) -> dict[str, Any]:
    """:func:`parse_settings` for a script's ``--set`` items, a bad one reported as the
    parser's usage error (exit status 2), before any planning or learning starts."""
    try:
        return parse_settings(items)
    except ValueError as exc:
        parser.error(str(exc))


def parse_settings(items: list[str]) -> dict[str, Any]:
    """Command-line ``--set`` items, ``["guide=none", "restart_s=null"]``, as settings, each
    value read as YAML reads it (``null``: None, ``2``: an int)."""
    settings: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key or not text:
            raise ValueError(f"--set takes key=value, got {item!r}")
        try:
            settings[key] = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"--set {item!r}: the value is not YAML ({exc})") from None
    return settings
