"""A monotonic clock callable from compiled code (deadlines of the planner, IK and edge
certification kernels)."""

from __future__ import annotations

from llvmlite import ir  # type: ignore[import-untyped]
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .kernel_cache import ensure_fresh_kernel_caches

__all__ = ["now_ns"]

ensure_fresh_kernel_caches()  # before this module's kernel loads from the cache


@intrinsic
def _clock_monotonic_ns(typingctx):  # type: ignore[no-untyped-def]
    """``clock_gettime(CLOCK_MONOTONIC)`` in ns (the clock of Python's ``time.monotonic_ns`` on
    Linux). Declared by symbol name, so functions using it stay cacheable."""
    sig = types.int64()

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        ts_t = ir.LiteralStructType([i64, i64])
        fnty = ir.FunctionType(i32, [i32, ts_t.as_pointer()])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "clock_gettime")
        ts = cgutils.alloca_once(builder, ts_t)
        builder.call(fn, [ir.Constant(i32, 1), ts])  # CLOCK_MONOTONIC = 1 on Linux
        sec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 0))
        nsec = builder.load(cgutils.gep_inbounds(builder, ts, 0, 1))
        return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)

    return sig, codegen


@njit(cache=True)
def now_ns() -> int:  # pragma: no cover - compiled
    """Monotonic time in ns (``time.monotonic_ns``'s clock), callable from compiled code."""
    return _clock_monotonic_ns()  # type: ignore[no-any-return,unused-ignore]
