"""Start-up kernels: the install-time stamp and cache clean-up, and the start-up log lines.

(The install-time compile itself runs in ``make test-ros-real``: ``colcon build`` prints
"kernels compiled" and the nodes' first start loads every kernel from that cache.)
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from robot_collision.ros import startup
from robot_collision.tools.warmup import KernelCacheStats, kernel_cache_stats


def _package(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "sub" / "__pycache__").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").write_text("y = 2\n")
    return root


def test_fingerprint_follows_the_sources(tmp_path: Path) -> None:
    root = _package(tmp_path)
    first = startup.sources_fingerprint(root)
    assert startup.sources_fingerprint(root) == first
    (root / "sub" / "__pycache__" / "b.f-1.py311.nbi").write_bytes(b"cache")  # not a source
    assert startup.sources_fingerprint(root) == first
    (root / "sub" / "b.py").write_text("y = 3\n")
    assert startup.sources_fingerprint(root) != first
    (root / "sub" / "b.py").write_text("y = 2\n")
    (root / "c.py").write_text("")
    assert startup.sources_fingerprint(root) != first


def test_drop_cached_kernels_removes_only_numba_files(tmp_path: Path) -> None:
    root = _package(tmp_path)
    cache = root / "sub" / "__pycache__"
    for name in ("b.f-1.py311.nbi", "b.f-1.py311.1.nbc", "b.cpython-311.pyc"):
        (cache / name).write_bytes(b"x")
    assert startup.drop_cached_kernels(root) == 2
    assert sorted(p.name for p in cache.iterdir()) == ["b.cpython-311.pyc"]


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.lock = threading.Lock()

    def info(self, text: str) -> None:
        with self.lock:
            self.lines.append(text)


def test_warm_up_logs_before_during_and_after(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setattr(startup, "HEARTBEAT", 0.05)
    log = _Log()
    with startup.KernelWarmUp(log, "test kernels"):
        assert log.lines and log.lines[0].startswith("loading the compiled test kernels")
        time.sleep(0.2)
    assert any(line.startswith("still loading or compiling the test kernels")
               for line in log.lines)
    assert log.lines[-1].startswith("test kernels ready in ")
    assert "loaded from the cache" in log.lines[-1]
    n = len(log.lines)
    time.sleep(0.15)
    assert len(log.lines) == n  # the heartbeat stopped


def test_warm_up_logs_nothing_more_on_error() -> None:
    log: Any = _Log()
    with pytest.raises(RuntimeError), startup.KernelWarmUp(log, "test kernels"):
        raise RuntimeError("boom")
    assert len(log.lines) == 1


def test_kernel_cache_stats_counts_this_process() -> None:
    from robot_collision import CollisionChecker, RobotModel, default_robot_paths

    before = kernel_cache_stats()
    robot = RobotModel.from_urdf(default_robot_paths()[0])
    CollisionChecker(robot).clearance(robot.home_configuration())
    after = kernel_cache_stats()
    assert isinstance(after, KernelCacheStats) and after.cache_dir
    # the session warm-up already loaded or compiled these: nothing new, counters monotone
    assert after.loaded >= before.loaded and after.compiled >= before.compiled
    assert after.since(before).compiled == after.compiled - before.compiled
