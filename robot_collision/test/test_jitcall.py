"""Calling conventions of robot_collision.jitcall, and the property they exist for: the
per-configuration validity kernel compiles without reference-count operations."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import njit

from robot_collision import CollisionChecker, RobotModel, Sphere, WorldObject
from robot_collision.collision.kernels import _valid_at, unpack_scene
from robot_collision.jitcall import call_or, inline_call_or, nothrow
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
