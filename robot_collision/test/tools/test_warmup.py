"""tools.warmup's cache probe and process fan-out (the kernels themselves: every other test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from robot_collision import kernel_cache
from robot_collision.tools import warmup


def test_cache_is_cold_follows_the_numba_index_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cold = no ``*.nbi`` index under the package nor under NUMBA_CACHE_DIR."""
    monkeypatch.delenv("NUMBA_DISABLE_JIT", raising=False)
    empty_pkg = tmp_path / "pkg" / "tools"
    empty_pkg.mkdir(parents=True)
    monkeypatch.setattr(warmup, "__file__", str(empty_pkg / "warmup.py"))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert warmup.cache_is_cold()
    (tmp_path / "numba" / "x").mkdir(parents=True)
    (tmp_path / "numba" / "x" / "m.f-1.py311.1.nbc").write_bytes(b"code")  # code, no index
    assert warmup.cache_is_cold()
    (tmp_path / "numba" / "x" / "m.f-1.py311.nbi").write_bytes(b"index")
    assert not warmup.cache_is_cold()


def test_nothing_to_compile_without_the_jit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "1")
    assert kernel_cache.jit_disabled()
    assert not warmup.cache_is_cold()
    assert warmup.warm_up_in_processes() == 0.0  # returns at once, starts no process
    monkeypatch.setenv("NUMBA_DISABLE_JIT", "0")
    assert not kernel_cache.jit_disabled()
