"""The CSI audit: bad arguments are refused before any learning."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest


@pytest.mark.parametrize("argv", [["--tasks", "0"], ["--contexts", "oracle"]])
def test_bad_arguments_are_refused(
    argv: list[str],
    capsys: pytest.CaptureFixture[str],
    load_script: Callable[[str], ModuleType],
) -> None:
    with pytest.raises(SystemExit) as exc:
        load_script("audit_namo_csis").main(argv)
    assert exc.value.code == 2
    assert "--" in capsys.readouterr().err
