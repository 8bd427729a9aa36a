"""Calling jitted functions from jitted code without reference-counting overhead.

numba increfs every array a function holds on entry and decrefs it on each normal exit.
LLVM's refcount pruning removes these (atomic, ~10 ns each) pairs only if every other exit is
a *marked* raise, but an ordinary call to another jitted function adds an unmarked "propagate
the callee's exception" exit. A plain call therefore costs every function that holds arrays
(and every caller that inlines ``shape_distance``) about 10 ns per array -- 100-200 ns per
closed-form query. So every call made from a function holding arrays goes through
``_nothrow``, which calls the compiled function directly and turns a failure (never expected:
all divisions are guarded) into a marked ``RuntimeError``. Functions taking only scalars call
each other directly. The pruning also needs simple control flow between the incref and the
decrefs (``shape_distance`` is a flat if/elif chain) and all arrays of a function released in
the same block (hence the final use of ``va`` / ``vb`` in ``_add_point``); shapes are passed
to the GJK/EPA internals as tuples of scalars for the same reason.

A function that also loops cannot be pruned with ``nothrow`` calls in it: each one adds an exit
(the raise) besides the normal return, and llvmlite's pruner then needs loop-free paths from the
incref to every decref. Such functions (the per-configuration validity kernel, called in every
loop of the checker, planner and IK) call their helpers through ``call_or``, which adds no exit:
a failed call yields the given fallback value instead, chosen so that a failure errs on the safe
side (for collision queries: "in collision"). Small helpers on such paths go through
``inline_call_or``, which also has LLVM inline the compiled helper: a call that is not inlined
passes each array argument as a ~10-word struct (~5 ns per sphere test), and numba's own
``inline="always"`` inlines before the pruning and puts reference counting into the caller's
loops (measured: 2.5x slower).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numpy as np
from numba import typeof, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array

__all__ = [
    "borrowed_flat", "borrowed_view", "call_or", "entry_point", "flat_view", "inline_call_or",
    "nothrow", "stack_matrix",
]


@intrinsic
def nothrow(typingctx, fn, *args):  # type: ignore[no-untyped-def]
    """``fn(*args)`` for a jitted ``fn``, with a prunable error exit (see above)."""
    argtys = tuple(types.unliteral(a) for a in args)
    disp = fn.dispatcher
    disp.compile(argtys)
    cres = disp.overloads[argtys]
    inner = cres.signature
    sig = inner.return_type(fn, types.StarArgTuple.from_types(argtys))

    def codegen(context, builder, signature, llargs):  # type: ignore[no-untyped-def]
        context.add_linking_libs([cres.library])
        vals = cgutils.unpack_tuple(builder, llargs[1], len(argtys))
        status, res = context.call_internal_no_propagate(builder, cres.fndesc, inner, vals)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_user_exc(
                builder, RuntimeError, ("robot_collision: compiled kernel failed",)
            )
        return res

    return sig, codegen


def _call_or_intrinsic(attrs: tuple[str, ...]):  # type: ignore[no-untyped-def]
    def impl(typingctx, fn, fallback, *args):  # type: ignore[no-untyped-def]
        argtys = tuple(types.unliteral(a) for a in args)
        disp = fn.dispatcher
        disp.compile(argtys)
        cres = disp.overloads[argtys]
        inner = cres.signature
        sig = inner.return_type(fn, fallback, types.StarArgTuple.from_types(argtys))

        def codegen(context, builder, signature, llargs):  # type: ignore[no-untyped-def]
            context.add_linking_libs([cres.library])
            vals = cgutils.unpack_tuple(builder, llargs[2], len(argtys))
            callee = context.declare_function(builder.module, cres.fndesc)
            status, res = context.call_conv.call_function(
                builder, callee, inner.return_type, inner.args, vals, attrs=attrs
            )
            alt = context.cast(builder, llargs[1], signature.args[1], inner.return_type)
            return builder.select(status.is_error, alt, res)

        return sig, codegen

    return impl


call_or = intrinsic(_call_or_intrinsic(()))
call_or.__doc__ = """``call_or(fn, fallback, *args)``: ``fn(*args)`` for a jitted ``fn``, or
``fallback`` (cast to ``fn``'s return type) if the call fails; adds no exit to the caller."""

inline_call_or = intrinsic(_call_or_intrinsic(("alwaysinline",)))
inline_call_or.__doc__ = """:func:`call_or` with the compiled ``fn`` inlined into the caller by LLVM
(after numba's reference-count pruning, so unlike numba's ``inline="always"`` it brings no
reference counting into the caller's loops). For small helpers on hot paths: a plain call
passes every array argument as a ~10-word struct."""



def _view_intrinsic(borrowed: bool):  # type: ignore[no-untyped-def]
    def impl(typingctx, arr, offset, shape):  # type: ignore[no-untyped-def]
        if not (
            isinstance(arr, types.Array)
            and arr.ndim == 1
            and arr.layout == "C"
            and isinstance(shape, types.BaseTuple)
        ):
            return None
        nd = len(shape)
        retty = types.Array(arr.dtype, nd, "C")
        sig = retty(arr, offset, shape)

        def codegen(context, builder, signature, llargs):  # type: ignore[no-untyped-def]
            src = context.make_array(signature.args[0])(context, builder, llargs[0])
            out = context.make_array(retty)(context, builder)
            off = context.cast(builder, llargs[1], signature.args[1], types.intp)
            dims = [
                context.cast(builder, d, t, types.intp)
                for d, t in zip(cgutils.unpack_tuple(builder, llargs[2], nd), signature.args[2])
            ]
            itemsize = context.get_constant(
                types.intp, context.get_abi_sizeof(context.get_data_type(arr.dtype))
            )
            strides = []
            acc = itemsize
            for d in reversed(dims):
                strides.append(acc)
                acc = builder.mul(acc, d)
            strides.reverse()
            populate_array(
                out,
                data=builder.gep(src.data, [off]),
                shape=dims,
                strides=strides,
                itemsize=itemsize,
                meminfo=None if borrowed else src.meminfo,
            )
            res = out._getvalue()
            if not borrowed:
                context.nrt.incref(builder, retty, res)  # the view keeps arr's memory alive
            return res

        return sig, codegen

    return impl


flat_view = intrinsic(_view_intrinsic(False))
flat_view.__doc__ = """``flat_view(arr, offset, shape)``: the C-ordered array of ``shape`` (a tuple
of ints) over ``arr[offset:offset + prod(shape)]`` of the contiguous 1-D ``arr``, sharing its
memory and keeping it alive. No bounds check: callers pass offsets and shapes they built.
Same as ``arr[offset:offset + k].reshape(shape)``, which costs ~25 ns per view in numba (a call
into its C reshape helper); this computes the strides inline."""

borrowed_view = intrinsic(_view_intrinsic(True))
borrowed_view.__doc__ = """:func:`flat_view` without a reference to ``arr``'s memory (no meminfo,
like ``numba.carray``): creating and dropping it costs no atomic reference counting, which adds
up when a function returns ~30 views to its caller (~0.3 us per call). Valid only while ``arr``
is alive: use it only on arrays the whole call holds (its arguments) and never return such a
view to Python or store it beyond the call."""


@intrinsic
def borrowed_flat(typingctx, arr):  # type: ignore[no-untyped-def]
    """``borrowed_flat(arr)``: the C-contiguous ``arr`` (any dimensions) as a 1-D array over the
    same memory, without a reference to it (see :func:`borrowed_view`: valid only while ``arr``
    is alive, never returned or stored). ``arr.reshape(-1)`` calls numba's C reshape helper
    (~25 ns); this only fills in the 1-D array struct."""
    if not (isinstance(arr, types.Array) and arr.layout == "C"):
        return None
    retty = types.Array(arr.dtype, 1, "C", readonly=not arr.mutable)
    sig = retty(arr)

    def codegen(context, builder, signature, llargs):  # type: ignore[no-untyped-def]
        src = context.make_array(signature.args[0])(context, builder, llargs[0])
        out = context.make_array(retty)(context, builder)
        n = context.get_constant(types.intp, 1)
        for d in cgutils.unpack_tuple(builder, src.shape, arr.ndim):
            n = builder.mul(n, d)
        populate_array(
            out, data=src.data, shape=[n], strides=[src.itemsize], itemsize=src.itemsize,
            meminfo=None,
        )
        return out._getvalue()

    return sig, codegen


@intrinsic
def stack_matrix(typingctx, rows, cols):  # type: ignore[no-untyped-def]
    """``stack_matrix(rows, cols)`` (integer literals): an uninitialised C-ordered float64
    ``(rows, cols)`` array on the calling function's stack (an ``alloca`` in its entry block), for
    small scratch arrays of a function called once per shape pair: ``np.empty`` costs a heap
    allocation and its release (measured: ~55 ns per GJK pair call, ~1 us per configuration of
    UR5's 17 pairs). Like :func:`borrowed_view` it holds no reference: valid only until the
    function returns, never returned or stored."""
    if not (isinstance(rows, types.IntegerLiteral) and isinstance(cols, types.IntegerLiteral)):
        return None
    r = int(rows.literal_value)
    c = int(cols.literal_value)
    if r <= 0 or c <= 0:
        return None
    retty = types.Array(types.float64, 2, "C")
    sig = retty(rows, cols)

    def codegen(context, builder, signature, llargs):  # type: ignore[no-untyped-def]
        buf = cgutils.alloca_once(builder, context.get_data_type(types.float64), size=r * c)
        out = context.make_array(retty)(context, builder)
        itemsize = context.get_constant(types.intp, 8)
        populate_array(
            out,
            data=buf,
            shape=[context.get_constant(types.intp, r), context.get_constant(types.intp, c)],
            strides=[context.get_constant(types.intp, 8 * c), itemsize],
            itemsize=itemsize,
            meminfo=None,
        )
        return out._getvalue()

    return sig, codegen


_ENTRY_POINTS: dict[tuple[Any, ...], Callable[..., Any]] = {}
_SCALARS = (bool, int, float)


def _type_key(a: Any) -> Any:
    """What numba's ``typeof`` of ``a`` depends on, for arrays and Python scalars (None for
    anything else): ~0.3 us against ~8 us for ``typeof`` of an array."""
    if type(a) is np.ndarray:
        f = a.flags
        return (a.dtype.str, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
    return type(a) if type(a) in _SCALARS else None


def entry_point(dispatcher: Any, *args: Any) -> Callable[..., Any]:
    """The compiled specialization of the jitted ``dispatcher`` for the types of ``args`` (compiled
    or loaded from the cache now), as a plain callable that skips numba's type dispatch: ~0.1 us
    less per call from Python (measured: 0.46 -> 0.32 us for a whole single check of a 1-pair
    robot). Callers must pass arguments of exactly these types (array dtype, dimensions and
    layout are not checked again). Falls back to ``dispatcher`` itself where numba gives no
    entry point (e.g. ``NUMBA_DISABLE_JIT``).

    Found again by the arguments' array layouts and scalar types, without ``typeof`` and
    ``compile`` (~60 us of a new scene's ~450 us on the sphere Panda, every world update)."""
    keys = tuple(_type_key(a) for a in args)
    memo = None if None in keys else (dispatcher, keys)
    if memo is not None and memo in _ENTRY_POINTS:
        return _ENTRY_POINTS[memo]
    compile_ = getattr(dispatcher, "compile", None)
    if compile_ is None:
        return cast(Callable[..., Any], dispatcher)
    sig = tuple(typeof(a) for a in args)
    compile_(sig)
    cres = getattr(dispatcher, "overloads", {}).get(sig)
    fn = getattr(cres, "entry_point", None)
    out = cast(Callable[..., Any], fn if callable(fn) else dispatcher)
    if memo is not None:
        _ENTRY_POINTS[memo] = out
    return out
