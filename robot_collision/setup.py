"""ament_python build script of robot_collision.

Works with colcon on a ROS 2 install and with pip in a plain venv
(`pip install -e . --no-build-isolation`). Installed data, relative to the install prefix:

- share/ament_index/resource_index/packages/robot_collision (ament index marker)
- share/robot_collision/package.xml
- share/robot_collision/launch/*.py, share/robot_collision/config/*.yaml
- share/robot_collision/urdf/** (the default robot models, sub-folders kept)

`setup.py install` also compiles the kernels of the installed package (InstallAndCompile).
"""

from __future__ import annotations

import os
from glob import glob

from setuptools import find_packages, setup
from setuptools.command.install import install

PACKAGE = "robot_collision"
HERE = os.path.dirname(os.path.abspath(__file__))


def _version() -> str:
    """Read the version from package.xml, the single source of truth."""
    import re

    with open(os.path.join(HERE, "package.xml"), encoding="utf-8") as f:
        match = re.search(r"<version>\s*([^<\s]+)\s*</version>", f.read())
    if match is None:
        raise RuntimeError("package.xml has no <version>")
    return match.group(1)


def _files(pattern: str) -> list[str]:
    """Files (not folders) matching a glob relative to this directory, sorted, as relative paths."""
    return sorted(
        os.path.relpath(p, HERE) for p in glob(os.path.join(HERE, pattern)) if os.path.isfile(p)
    )


def _tree(folder: str) -> list[tuple[str, list[str]]]:
    """data_files entries installing every file under `folder` to share/<pkg>/<folder>/..."""
    entries: list[tuple[str, list[str]]] = []
    root = os.path.join(HERE, folder)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
        files = sorted(
            os.path.relpath(os.path.join(dirpath, f), HERE)
            for f in filenames
            if not f.startswith(".")
        )
        if files:
            rel = os.path.relpath(dirpath, HERE)
            entries.append((os.path.join("share", PACKAGE, rel), files))
    return entries


class InstallAndCompile(install):
    """``setup.py install`` (what ``colcon build`` runs), then compile the installed package's
    numba kernels into its ``__pycache__`` folders, so that the nodes' first start loads them
    instead of compiling for a minute (robot_collision/ros/startup.py). Skipped for staged
    installs (``--root``: wheels, Debian packages) and with ROBOT_COLLISION_PRECOMPILE=0; a
    failure is reported and does not fail the install (the nodes then compile at first start)."""

    def run(self) -> None:
        super().run()
        if self.root or os.environ.get("ROBOT_COLLISION_PRECOMPILE", "1") == "0":
            return
        import subprocess
        import sys
        import time

        lib = os.path.abspath(self.install_lib)
        env = dict(os.environ)
        env["PYTHONPATH"] = lib + os.pathsep + env.get("PYTHONPATH", "")
        # the default robot is read from the install's share/ folder (found through the
        # ament index, which this install is not yet part of)
        prefix = os.path.abspath(self.install_data)
        env["AMENT_PREFIX_PATH"] = prefix + os.pathsep + env.get("AMENT_PREFIX_PATH", "")
        t0 = time.monotonic()
        # cwd = the install: `python -m` puts it first on sys.path, ahead of the source tree
        rc = subprocess.call(
            [sys.executable, "-m", PACKAGE + ".ros.startup", "--precompile"], cwd=lib, env=env)
        if rc != 0:
            print(f"warning: {PACKAGE}: compiling the kernels failed (exit {rc}, "
                  f"{time.monotonic() - t0:.0f} s); the nodes will compile them at their first "
                  "start", file=sys.stderr)


packages = find_packages(include=[PACKAGE, PACKAGE + ".*"])
if PACKAGE not in packages:
    packages.insert(0, PACKAGE)

setup(
    name=PACKAGE,
    version=_version(),
    description="Collision checking, a collision-avoiding velocity filter and motion planning "
    "for robot arms, with ROS 2 nodes",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=packages,
    package_data={PACKAGE: ["py.typed"]},
    include_package_data=False,
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        ("share/" + PACKAGE + "/launch", _files("launch/*.py")),
        ("share/" + PACKAGE + "/config", _files("config/*.yaml")),
        *_tree("urdf"),
    ],
    # Lower bounds only: the oldest versions the core test suite passed with (numpy: numba's
    # minimum; scripts/compat_matrix.py, README "Tested Python and package versions"), checked
    # again at import (robot_collision/_compat.py). No upper bounds, so pip keeps what is
    # installed wherever it satisfies them: apt's numpy/scipy/lxml on a ROS install (pip
    # resolves numpy against the installed scipy's own cap). colcon (`setup.py install` /
    # `develop`) installs none of these: on a ROS install they come from apt (package.xml) and
    # requirements-ros-user.txt; the development venv has exact pins (requirements.txt).
    install_requires=[
        "numpy>=1.22",
        "scipy>=1.8",
        "lxml>=4.8",
        "PyYAML>=5.4",
        "matplotlib>=3.5",
        "numba>=0.63",  # 0.62.1 and older crash loading cached kernels (numba issue #8578)
        "daqp>=0.11",
        "toppra>=0.6.10",
        "trimesh>=5.2",
        "pycollada>=0.9.3",
        "coacd>=1.0.14",
    ],
    # `colcon test` runs pytest only when pytest is declared as a test requirement
    # (colcon-core reads tests_require and extras_require["test"]); tests_require is deprecated.
    extras_require={"test": ["pytest", "hypothesis"]},
    cmdclass={"install": InstallAndCompile},
    zip_safe=False,
    entry_points={
        "console_scripts": [
            # the nodes start through ros.entry: stop signals handled before the heavy imports
            "collision_checker = robot_collision.ros.entry:collision_checker",
            "velocity_filter = robot_collision.ros.entry:velocity_filter",
            "planner = robot_collision.ros.entry:planner",
            "mock_arm = robot_collision.ros.entry:mock_arm",
            "mock_camera = robot_collision.ros.entry:mock_camera",
            "robot_collision_bringup = robot_collision.ros.entry:bringup",
            "robot_collision_demo = robot_collision.ros.demo:main",
            "robot_collision = robot_collision.tools.cli:main",
        ],
    },
)
