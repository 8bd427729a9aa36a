"""Cached kernels go when any package source changes (numba checks only a kernel's own file)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from robot_collision.kernel_cache import (
    STAMP_NAME,
    copy_kernel_caches,
    drop_stale_kernel_caches,
    sources_digest,
)


def _package(tmp: Path) -> Path:
    """A two-module package: ``outer.run`` (cached) inlines ``inner.value``."""
    pkg = tmp / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "inner.py").write_text(textwrap.dedent("""
        from numba import njit

        @njit(cache=True)
        def value():
            return 1
    """))
    (pkg / "outer.py").write_text(textwrap.dedent("""
        from numba import njit
        from .sub.inner import value

        @njit(cache=True)
        def run():
            return value() + 10
    """))
    return pkg


def _run(tmp: Path, drop: bool, result: str = "run()") -> int:
    """In a new process importing ``tmp/pkg`` (after the package's cache check when ``drop``,
    as the package's own modules do): the integer ``result`` evaluates to."""
    lines = ["import sys", "from pathlib import Path",
             "from robot_collision.kernel_cache import drop_stale_kernel_caches"]
    if drop:
        lines.append("drop_stale_kernel_caches(Path(sys.argv[1]) / 'pkg')")
    lines += ["from pkg.outer import run", f"print({result})"]
    code = "\n".join(lines)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp), *sys.path])}
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", code, str(tmp)], env=env, check=True,
                         capture_output=True, text=True, timeout=300)
    return int(out.stdout.strip().splitlines()[-1])


def test_a_change_in_an_inlined_module_reaches_its_caller(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    assert _run(tmp_path, drop=True) == 11
    assert list((pkg / "__pycache__").glob("outer.run-*.nbi"))
    # a different size, not only different bytes: Python's bytecode cache takes a source with
    # the same size and the same mtime second as unchanged, and this edit may land in the
    # second the first run wrote it (CI saw 11 here on Python 3.12)
    (pkg / "sub" / "inner.py").write_text((pkg / "sub" / "inner.py").read_text()
                                          .replace("return 1", "return 2  # changed"))
    # numba alone keeps the caller's cached code (the reason for kernel_cache) ...
    assert _run(tmp_path, drop=False) == 11
    # ... the check drops it
    assert _run(tmp_path, drop=True) == 12
    assert (pkg / "__pycache__" / STAMP_NAME).read_text().strip() == sources_digest(pkg)


def test_unchanged_sources_keep_the_cache(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    assert _run(tmp_path, drop=True) == 11
    cached = sorted((pkg / "__pycache__").glob("*.nb*"))
    assert cached
    assert drop_stale_kernel_caches(pkg) == []
    assert sorted((pkg / "__pycache__").glob("*.nb*")) == cached


def test_digest_covers_contents_and_names(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    d0 = sources_digest(pkg)
    (pkg / "outer.py").write_text((pkg / "outer.py").read_text() + "\n")
    d1 = sources_digest(pkg)
    (pkg / "outer.py").rename(pkg / "outer2.py")
    assert len({d0, d1, sources_digest(pkg)}) == 3


def _cache_hits(tmp: Path) -> int:
    """How many of ``outer.run``'s signatures a new process loads from the cache instead of
    compiling (its result must be 11)."""
    return _run(tmp, drop=True,
                result="sum(run.stats.cache_hits.values()) if run() == 11 else -1")


def test_a_copy_of_the_same_sources_takes_the_compiled_kernels(tmp_path: Path) -> None:
    """colcon test imports the source tree; colcon build compiled the install's copy."""
    built = tmp_path / "install"
    built.mkdir()
    pkg = _package(built)
    assert _run(built, drop=True) == 11  # compiled, cached and stamped
    tree = tmp_path / "src"
    shutil.copytree(pkg, tree / "pkg", ignore=shutil.ignore_patterns("__pycache__"))
    assert copy_kernel_caches(pkg, tree / "pkg") >= 2  # outer.run's index and code at least
    assert (tree / "pkg" / "__pycache__" / STAMP_NAME).read_text().strip() == sources_digest(pkg)
    assert _cache_hits(tree) == 1  # loaded, not compiled (a compile counts a miss, no hit)
    # without the copy the same tree compiles
    fresh = tmp_path / "fresh"
    shutil.copytree(pkg, fresh / "pkg", ignore=shutil.ignore_patterns("__pycache__"))
    assert _cache_hits(fresh) == 0


def test_different_sources_take_nothing(tmp_path: Path) -> None:
    built = tmp_path / "install"
    built.mkdir()
    pkg = _package(built)
    assert _run(built, drop=True) == 11
    tree = tmp_path / "src"
    shutil.copytree(pkg, tree / "pkg", ignore=shutil.ignore_patterns("__pycache__"))
    inner = tree / "pkg" / "sub" / "inner.py"
    inner.write_text(inner.read_text().replace("return 1", "return 2  # changed"))
    assert copy_kernel_caches(pkg, tree / "pkg") == 0
    assert not list((tree / "pkg").rglob("*.nbi"))
    assert copy_kernel_caches(pkg, pkg) == 0  # nothing to copy onto itself
