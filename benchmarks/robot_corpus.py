"""The URDF corpus of the ``example-robot-data`` PyPI package (real robots: UR, Panda, Kinova,
TIAGo, Talos, ...), for tests and benchmarks only: robot_collision never imports it.

The package installs its robots under ``<site-packages>/cmeel.prefix/share/example-robot-data/
robots``; its URDFs reference meshes as ``package://example-robot-data/robots/...``, so
:func:`package_dirs` (the ``share`` folder) resolves them.

pinocchio + coal serve as an independent oracle on these robots (tests and benchmarks only):

- :data:`ROBOTS` names the robots the oracle tests and the ``robots`` benchmark use;
- :class:`PinOracle` loads the same URDF with pinocchio (its own parser, assimp for meshes) and
  replaces every mesh by coal's convex hull of the mesh (``mode="hull"``) or keeps coal's
  triangle mesh (``mode="exact"``, ``coal.BVHModelOBBRSS``). It answers per link pair signed
  distances (pinocchio FK, coal GJK/EPA) and times ``pin.computeCollisions`` (stop at first
  collision) on exactly the link pairs a :class:`~robot_collision.CollisionChecker` checks.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

DIST = "example-robot-data"


@functools.lru_cache(maxsize=1)
def share_dir() -> Optional[Path]:
    """The folder that contains ``example-robot-data/`` (None when the package is absent)."""
    from importlib import metadata

    try:
        dist = metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return None
    share = Path(str(dist.locate_file("cmeel.prefix/share")))
    return share if (share / DIST / "robots").is_dir() else None


def available() -> bool:
    return share_dir() is not None


def robots_dir() -> Path:
    share = share_dir()
    if share is None:
        raise FileNotFoundError(f"the {DIST} package is not installed (pip install {DIST})")
    return share / DIST / "robots"


def package_dirs() -> list[str]:
    """``package_dirs`` that resolve the corpus' ``package://example-robot-data/...`` URIs."""
    return [str(robots_dir().parent.parent)]


def urdf_files() -> list[Path]:
    """Every URDF of the corpus, sorted (69 in example-robot-data 6.0.0)."""
    return sorted(robots_dir().rglob("*.urdf")) if available() else []


def name(urdf: Path) -> str:
    """Short name of a corpus URDF: its path below the robots folder."""
    return str(urdf.relative_to(robots_dir()))


def srdf_for(urdf: Path) -> Optional[Path]:
    """The SRDF shipped for ``urdf``: ``<pkg>/srdf/<stem>.srdf``, else the longest SRDF stem that
    prefixes the URDF stem (``talos_reduced`` -> ``talos``), else the shortest SRDF whose stem the
    URDF stem prefixes (``baxter`` -> ``baxter_manipulation``); None when there is none."""
    pkg = urdf.parent.parent
    srdfs = sorted((pkg / "srdf").glob("*.srdf"))
    stem = urdf.stem
    for s in srdfs:
        if s.stem == stem:
            return s
    prefixes = [s for s in srdfs if stem.startswith(s.stem)]
    if prefixes:
        return max(prefixes, key=lambda s: len(s.stem))
    longer = [s for s in srdfs if s.stem.startswith(stem)]
    return min(longer, key=lambda s: len(s.stem)) if longer else None


def collision_mesh_files() -> list[Path]:
    """Every distinct mesh file that a corpus URDF uses as collision geometry (resolved)."""
    if not available():
        return []
    found: set[Path] = set()
    share = robots_dir().parent.parent
    for urdf in urdf_files():
        text = urdf.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
        for block in re.findall(r"<collision\b.*?</collision>", text, flags=re.DOTALL):
            for uri in re.findall(r"filename\s*=\s*\"([^\"]+)\"", block):
                if uri.startswith("package://"):
                    path = share / uri[len("package://"):].lstrip("/")
                    if path.is_file():
                        found.add(path)
    return sorted(found)


