"""Fuzzing configuration files: a YAML document is either a valid configuration or a
:class:`CampError` that names the file, never another exception; nothing clearly invalid
(NaN, a negative count, a string where a number belongs, an unknown key) is accepted; and a
valid file loads the same after any number of bad ones.

The documents are mutations of the shipped ``config/gridworld/default.yaml`` and
``config/dinner/default.yaml`` (values swapped for garbage, keys added or removed, the top
level replaced) and of their text (YAML syntax characters inserted, lines cut, arbitrary
text and bytes). A few invalid ones also go through ``camp contexts --config``, which must
answer with exit status 2 and a single ``camp: error:`` line.
"""

from __future__ import annotations

import contextlib
import io
import math
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from camp_planner.cli import main
from camp_planner.config import load_config
from camp_planner.core.errors import CampError
from camp_planner.domains import get_domain

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
DOMAINS = ("gridworld", "dinner")
TEXTS = {name: (CONFIG_DIR / name / "default.yaml").read_text() for name in DOMAINS}
DOCS: dict[str, dict[str, Any]] = {name: yaml.safe_load(TEXTS[name]) for name in DOMAINS}
REFERENCE = {
    name: load_config(get_domain(name), CONFIG_DIR / name / "default.yaml") for name in DOMAINS
}

# Settings that count something: a negative value is never meaningful.
COUNTS = {
    "seed",
    "tasks.train",
    "tasks.test",
    "mdp.horizon",
    "csi.k1",
    "csi.k2",
    "csi.tasks",
    "csi.seed",
    "contexts.seed",
    "contexts.max_domain_size",
    "contexts.min_disjunction_length",
    "contexts.max_disjunction_length",
    "contexts.max_conjunction_length",
    "contexts.max_contexts",
    "selector.max_iterations",
    "selector.conv_channels",
    "selector.conv_kernel",
    "selector.label_repeats",
    "world.enemy_rooms",
    "world.min_enemies_per_room",
    "world.max_enemies_per_room",
    "world.extra_items",
    "world.extra_rooms",
    "world.items_per_room",
}
# Settings where null is documented to mean "no limit" or "all".
NULLABLE = {"contexts.max_contexts", "contexts.variables", "contexts.values"}

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, -3, 10**12, 2**64, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e308, 0.5, -2.5]),
    st.text(max_size=8),
)
GARBAGE = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
YAML_BITS = [
    ":", ": ", "- ", "[", "]", "{", "}", ",", "'", '"', "#", "&a ", "*a", "*b", "!!", "!!int ",
    "!!float ", "!!bool ", "!!binary ", "!!set ", "!!python/name:os.system ", "? ", "|", ">",
    "\t", "\n", "\n  ", "---\n", "...\n", "%YAML 1.1\n", "<<: ", ".nan", ".inf", "-.inf",
    "~", "2020-13-45", "1e3", "0x1F", "\x00", "\x85", "\ufeff", "é", "\U0001f600", "\\",
]  # fmt: skip


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz_config")


Key = tuple[Any, ...]  # a setting's path of keys: ("tasks", "train")


def _leaves(data: Any, prefix: Key = ()) -> Iterator[tuple[Key, Any]]:
    """Every (path, value) of a nested mapping, mappings included, planner settings not."""
    if isinstance(data, dict):
        for key, value in data.items():
            path = (*prefix, key)
            yield path, value
            if path != ("planners",):
                yield from _leaves(value, path)


def _get(data: Any, path: Key) -> Any:
    for key in path:
        data = data[key]
    return data


def _dotted(path: Key) -> str:
    return ".".join(map(str, path))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _clearly_invalid(default: Any, value: Any, dotted: str) -> bool:
    """Whether ``value`` can never be right for a setting whose default is ``default``."""
    if value is None:
        return default is not None and dotted not in NULLABLE
    if isinstance(value, float) and not math.isfinite(value):
        return not dotted.startswith("planners.")
    if isinstance(default, dict):
        return not isinstance(value, dict)
    if isinstance(default, bool):
        return not isinstance(value, bool)
    if _is_number(default):
        if not _is_number(value):
            return True
        return (dotted in COUNTS and value < 0) or (dotted == "timeout_s" and value <= 0)
    if isinstance(default, str):
        return not isinstance(value, str)
    if isinstance(default, list):
        return not isinstance(value, list)
    return False


def _check_accepted(config: dict[str, Any], reference: dict[str, Any]) -> None:
    """An accepted configuration has only known keys, each of its default's kind, and no
    number that is NaN, infinite or a negative count."""
    for path, value in _leaves(config):
        default = _get(reference, path)  # KeyError: an unknown key got in
        dotted = _dotted(path)
        assert not _clearly_invalid(default, value, dotted), (dotted, value)
        if dotted in COUNTS and value is not None:
            assert isinstance(value, int) and not isinstance(value, bool), (dotted, value)


def _load(domain: str, path: Path) -> dict[str, Any] | None:
    """The configuration, or None after checking the refusal is a clear one-line CampError
    naming the file."""
    try:
        return load_config(get_domain(domain), path)
    except CampError as exc:
        message = str(exc)
        assert str(path) in message and "\n" not in message, message
        return None


