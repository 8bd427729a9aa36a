"""An 8-lane float64 vector type for compiled (numba) code: one value holds the same quantity
for 8 configurations, so that kernels written with it evaluate 8 configurations per pass.

Why not rely on LLVM's auto-vectorisation: numba runs LLVM without the SLP vectoriser (off since
numba#8705), and LLVM fully unrolls an 8-iteration lane loop before its loop vectoriser sees it;
the result is scalar code (measured: ``for k in range(8): out[k] = a * x[k] + y[k]`` compiles to
8 scalar FMAs). A lane loop with a run-time trip count does vectorise, but for 32 lanes at a time
(then 8 lanes run in the scalar remainder loop). Here each operation is emitted directly as an
LLVM ``<8 x double>`` instruction, so the generated code uses vector registers whatever the
unrolling heuristics: one zmm register per value with AVX-512, two ymm with AVX2 (read the
assembly with ``dispatcher.inspect_asm(signature)``). The enclosing function's ``fastmath``
option applies to these instructions as to scalar ones.

In compiled code::

    x = load(arr, i)          # arr[i:i + 8] (float64 1-d C array; the caller keeps i + 8 in range)
    store(arr, i, x)          # arr[i:i + 8] = x
    y = splat(0.5) * x + 1.0  # arithmetic with vectors and scalars: + - * / and unary -
    m = y < 2.0               # comparisons give an int64 bit mask, bit k = lane k
    z = select(m, y, x)       # lane-wise m ? y : x
    vmin(a, b), vmax(a, b), vabs(a), vsqrt(a), vfloor(a), lane(x, k)

Masks are ordinary integers: ``m1 & m2``, ``m & ~dead``, ``m != 0`` (any lane). A comparison
involving NaN is false in that lane: kernels must treat NaN lanes explicitly.
"""

from __future__ import annotations

import operator

from llvmlite import ir  # type: ignore[import-untyped]
from numba import types
from numba.core import cgutils
from numba.core.extending import intrinsic, models, register_model
from numba.core.imputils import lower_builtin
from numba.core.typing.templates import ConcreteTemplate, infer_global, signature

__all__ = [
    "LANES",
    "f64x8",
    "lane",
    "load",
    "select",
    "splat",
    "store",
    "vabs",
    "vfloor",
    "vmax",
    "vmin",
    "vsqrt",
]

LANES = 8
_VT = ir.VectorType(ir.DoubleType(), LANES)
_MT = ir.VectorType(ir.IntType(1), LANES)


class F64x8(types.Type):
    """numba type of an ``<8 x double>`` value."""

    def __init__(self) -> None:
        super().__init__(name="f64x8")


f64x8 = F64x8()


@register_model(F64x8)
class _F64x8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):  # type: ignore[no-untyped-def]
        super().__init__(dmm, fe_type, _VT)


def _splat(builder, x):  # type: ignore[no-untyped-def]
    v = builder.insert_element(ir.Constant(_VT, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(v, ir.Constant(_VT, ir.Undefined),
                                  ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES))


def _as_vec(context, builder, ty, val):  # type: ignore[no-untyped-def]
    if isinstance(ty, F64x8):
        return val
    return _splat(builder, context.cast(builder, val, ty, types.float64))


# ------------------------------------------------------------------ arithmetic operators
_BINOPS = {
    operator.add: "fadd",
    operator.sub: "fsub",
    operator.mul: "fmul",
    operator.truediv: "fdiv",
}
_CMPS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
         operator.eq: "==", operator.ne: "!="}
_PAIRS = ((f64x8, f64x8), (f64x8, types.float64), (types.float64, f64x8))


def _register_binop(op, inst):  # type: ignore[no-untyped-def]
    @infer_global(op)
    class _Typing(ConcreteTemplate):
        cases = [signature(f64x8, a, b) for a, b in _PAIRS]

    for a, b in _PAIRS:
        @lower_builtin(op, a, b)
        def _lower(context, builder, sig, args):  # type: ignore[no-untyped-def]
            x = _as_vec(context, builder, sig.args[0], args[0])
            y = _as_vec(context, builder, sig.args[1], args[1])
            return getattr(builder, inst)(x, y)


def _register_cmp(op, pred):  # type: ignore[no-untyped-def]
    @infer_global(op)
    class _Typing(ConcreteTemplate):
        cases = [signature(types.int64, a, b) for a, b in _PAIRS]

    for a, b in _PAIRS:
        @lower_builtin(op, a, b)
        def _lower(context, builder, sig, args):  # type: ignore[no-untyped-def]
            x = _as_vec(context, builder, sig.args[0], args[0])
            y = _as_vec(context, builder, sig.args[1], args[1])
            m = builder.fcmp_ordered(pred, x, y) if pred != "!=" else builder.fcmp_unordered(
                pred, x, y)
            bits = builder.bitcast(m, ir.IntType(LANES))
            return builder.zext(bits, ir.IntType(64))


for _op, _inst in _BINOPS.items():
    _register_binop(_op, _inst)
for _op, _pred in _CMPS.items():
    _register_cmp(_op, _pred)


