#!/usr/bin/env python3
"""Installs robot_collision the way a ROS 2 user would on Humble- and Jazzy-like Pythons, runs
the core test suite (no ROS) there, and writes the README's compatibility table.

    python3 scripts/compat_matrix.py [ENV ...] [--work build/compat] [--readme] [--json FILE]
                                     [--jobs N]

ENV (default: humble-oldest jazzy, what CI runs; ``all`` = every one):

- ``humble``: Python 3.10 with Ubuntu 22.04's apt versions (numpy 1.21.5, scipy 1.8.0,
  lxml 4.8.0, PyYAML 5.4.1, matplotlib 3.5.1) as *system* packages, then the README's recipe:
  a venv that sees them (like ``python3 -m venv --system-site-packages``) and
  ``pip install -r requirements-ros-user.txt``;
- ``humble-oldest``: the same with every pip-installed package at its lowest supported version
  (``scripts/compat-oldest.txt``: numpy 1.22.4, numba 0.63.0, ...): the floors of setup.py,
  requirements-ros-user.txt and robot_collision/_compat.py, tested;
- ``jazzy``: Python 3.12 with Ubuntu 24.04's apt versions (numpy 1.26.4, scipy 1.11.4, lxml 5.2.1,
  PyYAML 6.0.1; matplotlib 3.8.4 stands in for apt's 3.6.3, which has no Python 3.12 wheel),
  then the same recipe;
- ``pinned``: Python 3.11, ``pip install -r requirements.txt`` (the development set, no ROS).

The "system" packages go to their own folder, added to the venv's ``sys.path`` after its own
site-packages by a ``.pth`` file: what ``--system-site-packages`` does with
``/usr/lib/python3/dist-packages`` (pip sees them, leaves them in place, and installs a newer
version into the venv only where a requirement demands it). Each environment then:

1. runs the install command (the table reports which apt versions it replaced, if any);
2. ``import robot_collision`` (the version check of ``robot_collision/_compat.py`` included);
3. the core test suite: ``pytest test`` of a copy of the repository (no rclpy there: the ROS
   tests skip), with a fresh numba cache;
4. a second process that loads the kernels the tests compiled from numba's cache and runs the
   parallel batch check (numba <= 0.62.1 crashed there with a segmentation fault).

``--jobs N`` runs N environments at once (CI: 2, one per core; each environment's tests are
mostly one process, so two take little longer than one).

Pythons: ``$(pyenv root)/versions/3.X.*/bin/python3.X``, else ``python3.X`` on PATH. Installs
come from the pip cache / index as configured for pip. Exit status 1 if any environment failed.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
README = ROOT / "README.md"
BEGIN, END = "<!-- COMPAT_TABLE:BEGIN -->", "<!-- COMPAT_TABLE:END -->"

# Ubuntu 22.04 (Humble) and 24.04 (Jazzy) apt versions of the packages package.xml takes from apt
HUMBLE_APT = ["numpy==1.21.5", "scipy==1.8.0", "lxml==4.8.0", "PyYAML==5.4.1",
              "matplotlib==3.5.1"]
JAZZY_APT = ["numpy==1.26.4", "scipy==1.11.4", "lxml==5.2.1", "PyYAML==6.0.1",
             "matplotlib==3.8.4"]
USER_REQS = "requirements-ros-user.txt"
TEST_TOOLS = ["pytest", "pytest-timeout", "hypothesis"]

ENVS: dict[str, dict[str, Any]] = {
    "humble": {"label": "Humble-like", "python": "3.10", "system": HUMBLE_APT,
               "install": ["-r", USER_REQS]},
    "humble-oldest": {"label": "Humble-like, oldest supported", "python": "3.10",
                      "system": HUMBLE_APT,
                      "install": ["-r", USER_REQS, "-c", "scripts/compat-oldest.txt"]},
    "jazzy": {"label": "Jazzy-like", "python": "3.12", "system": JAZZY_APT,
              "install": ["-r", USER_REQS]},
    "pinned": {"label": "pinned (development)", "python": "3.11", "system": [],
               "install": ["-r", "requirements.txt"]},
}
DEFAULT = ["humble-oldest", "jazzy"]
SHOWN = ["numpy", "scipy", "lxml", "PyYAML", "numba", "llvmlite", "daqp", "toppra", "trimesh"]

RELOAD = """
import numpy as np
from robot_collision import CollisionChecker, RobotModel, default_robot_paths
from robot_collision.collision.checker import PARALLEL_BATCH_MIN
robot = RobotModel.from_urdf(default_robot_paths()[0])
rng = np.random.default_rng(0)
Q = np.array([robot.random_configuration(rng) for _ in range(max(PARALLEL_BATCH_MIN, 256))])
ok = CollisionChecker(robot).is_valid_batch(Q)
print(f"is_valid_batch from the cache: {int(np.sum(ok))}/{len(Q)} valid")
"""


def find_python(version: str) -> Optional[str]:
    """``$(pyenv root)/versions/X.Y.*/bin/pythonX.Y`` (newest), else ``pythonX.Y`` on PATH."""
    roots = [os.environ.get("PYENV_ROOT", ""), os.path.expanduser("~/.pyenv")]
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        roots.insert(0, subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                                       check=True).stdout.strip())
    for root in filter(None, roots):
        found = sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"),
                       key=lambda p: [int(x) for x in re.findall(r"\d+", p.split("/")[-3])])
        if found:
            return found[-1]
    path = shutil.which(f"python{version}")
    if path is None:
        return None
    ok = subprocess.run([path, "-c", "pass"], capture_output=True).returncode == 0
    return path if ok else None  # a pyenv shim of a version that is not selected fails


def run(cmd: list[str], log: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              **kw)
        f.write(proc.stdout)
    return proc


def copy_repository(dest: Path, ref: str = "") -> None:
    """Tracked and untracked-not-ignored files of the repository (as the real-ROS tier does),
    or the tree of commit ``ref``."""
    if dest.exists():
        shutil.rmtree(dest)
    if ref:
        dest.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for rel in files:
        if not rel:
            continue
        src = ROOT / os.fsdecode(rel)
        if not src.is_file():
            continue
        out = dest / os.fsdecode(rel)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)


def versions(py: str, env: dict[str, str]) -> dict[str, dict[str, str]]:
    """name -> {version, where: 'venv'|'system'} as the venv's Python imports them."""
    code = (
        "import json, sys\n"
        "sys.path.insert(0, 'robot_collision')\n"
        "from robot_collision import _compat\n"
        f"names = {SHOWN!r}\n"
        "print(json.dumps({n: _compat._installed(n) for n in names}))\n"
    )
    proc = subprocess.run([py, "-c", code], capture_output=True, text=True,
                          env={**env, "ROBOT_COLLISION_SKIP_VERSION_CHECK": "1"},  # may fail
                          cwd=env["RC_COPY"])
    try:
        raw = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {}
    out = {}
    for name, (ver, where) in raw.items():
        if ver is None:
            continue
        kind = "system" if "/system" in where else "venv"
        out[name] = {"version": ver, "where": kind}
    return out


