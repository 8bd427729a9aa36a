"""The URDF corpus of the ``example-robot-data`` PyPI package (real robots: UR, Panda, Kinova,
TIAGo, Talos, ...), for tests and benchmarks only: robot_collision never imports it.

The package installs its robots under ``<site-packages>/cmeel.prefix/share/example-robot-data/
robots``; its URDFs reference meshes as ``package://example-robot-data/robots/...``, so
:func:`package_dirs` (the ``share`` folder) resolves them.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Optional

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
