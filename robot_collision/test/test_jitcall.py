"""Calling conventions of robot_collision.jitcall, and the property they exist for: the
per-configuration validity kernel compiles without reference-count operations."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from robot_collision import CollisionChecker, RobotModel, Sphere, WorldObject
from robot_collision.collision.kernels import _valid_at
from robot_collision.collision.scene_packing import unpack_scene
from robot_collision.jitcall import (
    borrowed_flat,
    borrowed_view,
    call_or,
    entry_point,
    flat_view,
    inline_call_or,
    nothrow,
    stack_matrix,
)
from robot_collision.model.kinematics import fk_into


@njit(cache=False)
def _half_or_raise(x):  # type: ignore[no-untyped-def]
    if x < 0.0:
        raise ValueError("negative")
    return 0.5 * x


@njit(cache=False)
def _via_call_or(x):  # type: ignore[no-untyped-def]
    return call_or(_half_or_raise, -7, x)


@njit(cache=False)
def _via_inline_call_or(x):  # type: ignore[no-untyped-def]
    return inline_call_or(_half_or_raise, -7, x)


@njit(cache=False)
def _via_nothrow(x):  # type: ignore[no-untyped-def]
    return nothrow(_half_or_raise, x)


def test_call_or_returns_the_result_or_the_fallback() -> None:
    assert _via_call_or(3.0) == 1.5
    assert _via_call_or(-1.0) == -7.0  # the callee raised: fallback, cast to float
    assert _via_inline_call_or(3.0) == 1.5
    assert _via_inline_call_or(-1.0) == -7.0


def test_nothrow_turns_a_failure_into_runtime_error() -> None:
    assert _via_nothrow(3.0) == 1.5
    with pytest.raises(RuntimeError, match="compiled kernel failed"):
        _via_nothrow(-1.0)


@njit(cache=False)
def _views(a, off, d0, d1, d2):  # type: ignore[no-untyped-def]
    # sums inside the call (a borrowed view must not be returned)
    return (
        flat_view(a, off, (d0,)).copy(),
        flat_view(a, off, (d0, d1)).copy(),
        flat_view(a, off, (d0, d1, d2)).copy(),
        borrowed_view(a, off, (d0, d1)).copy(),
        borrowed_view(a, off, (d0, d1, d2)).copy(),
    )


@njit(cache=False)
def _kept_view(a):  # type: ignore[no-untyped-def]
    return flat_view(a, 2, (2, 3))


@settings(max_examples=60, deadline=None)
@given(off=st.integers(0, 20), d0=st.integers(0, 4), d1=st.integers(0, 4), d2=st.integers(0, 4),
       integer=st.booleans())
def test_views_equal_numpy_reshape(off: int, d0: int, d1: int, d2: int, integer: bool) -> None:
    a = np.arange(100, dtype=np.int64 if integer else np.float64) * 1.5 ** (not integer)
    v1, v2, v3, b2, b3 = _views(a, off, d0, d1, d2)
    np.testing.assert_array_equal(v1, a[off : off + d0])
    np.testing.assert_array_equal(v2, a[off : off + d0 * d1].reshape(d0, d1))
    np.testing.assert_array_equal(v3, a[off : off + d0 * d1 * d2].reshape(d0, d1, d2))
    np.testing.assert_array_equal(b2, v2)
    np.testing.assert_array_equal(b3, v3)


@njit(cache=False)
def _flat_copy(a):  # type: ignore[no-untyped-def]
    return borrowed_flat(a).copy()  # copied inside the call (a borrowed view must not escape)


@pytest.mark.parametrize("shape", [(0, 3), (7, 3), (2, 3, 4), (5,)])
def test_borrowed_flat_is_numpy_ravel(shape: tuple[int, ...]) -> None:
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) * 1.5
    np.testing.assert_array_equal(_flat_copy(a), a.ravel())
    np.testing.assert_array_equal(_flat_copy(a.astype(np.int64)), a.astype(np.int64).ravel())


@njit(cache=False)
def _scratch(fill):  # type: ignore[no-untyped-def]
    S = stack_matrix(9, 10)
    for i in range(9):
        for j in range(10):
            S[i, j] = fill + 10 * i + j
    return S.shape[0], S.shape[1], S.strides[0], S.strides[1], S.copy()


def test_stack_matrix_is_a_c_ordered_scratch_array() -> None:
    r, c, s0, s1, S = _scratch(0.5)
    assert (r, c, s0, s1) == (9, 10, 80, 8)
    np.testing.assert_array_equal(S, 0.5 + np.arange(90.0).reshape(9, 10))
    _, _, _, _, S2 = _scratch(-3.0)  # a second call writes its own frame
    np.testing.assert_array_equal(S2, -3.0 + np.arange(90.0).reshape(9, 10))


def test_flat_view_keeps_its_array_alive() -> None:
    v = _kept_view(np.arange(10.0))  # the only reference to the array is the view's
    np.arange(1000.0) * 3.0  # reuse freed memory, if it had been freed
    np.testing.assert_array_equal(v, [[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]])


def _function_ir(llvm_modules: dict, name: str) -> str:
    """Body of the native (not the Python-wrapper) function called ``name``."""
    for ir in llvm_modules.values():
        for m in re.finditer(r"define [^\n]*\{.*?\n\}", ir, re.S):
            head = m.group(0).split("\n", 1)[0]
            if name in head and "cpython" not in head and "cfunc" not in head:
                return m.group(0)
    raise AssertionError(f"no native function {name} in the IR")


def test_validity_kernel_has_no_reference_counting(default_robot: RobotModel) -> None:
    """``_valid_at`` runs once per configuration in the checker, planner and IK; with any
    incref/decref left in it a call costs ~230 ns more (see its docstring). An early return
    from a loop or a plain call to a helper brings them back."""
    checker = CollisionChecker(default_robot)
    world = [WorldObject(Sphere(0.1), np.eye(4), "ball")]
    sc = checker._prepare(world)
    kin, rs, ws, pr = unpack_scene(sc.F, sc.I)
    L = len(default_robot.link_names)
    T = np.empty((L, 4, 4))
    q = default_robot.home_configuration()
    fk_into(q, kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx, kin.scale, kin.offset, T)
    fresh = njit(cache=False, fastmath=True, boundscheck=False)(_valid_at.py_func)
    args = (T, rs, ws, pr, np.empty((len(rs.kind), 4, 4)), np.zeros(L, np.bool_), True,
            np.empty((L + 3, 3)))
    assert fresh(*args) == _valid_at(*args)
    ir = _function_ir(fresh.inspect_llvm(), "_valid_at")
    assert ir.count("NRT_incref") == 0 and ir.count("NRT_decref") == 0


def test_planner_edge_checks_have_no_reference_counting(default_robot: RobotModel) -> None:
    """The planner checks every edge through ``_edge_free`` (scalar kernels, the scene's ~30
    arrays) or ``_edge_free_blocked`` (8-configuration kernel): with reference counting left
    in, each edge costs ~0.7 us more (a third of a cage plan's time, measured)."""
    from robot_collision import Box
    from robot_collision.collision import block_kernels as bk
    from robot_collision.planning import rrt_kernels as rrt
    from robot_collision.planning.ik import FASTMATH

    checker = CollisionChecker(default_robot)
    world = [WorldObject(Sphere(0.1), np.eye(4), "ball")]
    sc = checker._prepare(world)
    kin, rs, ws, pr = unpack_scene(sc.F, sc.I)
    L = len(default_robot.link_names)
    n = default_robot.num_joints
    q0 = default_robot.home_configuration()
    d = np.full(n, 0.01)
    fresh = njit(cache=False, fastmath=FASTMATH, boundscheck=False)(rrt._edge_free.py_func)
    args = (q0, d, 5, np.empty(n), kin.parent, kin.jtype, kin.origin, kin.axis, kin.qidx,
            kin.scale, kin.offset, rs, ws, pr, True, np.empty((L, 4, 4)),
            np.empty((len(rs.kind), 4, 4)), np.zeros(L, np.bool_), np.empty((L + 3, 3)),
            np.zeros(8, np.int64), 2**62, np.zeros(1, np.int64))
    assert fresh(*args) == rrt._edge_free(*args)
    ir = _function_ir(fresh.inspect_llvm(), "_edge_free")
    assert ir.count("NRT_incref") == 0 and ir.count("NRT_decref") == 0
    # the blocked edge check, on a sphere robot
    robot = RobotModel.from_urdf(
        """<robot name="r"><link name="b"><collision><geometry><sphere radius="0.1"/></geometry>
        </collision></link><link name="l"><collision><origin xyz="0.3 0 0"/><geometry>
        <sphere radius="0.05"/></geometry></collision></link><joint name="j" type="revolute">
        <parent link="b"/><child link="l"/><axis xyz="0 0 1"/>
        <limit lower="-3" upper="3" effort="1" velocity="1"/></joint></robot>""")
    sc = CollisionChecker(robot)._prepare(
        [WorldObject(Box(0.1, 0.1, 0.1), np.eye(4), "box")])
    assert sc.block is not None
    W, RI = bk.block_workspace(sc.block.BI)
    fresh = njit(cache=False, fastmath=FASTMATH, boundscheck=False, error_model="numpy")(
        rrt._edge_free_blocked.py_func)
    bargs = (np.array([1.0]), np.array([0.5]), 20, sc.block.BF, sc.block.BI, W, RI, True,
             np.zeros(8, np.int64), 2**62, np.zeros(1, np.int64))
    assert fresh(*bargs) == rrt._edge_free_blocked(*bargs)
    ir = _function_ir(fresh.inspect_llvm(), "_edge_free_blocked")
    assert ir.count("NRT_incref") == 0 and ir.count("NRT_decref") == 0


@njit(cache=False)
def _first_plus(a, b):  # type: ignore[no-untyped-def]
    return a.ravel()[0] + b


def test_entry_point_is_found_again_only_for_the_same_numba_types() -> None:
    """The remembered entry point of each argument-type combination is the one numba compiles
    for exactly those types (dtype, dimensions, layout, writability, scalar type)."""
    x = np.arange(6.0)
    ro = np.arange(6.0)
    ro.flags.writeable = False
    cases = [
        (x, 1.0), (x.copy(), 2.0), (x, 3), (x, True), (np.arange(6), 1.0), (x[::2], 1.0),
        (x.reshape(2, 3), 1.0), (np.asfortranarray(x.reshape(2, 3)), 1.0), (ro, 1.0),
        (np.arange(6, dtype=np.float32), 1.0),
    ]
    for a, b in cases:
        fn = entry_point(_first_plus, a, b)
        assert fn(a, b) == _first_plus.py_func(a, b)
        sig = tuple(_first_plus.typeof_pyval(v) for v in (a, b))
        assert fn is _first_plus.overloads[sig].entry_point
        assert entry_point(_first_plus, a, b) is fn
    assert entry_point(_first_plus, cases[0][0], 1.0) is entry_point(_first_plus, cases[1][0], 5.0)
    assert len({entry_point(_first_plus, a, b) for a, b in cases}) == len(cases) - 1
