"""The robot model: a rigid-body tree with joint limits and per-body collision shapes.

``RobotModel.from_urdf`` builds it from a URDF path or string (and optionally an SRDF).
Bodies are every link but the root, in depth-first tree order (children in the order their
joints appear in the URDF); the root is ``base_name``. The configuration holds the ``n``
non-fixed, non-mimic joints (``joint_names``) in the same tree order; mimic joints follow
their leader as ``multiplier * q_leader + offset``. Units: rad for revolute/continuous joints,
m for prismatic ones; poses are (4, 4) in the base (root link) frame.

Planar and floating joints are expanded at load time into chains of single-axis virtual joints
(:func:`~robot_collision.model.urdf.expand_multi_dof_joints`): a planar joint ``J`` is the
variables ``J/x``, ``J/y`` (m) and ``J/theta`` (rad, continuous), as MoveIt names them; a
floating joint is ``J/x``, ``J/y``, ``J/z`` (m) and ``J/yaw``, ``J/pitch``, ``J/roll`` (rad,
continuous, R = Rz(yaw) Ry(pitch) Rx(roll)). ``multi_dof_joints`` maps ``J`` to its type and
variables.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ConfigurationError, ModelError, ShapeError, SRDFError, UnknownNameError
from ..geometry.decomposition import (
    AUTO_DECOMPOSITION,
    MESH_MODES,
    DecompositionOptions,
    resolve_meshes,
)
from ..geometry.shapes import Mesh, Shape
from ..load_limits import LoadLimits
from .kinematics import (
    PRISMATIC,
    REVOLUTE,
    KinematicArrays,
    fk_into,
    forward_kinematics_batch,
)
from .load_report import DEFAULTED, DROPPED, LoadReport
from .urdf import (
    JointDescription,
    LinkDescription,
    PackageDirs,
    SRDFDescription,
    URDFDescription,
    XacroArgs,
    XMLSource,
    expand_multi_dof_joints,
    parse_srdf,
    parse_urdf,
)

__all__ = ["JointInfo", "RobotModel", "CONTINUOUS_SAMPLE_RANGE", "MeshMode"]

MeshMode = Union[str, Mapping[str, str]]
"""``"hull"``, ``"decomposition"`` or ``"auto"`` for every link, or a mapping from link names to
one of them (``"*"``: the default for links not named, else ``"hull"``)."""

CONTINUOUS_SAMPLE_RANGE = np.pi
"""Continuous joints (no limits) are sampled in ``[-pi, pi]``."""


@dataclass(frozen=True)
class JointInfo:
    """An actuated (configuration) joint: limits in rad or m, velocity limit in rad/s or m/s."""

    name: str
    type: str  # "revolute", "continuous" or "prismatic"
    child: str
    lower: float
    upper: float
    velocity: float
    effort: float

    @property
    def is_continuous(self) -> bool:
        return self.type == "continuous"


class RobotModel:
    """Rigid-body tree with collision geometry. Build with :meth:`from_urdf`."""

    def __init__(
        self, description: URDFDescription, srdf: Optional[SRDFDescription] = None
    ) -> None:
        self.name = description.name
        self.load_report: LoadReport = description.report  # what loading changed or dropped
        self.multi_dof_joints: dict[str, tuple[str, tuple[str, ...]]] = dict(
            description.multi_dof
        )
        """Planar and floating joints of the URDF: name -> (type, configuration variables)."""
        self._build_tree(description)
        self.srdf = srdf
        self._geometry: dict[str, list[tuple[Shape, NDArray[np.float64]]]] = {
            ln.name: [(s, np.asarray(p, dtype=float)) for s, p in ln.collisions]
            for ln in description.links
        }
        self.geometry_version = 0
        self.groups: dict[str, list[str]] = self._expand_groups(srdf) if srdf else {}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(
        cls,
        path_or_xml: XMLSource,
        srdf: Optional[XMLSource] = None,
        package_dirs: PackageDirs = None,
        limits: Optional[LoadLimits] = None,
        warn: bool = True,
        mesh_mode: MeshMode = "hull",
        decomposition: Optional[DecompositionOptions] = None,
        xacro_args: XacroArgs = None,
        virtual_joints: bool = False,
    ) -> RobotModel:
        """Load a URDF and an optional SRDF, each a file path, XML text or XML bytes.

        ``limits`` caps file sizes and counts and sets loading defaults
        (:class:`~robot_collision.load_limits.LoadLimits`; defaults when None). What the loader
        had to drop or default is in ``model.load_report`` and, with ``warn``, also issued as
        :class:`~robot_collision.errors.ModelLoadWarning` warnings.

        ``mesh_mode`` chooses how each link's meshes collide: ``"hull"`` (default, MATLAB
        semantics: the convex hull of each mesh), ``"decomposition"`` (the convex parts of a
        CoACD decomposition with ``decomposition`` options, cached on disk; see
        :mod:`robot_collision.geometry.decomposition`) or ``"auto"`` (the decomposition for the
        meshes whose hull is much larger than the mesh, by the rule and parameters of
        :class:`~robot_collision.geometry.decomposition.DecompositionOptions`, the hull for the
        others), for all links or per link name. The meshes to decompose are decomposed in
        this process (in parallel processes with ``DecompositionOptions.workers`` > 1).
        Without ``decomposition`` options, a ``mesh_mode`` that says ``"auto"`` anywhere
        decomposes with the cheaper
        :data:`~robot_collision.geometry.decomposition.AUTO_DECOMPOSITION`, else with
        ``DecompositionOptions()``.

        A ``.xacro`` file (URDF or SRDF) is expanded with the ``xacro`` package and
        ``xacro_args`` (``{name: value}``, the ``name:=value`` of the xacro command line);
        without the package it is refused with a message saying how to expand it.

        ``virtual_joints``: add the SRDF's planar and floating ``<virtual_joint>`` entries to
        the model as MoveIt does (a root link named after ``parent_frame``, the joint onto the
        URDF's root, expanded like a URDF planar/floating joint into ``<name>/x`` ...); by
        default they are recognised and kept in their groups but add no variable."""
        report = LoadReport(warn=warn)
        desc = parse_urdf(
            path_or_xml, package_dirs=package_dirs, limits=limits, report=report,
            xacro_args=xacro_args,
        )
        srdf_desc: Optional[SRDFDescription] = None
        if srdf is not None:
            children = {j.child for j in desc.joints}
            roots = [ln.name for ln in desc.links if ln.name not in children]
            all_joints = [j.name for j in desc.joints] + list(desc.multi_dof)
            srdf_desc = parse_srdf(
                srdf, [ln.name for ln in desc.links], all_joints, report, limits,
                base_link=roots[0] if len(roots) == 1 else None,
                xacro_args=xacro_args, package_dirs=package_dirs,
            )
            if virtual_joints:
                desc = _with_virtual_joints(desc, srdf_desc, limits)
        desc = _apply_mesh_mode(desc, mesh_mode, decomposition)
        model = cls(desc)
        if srdf_desc is not None:
            model.srdf = srdf_desc
            model.groups = model._expand_groups(srdf_desc)
        return model

    def _build_tree(self, desc: URDFDescription) -> None:
        link_names = [ln.name for ln in desc.links]
        children: dict[str, list] = {n: [] for n in link_names}
        parent_joint: dict[str, object] = {}
        for j in desc.joints:
            if j.child in parent_joint:
                raise ModelError(f"link {j.child!r} has two parent joints; a URDF must be a tree")
            parent_joint[j.child] = j
            children[j.parent].append(j)
        roots = [n for n in link_names if n not in parent_joint]
        if len(roots) != 1:
            raise ModelError(
                f"URDF must have exactly one root link, found {len(roots)}: {roots[:5]}; "
                "connect every link with a joint"
            )
        order: list[str] = []
        jorder: list = [None]
        stack = [(roots[0], None)]
        while stack:
            name, joint = stack.pop()
            order.append(name)
            if joint is not None:
                jorder.append(joint)
            for j in reversed(children[name]):
                stack.append((j.child, j))
        if len(order) != len(link_names):
            raise ModelError("URDF joints form a cycle; a URDF must be a tree")
        self.base_name: str = roots[0]
        self.link_names: list[str] = order
        self.body_names: list[str] = order[1:]
        self._link_index = {n: i for i, n in enumerate(order)}
        L = len(order)
        jdescs = {j.name: j for j in desc.joints}
        actuated = [j for j in jorder[1:] if j.type != "fixed" and j.mimic is None]
        self.joints: list[JointInfo] = [
            JointInfo(j.name, j.type, j.child, j.lower, j.upper, j.velocity, j.effort)
            for j in actuated
        ]
        self.joint_names: list[str] = [j.name for j in self.joints]
        self.joint_types: dict[str, str] = {j.name: j.type for j in jorder[1:]}
        """Type of every URDF joint (fixed and mimic ones too), in tree order."""
        self.mimic_joint_names: list[str] = [
            j.name for j in jorder[1:] if j.type != "fixed" and j.mimic is not None
        ]
        qindex = {j.name: k for k, j in enumerate(self.joints)}
        parent = np.full(L, -1, dtype=np.int64)
        jtype = np.zeros(L, dtype=np.int64)
        origin = np.tile(np.eye(4), (L, 1, 1))
        axis = np.zeros((L, 3))
        qidx = np.full(L, -1, dtype=np.int64)
        scale = np.ones(L)
        offset = np.zeros(L)
        self.link_joint: dict[str, str] = {}
        for i in range(1, L):
            j = jorder[i]
            self.link_joint[order[i]] = j.name
            parent[i] = self._link_index[j.parent]
            origin[i] = j.origin
            axis[i] = j.axis
            if j.type == "fixed":
                continue
            jtype[i] = PRISMATIC if j.type == "prismatic" else REVOLUTE
            if j.mimic is None:
                qidx[i] = qindex[j.name]
                continue
            # follow mimic chains to an actuated joint
            mult, off, leader = 1.0, 0.0, j
            seen = {j.name}
            while leader.mimic is not None:
                lname, m, o = leader.mimic
                if lname not in jdescs:
                    raise ModelError(f"joint {leader.name!r} mimics unknown joint {lname!r}")
                if lname in seen:
                    raise ModelError(f"mimic joints form a cycle through {lname!r}")
                seen.add(lname)
                # v_j = mult * v_leader + off and v_leader = m * v_next + o
                mult, off = mult * m, mult * o + off
                leader = jdescs[lname]
            if leader.type == "fixed":
                raise ModelError(f"joint {j.name!r} mimics fixed joint {leader.name!r}")
            qidx[i] = qindex[leader.name]
            scale[i] = mult
            offset[i] = off
        self.kin = KinematicArrays(parent, jtype, origin, axis, qidx, scale, offset)
        self.lower = np.array([j.lower for j in self.joints])
        self.upper = np.array([j.upper for j in self.joints])
        self.velocity_limits = np.array([j.velocity for j in self.joints])
        self.is_continuous = np.array([j.is_continuous for j in self.joints], dtype=bool)
        self.parent_of: dict[str, Optional[str]] = {
            n: (order[parent[i]] if parent[i] >= 0 else None) for i, n in enumerate(order)
        }

    def _expand_groups(self, srdf: SRDFDescription) -> dict[str, list[str]]:
        """Group name -> actuated joint names (joints, links, chains and subgroups expanded).

        A member naming a joint, link or group that does not exist, or a chain whose base is
        not an ancestor of its tip, is dropped with a note in :attr:`load_report`."""
        out: dict[str, list[str]] = {}
        actuated = set(self.joint_names)
        all_joints = set(self.link_joint.values())
        virtual = {v[0] for v in srdf.virtual_joints}
        report = self.load_report
        noted: set[str] = set()

        def drop(element: str, message: str) -> None:
            if element not in noted:  # subgroups are expanded once per including group
                noted.add(element)
                report.add("SRDF", element, DROPPED, message)

        def expand(g: str, depth: int = 0) -> list[str]:
            if depth > 20:
                raise SRDFError(f"SRDF group {g!r} includes itself")
            names: list[str] = []
            for j in srdf.groups.get(g, []):
                if j in all_joints:
                    names.append(j)
                elif j in self.multi_dof_joints:
                    names.extend(self.multi_dof_joints[j][1])
                elif j in virtual:
                    pass  # an SRDF virtual joint: recognised, no variable of this model
                else:
                    drop(f"group {g!r} joint {j!r}",
                         f"group {g!r} names joint {j!r}, which is not in the URDF; dropped")
            for lname in srdf.group_links.get(g, []):
                if lname in self.link_joint:
                    names.append(self.link_joint[lname])
                elif lname not in self._link_index:
                    drop(f"group {g!r} link {lname!r}",
                         f"group {g!r} names link {lname!r}, which is not in the URDF; dropped")
            for base, tip in srdf.group_chains.get(g, []):
                element = f"group {g!r} chain {base!r}-{tip!r}"
                missing = [x for x in (base, tip) if x not in self._link_index]
                if missing:
                    drop(element, f"group {g!r} chain from {base!r} to {tip!r} names link "
                         f"{missing[0]!r}, which is not in the URDF; chain dropped")
                    continue
                link: Optional[str] = tip
                chain: list[str] = []
                while link is not None and link != base:
                    if link in self.link_joint:
                        chain.append(self.link_joint[link])
                    link = self.parent_of[link]
                if link != base:
                    drop(element, f"group {g!r} chain: {base!r} is not an ancestor of {tip!r}; "
                         "chain dropped")
                    continue
                names.extend(reversed(chain))
            for sub in srdf.group_subgroups.get(g, []):
                if sub not in srdf.groups:
                    drop(f"group {g!r} subgroup {sub!r}",
                         f"group {g!r} includes group {sub!r}, which the SRDF does not define; "
                         "dropped")
                    continue
                names.extend(expand(sub, depth + 1))
            wanted = set(names)
            return [j for j in self.joint_names if j in wanted and j in actuated]

        for g in srdf.groups:
            out[g] = expand(g)
        return out

    # ------------------------------------------------------------------ sizes and names
    @property
    def num_joints(self) -> int:
        """n: number of configuration variables."""
        return len(self.joint_names)

    @property
    def num_bodies(self) -> int:
        """m: number of bodies (links except the base)."""
        return len(self.body_names)

    def link_index(self, name: str) -> int:
        """Index of a link in tree order (base = 0, body k = k + 1)."""
        try:
            return self._link_index[name]
        except KeyError:
            raise UnknownNameError(
                f"unknown body {name!r}; known bodies: {', '.join(self.link_names)}"
            ) from None

    def joint_index(self, name: str) -> int:
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise UnknownNameError(
                f"unknown joint {name!r}; configuration joints: {', '.join(self.joint_names)}"
            ) from None

    # ------------------------------------------------------------------ configurations
    def validate_configuration(
        self, q: ArrayLike, what: str = "configuration"
    ) -> NDArray[np.float64]:
        """Return ``q`` as a contiguous float (n,) array or raise :class:`ConfigurationError`."""
        try:
            arr = np.ascontiguousarray(q, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"{what} must be a sequence of {self.num_joints} numbers"
            ) from exc
        if arr.shape != (self.num_joints,):
            raise ConfigurationError(
                f"{what} must have {self.num_joints} values (joints {', '.join(self.joint_names)}),"
                f" got shape {arr.shape}"
            )
        # (a robot's few values: math.isfinite over a list is ~5x faster than numpy's
        # isfinite + all, whose per-call overhead dominated pair_distances on small robots)
        finite = (all(map(math.isfinite, arr.tolist())) if arr.shape[0] <= 64
                  else bool(np.isfinite(arr).all()))
        if not finite:
            bad = [self.joint_names[i] for i in np.flatnonzero(~np.isfinite(arr))]
            raise ConfigurationError(f"{what} has non-finite values for joints {bad}")
        return arr

    def validate_batch(self, Q: ArrayLike) -> NDArray[np.float64]:
        """Return ``Q`` as a contiguous (N, n) float array or raise :class:`ConfigurationError`."""
        try:
            arr = np.ascontiguousarray(Q, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError("batch must be an (N, n) array of numbers") from exc
        if arr.ndim != 2 or arr.shape[1] != self.num_joints:
            raise ConfigurationError(
                f"batch must have shape (N, {self.num_joints}), got {arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise ConfigurationError("batch has non-finite values")
        return arr

    def within_limits(self, q: ArrayLike, tol: float = 1e-9) -> bool:
        arr = np.asarray(q, dtype=float)
        return bool(np.all(arr >= self.lower - tol) and np.all(arr <= self.upper + tol))

    def home_configuration(self) -> NDArray[np.float64]:
        """MoveIt's default position of every joint: zero when zero is within its limits, else
        the middle of its range."""
        zero_ok = (self.lower <= 0.0) & (self.upper >= 0.0)
        with np.errstate(invalid="ignore"):
            mid = 0.5 * (self.lower + self.upper)
        return np.where(
            zero_ok, 0.0, np.where(np.isfinite(mid), mid, np.clip(0.0, self.lower, self.upper))
        )

    def sampling_bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Finite (lower, upper) boxes for sampling: unbounded joints use +-pi (or +-1 m)."""
        lo = np.where(np.isfinite(self.lower), self.lower, -CONTINUOUS_SAMPLE_RANGE)
        hi = np.where(np.isfinite(self.upper), self.upper, CONTINUOUS_SAMPLE_RANGE)
        return lo, hi

    def random_configuration(
        self, rng: Union[np.random.Generator, int, None] = None
    ) -> NDArray[np.float64]:
        """Uniform sample within the joint limits (continuous joints in [-pi, pi])."""
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        lo, hi = self.sampling_bounds()
        return gen.uniform(lo, hi)

    def named_configuration(self, name: str) -> NDArray[np.float64]:
        """An SRDF ``group_state`` by name (joints not in the state stay at home)."""
        q = self.home_configuration()
        if self.srdf is not None:
            for group, states in self.srdf.group_states.items():
                if name in states:
                    for j, v in states[name].items():
                        if j in self.joint_names:
                            q[self.joint_index(j)] = v
                    lists = self.srdf.group_state_lists.get(group, {}).get(name, {})
                    for j, values in lists.items():
                        if j in self.multi_dof_joints:
                            jtype, variables = self.multi_dof_joints[j]
                            for var, v in zip(variables, _multi_dof_values(jtype, values)):
                                q[self.joint_index(var)] = v
                    return q
        raise UnknownNameError(f"no SRDF group_state named {name!r}")

    # ------------------------------------------------------------------ kinematics
    def link_poses(self, q: ArrayLike) -> NDArray[np.float64]:
        """Poses (L, 4, 4) of all links in tree order (base first), base frame."""
        arr = self.validate_configuration(q)
        out = np.empty((len(self.link_names), 4, 4))
        fk_into(arr, *self.kin, out)
        return out

    def link_poses_batch(self, Q: ArrayLike) -> NDArray[np.float64]:
        """Poses (N, L, 4, 4) for a batch of configurations (N, n)."""
        out: NDArray[np.float64] = forward_kinematics_batch(self.validate_batch(Q), *self.kin)
        return out

    def link_transforms(self, q: ArrayLike) -> dict[str, NDArray[np.float64]]:
        """Every link's (4, 4) pose in the base frame, by name."""
        T = self.link_poses(q)
        return {n: T[i] for i, n in enumerate(self.link_names)}

    # ------------------------------------------------------------------ geometry
    def collision_geometry(self, body: str) -> list[tuple[Shape, NDArray[np.float64]]]:
        """The collision shapes of ``body`` (or the base) with (4, 4) poses in its link frame."""
        self.link_index(body)
        return list(self._geometry.get(body, []))

    def add_collision(self, body: str, shape: Shape, pose: Optional[ArrayLike] = None) -> None:
        """Attach ``shape`` to ``body`` at ``pose`` (4, 4) in the body frame (identity default)."""
        self.link_index(body)
        if not isinstance(shape, Shape):
            raise ShapeError(f"add_collision needs a Shape, got {type(shape).__name__}")
        T = np.eye(4) if pose is None else np.asarray(pose, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ShapeError("collision pose must be a finite (4, 4) homogeneous transform")
        self._geometry.setdefault(body, []).append((shape, T))
        self.geometry_version += 1

    def clear_collision(self, body: str) -> None:
        """Remove every collision shape of ``body``."""
        self.link_index(body)
        self._geometry[body] = []
        self.geometry_version += 1

    def copy_geometry(self) -> dict[str, list[tuple[Shape, NDArray[np.float64]]]]:
        return {k: list(v) for k, v in self._geometry.items()}

    def disabled_pairs(self) -> list[tuple[str, str]]:
        """SRDF ``disable_collisions`` pairs (empty without an SRDF)."""
        return list(self.srdf.disabled_pairs) if self.srdf else []

    def group_joint_indices(self, group: str) -> NDArray[np.int64]:
        """Configuration indices of an SRDF (or user-added) group's joints."""
        if group not in self.groups:
            raise UnknownNameError(
                f"unknown joint group {group!r}; known groups: {', '.join(self.groups) or 'none'}"
            )
        return np.array([self.joint_index(j) for j in self.groups[group]], dtype=np.int64)

    def add_group(self, name: str, joints: Iterable[str]) -> None:
        """Define or replace a joint group (e.g. from YAML) by joint names."""
        js = list(joints)
        for j in js:
            self.joint_index(j)
        self.groups[name] = js

    def __repr__(self) -> str:
        return (
            f"RobotModel({self.name!r}, base={self.base_name!r}, bodies={self.num_bodies}, "
            f"joints={self.num_joints})"
        )


def _with_virtual_joints(
    desc: URDFDescription, srdf: SRDFDescription, limits: Optional[LoadLimits]
) -> URDFDescription:
    """``desc`` with the SRDF's planar/floating virtual joints added at its root (MoveIt's
    model): a link named ``parent_frame`` and the joint onto ``child_link``, expanded."""
    added = [v for v in srdf.virtual_joints if v[1] in ("planar", "floating")]
    if not added:
        return desc
    if len(added) > 1:
        raise SRDFError(
            f"the SRDF has {len(added)} planar/floating virtual joints; a robot has one root"
        )
    name, jtype, parent, child = added[0]
    lim = limits or LoadLimits()
    if parent in {ln.name for ln in desc.links}:
        raise SRDFError(
            f"virtual_joint {name!r}: parent_frame {parent!r} is already a link of the URDF"
        )
    if name in {j.name for j in desc.joints} or name in desc.multi_dof:
        raise SRDFError(f"virtual_joint {name!r} has the name of a URDF joint")
    joint = JointDescription(
        name, jtype, parent, child, np.eye(4), np.array([0.0, 0.0, 1.0]), -np.inf, np.inf,
        float(lim.default_velocity_limit), float("inf"), None,
    )
    links = [LinkDescription(parent, []), *desc.links]
    links, joints, multi = expand_multi_dof_joints(links, [joint, *desc.joints], lim)
    desc.report.add(
        "SRDF", f"virtual_joint {name!r}", DEFAULTED,
        f"virtual_joint {name!r} ({jtype}) added at the root: variables "
        f"{', '.join(multi[name][1])}, velocity limit {lim.default_velocity_limit:g} "
        "(LoadLimits.default_velocity_limit), translations within "
        f"+-{lim.floating_translation_bound:g} m (LoadLimits.floating_translation_bound)",
    )
    return replace(desc, links=links, joints=joints, multi_dof={**multi, **desc.multi_dof})


def _multi_dof_values(jtype: str, values: list[float]) -> list[float]:
    """A planar or floating joint's SRDF group_state values in this model's variable order.

    Planar: ``x y theta`` as written. Floating: MoveIt writes ``x y z qx qy qz qw`` (its
    quaternion layout) -> ``x y z yaw pitch roll``; six values are taken as written."""
    if jtype != "floating" or len(values) != 7:
        return list(values)
    x, y, z, qx, qy, qz, qw = values
    nrm = float(np.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)) or 1.0
    qx, qy, qz, qw = qx / nrm, qy / nrm, qz / nrm, qw / nrm
    roll = float(np.arctan2(2 * (qw * qx + qy * qz), 1 - 2 * (qx * qx + qy * qy)))
    pitch = float(np.arcsin(np.clip(2 * (qw * qy - qz * qx), -1.0, 1.0)))
    yaw = float(np.arctan2(2 * (qw * qz + qx * qy), 1 - 2 * (qy * qy + qz * qz)))
    return [x, y, z, yaw, pitch, roll]


def _apply_mesh_mode(
    desc: URDFDescription, mesh_mode: MeshMode, options: Optional[DecompositionOptions]
) -> URDFDescription:
    """``desc`` with the mesh files of the links in ``"decomposition"`` mode, and those of the
    links in ``"auto"`` mode that the rule picks, replaced by their convex parts (same collision
    origin)."""
    names = {ln.name for ln in desc.links}
    if isinstance(mesh_mode, str):
        modes: dict[str, str] = {"*": mesh_mode}
    elif isinstance(mesh_mode, Mapping):
        modes = dict(mesh_mode)
    else:
        raise ModelError(f"mesh_mode must be a string or a mapping, got {type(mesh_mode).__name__}")
    for key, mode in modes.items():
        if mode not in MESH_MODES:
            raise ModelError(
                f"mesh_mode {mode!r} for {key!r} is not one of {', '.join(MESH_MODES)}"
            )
        if key != "*" and key not in names:
            raise UnknownNameError(f"mesh_mode names link {key!r}, which is not in the URDF")
    default = modes.get("*", "hull")
    if default == "hull" and all(m == "hull" for m in modes.values()):
        return desc
    if options is None:
        auto = "auto" in modes.values()
        options = AUTO_DECOMPOSITION if auto else DecompositionOptions()
    requests: list[tuple[Union[str, os.PathLike[str]], Any, str]] = []
    where: list[tuple[int, int]] = []  # (link index, collision index) of each request
    for i, ln in enumerate(desc.links):
        mode = modes.get(ln.name, default)
        if mode == "hull":
            continue
        for j, (shape, _) in enumerate(ln.collisions):
            if isinstance(shape, Mesh) and isinstance(shape.source, (str, os.PathLike)):
                requests.append((shape.source, shape.scale, mode))
                where.append((i, j))
    resolved = dict(zip(where, resolve_meshes(requests, options)))
    links = []
    for i, ln in enumerate(desc.links):
        if not any((i, j) in resolved for j in range(len(ln.collisions))):
            links.append(ln)
            continue
        cols: list[tuple[Shape, NDArray[np.float64]]] = []
        for j, (shape, pose) in enumerate(ln.collisions):
            parts = resolved.get((i, j))
            if parts is None:
                cols.append((shape, pose))
            else:
                cols.extend((part, pose @ offset) for part, offset in parts)
        links.append(replace(ln, collisions=cols))
    return replace(desc, links=links)
