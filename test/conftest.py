"""Shared fixtures: an isolated artifacts folder and a ROS domain id per test process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Nothing may leave loopback, and parallel runs must not see each other: each pytest-xdist
# worker (gw0, gw1, ...) takes its own domain id next to the run's (given, or from the pid).
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw"):  # the workers' parent is the run's controller: one base per run
    _base = int(os.environ.get("ROS_DOMAIN_ID", str(1 + os.getppid() % 90)))
    os.environ["ROS_DOMAIN_ID"] = str((_base + 1 + int(_worker[2:])) % 101)
else:
    os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))

# Fuzz tests: no per-example deadline (a planner call is slow by design, and the suite has no
# timed assertions); under CI the examples are derandomised, so a red run reproduces.
settings.register_profile("default", deadline=None, print_blob=True)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"


TINY_NAMO = """
domain: namo
tasks: {train: 2, test: 10}
contexts: {max_contexts: 3}
csi: {tasks: 2}
timeout_s: 20.0
selector: {max_iterations: 200}
"""


@pytest.fixture(scope="session")
def namo_tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a tiny NAMO configuration, a selector bundle trained on it with `camp train`): the
    real training path at a size that takes about a minute."""
    from camp_planner.cli import main

    root = tmp_path_factory.mktemp("namo_tiny")
    config = root / "tiny.yaml"
    config.write_text(TINY_NAMO)
    args = ["train", "--domain", "namo", "--planner", "tamp", "--config", str(config)]
    assert main([*args, "--workers", "1", "--artifacts", str(root / "artifacts")]) == 0
    (bundle,) = (root / "artifacts" / "namo" / "tamp" / "seed0").glob("selector-*.pt")
    return config, bundle
