"""Loading experiment configuration: a domain's defaults overridden by a YAML file.

Unknown keys, wrong types and malformed YAML are user errors (:class:`CampError`), reported in
one line that names the file and the key.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from camp_planner.core.errors import CampError
from camp_planner.domains.base import Domain

# Settings whose null means "no limit" or "all", even where a domain's default sets a value.
NULLABLE = frozenset({"contexts.max_contexts", "contexts.variables", "contexts.values"})


def load_config(domain: Domain, path: Path | None) -> dict[str, Any]:
    """The domain's defaults, overridden by ``path`` (if given)."""
    config = domain.default_config()
    if path is None:
        return config
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CampError(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise CampError(f"malformed YAML in {path}{where}") from exc
    if data is None:
        return config
    if not isinstance(data, Mapping):
        raise CampError(f"config file {path} must hold a mapping at the top level")
    if "domain" in data and data["domain"] != domain.name:
        raise CampError(f"config file {path} is for domain '{data['domain']}', not '{domain.name}'")
    overrides = {k: v for k, v in data.items() if k != "domain"}
    return _merge(config, overrides, str(path), "")


def _merge(base: dict[str, Any], over: Mapping[str, Any], path: str, prefix: str) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        dotted = f"{prefix}{key}"
        if key not in out:
            known = ", ".join(sorted(map(str, out)))
            raise CampError(f"unknown setting '{dotted}' in {path}; known here: {known}")
        current = out[key]
        if isinstance(current, dict):
            if not isinstance(value, Mapping):
                raise CampError(f"setting '{dotted}' in {path} must be a mapping")
            # Planner settings are open-ended (each planner validates its own keys), and a
            # file naming one setting of a planner keeps the domain's others for it.
            if dotted == "planners":
                merged = copy.deepcopy(current)
                for name, settings in value.items():
                    if not isinstance(settings, Mapping):
                        raise CampError(f"setting 'planners.{name}' in {path} must be a mapping")
                    merged[name] = {**merged.get(name, {}), **settings}
                out[key] = merged
            else:
                out[key] = _merge(current, value, path, f"{dotted}.")
        elif (
            current is not None
            and not _same_kind(current, value)
            and not (value is None and dotted in NULLABLE)
        ):
            raise CampError(
                f"setting '{dotted}' in {path} should be {type(current).__name__}, got {value!r}"
            )
        else:
            out[key] = value
    return out


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
