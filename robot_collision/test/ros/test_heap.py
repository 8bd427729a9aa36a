"""ros.heap: glibc's mmap threshold fixed, so freed large buffers leave the process."""

from __future__ import annotations

import subprocess
import sys

import pytest

_PROBE = r"""
import sys, psutil
from robot_collision.ros.heap import release_large_allocations
if sys.argv[1] == "fixed":
    assert release_large_allocations()
p = psutil.Process()
first = bytearray(16_000_000)
del first  # one 16 MB message freed: glibc raises its threshold to 16 MB
big, keep = [], []
for _ in range(10):  # a burst of 10 messages queued at once, small objects made meanwhile
    big.append(bytearray(16_000_000))
    keep.append(bytearray(100_000))
del big
print(p.memory_full_info().uss)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_freed_16_mb_buffers_are_returned_to_the_system() -> None:
    """Oracle: the process' private memory (psutil USS, read by the kernel) after a burst of
    ten 16 MB buffers freed, with small live allocations between them that pin heap-served
    blocks (glibc's default once a 16 MB block has been freed)."""
    def uss(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _PROBE, mode], check=True,
                             capture_output=True, text=True).stdout
        return int(out.split()[-1])

    fixed = uss("fixed")
    default = uss("default")
    assert fixed < default - 100e6  # 10 x 16 MB stayed resident by default, (fixed, default)
