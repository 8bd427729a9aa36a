"""The README's Python example runs as written (from the repository root), and its real-ROS
commands are the ones make test-ros-real runs."""

from __future__ import annotations

import os
import re

from .conftest import REPO as ROOT


def test_readme_python_example_runs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Python API in ten lines", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    assert len(code.group(1).strip().splitlines()) <= 12
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        namespace: dict = {}
        exec("import numpy as np\n" + code.group(1), namespace)
    finally:
        os.chdir(cwd)
    assert namespace["path"].shape[1] == 7
    assert len(namespace["table"]) > 0


def _commands(block: str) -> list[str]:
    """Shell commands of a code block: continuation lines joined, comments dropped, `&&`
    chains split, whitespace collapsed."""
    text = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        out += [" ".join(c.split()) for c in line.split("&&") if c.strip()]
    return out


def test_real_arm_section_is_what_the_ros_real_tier_runs() -> None:
    """Every command of the README's no-hardware block runs verbatim in make test-ros-real."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## On a real arm", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(blocks) >= 2, "the section needs the install block and the no-hardware block"
    tier = ROOT / ".ci" / "ros_real" / "run.sh"
    script = _commands(tier.read_text(encoding="utf-8"))
    commands = _commands(blocks[1])
    build = "python -m colcon build --packages-select robot_collision_interfaces robot_collision"
    assert build in commands
    assert build in _commands(blocks[0]), "the install block builds as the no-hardware one does"
    # what users do with the running system: each of these runs verbatim in the tier
    for verb in ("ros2 action send_goal", "ros2 service call", "ros2 param set",
                 "ros2 param dump"):
        assert any(c.startswith(verb) for c in commands), f"no `{verb}` in the README block"

    def runs(command: str) -> bool:  # as a whole command, maybe redirected, piped or timed
        pattern = r"(^|\s)" + re.escape(command) + r"(\s*$|\s*[<>|&;]|\s+\d>)"
        return any(re.search(pattern, line) for line in script)

    missing = [c for c in commands if not runs(c)]
    assert not missing, f"README commands that {tier.name} does not run verbatim: {missing}"
    install = _commands(blocks[0])
    assert "rosdep install --from-paths src --ignore-src -y" in install
    # the pip step installs only what apt lacks, into a venv that sees apt's packages
    assert any("--system-site-packages" in c for c in install)
    assert "venv/bin/pip install -r src/robot_collision/requirements-ros-user.txt" in install
    assert not any("requirements.txt" in c.split() or c.endswith(" requirements.txt")
                   for c in install), "a ROS user must never install the dev pins"
    assert (ROOT / "requirements-ros-user.txt").is_file()
