"""Compiled kernels at node start-up: compiled once at install time, loaded and logged at start.

The nodes' hot paths are numba kernels. numba compiles a kernel on its first call (tens of
seconds for the whole package on 2 cores) and caches the machine code on disk next to the
module (``__pycache__``), or under ``NUMBA_CACHE_DIR`` when that is set; a cached kernel loads
in well under a second. So that the first ``ros2 launch`` after ``colcon build`` does not sit
compiling:

- ``setup.py install`` (what ``colcon build`` runs) ends with :func:`precompile` run on the
  *installed* package (``python -m robot_collision.ros.startup --precompile``): every kernel the
  nodes use is compiled into the install's ``__pycache__`` folders. A stamp of the installed
  sources (:data:`STAMP_NAME`) skips the step when nothing changed, and when something did,
  every cached kernel is dropped first (kernels inline kernels of other modules; numba checks
  only a kernel's own file, so a partly stale cache could run old code).
  ``ROBOT_COLLISION_PRECOMPILE=0`` turns the step off.
- Each node wraps its first kernel calls in :class:`KernelWarmUp`, which logs what it is doing
  before (``loading compiled kernels ...``), every few seconds while it lasts (a cold cache
  compiles), and after (how long, how many kernels were loaded from the cache or compiled, and
  where the cache is).

Where the install is not writable for the user running the nodes, numba falls back to its
per-user cache (``~/.cache/numba`` or ``NUMBA_CACHE_DIR``) and the first start compiles.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Optional

__all__ = [
    "STAMP_NAME",
    "KernelWarmUp",
    "drop_cached_kernels",
    "main",
    "precompile",
    "sources_fingerprint",
]

STAMP_NAME = ".kernels-compiled"
"""File in the package folder holding the fingerprint of the sources its kernels were
compiled from (see :func:`sources_fingerprint`)."""

HEARTBEAT = 5.0
"""Seconds between the "still loading or compiling" log lines of :class:`KernelWarmUp`."""


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def sources_fingerprint(package_dir: Optional[Path] = None) -> str:
    """Hash of the package's sources (:func:`robot_collision.kernel_cache.sources_digest`), the
    Python version and the numba and llvmlite versions: what the compiled kernels depend on."""
    import llvmlite  # type: ignore[import-untyped]
    import numba

    from ..kernel_cache import sources_digest

    h = hashlib.sha256()
    h.update(f"{sys.version}|{numba.__version__}|{llvmlite.__version__}|".encode())
    h.update(sources_digest(package_dir or _package_dir()).encode())
    return h.hexdigest()


def drop_cached_kernels(package_dir: Optional[Path] = None) -> int:
    """Delete numba's cache files (``*.nbi``, ``*.nbc``) under the package; returns how many."""
    from ..kernel_cache import cached_kernel_files

    count = 0
    for path in list(cached_kernel_files(package_dir or _package_dir())):
        path.unlink(missing_ok=True)
        count += 1
    return count


def precompile(parts: Sequence[str] = ()) -> float:
    """Compile (or load) every kernel the nodes use, in this process; returns seconds taken.

    ``parts``: those of :data:`robot_collision.tools.warmup.WARM_UP_PARTS` (empty = all of
    them, plus the collision checker node's ``ClearanceTable`` writer)."""
    from ..tools.warmup import WARM_UP_PARTS, warm_up

    t0 = time.perf_counter()
    warm_up(parts or WARM_UP_PARTS)
    if not parts:
        from .. import CollisionChecker, RobotModel, default_robot_paths
        from .cdr import ClearanceTableWriter

        robot = RobotModel.from_urdf(default_robot_paths()[0])
        table = CollisionChecker(robot).clearance(robot.home_configuration())
        ClearanceTableWriter().serialize(table, 0, 0, "base")
    return time.perf_counter() - t0


def _precompile_installed(force: bool, parallel: bool = True) -> int:
    """The ``--precompile`` command: compile into this (installed) package's cache unless its
    stamp says the cache was made from the same sources."""
    from ..tools.warmup import kernel_cache_stats, warm_up_in_processes

    root = _package_dir()
    stamp = root / STAMP_NAME
    fingerprint = sources_fingerprint(root)
    if not force and stamp.is_file() and stamp.read_text().strip() == fingerprint:
        print(f"robot_collision: compiled kernels in {root} are up to date")
        return 0
    dropped = drop_cached_kernels(root)
    stamp.unlink(missing_ok=True)
    print(f"robot_collision: compiling the kernels into {root} (dropped {dropped} stale cache "
          "files); this takes a minute or two ...", flush=True)
    t0 = time.perf_counter()
    if parallel:
        warm_up_in_processes()
    # everything, in this process: loads what the parallel processes compiled, compiles what
    # is still missing (a failed part; an index entry lost to the two processes' writes)
    precompile()
    stats = kernel_cache_stats()
    stamp.write_text(fingerprint + "\n")
    print(f"robot_collision: kernels compiled in {time.perf_counter() - t0:.0f} s (final pass: "
          f"{stats.loaded} loaded from the cache, {stats.compiled} compiled; cache: "
          f"{stats.cache_dir})", flush=True)
    return 0


class KernelWarmUp:
    """Context manager around a node's first kernel calls: logs ``what`` is being prepared,
    "still compiling" every :data:`HEARTBEAT` s while it lasts, and the outcome.

    Usage::

        with KernelWarmUp(self.get_logger(), "collision kernels"):
            checker.clearance(q, world, 0.3)
    """

    def __init__(self, logger: Any, what: str) -> None:
        self._log = logger
        self._what = what
        self._done = threading.Event()
        self._t0 = 0.0
        self._before: Any = None

    def __enter__(self) -> KernelWarmUp:
        from ..tools.warmup import kernel_cache_stats

        self._before = kernel_cache_stats()
        self._t0 = time.monotonic()
        self._log.info(f"loading the compiled {self._what} (numba; a first start without a "
                       "kernel cache compiles them: up to a minute or two)")
        threading.Thread(target=self._heartbeat, name="warm_up_log", daemon=True).start()
        return self

    def _heartbeat(self) -> None:
        while not self._done.wait(HEARTBEAT):
            self._log.info(f"still loading or compiling the {self._what} "
                           f"({time.monotonic() - self._t0:.0f} s so far)")

    def __exit__(self, exc_type: Optional[type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        from ..tools.warmup import kernel_cache_stats

        self._done.set()
        if exc_type is not None:
            return
        dt = time.monotonic() - self._t0
        stats = kernel_cache_stats().since(self._before)
        how = (f"{stats.compiled} compiled, {stats.loaded} loaded from the cache"
               if stats.compiled else f"{stats.loaded} loaded from the cache")
        self._log.info(f"{self._what} ready in {dt:.1f} s ({how}; cache: {stats.cache_dir})")


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m robot_collision.ros.startup",
        description="Compile the kernels of this robot_collision installation into its numba "
                    "cache (run by setup.py install, i.e. colcon build).")
    ap.add_argument("--precompile", action="store_true", required=True,
                    help="compile into the package's __pycache__ folders")
    ap.add_argument("--force", action="store_true", help="even if the stamp is up to date")
    ap.add_argument("--serial", action="store_true", help="one process instead of one per part")
    args = ap.parse_args(argv)
    from ..kernel_cache import jit_disabled

    if jit_disabled():
        print("robot_collision: NUMBA_DISABLE_JIT=1, nothing to compile")
        return 0
    return _precompile_installed(args.force, parallel=not args.serial)


if __name__ == "__main__":
    raise SystemExit(main())
