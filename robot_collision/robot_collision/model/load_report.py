"""What loading a robot description kept, changed and dropped.

Real robot descriptions are sloppy (exporters write ``velocity="0"``, SRDFs name links that a
variant of the URDF lacks). Like MoveIt and pinocchio, the loader accepts such files when the
fix is safe, but never silently: every change is a :class:`LoadNote` in the model's
:class:`LoadReport` (``RobotModel.load_report``) and, unless the caller asked otherwise, a
:class:`~robot_collision.errors.ModelLoadWarning`. What stays an error is listed in
:mod:`robot_collision.model.urdf`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from ..errors import ModelLoadWarning

__all__ = ["LoadNote", "MeshInfo", "LoadReport", "DROPPED", "DEFAULTED", "INDEPENDENT"]

DROPPED = "dropped"
"""The entry was ignored (the rest of the file is used)."""
DEFAULTED = "defaulted"
"""A missing or zero value was replaced by a configured default."""
INDEPENDENT = "independent"
"""A mimic joint whose leader does not exist became an independent joint."""


@dataclass(frozen=True)
class LoadNote:
    """One change: ``source`` ``"URDF"`` or ``"SRDF"``; ``element`` what it concerns (e.g.
    ``"joint 'j1'"``); ``action`` one of :data:`DROPPED`, :data:`DEFAULTED`,
    :data:`INDEPENDENT`; ``message`` the full sentence (what was found, what was done, how to
    fix the file)."""

    source: str
    element: str
    action: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass(frozen=True)
class MeshInfo:
    """A mesh file used as collision geometry: ``link``, the ``uri`` as written and the
    resolved ``path``, its ``vertices``/``faces`` (merged) and the convex ``hull_vertices``."""

    link: str
    uri: str
    path: str
    vertices: int
    faces: int
    hull_vertices: int


@dataclass
class LoadReport:
    """Notes of one load (in file order) and the mesh files it read. ``warn``: also issue each
    note as a :class:`~robot_collision.errors.ModelLoadWarning` when it is added."""

    notes: list[LoadNote] = field(default_factory=list)
    meshes: list[MeshInfo] = field(default_factory=list)
    warn: bool = True

    def add(self, source: str, element: str, action: str, message: str) -> None:
        note = LoadNote(source, element, action, message)
        self.notes.append(note)
        if self.warn:
            warnings.warn(str(note), ModelLoadWarning, stacklevel=3)

    def by_action(self, action: str) -> list[LoadNote]:
        return [n for n in self.notes if n.action == action]

    def lines(self) -> list[str]:
        """One line per note, for logs."""
        return [str(n) for n in self.notes]
