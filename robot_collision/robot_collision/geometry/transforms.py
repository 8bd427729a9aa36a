"""Small rigid-transform helpers (numpy). Poses are (4, 4) homogeneous matrices, metres/radians."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "rot_x",
    "rot_y",
    "rot_z",
    "rpy_to_matrix",
    "pose_from_xyz_rpy",
    "quat_xyzw_to_matrix",
    "matrix_to_quat_xyzw",
    "pose_from_position_quat",
    "euler_zyx_to_matrix",
    "matrix_to_euler_zyx",
    "make_pose",
]


def rot_x(a: float) -> NDArray[np.float64]:
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(a: float) -> NDArray[np.float64]:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(a: float) -> NDArray[np.float64]:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_to_matrix(rpy: Sequence[float]) -> NDArray[np.float64]:
    """URDF fixed-axis roll-pitch-yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = rpy
    return rot_z(y) @ rot_y(p) @ rot_x(r)


def make_pose(rotation: ArrayLike, translation: ArrayLike) -> NDArray[np.float64]:
    T = np.eye(4)
    T[:3, :3] = np.asarray(rotation, dtype=float)
    T[:3, 3] = np.asarray(translation, dtype=float)
    return T


def pose_from_xyz_rpy(xyz: Sequence[float], rpy: Sequence[float]) -> NDArray[np.float64]:
    return make_pose(rpy_to_matrix(rpy), xyz)


def quat_xyzw_to_matrix(q: ArrayLike) -> NDArray[np.float64]:
    """Unit quaternion (x, y, z, w) to a rotation matrix (normalised first; a zero or
    non-finite quaternion gives NaN entries)."""
    a = np.asarray(q, dtype=float)
    if a.shape == (4,):
        # on Python floats: the numpy expression costs ~40 us, this ~5 us (scene building)
        x, y, z, w = a.tolist()
        norm = math.sqrt(x * x + y * y + z * z + w * w)
        if 0.0 < norm < math.inf:
            x, y, z, w = x / norm, y / norm, z / norm, w / norm
            return np.array([
                [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
            ])
    x, y, z, w = a / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat_xyzw(R: ArrayLike) -> NDArray[np.float64]:
    """Rotation matrix to a unit quaternion (x, y, z, w) with w >= 0."""
    m = np.asarray(R, dtype=float)
    t = np.trace(m)
    if t > 0:
        s = 2.0 * np.sqrt(t + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0, 0.0, 0.0, 0.0]
        q[i] = 0.25 * s
        q[j] = (m[j, i] + m[i, j]) / s
        q[k] = (m[k, i] + m[i, k]) / s
        q[3] = (m[k, j] - m[j, k]) / s
    qa = np.asarray(q)
    if qa[3] < 0:
        qa = -qa
    return qa / np.linalg.norm(qa)


def pose_from_position_quat(position: ArrayLike, quat_xyzw: ArrayLike) -> NDArray[np.float64]:
    return make_pose(quat_xyzw_to_matrix(quat_xyzw), position)


def euler_zyx_to_matrix(zyx: Sequence[float]) -> NDArray[np.float64]:
    """Intrinsic z-y-x Euler angles (yaw, pitch, roll): R = Rz(a) Ry(b) Rx(c)."""
    a, b, c = zyx
    return rot_z(a) @ rot_y(b) @ rot_x(c)


def matrix_to_euler_zyx(R: ArrayLike) -> NDArray[np.float64]:
    """Inverse of :func:`euler_zyx_to_matrix`: returns (z, y, x) angles in rad."""
    m = np.asarray(R, dtype=float)
    b = float(np.arcsin(np.clip(-m[2, 0], -1.0, 1.0)))
    if abs(m[2, 0]) < 1.0 - 1e-12:
        a = float(np.arctan2(m[1, 0], m[0, 0]))
        c = float(np.arctan2(m[2, 1], m[2, 2]))
    else:  # gimbal lock: put everything in a
        a = float(np.arctan2(-m[0, 1], m[1, 1]))
        c = 0.0
    return np.array([a, b, c])