def oracle_available() -> bool:
    """True when the corpus, pinocchio and coal are all installed."""
    if not available():
        return False
    try:
        import coal  # noqa: F401
        import pinocchio  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class CorpusRobot:
    """A robot of the corpus: URDF and SRDF paths relative to ``robots/``."""

    name: str
    urdf: str
    srdf: Optional[str]
    dae: bool = False  # meshes in Collada

    def urdf_path(self) -> Path:
        return robots_dir() / self.urdf

    def srdf_path(self) -> Optional[Path]:
        return robots_dir() / self.srdf if self.srdf else None

    def load(self, **kwargs: Any) -> Any:
        """The robot as a :class:`robot_collision.RobotModel` (with its SRDF if shipped)."""
        from robot_collision import RobotModel

        return RobotModel.from_urdf(
            self.urdf_path(), srdf=self.srdf_path(), package_dirs=package_dirs(), **kwargs
        )


ROBOTS: dict[str, CorpusRobot] = {
    r.name: r
    for r in (
        CorpusRobot("ur5", "ur_description/urdf/ur5_robot.urdf", "ur_description/srdf/ur5.srdf"),
        CorpusRobot(
            "panda", "panda_description/urdf/panda.urdf", "panda_description/srdf/panda.srdf"
        ),
        CorpusRobot(
            "kinova",
            "kinova_description/robots/kinova.urdf",
            "kinova_description/srdf/kinova.srdf",
            dae=True,
        ),
        CorpusRobot("tiago", "tiago_description/robots/tiago.urdf", None, dae=True),
        CorpusRobot("talos", "talos_data/robots/talos_reduced.urdf", "talos_data/srdf/talos.srdf"),
    )
}
"""The oracle robots of issue 13 (UR5, Panda, Kinova and TIAGo with .dae meshes, Talos)."""


def _stdvec(points: NDArray[np.float64]) -> Any:
    import coal

    vec = coal.StdVec_Vec3s()
    for p in np.asarray(points, dtype=float):
        vec.append(np.ascontiguousarray(p))
    return vec


def coal_convex(vertices: NDArray[np.float64]) -> Any:
    """coal's convex hull (qhull) of ``vertices`` (k, 3)."""
    import coal

    return coal.Convex.convexHull(_stdvec(vertices), False, "")


