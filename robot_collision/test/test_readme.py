"""The README's Python example runs as written (from the repository root)."""

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
