"""The per-point cloud work in a child process (robot_collision.ros.cloud_process).

Oracle: the same ``SensedClouds`` reducing the same messages in this process (the process is
a transport: the obstacle must be the one the in-process reduction gives, ball for ball); the
child's own process state (``/proc``) for its priority and its exit.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest

from robot_collision import RobotModel, default_robot_paths
from robot_collision.ros.cloud_process import NICE, CloudProcess
from robot_collision.ros.point_clouds import CloudError, CloudSettings, SensedClouds

URDF, SRDF = default_robot_paths()
CAMERA = (1.4, 0.0, 0.8, -0.5979, -0.5979, 0.37751, 0.37751)
Q = np.array([0.0, 0.3, 0.0, 1.2, 0.0, 0.8, 0.0])


class _Msg:
    """The fields of a PointCloud2 that ``SensedClouds`` reads (float32 x, y, z records)."""

    def __init__(self, G: np.ndarray, frame: str) -> None:
        h, w = G.shape[:2]
        self.header = type("H", (), {"frame_id": frame})()
        self.height, self.width = h, w
        self.point_step, self.row_step = 12, 12 * w
        self.fields = [type("F", (), {"name": a, "offset": 4 * k, "datatype": 7, "count": 1})()
                       for k, a in enumerate("xyz")]
        self.is_bigendian, self.is_dense = False, False
        self.data = np.ascontiguousarray(G, dtype="<f4").tobytes()


def _grid(seed: int, W: int = 120) -> np.ndarray:
    """A wall with a box in front of it, seen by a pinhole camera; some pixels without a return."""
    rng = np.random.default_rng(seed)
    f = 0.5 * W / math.tan(math.radians(35.0))
    u = (np.arange(W) + 0.5 - W / 2) / f
    U, V = np.meshgrid(u, u)
    depth = np.full(U.shape, 1.5 + 0.1 * seed)
    depth[W // 3: W // 2, W // 3: 2 * W // 3] = 1.1  # the box's face
    G = np.stack([depth * U, depth * V, depth], -1)
    G.reshape(-1, 3)[rng.random(W * W) < 0.03] = np.nan
    return G


def _clouds(**kw: object) -> SensedClouds:
    robot = RobotModel.from_urdf(URDF, srdf=SRDF)
    clouds = SensedClouds(CloudSettings(point_cloud_topics=("c",), camera_poses=(("c", CAMERA),),
                                        **kw))  # type: ignore[arg-type]
    clouds.set_robot(robot, {robot.base_name})
    clouds.joints.add(0.0, Q)
    return clouds


def _balls(clouds: SensedClouds) -> list[tuple[str, float, np.ndarray]]:
    out = []
    for o in clouds.objects(0.0):
        P = np.asarray(o.shape.points)
        out.append((o.name, float(o.shape.radius), P[np.lexsort(P.T)]))
    return sorted(out, key=lambda t: t[0])


@pytest.mark.parametrize("settings", [{}, {"cloud_persistence": 5.0},
                                      {"cloud_unseen_range": 2.0, "cloud_unseen_min_range": 0.5}])
def test_child_reduces_every_cloud_as_this_process_does(settings: dict[str, float]) -> None:
    here, there = _clouds(**settings), _clouds(**settings)
    proc = CloudProcess(there)
    there.reducer = proc
    try:
        for k in range(3):  # the persisted voxels build up over several clouds
            msg = _Msg(_grid(k), "camera")
            here.on_message("c", msg, 0.01 * k, 0.01 * k)
            there.on_message("c", msg, 0.01 * k, 0.01 * k)
            a, b = _balls(here), _balls(there)
            assert [(n, r) for n, r, _ in a] == [(n, r) for n, r, _ in b]
            for (_, _, Pa), (_, _, Pb) in zip(a, b):
                np.testing.assert_array_equal(Pa, Pb)
        # the child's obstacle arrives with its index built (no build on the control tick)
        assert all(o.shape._index for o in there.objects(0.0))
        assert proc.starts == 1
    finally:
        proc.close()


def _niceness(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[16])


def test_child_runs_at_low_priority_restarts_after_dying_and_exits_when_closed() -> None:
    clouds = _clouds()
    proc = CloudProcess(clouds)
    clouds.reducer = proc
    try:
        clouds.on_message("c", _Msg(_grid(0), "camera"), 0.0, 0.0)
        child = proc._proc
        assert child is not None
        assert _niceness(child.pid) == min(19, os.nice(0) + NICE)
        child.kill()
        child.wait(timeout=5.0)
        # a child found dead before a cloud is started again, and the cloud served
        clouds.on_message("c", _Msg(_grid(1), "camera"), 0.1, 0.1)
        assert proc.starts == 2 and clouds.objects(0.1)
        # a child that dies while it has the cloud: the cloud is refused, saying why, and the
        # next one is served by a new child
        child = proc._proc
        assert child is not None
        child.kill()
        child.wait(timeout=5.0)
        child.poll = lambda: None  # type: ignore[method-assign]  # (not seen dead before)
        with pytest.raises(CloudError, match="cloud worker process ended"):
            clouds.on_message("c", _Msg(_grid(2), "camera"), 0.2, 0.2)
        clouds.on_message("c", _Msg(_grid(2), "camera"), 0.3, 0.3)
        assert proc.starts == 3
        assert clouds.objects(0.3)
    finally:
        proc.close()
    last = proc.starts
    assert proc._proc is None and last == 3


def test_child_exits_when_its_parent_end_closes() -> None:
    clouds = _clouds()
    proc = CloudProcess(clouds)
    clouds.reducer = proc
    clouds.on_message("c", _Msg(_grid(0), "camera"), 0.0, 0.0)
    child = proc._proc
    assert child is not None and proc._conn is not None
    proc._conn.close()  # as when this process is killed: the socket closes, the child sees EOF
    t0 = time.monotonic()
    assert child.wait(timeout=10.0) == 0
    assert time.monotonic() - t0 < 10.0
    proc._conn = None
    proc.close()


def test_child_errors_come_back_as_cloud_errors() -> None:
    clouds = _clouds()
    proc = CloudProcess(clouds)
    clouds.reducer = proc
    try:
        robot, _ = clouds.model()
        assert robot is not None
        inp = clouds.cloud_input("c", _Msg(_grid(0), "camera"), 0.0, 0.0)
        bad = type(inp)(inp.topic, inp.G, inp.valid, inp.raw, inp.T, np.zeros(2), inp.stamp)
        with pytest.raises(CloudError):
            proc(bad)  # joint vector of the wrong length: refused in the child, reported here
        objs, n = proc(inp)  # and the child still serves
        assert n > 0 and objs
    finally:
        proc.close()
