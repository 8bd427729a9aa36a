"""The per-point work of sensed clouds in a process of its own, at a lower CPU priority.

A node's cloud worker thread and its control tick share one interpreter. Measured with
``benchmarks/run.py cloud_delivery`` (1 M-point clouds at 10 Hz into the velocity filter, a quiet
2-core machine): with the worker thread the filter's command latency p50 / p99 went from
0.9 / 2.2 ms without clouds to 2.3 / 9.0 ms; with the worker doing nothing 0.7 / 2.3 ms; with the
worker replaced by 35 ms of compiled work that never holds the interpreter's lock, 0.7 / 2.6 ms
(and 0.55 / 2.0 ms at nice 19). So the tick waited for the lock, which the worker holds for its
Python glue and numpy steps between the compiled kernels; and lowering a *thread's* priority
made it worse (descheduled while it held the lock).

:class:`CloudProcess` therefore runs :meth:`~robot_collision.ros.point_clouds.SensedClouds.reduce`
(everything per point: surface, occlusion, merging, self-filter, radius classes, the indexes,
the fused voxel map of ``cloud_persistence``) in a child interpreter at a lower priority
(``NICE``): the node's
thread does the checks, the decimation to ``cloud_max_pixels`` and the tf lookup
(:meth:`~robot_collision.ros.point_clouds.SensedClouds.cloud_input`), sends that
:class:`~robot_collision.ros.point_clouds.CloudInput` (a 30 k-pixel grid: ~1 MB) and waits,
without the lock, for the indexed objects. The child is started with ``python -m`` (not
``multiprocessing``'s spawn, which re-imports the caller's main module), talks over a socket
pair and exits when the node's end closes (the node exiting or killed included). Messages
are pickles with their arrays out of band (protocol 5), each array received straight into its
own buffer without the lock: ``multiprocessing``'s connection held it for ~4 of the ~6 ms the
node spent receiving a 9 MB obstacle (copies through a ``BytesIO``). A child that
dies is started again for the next cloud; that cloud is refused with a :class:`CloudError`
saying so. No rclpy in here: the child never joins the ROS graph.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import struct
import subprocess
import sys
import threading
from typing import Any, Optional

import numpy as np

from ..errors import RobotCollisionError
from ..geometry.shapes import WorldObject
from .point_clouds import CloudError, CloudInput, CloudSettings, SensedClouds

__all__ = ["CloudProcess", "NICE"]

NICE = 5
"""Niceness added to the child's: the node's threads (nice 0) get a contended core first
(weight 1024 against 335), and the child still gets a share when the machine is busy. At 19
(weight 15) it starved: a fresh install's demo, compiling kernels beside a CI run, had its
filter report "no cloud newer than cloud_max_age 2 s" for minutes."""


class CloudProcess:
    """``reducer`` of a :class:`SensedClouds` (``clouds.reducer = CloudProcess(clouds)``): its
    :meth:`reduce` run in a child process with the model and settings ``clouds`` has at each
    call (sent again only when they change). Called from one worker thread at a time."""

    def __init__(self, clouds: SensedClouds, nice: int = NICE, start: bool = True) -> None:
        self._clouds = clouds
        self._nice = int(nice)
        self._lock = threading.Lock()
        self._proc: Optional[subprocess.Popen[bytes]] = None
        self._conn: Optional[socket.socket] = None
        self._sent: tuple[Any, Any] = (None, None)  # (robot, settings) the child has
        self.starts = 0
        if start:  # at once: the child loads its kernels while the node starts up
            with self._lock:
                self._start()

    def _start(self) -> socket.socket:
        mine, theirs = socket.socketpair()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "robot_collision.ros.cloud_process",
                 str(theirs.fileno()), str(self._nice)],
                pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL)
        finally:
            theirs.close()
        self._conn = mine
        self._sent = (None, None)
        self.starts += 1
        return self._conn

    def _stop_child(self) -> None:
        conn, proc = self._conn, self._proc
        self._conn, self._proc = None, None
        if conn is not None:
            with contextlib.suppress(OSError):
                conn.close()
        if proc is not None:
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=1.0)

    def __call__(self, inp: CloudInput) -> tuple[tuple[WorldObject, ...], int]:
        robot, base_frames = self._clouds.model()
        settings = self._clouds.settings
        with self._lock:
            conn = self._conn
            if conn is None or self._proc is None or self._proc.poll() is not None:
                self._stop_child()
                conn = self._start()
            try:
                if robot is not self._sent[0]:
                    send(conn, ("robot", robot, base_frames))
                    self._sent = (robot, None)
                if settings is not self._sent[1]:
                    send(conn, ("settings", settings))
                    self._sent = (robot, settings)
                send(conn, ("reduce", inp))
                reply = recv(conn)
            except (EOFError, OSError) as exc:
                code = None if self._proc is None else self._proc.poll()
                self._stop_child()
                raise CloudError(
                    f"the cloud worker process ended ({type(exc).__name__}, exit code {code}); "
                    "it is started again for the next cloud") from exc
        if reply[0] == "ok":
            return reply[1], reply[2]
        raise CloudError(reply[1])

    def close(self) -> None:
        """Stop the child (it also exits by itself when this process ends)."""
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(OSError):
                    send(self._conn, ("stop",))
            self._stop_child()


def send(sock: socket.socket, obj: object) -> None:
    """Send ``obj``: sizes, then the pickle (protocol 5), then its arrays' buffers as they are."""
    bufs: list[pickle.PickleBuffer] = []
    head = pickle.dumps(obj, protocol=5, buffer_callback=bufs.append)
    raws = [b.raw() for b in bufs]
    sizes = [len(head), *(r.nbytes for r in raws)]
    sock.sendall(struct.pack(f"<Q{len(sizes)}Q", len(sizes), *sizes))
    sock.sendall(head)
    for r in raws:
        sock.sendall(r)