def summary_counts(text: str) -> dict[str, int]:
    line = ""
    for candidate in text.splitlines():
        if re.search(r"\b(passed|failed|error|errors)\b.* in [\d.]+s", candidate):
            line = candidate
    return {k: int(n) for n, k in re.findall(
        r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)", line)}


def run_env(name: str, work: Path, pytest_args: list[str], ref: str = "") -> dict[str, Any]:
    spec = ENVS[name]
    base = work / name
    log = base / "log.txt"
    base.mkdir(parents=True, exist_ok=True)
    log.write_text("", encoding="utf-8")
    result: dict[str, Any] = {"env": name, "label": spec["label"], "log": str(log)}
    t0 = time.monotonic()
    print(f"== compat {name}: {spec['label']}", flush=True)
    python = find_python(spec["python"])
    if python is None:
        result.update(ok=False, error=f"no python{spec['python']} found")
        print(f"   FAILED: {result['error']}", flush=True)
        return result
    # 1. the "system" packages (cached across runs: keyed by the list)
    system = base / "system"
    stamp = system / ".stamp"
    if spec["system"] and (not stamp.exists()
                           or stamp.read_text(encoding="utf-8") != repr(spec["system"])):
        shutil.rmtree(system, ignore_errors=True)
        # PyYAML 5.4.1's sdist does not build with Cython 3 (Humble's apt version)
        cons = base / "build-constraints.txt"
        cons.write_text("cython<3\n", encoding="utf-8")
        proc = run([python, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                    "--target", str(system), *spec["system"]], log,
                   env={**os.environ, "PIP_CONSTRAINT": str(cons)})
        if proc.returncode != 0:
            result.update(ok=False, error="installing the apt stand-ins failed (see log)")
            print(f"   FAILED: {result['error']}: {log}", flush=True)
            return result
        stamp.write_text(repr(spec["system"]), encoding="utf-8")
    # 2. the venv, seeing the system folder after its own site-packages
    venv = base / "venv"
    shutil.rmtree(venv, ignore_errors=True)
    proc = run([python, "-m", "venv", str(venv)], log)
    if proc.returncode != 0:
        result.update(ok=False, error="creating the venv failed")
        return result
    py = str(venv / "bin" / "python")
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    if spec["system"]:
        Path(site, "zz_apt_system_site.pth").write_text(
            f"import site; site.addsitedir({str(system)!r})\n", encoding="utf-8")
    copy = base / "repo"
    copy_repository(copy, ref)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "AMENT_PREFIX_PATH", "PIP_CONSTRAINT")}
    env.update(RC_COPY=str(copy), PYTHONDONTWRITEBYTECODE="")
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    before = versions(py, env)
    # 3. the install command, as a user types it (from the repository root)
    command = ["pip", "install", *spec["install"]]
    result["install"] = " ".join(command)
    t_install = time.monotonic()
    proc = run([py, "-m", *command, "--disable-pip-version-check"], log, cwd=copy, env=env)
    result["install_s"] = round(time.monotonic() - t_install)
    if proc.returncode != 0:
        result.update(ok=False, error="install command failed (see log)")
        print(f"   FAILED: {result['error']}: {log}", flush=True)
        return result
    run([py, "-m", "pip", "install", "--disable-pip-version-check", "-q", *TEST_TOOLS], log,
        env=env)
    after = versions(py, env)
    result["versions"] = after
    result["replaced"] = {n: f"{before[n]['version']} -> {after[n]['version']}"
                          for n in before if n in after
                          and before[n]["version"] != after[n]["version"]}
    pkg = copy / "robot_collision"
    # 4. import (the version check included)
    proc = run([py, "-c", "import robot_collision; print('import ok')"], log, cwd=pkg, env=env)
    result["import"] = proc.returncode == 0
    if not result["import"]:
        result["import_error"] = proc.stdout.strip().splitlines()[-1:]
    # 5. core tests (no rclpy in this venv: the ROS tests skip)
    t_tests = time.monotonic()
    proc = run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args, "test"], log,
               cwd=pkg, env={**env, "ROS_LOG_DIR": str(base / "ros_log")})
    result["tests_s"] = round(time.monotonic() - t_tests)
    result["tests"] = summary_counts(proc.stdout)
    result["pytest_rc"] = proc.returncode
    # pytest's short summary: "FAILED test/x.py::name - message" (also ERROR)
    result["failures"] = [line for line in proc.stdout.splitlines()
                          if line.startswith(("FAILED ", "ERROR "))][:20]
    # 6. a second process loading the cached kernels (numba <= 0.62.1 segfaulted here)
    proc = run([py, "-c", RELOAD], log, cwd=pkg, env=env)
    result["cache_reload"] = proc.returncode == 0
    if not result["cache_reload"]:
        result["cache_reload_rc"] = proc.returncode
    counts = result["tests"]
    result["ok"] = (result["import"] and result["cache_reload"] and proc.returncode == 0
                    and result["pytest_rc"] == 0 and counts.get("passed", 0) > 0)
    result["total_s"] = round(time.monotonic() - t0)
    shown = ", ".join(f"{n} {v['version']}" for n, v in after.items()
                      if n in ("numpy", "scipy", "lxml", "numba"))
    print(f"   {name}: Python {spec['python']}, {shown}; install {result['install_s']} s; "
          f"import {'ok' if result['import'] else 'FAILED'}; core tests "
          f"{_counts_text(counts)} ({result['tests_s']} s); cache reload "
          f"{'ok' if result['cache_reload'] else 'FAILED'}; replaced "
          f"{result['replaced'] or 'nothing'} -> {'PASS' if result['ok'] else 'FAIL'} "
          f"({result['total_s']} s)", flush=True)
    for line in result["failures"]:
        print(f"   {line}", flush=True)
    return result


