"""Version check of the packages robot_collision cannot run without, at ``import robot_collision``.

A ROS 2 user runs the system Python of their distribution with apt's numpy, scipy and lxml
(Humble: Python 3.10, numpy 1.21.5; Jazzy: Python 3.12, numpy 1.26.4) and pip-installs the rest
(``requirements-ros-user.txt``). Where a version cannot work, importing the package raises
:class:`ImportError` naming the package, the version found, where it was found, and the command
that fixes it, instead of a numba error or a segmentation fault later.

Only distribution metadata is read (``importlib.metadata``, a few milliseconds): nothing is
imported here, so the console scripts' stop handlers are still installed before numpy and numba
load (``robot_collision.ros.entry``). ``ROBOT_COLLISION_SKIP_VERSION_CHECK=1`` turns the check off.

``python -m robot_collision._compat`` prints the versions found, the optional packages included
(it imports the package, so it runs only where the check passed).
"""

from __future__ import annotations

import os
import re
import sys
from typing import Optional

__all__ = ["MINIMUM", "OPTIONAL", "Problem", "check_versions", "fix_command", "problems"]

# distribution name -> (minimum version, why). The minimums are the oldest versions the test
# suite passed with (scripts/compat_matrix.py; README "Tested Python and package versions"),
# except numpy's, which is numba's own minimum (1.22; tested: 1.22.4, 1.24.4, 1.26.4, 2.x).
MINIMUM: dict[str, tuple[str, str]] = {
    "numpy": ("1.22", "numba needs numpy >= 1.22"),
    "numba": ("0.63", "numba 0.62.1 and older crash (segmentation fault) when a process loads "
              "the compiled kernels from numba's cache (numba issue #8578), as every node does "
              "after `colcon build`"),
    "scipy": ("1.8", "oldest version tested (Ubuntu 22.04's python3-scipy)"),
    "lxml": ("4.8", "oldest version tested (Ubuntu 22.04's python3-lxml)"),
    "PyYAML": ("5.4", "oldest version tested (Ubuntu 22.04's python3-yaml)"),
}
# Imported only by the parts that use them (filter QP, trajectory timing, mesh files,
# decomposition): reported by ``python -m robot_collision._compat``, not checked at import.
OPTIONAL: dict[str, str] = {
    "daqp": "0.11",
    "toppra": "0.6.10",
    "trimesh": "5.2",
    "pycollada": "0.9.3",
    "coacd": "1.0.14",
    "matplotlib": "3.5",
}
_IMPORT_NAME = {"PyYAML": "yaml", "pycollada": "collada"}


class Problem:
    """One unusable dependency: ``name``, ``found`` (version or None when missing), ``where``."""

    def __init__(self, name: str, found: Optional[str], where: str, need: str, why: str):
        self.name, self.found, self.where, self.need, self.why = name, found, where, need, why

    def __str__(self) -> str:
        if self.found is None:
            return f"{self.name} is not installed (needed: >= {self.need})"
        return (f"{self.name} {self.found} ({self.where}) is too old: need >= {self.need} "
                f"({self.why})")


def _version_tuple(text: str) -> tuple[int, ...]:
    """Leading numeric release of a version string: '1.26.4' -> (1, 26, 4), '0.63.0rc1' ->
    (0, 63, 0)."""
    parts = []
    for piece in text.split("."):
        m = re.match(r"\d+", piece)
        if m is None:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):
            break
    return tuple(parts)


_INFO = re.compile(r"^[^-]+-(?P<version>[^-]+?)(-py\d[\d.]*)?\.(dist|egg)-info$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _installed(name: str) -> tuple[Optional[str], str]:
    """(version or None, location) of distribution ``name`` as this Python would import it: the
    first ``<name>-<version>.dist-info`` / ``.egg-info`` (apt's packages have those) along
    ``sys.path``. Read from folder names: ``importlib.metadata`` took 60 ms for these five
    (it parses each METADATA file; scipy's holds its licences)."""
    want = _norm(name)
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for item in names:
            if not item.endswith("-info") or _norm(item.partition("-")[0]) != want:
                continue
            m = _INFO.match(item)
            if m is not None:
                return m.group("version"), entry
    import importlib.util

    # a module without metadata (e.g. a source checkout on sys.path): cannot judge its version
    module = _IMPORT_NAME.get(name, name)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        return "unknown", str(spec.origin)
    return None, ""


def problems() -> list[Problem]:
    """The required packages that are missing or older than :data:`MINIMUM`."""
    out = []
    for name, (need, why) in MINIMUM.items():
        found, where = _installed(name)
        if found is None or (found != "unknown"
                             and _version_tuple(found) < _version_tuple(need)):
            out.append(Problem(name, found, where, need, why))
    return out


def _spec(problem: Problem) -> str:
    if problem.name == "numpy" and sys.version_info < (3, 11):
        # Ubuntu 22.04 (Humble): apt's scipy 1.8 requires numpy < 1.25
        return "'numpy>=1.22,<1.25'"
    if problem.name == "numpy":
        return "'numpy>=1.22,<2'"
    return f"'{problem.name}>={problem.need}'"


def fix_command(found: list[Problem]) -> str:
    """The shell command(s) that install what ``found`` lacks into this Python."""
    specs = " ".join(_spec(p) for p in found)
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    if in_venv:
        return (f"{sys.executable} -m pip install {specs}\n"
                "  (everything apt lacks at once: pip install -r requirements-ros-user.txt, in the "
                "robot_collision repository)")
    # the system Python of a ROS install: never pip-install into it (apt owns numpy there)
    return ("python3 -m venv --system-site-packages ~/ros_venv && touch ~/ros_venv/COLCON_IGNORE"
            " && ~/ros_venv/bin/pip install -r src/robot_collision/requirements-ros-user.txt\n"
            "  then, in every shell: source ~/ros_venv/bin/activate (after the ROS setup.bash),"
            " and build with `python -m colcon build ...`\n"
            f"  (or, if this Python is yours to change: {sys.executable} -m pip install {specs})")


def check_versions() -> None:
    """Raise :class:`ImportError` when a required package is missing or too old."""
    if os.environ.get("ROBOT_COLLISION_SKIP_VERSION_CHECK", "") not in ("", "0"):
        return
    found = problems()
    if not found:
        return
    lines = "\n".join(f"  - {p}" for p in found)
    raise ImportError(
        f"robot_collision cannot run with this Python ({sys.executable}, "
        f"{sys.version.split()[0]}):\n{lines}\nFix:\n  {fix_command(found)}\n"
        "(README 'On a real arm'; ROBOT_COLLISION_SKIP_VERSION_CHECK=1 skips this check)"
    )


def _report() -> int:
    print(f"Python {sys.version.split()[0]} ({sys.executable})")
    for name, (need, _) in MINIMUM.items():
        found, where = _installed(name)
        print(f"  {name:<10} {found or 'MISSING':<10} (>= {need})  {where}")
    for name, need in OPTIONAL.items():
        found, where = _installed(name)
        print(f"  {name:<10} {found or 'missing':<10} (>= {need}, optional)  {where}")
    unusable = problems()
    if unusable:
        print("not usable:\n" + "\n".join(f"  - {p}" for p in unusable))
        print("fix:\n  " + fix_command(unusable))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(_report())
