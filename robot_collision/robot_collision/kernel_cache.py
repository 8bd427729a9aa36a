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

:func:`copy_kernel_caches` fills a cold copy of the package from another copy that holds the same
sources (``colcon test`` imports the source tree, ``colcon build`` compiled the install's).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

__all__ = ["CACHE_SUFFIXES", "STAMP_NAME", "cached_kernel_files", "copy_kernel_caches",
           "drop_stale_kernel_caches", "ensure_fresh_kernel_caches", "jit_disabled",
           "sources_digest"]

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


def _one_file_per_folder(package_dir: Path) -> list[Path]:
    """The first ``.py`` file of each of the package's folders (numba locates a cache folder
    from a source file)."""
    first: dict[Path, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        if "__pycache__" not in path.parts:
            first.setdefault(path.parent, path)
    return [first[folder] for folder in sorted(first)]


def _stamped(cache: Path, digest: str) -> bool:
    """True when the cache folder's stamp is ``digest``."""
    try:
        return (cache / STAMP_NAME).read_text(encoding="ascii").strip() == digest
    except OSError:
        return False


def _stamp(cache: Path, digest: str) -> None:
    tmp = cache / f"{STAMP_NAME}.{os.getpid()}"
    tmp.write_text(digest + "\n", encoding="ascii")
    os.replace(tmp, cache / STAMP_NAME)


def drop_stale_kernel_caches(package_dir: Path = _PACKAGE_DIR) -> list[Path]:
    """Delete the cached kernels of the package's folders whose stamp is not the current
    sources digest, and stamp them; returns the folders cleared. Never raises."""
    if os.environ.get("ROBOT_COLLISION_KEEP_KERNEL_CACHE", "") not in ("", "0"):
        return []
    cleared: list[Path] = []
    try:
        digest = sources_digest(package_dir)
        for py_file in _one_file_per_folder(package_dir):
            cache = _cache_folder(py_file)
            if cache is None or not cache.is_dir() or _stamped(cache, digest):
                continue
            try:
                for f in list(cache.iterdir()):
                    if f.suffix in CACHE_SUFFIXES:
                        f.unlink(missing_ok=True)
                _stamp(cache, digest)
                cleared.append(cache)
            except OSError:
                continue  # read-only: numba cannot write there either
    except Exception:  # the check must never keep the package from loading
        return cleared
    return cleared


def copy_kernel_caches(source_dir: Path, package_dir: Path = _PACKAGE_DIR) -> int:
    """Copy the cached kernels of another copy of the package (``source_dir``) into this one's
    cache folders, when both hold the same sources (:func:`sources_digest`) and the other's
    caches are stamped with them; returns the number of files copied (0 otherwise). numba
    accepts the copies: it stamps a cache entry by its source file's contents (numba >= 0.68)
    or mtime and size (older; ``colcon build``'s install and :func:`shutil.copy2` keep both).
    Used by the test session when ``colcon test`` imports the source tree that ``colcon build``
    installed and compiled (saves compiling every kernel again, ~5 min on 2 cores). Never
    raises."""
    copied = 0
    try:
        source_dir, package_dir = Path(source_dir).resolve(), Path(package_dir).resolve()
        if source_dir == package_dir or jit_disabled():
            return 0
        digest = sources_digest(package_dir)
        if sources_digest(source_dir) != digest:
            return 0
        for py_file in _one_file_per_folder(package_dir):
            dst = _cache_folder(py_file)
            src = _cache_folder(source_dir / py_file.relative_to(package_dir))
            if dst is None or src is None or not src.is_dir() or not _stamped(src, digest):
                continue
            files = [f for f in src.iterdir() if f.suffix in CACHE_SUFFIXES]
            if not files:
                continue
            dst.mkdir(parents=True, exist_ok=True)
            for f in files:
                shutil.copy2(f, dst / f.name)
            _stamp(dst, digest)
            copied += len(files)
    except Exception:  # a cache that cannot be copied is compiled instead
        return copied
    return copied


def ensure_fresh_kernel_caches() -> None:
    """:func:`drop_stale_kernel_caches` for the package, the first time it is called in this
    process."""
    if not _CHECKED:
        _CHECKED.append(True)
        drop_stale_kernel_caches()
