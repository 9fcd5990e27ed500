"""The NAMO benchmark: bad arguments are refused before any planning; settings parse."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.mark.parametrize(
    "argv",
    [
        ["--repeats", "0"],
        ["--tasks", "0"],
        ["--set", "guide"],
        ["--set", "=none"],
        ["--split", "validation"],
    ],
)
def test_bad_arguments_are_refused(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    with pytest.raises(SystemExit) as exc:
        load_script("bench_namo").main(argv)
    assert exc.value.code == 2
    assert "--" in capsys.readouterr().err


def test_settings_are_read_as_yaml_values(load_script: Callable[[str], ModuleType]) -> None:
    parse = load_script("bench_namo").parse_settings
    assert parse(["guide=none", "motion_timeout_s=2", "relaxed=grid"]) == {
        "guide": "none",
        "motion_timeout_s": 2,
        "relaxed": "grid",
    }
    assert parse([]) == {}
    assert parse(["restart_s=null", "restart_clock=wall"]) == {
        "restart_s": None,
        "restart_clock": "wall",
    }
    for bad in (["guide"], ["=none"], ["guide="], ["guide=[oops"]):
        with pytest.raises(ValueError, match="--set"):
            parse(bad)
