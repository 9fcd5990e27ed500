# camp_planner: the two commands are `make demo` and `make test`; each runs `make setup` first.
# Set-up is idempotent: stamp files make a second run with nothing changed take seconds.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMPS := $(VENV)/.stamps
PYTHON ?= python3
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export PIP_DISABLE_PIP_VERSION_CHECK := 1

MSGS_SRC := $(shell find src/camp_msgs -type f 2>/dev/null)
# Subsets of control_msgs and nav2_msgs (no PyPI wheels), built into the venv like camp_msgs;
# on a ROS 2 install the real packages are used (src/ros_subsets/README.md).
SUBSETS_SRC := $(shell find src/ros_subsets -type f 2>/dev/null)

.PHONY: setup demo test check lint format typecheck pytest pytest-fast bench bench-dinner clean
setup: $(STAMPS)/msgs $(STAMPS)/ros_subsets $(STAMPS)/package

$(STAMPS)/venv:
	$(PYTHON) -m venv $(VENV)
	@mkdir -p $(STAMPS) && touch $@

$(STAMPS)/requirements: requirements.txt scripts/fix_ros_wheel_cmake.sh $(STAMPS)/venv
	$(PIP) install --quiet -r requirements.txt
	scripts/fix_ros_wheel_cmake.sh $(VENV)
	@touch $@

# $(call build_interfaces,NAME,SOURCE DIR): configure, build and install one rosidl package
# into the venv; each step's log is printed only when the step fails.
define build_interfaces
	@mkdir -p build
	cmake -S $(2) -B build/$(1) -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_PREFIX_PATH=$(CURDIR)/$(VENV) -DCMAKE_INSTALL_PREFIX=$(CURDIR)/$(VENV) \
	  -DPython3_EXECUTABLE=$(CURDIR)/$(PY) -DBUILD_TESTING=OFF > build/$(1).cmake.log 2>&1 \
	  || { cat build/$(1).cmake.log; exit 1; }
	cmake --build build/$(1) -j2 > build/$(1).build.log 2>&1 || { cat build/$(1).build.log; exit 1; }
	cmake --install build/$(1) > /dev/null
endef

$(STAMPS)/msgs: $(MSGS_SRC) $(STAMPS)/requirements
	$(call build_interfaces,camp_msgs,src/camp_msgs)
	$(PY) -c 'from camp_msgs.msg import Context, Candidate; from camp_msgs.srv import SelectContext; from camp_msgs.action import PlanTask; from camp_msgs.msg import Plan'
	@touch $@

$(STAMPS)/ros_subsets: $(SUBSETS_SRC) $(STAMPS)/requirements
	$(call build_interfaces,control_msgs,src/ros_subsets/control_msgs)
	$(call build_interfaces,nav2_msgs,src/ros_subsets/nav2_msgs)
	$(PY) -c 'from control_msgs.action import FollowJointTrajectory, GripperCommand; from control_msgs.msg import JointTolerance, JointComponentTolerance; from nav2_msgs.action import FollowPath, NavigateThroughPoses'
	@touch $@

$(STAMPS)/package: setup.py setup.cfg package.xml $(STAMPS)/requirements
	$(PIP) install --quiet --no-deps --no-build-isolation -e .
	@touch $@

# NAMO over ROS 2 in a closed loop (own ROS_DOMAIN_ID, loopback discovery): the executor drives
# the simulated robot through its controller actions, a box is pushed onto its path, it replans
# from where it stands and reaches the goal; artifacts/ros/namo_closed_loop_1.png shows it.
# `camp demo` is the gridworld side-by-side.
demo: setup
	$(VENV)/bin/camp bringup namo --closed-loop --once

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: setup
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

typecheck: setup
	$(VENV)/bin/mypy

# One worker per core (pytest-xdist; each worker its own ROS domain id, test/conftest.py), a
# test file's tests on one worker so its module fixtures are built once. The investigations'
# tests are outside the default run (testpaths), so they run on their own.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
pytest: setup
	$(VENV)/bin/pytest -n $(JOBS) --dist loadfile
	$(VENV)/bin/pytest -n $(JOBS) --dist loadfile research -m research

test: lint typecheck pytest

# The edit loop: lint, types and the tests not marked slow (about a minute or two).
pytest-fast: setup
	$(VENV)/bin/pytest -n $(JOBS) --dist loadfile -m "not slow" -q

check: lint typecheck pytest-fast

bench: setup
	$(PY) scripts/bench_gridworld.py --tasks 10 --json artifacts/bench_gridworld.json \
	  --plot artifacts/bench_gridworld.png

bench-dinner: setup
	$(PY) scripts/bench_dinner.py --sizes 0 50 100 200 --tasks 3 --repeats 3 \
	  --json artifacts/bench_dinner.json --plot artifacts/bench_dinner.png
	$(PY) scripts/bench_dinner.py --sizes 0 50 100 200 --tasks 3 --repeats 3 --mode resident \
	  --json artifacts/bench_dinner_resident.json --plot artifacts/bench_dinner_resident.png

clean:
	rm -rf build $(VENV) .mypy_cache .pytest_cache .ruff_cache