class PinOracle:
    """pinocchio + coal on the same URDF as ``robot`` (a RobotModel) and ``checker``.

    ``mode``: ``"hull"`` (each mesh is coal's convex hull of its points) or ``"exact"`` (each
    mesh is coal's triangle mesh). Primitives are coal's own shapes. Self pairs are the link
    pairs ``checker`` evaluates (skip rules and SRDF included).
    """

    def __init__(self, robot: Any, checker: Any, urdf: Path, mode: str = "hull") -> None:
        import coal
        import pinocchio as pin

        self.pin = pin
        self.coal = coal
        self.robot = robot
        self.model = pin.buildModelFromUrdf(str(urdf))
        gm = pin.buildGeomFromUrdf(
            self.model, str(urdf), pin.GeometryType.COLLISION, package_dirs=package_dirs()
        )
        for go in gm.geometryObjects:
            g = go.geometry
            if isinstance(g, coal.BVHModelBase):
                if mode == "hull":
                    # qhull's hull of assimp's vertices (buildConvexRepresentation would keep
                    # every vertex with the mesh's own adjacency, on which coal's hill-climbing
                    # support stops in local maxima of non-convex meshes)
                    pts = np.array(g.vertices())
                    go.geometry = coal_convex(pts)
                else:
                    assert mode == "exact", mode
        self.geom_model = gm
        # link name -> geometry object ids (pinocchio names a link's frame after the link)
        self.link_geoms: dict[str, list[int]] = {}
        for gid, go in enumerate(gm.geometryObjects):
            fname = self.model.frames[go.parentFrame].name
            self.link_geoms.setdefault(fname, []).append(gid)
        names = robot.link_names
        self.pairs: list[tuple[str, str]] = []
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                a, b = names[i], names[j]
                if checker.is_pair_checked(a, b) and a in self.link_geoms and b in self.link_geoms:
                    self.pairs.append((a, b))
        for a, b in self.pairs:
            for ga in self.link_geoms[a]:
                for gb in self.link_geoms[b]:
                    gm.addCollisionPair(pin.CollisionPair(ga, gb))
        self.data = self.model.createData()
        self.geom_data = pin.GeometryData(gm)
        self._tri_cache: dict[int, Optional[NDArray[np.float64]]] = {}
        # configuration map: our joint k -> pinocchio (idx_q, nq); mimic joints follow leaders
        self._map: list[tuple[int, int, int, float, float]] = []  # (our idx, idx_q, nq, s, o)
        kin = robot.kin
        jnames = [robot.link_joint.get(ln) for ln in robot.link_names]
        for li, jname in enumerate(jnames):
            if jname is None or kin.qidx[li] < 0 or not self.model.existJointName(jname):
                continue
            jid = self.model.getJointId(jname)
            jm = self.model.joints[jid]
            self._map.append(
                (int(kin.qidx[li]), jm.idx_q, jm.nq, float(kin.scale[li]), float(kin.offset[li]))
            )

        # planar and floating joints (our virtual joints J/x, ...): pinocchio's JointModelPlanar
        # (x, y, cos, sin) and JointModelFreeFlyer (x, y, z, quaternion x y z w)
        self._multi: list[tuple[str, list[int], int]] = []  # (type, our indices, idx_q)
        for jname, (jtype, variables) in getattr(robot, "multi_dof_joints", {}).items():
            if self.model.existJointName(jname):
                jm = self.model.joints[self.model.getJointId(jname)]
                self._multi.append(
                    (jtype, [robot.joint_index(v) for v in variables], int(jm.idx_q)))

    def q_pin(self, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """pinocchio configuration for our configuration ``q`` (n,)."""
        qp = self.pin.neutral(self.model)
        for k, iq, nq, s, o in self._map:
            v = s * q[k] + o
            if nq == 1:
                qp[iq] = v
            else:  # continuous joint: (cos, sin)
                qp[iq] = np.cos(v)
                qp[iq + 1] = np.sin(v)
        for jtype, idx, iq in self._multi:
            v = q[idx]
            if jtype == "planar":
                qp[iq : iq + 4] = [v[0], v[1], np.cos(v[2]), np.sin(v[2])]
            else:  # floating: x y z yaw pitch roll, R = Rz(yaw) Ry(pitch) Rx(roll)
                quat = self.pin.Quaternion(self.pin.rpy.rpyToMatrix(v[5], v[4], v[3]))
                qp[iq : iq + 7] = [v[0], v[1], v[2], quat.x, quat.y, quat.z, quat.w]
        return qp

    def update(self, q: NDArray[np.float64]) -> None:
        self.pin.updateGeometryPlacements(
            self.model, self.data, self.geom_model, self.geom_data, self.q_pin(q)
        )

    def pair_distances(self, q: NDArray[np.float64]) -> dict[tuple[str, str], float]:
        """Signed distance (m, negative = penetration) of every checked link pair at ``q``."""
        self.update(q)
        coal = self.coal
        out: dict[tuple[str, str], float] = {}
        gos = self.geom_model.geometryObjects
        oMg = self.geom_data.oMg
        for a, b in self.pairs:
            best = np.inf
            for ga in self.link_geoms[a]:
                for gb in self.link_geoms[b]:
                    req = coal.DistanceRequest()
                    req.enable_signed_distance = True
                    req.gjk_tolerance = 1e-10  # default 1e-6 (m): too loose for an oracle
                    req.epa_tolerance = 1e-10
                    res = coal.DistanceResult()
                    d = coal.distance(
                        gos[ga].geometry,
                        coal.Transform3s(oMg[ga].rotation, oMg[ga].translation),
                        gos[gb].geometry,
                        coal.Transform3s(oMg[gb].rotation, oMg[gb].translation),
                        req,
                        res,
                    )
                    best = min(best, d)
            out[(a, b)] = best
        return out

    def pair_collisions(self, q: NDArray[np.float64]) -> dict[tuple[str, str], bool]:
        """Collision (coal.collide, boolean) of every checked link pair at ``q``."""
        self.update(q)
        coal = self.coal
        out: dict[tuple[str, str], bool] = {}
        gos = self.geom_model.geometryObjects
        oMg = self.geom_data.oMg
        for a, b in self.pairs:
            hit = False
            for ga in self.link_geoms[a]:
                for gb in self.link_geoms[b]:
                    res = coal.CollisionResult()
                    n = coal.collide(
                        gos[ga].geometry,
                        coal.Transform3s(oMg[ga].rotation, oMg[ga].translation),
                        gos[gb].geometry,
                        coal.Transform3s(oMg[gb].rotation, oMg[gb].translation),
                        coal.CollisionRequest(),
                        res,
                    )
                    if n > 0:
                        hit = True
                        break
                if hit:
                    break
            out[(a, b)] = hit
        return out

    def _triangles(self, gid: int) -> Optional[NDArray[np.float64]]:
        """(m, 3, 3) triangles (geometry frame) of geometry ``gid`` if it is a triangle mesh."""
        if gid not in self._tri_cache:
            g = self.geom_model.geometryObjects[gid].geometry
            tris = None
            if isinstance(g, self.coal.BVHModelBase):
                v = np.array(g.vertices())
                idx = (g.tri_indices(i) for i in range(g.num_tris))
                t = np.array([[tr[0], tr[1], tr[2]] for tr in idx], dtype=np.int64)
                tris = v[t]
            self._tri_cache[gid] = tris
        return self._tri_cache[gid]

    def _inside(self, small: int, big: int) -> bool:
        """True when a point of geometry ``small`` (its first vertex, else its origin) lies
        inside the triangle mesh ``big`` (winding number > 1/2; placements of the last
        :meth:`update`)."""
        tris = self._triangles(big)
        if tris is None:
            return False
        M = self.geom_data.oMg
        g = self.geom_model.geometryObjects[small].geometry
        local = np.array(g.vertices())[0] if isinstance(g, self.coal.BVHModelBase) else np.zeros(3)
        world = M[small].rotation @ local + M[small].translation
        p = M[big].rotation.T @ (world - M[big].translation)
        a, b, c = (tris[:, k] - p for k in range(3))
        la, lb, lc = (np.linalg.norm(x, axis=1) for x in (a, b, c))
        num = np.einsum("ij,ij->i", a, np.cross(b, c))
        den = (
            la * lb * lc
            + np.einsum("ij,ij->i", a, b) * lc
            + np.einsum("ij,ij->i", b, c) * la
            + np.einsum("ij,ij->i", c, a) * lb
        )
        return bool(abs(np.sum(2.0 * np.arctan2(num, den))) / (4.0 * np.pi) > 0.5)

    def contained(self, q: NDArray[np.float64]) -> bool:
        """True when at ``q`` some checked pair has one geometry inside the other's triangle
        mesh (``mode="exact"``). coal tests triangle meshes as surfaces: a shape wholly inside
        a closed mesh is reported free (UR5: the 1 cm ``ee_link`` box inside the forearm in 3
        of 1000 random configurations). Call it where :meth:`in_collision` says free: the
        surfaces then do not meet, so one point of a shape decides whether all of it is
        inside."""
        self.update(q)
        for a, b in self.pairs:
            for ga in self.link_geoms[a]:
                for gb in self.link_geoms[b]:
                    if self._inside(ga, gb) or self._inside(gb, ga):
                        return True
        return False

    def in_collision(self, q: NDArray[np.float64]) -> bool:
        """``pin.computeCollisions`` with stop-at-first-collision (the timed oracle path)."""
        return bool(
            self.pin.computeCollisions(
                self.model, self.data, self.geom_model, self.geom_data, self.q_pin(q), True
            )
        )