def _fill(sock: socket.socket, buf: memoryview) -> None:
    while len(buf):
        k = sock.recv_into(buf)
        if k == 0:
            raise EOFError("the other end closed the cloud worker's socket")
        buf = buf[k:]


def recv(sock: socket.socket) -> Any:
    """Receive what :func:`send` sent; each array into a buffer of its own (no copy)."""
    head = np.empty(8, np.uint8)
    _fill(sock, head.data)
    n = int(head.view("<u8")[0])
    if not 1 <= n <= 1 << 20:
        raise OSError(f"cloud worker message with {n} parts: the stream is corrupt")
    sizes = np.empty(n, "<u8")
    _fill(sock, sizes.data.cast("B"))
    parts = [np.empty(int(k), np.uint8) for k in sizes]
    for p in parts:
        _fill(sock, p.data)
    return pickle.loads(parts[0].tobytes(), buffers=parts[1:])


def _serve(conn: socket.socket) -> None:
    clouds = SensedClouds(CloudSettings())
    while True:
        try:
            msg = recv(conn)
        except (EOFError, OSError):
            return
        op = msg[0]
        if op == "stop":
            return
        if op == "robot":
            clouds.set_robot(msg[1], msg[2])
        elif op == "settings":
            clouds.configure(msg[1])
        elif op == "reduce":
            try:
                objects, n = clouds.reduce(msg[1])
                reply: tuple[Any, ...] = ("ok", objects, n)
            except RobotCollisionError as exc:
                reply = ("error", str(exc))
            except Exception as exc:  # a bug must not end the worker: the node logs it
                reply = ("error", f"{type(exc).__name__}: {exc}")
            try:
                send(conn, reply)
            except (EOFError, OSError):
                return


def _warm_up() -> None:
    """Load (a first start: compile) every kernel of :meth:`SensedClouds.reduce`, on the
    default arm and a small synthetic cloud, before the priority is lowered: compiling at nice
    19 on a busy machine took the filter's first cloud past a 30 s test deadline."""
    from .. import default_robot_paths
    from ..model.robot_model import RobotModel

    urdf, srdf = default_robot_paths()
    robot = RobotModel.from_urdf(urdf, srdf=srdf)
    u = np.linspace(-0.4, 0.4, 24)
    U, V = np.meshgrid(u, u)
    G = np.stack([U, V, np.full(U.shape, 1.0)], -1)
    G[::5, ::7] = np.nan
    valid = np.isfinite(G).all(axis=-1)
    T = np.eye(4)
    T[:3, 3] = (1.5, 0.0, 0.5)
    q = np.zeros(robot.num_joints)
    for extra in ({}, {"cloud_unseen_range": 2.0, "cloud_unseen_min_range": 0.5,
                       "cloud_persistence": 1.0}):
        clouds = SensedClouds(CloudSettings(point_cloud_topics=("w",), **extra))  # type: ignore[arg-type]
        clouds.set_robot(robot, {robot.base_name})
        clouds.reduce(CloudInput("w", G, valid, int(valid.sum()), T, q, 0.0))


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m robot_collision.ros.cloud_process FD NICE``: load the kernels, lower the
    priority by ``NICE``, serve the socket ``FD``."""
    args = sys.argv[1:] if argv is None else argv
    fd, nice = int(args[0]), int(args[1])
    sock = socket.socket(fileno=fd)
    try:
        _warm_up()
    except Exception as exc:  # the first cloud then reports what is wrong
        print(f"robot_collision cloud worker: warm-up failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
    with contextlib.suppress(OSError):
        os.nice(nice)
    _serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main())
