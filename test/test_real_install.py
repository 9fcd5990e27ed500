"""The real-install procedure's pins (constraints/ros-jazzy.txt) fit the distro's numpy.

Beside an apt-installed ROS 2 on Ubuntu 24.04 the project's packages go into a venv that sees
the system's numpy 1.26.4, against which ROS's generated message code is built. These tests
check offline what can be checked here: the constraints file keeps numpy below 2, pins every
run-time package of requirements.txt, and every pinned package (or package they depend on)
that requires numpy is pinned at a version whose own declared numpy range admits the pinned
numpy, read from the metadata of the packages installed in this venv (the same versions, as
the second test makes sure). docs/real-install.md lists what is not checked.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints" / "ros-jazzy.txt"
DISTRO_NUMPY = Version("1.26.4")  # Ubuntu 24.04's python3-numpy, which Jazzy and Kilted use


def _pins(text: str, source: str) -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([0-9][0-9A-Za-z.+]*)", line)
        assert match, f"{source}: not an exact pin: {raw!r}"
        name = canonicalize_name(match.group(1))
        assert name not in pins, f"{source}: {name} pinned twice"
        pins[name] = Version(match.group(2))
    return pins


def _runtime_requirements() -> dict[str, Version]:
    """requirements.txt's science section: what the package imports at run time, ROS aside."""
    text = (ROOT / "requirements.txt").read_text()
    section = text.split("# --- science", 1)[1].split("# --- development", 1)[0]
    return _pins(section.split("\n", 1)[1], "requirements.txt")


def _numpy_requirements(dist: metadata.Distribution) -> list[Requirement]:
    env = {k: str(v) for k, v in default_environment().items()}
    found = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
            continue
        if canonicalize_name(req.name) == "numpy":
            found.append(req)
    return found


def _dependencies(dist: metadata.Distribution) -> list[str]:
    env = {k: str(v) for k, v in default_environment().items()}
    names: list[str] = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({**env, "extra": ""}):
            names.append(canonicalize_name(req.name))
    return names


def test_numpy_is_pinned_to_the_distros_below_2() -> None:
    pins = _pins(CONSTRAINTS.read_text(), CONSTRAINTS.name)
    assert pins.get("numpy") == DISTRO_NUMPY
    assert pins["numpy"] < Version("2")


def test_every_runtime_requirement_is_pinned_at_the_same_version() -> None:
    pins = _pins(CONSTRAINTS.read_text(), CONSTRAINTS.name)
    runtime = _runtime_requirements()
    assert {"numpy", "scipy", "torch", "pybullet", "ompl"} <= set(runtime), "section moved?"
    missing = sorted(set(runtime) - set(pins))
    assert not missing, f"runtime requirements not in {CONSTRAINTS.name}: {missing}"
    differ = {n: (str(runtime[n]), str(pins[n])) for n in runtime if n != "numpy"}
    differ = {n: v for n, v in differ.items() if v[0] != v[1]}
    assert not differ, (
        f"pins that differ from requirements.txt (requirements, constraints): {differ}"
    )
    assert not [n for n in pins if n.startswith("ros-")], "ROS comes from apt, not from pip"


def test_every_package_that_needs_numpy_is_pinned_and_admits_the_distros() -> None:
    pins = _pins(CONSTRAINTS.read_text(), CONSTRAINTS.name)
    seen: set[str] = set()
    todo = [n for n in pins if n != "numpy"]
    needs_numpy: dict[str, list[Requirement]] = {}
    while todo:
        name = todo.pop()
        if name in seen or name == "numpy":
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{name} is not installed here, so its metadata cannot be read")
        if name in pins and name != "numpy":
            installed = Version(dist.version)
            assert installed.public == pins[name].public, (
                f"{name}: {installed} installed, {pins[name]} pinned: metadata would not apply"
            )
        reqs = _numpy_requirements(dist)
        if reqs:
            needs_numpy[name] = reqs
        todo.extend(_dependencies(dist))
    assert {"scipy", "matplotlib", "contourpy"} <= set(needs_numpy), "metadata not read"
    unpinned = sorted(set(needs_numpy) - set(pins))
    assert not unpinned, f"packages that require numpy but are not pinned: {unpinned}"
    refused = {
        name: [str(r.specifier) for r in reqs if not r.specifier.contains(pins["numpy"])]
        for name, reqs in needs_numpy.items()
    }
    refused = {name: specs for name, specs in refused.items() if specs}
    assert not refused, f"pins whose numpy requirement refuses numpy {pins['numpy']}: {refused}"


def test_the_readme_procedure_uses_the_constraints_in_a_system_site_packages_venv() -> None:
    text = (ROOT / "README.md").read_text()
    section = text.split("### On a real ROS 2 install", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    for needed in (
        "python3 -m venv --system-site-packages",
        "COLCON_IGNORE",
        "pip install -c constraints/ros-jazzy.txt",
        "https://download.pytorch.org/whl/cpu",
        "python -m colcon build --base-paths",
    ):
        assert needed in block, f"the real-install commands lack {needed!r}"
    command = block.split("pip install", 1)[1].split("\npython", 1)[0]
    named = {canonicalize_name(w) for w in re.findall(r"(?<![-/\w])[a-z][\w-]+", command)}
    top = set(_runtime_requirements())
    missing = sorted(top - named)
    assert not missing, f"the pip install line does not name {missing}"
    assert "--break-system-packages" not in block