@infer_global(operator.neg)
class _NegTyping(ConcreteTemplate):
    cases = [signature(f64x8, f64x8)]


@lower_builtin(operator.neg, f64x8)
def _lower_neg(context, builder, sig, args):  # type: ignore[no-untyped-def]
    return builder.fneg(args[0])


# ------------------------------------------------------------------ functions
def _vec_call(builder, name, *vals):  # type: ignore[no-untyped-def]
    fnty = ir.FunctionType(_VT, [_VT] * len(vals))
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.{name}.v{LANES}f64")
    return builder.call(fn, list(vals))


@intrinsic
def splat(typingctx, x):  # type: ignore[no-untyped-def]
    """All lanes equal to the scalar ``x``."""
    if not isinstance(x, (types.Float, types.Integer, types.Boolean)):
        return None

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        return _splat(builder, context.cast(builder, args[0], sig.args[0], types.float64))

    return signature(f64x8, x), codegen


def _data_ptr(context, builder, arrty, arr, idx, idxty):  # type: ignore[no-untyped-def]
    ary = context.make_array(arrty)(context, builder, arr)
    i = context.cast(builder, idx, idxty, types.intp)
    ptr = builder.gep(ary.data, [i])
    return builder.bitcast(ptr, _VT.as_pointer())


def _check_array(arr, idx):  # type: ignore[no-untyped-def]
    return (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"
            and arr.dtype == types.float64 and isinstance(idx, types.Integer))


@intrinsic
def load(typingctx, arr, idx):  # type: ignore[no-untyped-def]
    """``arr[idx:idx + 8]`` of a 1-d C-contiguous float64 array (no bounds check)."""
    if not _check_array(arr, idx):
        return None

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        ptr = _data_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        return builder.load(ptr, align=8)

    return signature(f64x8, arr, idx), codegen


@intrinsic
def store(typingctx, arr, idx, val):  # type: ignore[no-untyped-def]
    """``arr[idx:idx + 8] = val`` (no bounds check)."""
    if not _check_array(arr, idx) or not isinstance(val, F64x8):
        return None

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        ptr = _data_ptr(context, builder, sig.args[0], args[0], args[1], sig.args[1])
        builder.store(args[2], ptr, align=8)
        return context.get_dummy_value()

    return signature(types.none, arr, idx, val), codegen


@intrinsic
def select(typingctx, mask, a, b):  # type: ignore[no-untyped-def]
    """Lane k: ``a`` if bit k of ``mask`` is set, else ``b`` (vectors or scalars)."""
    if not isinstance(mask, types.Integer):
        return None
    if not all(isinstance(t, (F64x8, types.Float, types.Integer)) for t in (a, b)):
        return None

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        m = context.cast(builder, args[0], sig.args[0], types.int64)
        bits = builder.bitcast(builder.trunc(m, ir.IntType(LANES)), _MT)
        x = _as_vec(context, builder, sig.args[1], args[1])
        y = _as_vec(context, builder, sig.args[2], args[2])
        return builder.select(bits, x, y)

    return signature(f64x8, mask, a, b), codegen


def _unary(name):  # type: ignore[no-untyped-def]
    def impl(typingctx, a):  # type: ignore[no-untyped-def]
        if not isinstance(a, F64x8):
            return None

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            return _vec_call(builder, name, args[0])

        return signature(f64x8, a), codegen

    return intrinsic(impl)


vabs = _unary("fabs")
vabs.__doc__ = "Lane-wise absolute value."
vsqrt = _unary("sqrt")
vsqrt.__doc__ = "Lane-wise square root."
vfloor = _unary("floor")
vfloor.__doc__ = "Lane-wise floor."


def _minmax(pred):  # type: ignore[no-untyped-def]
    def impl(typingctx, a, b):  # type: ignore[no-untyped-def]
        if not all(isinstance(t, (F64x8, types.Float, types.Integer)) for t in (a, b)):
            return None
        if not (isinstance(a, F64x8) or isinstance(b, F64x8)):
            return None

        def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
            x = _as_vec(context, builder, sig.args[0], args[0])
            y = _as_vec(context, builder, sig.args[1], args[1])
            # a compare and a blend (one instruction each); NaN lanes give ``b``
            return builder.select(builder.fcmp_ordered(pred, x, y), x, y)

        return signature(f64x8, a, b), codegen

    return intrinsic(impl)


vmin = _minmax("<")
vmin.__doc__ = "Lane-wise minimum (``b`` where a lane compares unordered)."
vmax = _minmax(">")
vmax.__doc__ = "Lane-wise maximum (``b`` where a lane compares unordered)."


@intrinsic
def lane(typingctx, v, k):  # type: ignore[no-untyped-def]
    """Lane ``k`` of ``v`` as a float (0 <= k < 8)."""
    if not isinstance(v, F64x8) or not isinstance(k, types.Integer):
        return None

    def codegen(context, builder, sig, args):  # type: ignore[no-untyped-def]
        i = context.cast(builder, args[1], sig.args[1], types.int32)
        return builder.extract_element(args[0], i)

    return signature(types.float64, v, k), codegen
