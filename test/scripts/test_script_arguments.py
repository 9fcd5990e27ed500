"""The NAMO benchmark refuses bad command-line arguments before any planning or learning,
with argparse's usage error (exit status 2) naming the option."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

BAD_ARGUMENTS = [
    ("bench_namo", ["--repeats", "0"]),
    ("bench_namo", ["--first-seed", "-1"]),
    ("bench_namo", ["--tasks", "0"]),
    ("bench_namo", ["--workers", "0"]),
    ("bench_namo", ["--set", "guide"]),
    ("bench_namo", ["--set", "=none"]),
    ("bench_namo", ["--split", "validation"]),
    ("bench_namo", ["--context", "oracle"]),
]


@pytest.mark.parametrize(("script", "argv"), BAD_ARGUMENTS)
def test_bad_arguments_are_refused(
    script: str,
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    with pytest.raises(SystemExit) as exc:
        load_script(script).main(argv)
    assert exc.value.code == 2
    assert "--" in capsys.readouterr().err
