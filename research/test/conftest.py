"""Fixtures and the ``research`` marker for the tests of the investigations in ``research/``.

Every test under this folder is marked ``research``, so CI selects them with
``pytest research -m research`` and a run over both trees can leave them out. The scripts are
loaded from ``research/`` as modules, so their tests call ``main`` in-process. The shared
fixtures of ``test/conftest.py`` are not needed here: no investigation's test uses ROS,
hypothesis or the trained NAMO bundle.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent
RESEARCH = HERE.parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.research)


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, RESEARCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def load_script() -> Callable[[str], ModuleType]:
    return _load
