"""Shared fixtures: an isolated artifacts folder and a ROS domain id per test process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Nothing may leave loopback, and parallel runs must not see each other.
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
os.environ.setdefault("ROS_DOMAIN_ID", str(1 + os.getpid() % 100))


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    return tmp_path / "artifacts"