def failure_report(results: list[dict[str, Any]]) -> str:
    """What failed, per environment (for the end of a CI log, where it is read)."""
    out = []
    for r in results:
        if r.get("ok"):
            continue
        why = r.get("error") or (f"pytest exit {r.get('pytest_rc')}, "
                                 f"{_counts_text(r.get('tests', {}))}; cache reload "
                                 f"{'ok' if r.get('cache_reload') else 'FAILED'}")
        out.append(f"compat {r['env']} FAILED: {why} (log: {r.get('log')})")
        out += [f"  {line}" for line in r.get("failures", [])]
    return "\n".join(out)


def _counts_text(counts: dict[str, int]) -> str:
    keys = ["passed", "failed", "errors", "error", "skipped"]
    return ", ".join(f"{counts[k]} {k}" for k in keys if counts.get(k)) or "none ran"


def table(results: list[dict[str, Any]]) -> str:
    head = ("| environment | Python | numpy | scipy | lxml | numba | install command (from the "
            "repository root) | import | core tests (no ROS) | cache reload |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
    rows = []
    for r in results:
        v = r.get("versions", {})

        def cell(n: str, vv: dict[str, dict[str, str]] = v, r: dict[str, Any] = r) -> str:
            if n not in vv:
                return "-"
            where = " (apt)" if vv[n]["where"] == "system" else ""
            before = r.get("replaced", {}).get(n, "")
            if before:
                where = f" (venv, over apt's {before.split(' -> ')[0]})"
            return f"{vv[n]['version']}{where}"

        spec = ENVS[r["env"]]
        replaced = "; replaces " + ", ".join(f"{k} {x}" for k, x in r.get("replaced", {}).items()
                                               ) if r.get("replaced") else "; replaces nothing"
        prefix = ("venv `--system-site-packages`, " if spec["system"] else "venv, ")
        rows.append(
            f"| {r['label']} | {spec['python']} | {cell('numpy')} | {cell('scipy')} | "
            f"{cell('lxml')} | {cell('numba')} | {prefix}`{r.get('install', '?')}`{replaced} | "
            f"{'ok' if r.get('import') else 'FAILED'} | {_counts_text(r.get('tests', {}))} | "
            f"{'ok' if r.get('cache_reload') else 'FAILED'} |")
    return head + "\n".join(rows) + "\n"


def write_readme(text: str) -> None:
    readme = README.read_text(encoding="utf-8")
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block")
    pre, rest = readme.split(BEGIN, 1)
    _, post = rest.split(END, 1)
    README.write_text(f"{pre}{BEGIN}\n{text}{END}{post}", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("envs", nargs="*", help=f"from {sorted(ENVS)} or 'all' (default: {DEFAULT})")
    ap.add_argument("--work", default=str(ROOT / "build" / "compat"))
    ap.add_argument("--readme", action="store_true", help="write the table into README.md")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--pytest-args", default="", help="extra pytest arguments")
    ap.add_argument("--ref", default="", help="test this commit (default: the work tree)")
    ap.add_argument("--jobs", type=int, default=1, help="environments run at once (default 1)")
    ap.add_argument("--report", metavar="JSON",
                    help="only print what failed in an earlier run's --json results")
    args = ap.parse_args()
    if args.report:
        print(failure_report(json.loads(Path(args.report).read_text(encoding="utf-8")))
              or "compat: every environment passed")
        return 0
    names = list(ENVS) if args.envs == ["all"] else (args.envs or DEFAULT)
    unknown = [n for n in names if n not in ENVS]
    if unknown:
        ap.error(f"unknown environments {unknown}; choose from {sorted(ENVS)}")
    work = Path(args.work).resolve()
    done: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()

    def one(n: str) -> None:
        r = run_env(n, work, args.pytest_args.split(), args.ref)
        with lock:
            done[n] = r
            if args.json:  # after each environment: a long run's finished rows are kept
                Path(args.json).parent.mkdir(parents=True, exist_ok=True)
                Path(args.json).write_text(
                    json.dumps([done[m] for m in names if m in done], indent=2),
                    encoding="utf-8")

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        list(pool.map(one, names))
    results = [done[n] for n in names]
    text = table(results)
    print(text)
    if args.readme:
        write_readme(text)
    return 0 if all(r.get("ok") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