def _still_works(domain: str, folder: Path) -> None:
    good = folder / f"good-{domain}.yaml"
    good.write_text(TEXTS[domain])
    assert load_config(get_domain(domain), good) == REFERENCE[domain]


def _verdict(reference: dict[str, Any], path: Key, value: Any) -> bool:
    """Whether setting ``path`` to ``value`` certainly makes a configuration invalid."""
    try:
        default = _get(reference, path)
    except (KeyError, TypeError):
        # Planner names and their settings are open-ended; any other new key is unknown.
        return bool(path[0] != "planners")
    return _clearly_invalid(default, value, _dotted(path))


@st.composite
def mutated_documents(draw: st.DrawFn) -> tuple[str, Any, bool]:
    """(domain, a YAML-able document, whether it is certainly invalid)."""
    domain = draw(st.sampled_from(DOMAINS))
    doc = yaml.safe_load(TEXTS[domain])
    invalid: set[Key] = set()  # the settings that certainly make the document invalid

    def forget(path: Key) -> None:
        invalid.difference_update({p for p in invalid if p[: len(path)] == path})

    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["replace", "replace", "replace", "add", "delete", "top"]))
        paths = [path for path, _ in _leaves(doc) if path != ("domain",)]
        if kind == "top":
            doc = draw(st.one_of(SCALARS, st.lists(GARBAGE, max_size=3)))
            return domain, doc, doc is not None
        if kind == "add":
            mappings: list[Key] = [(), *(p for p in paths if isinstance(_get(doc, p), dict))]
            path = (*draw(st.sampled_from(mappings)), draw(st.text(max_size=8)))
        elif paths:
            path = draw(st.sampled_from(paths))
        else:
            continue
        target = _get(doc, path[:-1])
        forget(path)
        if kind == "delete":
            target.pop(path[-1], None)
            continue
        value = draw(GARBAGE)
        target[path[-1]] = value
        if _verdict(REFERENCE[domain], path, value):
            invalid.add(path)
    return domain, doc, bool(invalid)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated_documents())
def test_mutated_documents_load_or_are_refused_clearly(
    case: tuple[str, Any, bool], folder: Path
) -> None:
    domain, doc, invalid = case
    path = folder / "mutated.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    config = _load(domain, path)
    if config is not None:
        assert not invalid, f"accepted an invalid configuration: {doc!r}"
        _check_accepted(config, REFERENCE[domain])
    _still_works(domain, folder)


@st.composite
def mutated_texts(draw: st.DrawFn) -> tuple[str, bytes]:
    domain = draw(st.sampled_from(DOMAINS))
    text = TEXTS[domain]
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "insert", "cut", "duplicate line"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(YAML_BITS)) + text[at:]
        elif action == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 40)) :]
        else:
            lines = text.splitlines(keepends=True)
            k = draw(st.integers(0, len(lines) - 1))
            text = "".join([*lines[: k + 1], lines[k], *lines[k + 1 :]])
    return domain, text.encode("utf-8", "surrogatepass")


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=st.one_of(
        mutated_texts(),
        st.tuples(st.sampled_from(DOMAINS), st.text(max_size=200).map(lambda t: t.encode())),
        st.tuples(st.sampled_from(DOMAINS), st.binary(max_size=200)),
        st.tuples(
            st.sampled_from(DOMAINS),
            st.sampled_from(
                [
                    b"",
                    b"   \n",
                    b"[" * 3000,
                    b"a: &x [*x]",
                    b"seed: 1\nseed: 2\n",
                    b"seed: 2020-13-45",
                    b"seed: !!bool maybe",
                    b"seed: !!float x",
                    b"\xff\xfe\x00",
                    b"tasks: {train: 5, train: 6}",
                    b"planners: {mcts: {time_per_step: .inf}}",
                ]
            ),
        ),
    )
)
def test_mutated_text_loads_or_is_refused_clearly(case: tuple[str, bytes], folder: Path) -> None:
    domain, data = case
    path = folder / "text.yaml"
    path.write_bytes(data)
    config = _load(domain, path)
    if config is not None:
        _check_accepted(config, REFERENCE[domain])
    _still_works(domain, folder)


