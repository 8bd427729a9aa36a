"""Numba's cached kernels are dropped when any source file of the package changed.

numba checks a cached function against its *own* source file only (numba >= 0.63: a hash of
that file). Our kernels inline functions of other modules (``rrt_kernels`` calls
``collision.kernels``): after an upgrade that changes ``kernels.py`` but not
``rrt_kernels.py`` (``git pull`` + ``colcon build``, a package upgrade that keeps a file's
``__pycache__``), the planner would load its old compiled code, with the old collision
kernels inlined, and give the old verdicts without a word (measured: a changed ``kernels.py``
was ignored by the planner until the cache files were deleted).

:func:`ensure_fresh_kernel_caches` runs once per process, from the ``__init__`` of every
subpackage that holds kernels (so before any kernel is compiled or loaded; not from the package
facade, which must stay free of numpy/numba for the nodes' stop handlers). It calls
:func:`drop_stale_kernel_caches`: a hash of the contents of every ``.py`` file of the package
(~3 ms), kept in a stamp file in each cache folder numba uses for the package's folders (the
folder's ``__pycache__``, or the user-wide / ``NUMBA_CACHE_DIR`` one where that is not
writable, found with numba's own locators); where the stamp differs, the folder's ``.nbi`` /
``.nbc`` files are deleted first. Several processes starting at once may each delete: harmless
(a deleted cache is compiled again). ``ROBOT_COLLISION_KEEP_KERNEL_CACHE=1`` skips the check.
"""

from __future__ import annotations

import hashlib
import os
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

__all__ = ["CACHE_SUFFIXES", "STAMP_NAME", "cached_kernel_files", "drop_stale_kernel_caches",
           "ensure_fresh_kernel_caches", "jit_disabled", "sources_digest"]

STAMP_NAME = "robot_collision-sources.sha256"
"""The stamp file kept next to the cached kernels of each package folder."""

CACHE_SUFFIXES = (".nbi", ".nbc")
"""numba's cache files: the index (``.nbi``, one per cached function) and the compiled code
(``.nbc``)."""

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKED: list[bool] = []


def sources_digest(package_dir: Path = _PACKAGE_DIR) -> str:
    """sha256 over the relative paths and contents of every ``.py`` file below
    ``package_dir`` (sorted)."""
    h = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        h.update(str(path.relative_to(package_dir)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def jit_disabled() -> bool:
    """True under ``NUMBA_DISABLE_JIT`` (set to anything but 0): kernels run as Python, nothing
    is compiled or cached."""
    return os.environ.get("NUMBA_DISABLE_JIT", "") not in ("", "0")


def cached_kernel_files(root: Path = _PACKAGE_DIR,
                        suffixes: tuple[str, ...] = CACHE_SUFFIXES) -> Iterator[Path]:
    """numba's cache files (``suffixes``) anywhere below ``root`` (the package's
    ``__pycache__`` folders, or a ``NUMBA_CACHE_DIR``)."""
    for suffix in suffixes:
        yield from root.rglob(f"*{suffix}")


def _cache_folder(py_file: Path) -> Optional[Path]:
    """The folder numba caches ``py_file``'s functions in (its own choice of locator), or None
    when numba's internals differ from what this was written against."""
    try:
        from numba.core.caching import CompileResultCacheImpl

        def probe() -> None:  # pragma: no cover - never called
            pass

        fn = types.FunctionType(probe.__code__.replace(co_filename=str(py_file)), {}, "probe")
        return Path(CompileResultCacheImpl(fn).locator.get_cache_path())
    except Exception:  # another numba: leave its caches alone
        return None


def drop_stale_kernel_caches(package_dir: Path = _PACKAGE_DIR) -> list[Path]:
    """Delete the cached kernels of the package's folders whose stamp is not the current
    sources digest, and stamp them; returns the folders cleared. Never raises."""
    if os.environ.get("ROBOT_COLLISION_KEEP_KERNEL_CACHE", "") not in ("", "0"):
        return []
    cleared: list[Path] = []
    try:
        digest = sources_digest(package_dir)
        folders = {p.parent for p in package_dir.rglob("*.py") if "__pycache__" not in p.parts}
        for folder in sorted(folders):
            py_file = next(iter(sorted(folder.glob("*.py"))), None)
            cache = _cache_folder(py_file) if py_file is not None else None
            if cache is None or not cache.is_dir():
                continue
            stamp = cache / STAMP_NAME
            try:
                if stamp.read_text(encoding="ascii").strip() == digest:
                    continue
            except OSError:
                pass
            try:
                for f in list(cache.iterdir()):
                    if f.suffix in CACHE_SUFFIXES:
                        f.unlink(missing_ok=True)
                tmp = cache / f"{STAMP_NAME}.{os.getpid()}"
                tmp.write_text(digest + "\n", encoding="ascii")
                os.replace(tmp, stamp)
                cleared.append(cache)
            except OSError:
                continue  # read-only: numba cannot write there either
    except Exception:  # the check must never keep the package from loading
        return cleared
    return cleared


def ensure_fresh_kernel_caches() -> None:
    """:func:`drop_stale_kernel_caches` for the package, the first time it is called in this
    process."""
    if not _CHECKED:
        _CHECKED.append(True)
        drop_stale_kernel_caches()