def test_repeated_keys_and_alias_loops_are_refused_and_aliases_are_cheap(folder: Path) -> None:
    path = folder / "repeat.yaml"
    path.write_bytes(b"tasks: {train: 5}\ntasks: {test: 3}\n")
    with pytest.raises(CampError, match=r"\(line 2\): the key 'tasks' is given twice"):
        load_config(get_domain("gridworld"), path)
    path.write_bytes(b"planners: {mcts: {x: &a [*a]}}\n")
    with pytest.raises(CampError, match=r"malformed YAML .*recursive"):
        load_config(get_domain("gridworld"), path)
    # Nested aliases: a billion leaves if walked as a tree, checked in a moment.
    laughs = "a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]\n" + "".join(
        f"a{k}: &a{k} [{', '.join([f'*a{k - 1}'] * 9)}]\n" for k in range(1, 10)
    )
    path.write_text(f"planners:\n  mcts:\n{textwrap.indent(laughs, '    ')}")
    assert load_config(get_domain("gridworld"), path)["planners"]["mcts"]["a9"]
    # ... and refused in a moment, with a short message, where they do not belong.
    path.write_text(
        f"planners:\n  mcts:\n{textwrap.indent(laughs, '    ')}contexts:\n  variables: *a9\n"
    )
    with pytest.raises(CampError, match=r"'contexts.variables' .* a list of names") as err:
        load_config(get_domain("gridworld"), path)
    assert len(str(err.value)) < 300
    # A merge key followed by an explicit key is an override, not a repeat.
    path.write_bytes(b"tasks: {<<: {train: 5, test: 2}, test: 3}\n")
    assert load_config(get_domain("gridworld"), path)["tasks"] == {"train": 5, "test": 3}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("timeout_s: .nan", "'timeout_s' .* must be a finite number"),
        ("tasks: {train: -3}", r"'tasks.train' .* must be a whole number ≥ 0"),
        ("tasks: {train: 2.5}", r"'tasks.train' .* should be a whole number"),
        ("mdp: {horizon: 0}", r"'mdp.horizon' .* must be a whole number ≥ 1"),
        ("world: {move_prob: 1.5}", r"'world.move_prob' .* must be a number in \[0, 1\]"),
        ("world: {enemy_rooms: 9}", r"'world.enemy_rooms' .* from 0 to 7"),
        ("world: {min_enemies_per_room: 4}", "is above world.max_enemies_per_room"),
        ("contexts: {variables: [1, 2]}", r"'contexts.variables' .* null or a list of names"),
        ("contexts: {max_contexts: 0}", r"'contexts.max_contexts' .* null or a whole number"),
        ("selector: {hidden: [50, -1]}", r"'selector.hidden' .* layer widths"),
        ("lambda: {mcts: -1.0}", r"'lambda.mcts' .* a number ≥ 0"),
        ("camp: {attempt_budget_s: 0}", r"'camp.attempt_budget_s' .* null or a number > 0"),
        ("seed: 99999999999999999999", r"'seed' .* from 0 to 4294967295"),
        ("timeout_s: " + "9" * 400, "'timeout_s' .* is too large"),
        ("planners: {fastdownward: {}}", "unknown planner 'planners.fastdownward'"),
        ("seed: 2020-13-45", "malformed YAML .*month must be in 1..12"),
    ],
)
def test_values_out_of_range_are_named(text: str, message: str, folder: Path) -> None:
    path = folder / "range.yaml"
    path.write_text(text + "\n")
    with pytest.raises(CampError, match=message):
        load_config(get_domain("gridworld"), path)


def test_whole_floats_become_counts_and_ints_become_floats(folder: Path) -> None:
    path = folder / "kinds.yaml"
    path.write_text("tasks: {train: 5.0}\ntimeout_s: 30\n")
    config = load_config(get_domain("gridworld"), path)
    assert config["tasks"]["train"] == 5 and isinstance(config["tasks"]["train"], int)
    assert config["timeout_s"] == 30.0 and isinstance(config["timeout_s"], float)


INVALID_FOR_THE_CLI = st.one_of(
    st.sampled_from(
        [
            "tasks: [1, 2\n",
            "timeout_s: .nan\n",
            "tasks: {train: -1}\n",
            "world: {enemy_rooms: .inf}\n",
            "seed: 1\nseed: 2\n",
            "contexts: {max_contexts: 1.5}\n",
            "- 1\n- 2\n",
            "world: {min_enemies_per_room: .nan}\n",
        ]
    ),
    st.builds(
        lambda key, value: yaml.safe_dump({"tasks": {key: value}}),
        st.sampled_from(["train", "test"]),
        st.one_of(st.integers(max_value=-1), st.text(max_size=5), st.just(math.nan)),
    ),
    st.builds(
        lambda key: yaml.safe_dump({key: 1}),
        st.text(min_size=1, max_size=8).filter(lambda k: k not in REFERENCE["gridworld"]),
    ),
    mutated_documents()
    .filter(lambda case: case[0] == "gridworld" and case[2])
    .map(lambda case: yaml.safe_dump(case[1], allow_unicode=True)),
)


@settings(
    max_examples=20, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(text=INVALID_FOR_THE_CLI)
def test_the_cli_refuses_bad_files_in_one_line(text: str, folder: Path) -> None:
    path = folder / "cli.yaml"
    path.write_text(text)
    artifacts = str(folder / "artifacts")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["contexts", "--config", str(path), "--artifacts", artifacts])
    lines = err.getvalue().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("camp: error: "), lines
    assert not out.getvalue()
    good = folder / "good-gridworld.yaml"
    good.write_text(TEXTS["gridworld"])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["contexts", "--config", str(good), "--artifacts", artifacts])
    assert code == 0 and "contexts for gridworld" in out.getvalue(), err.getvalue()
