"""Console-script entry points of the nodes, and how their processes stop.

Every node process (``collision_checker``, ``velocity_filter``, ``planner``, ``mock_arm``,
``mock_camera``, ``robot_collision_bringup``) starts here, so that Ctrl-C and SIGTERM are
handled from its first instruction on: this module imports nothing heavy
(``robot_collision/__init__.py`` imports its names lazily), installs the stop handlers, and only
then imports the node's module (numpy, numba, rclpy: about a second) and runs it.

Stopping. SIGINT and SIGTERM end the process with exit status 0, no traceback, within
:data:`STOP_GRACE` seconds, whatever it is doing -- importing, loading or compiling kernels,
planning, ticking:

- once rclpy is initialised, rclpy's own handlers shut its context down (the nodes' executors
  stop spinning and :func:`robot_collision.ros.bringup.run_nodes` tears the nodes down) and then
  call the handler installed here, which only records the request: rclpy's default handler
  would raise ``KeyboardInterrupt`` at a random place (the traceback ``ros2 launch`` showed);
- before that (imports, node construction) the request is noticed by ``run_nodes`` before it
  initialises rclpy or spins;
- if the process has not ended :data:`STOP_GRACE` s after the first signal (a kernel still
  compiling in the main thread, a thread that does not stop), it ends at once with status 0
  (``os._exit`` after flushing stdout/stderr). Later signals are ignored (a Ctrl-C in a
  terminal reaches the nodes twice: from the terminal and from ``ros2 launch``).

Every process leaves through ``os._exit`` after its normal teardown: interpreter finalisation
with rclpy's objects, and numba possibly compiling in a worker thread, printed "Exception
ignored" tracebacks or aborted the process.

A new node: add it to :data:`CONSOLE_SCRIPTS`, add a function of its name below, and point its
console script in ``setup.py`` at ``robot_collision.ros.entry:<name>`` (a test checks that
every node of the bring-up registry does).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, Optional

__all__ = [
    "CONSOLE_SCRIPTS",
    "STOP_GRACE",
    "install_stop_handlers",
    "run_console_script",
    "stop_requested",
]

STOP_GRACE = 1.2
"""Seconds from the first SIGINT/SIGTERM to the forced exit (the requirement is 2 s)."""

CONSOLE_SCRIPTS: dict[str, str] = {
    "collision_checker": "robot_collision.ros.checker_node:main",
    "velocity_filter": "robot_collision.ros.filter_node:main",
    "planner": "robot_collision.ros.planner_node:main",
    "mock_arm": "robot_collision.ros.mock_arm:main",
    "mock_camera": "robot_collision.ros.mock_camera:main",
    "robot_collision_bringup": "robot_collision.ros.bringup:main",
}
"""Console script name → ``"module:function"`` it runs (the function returns an exit code)."""

_stop = threading.Event()
_installed = False


def stop_requested() -> bool:
    """True once SIGINT or SIGTERM arrived (after :func:`install_stop_handlers`)."""
    return _stop.is_set()


def _exit_now(code: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe must not keep the process alive
            stream.flush()
    os._exit(code)


def _force_exit_later() -> None:
    time.sleep(STOP_GRACE)
    _exit_now(0)


def _quiet_thread_errors(args: Any) -> None:
    """threading.excepthook after a stop request: threads dying of the shutdown (a publish on
    a context that is gone) are expected, not worth a traceback."""
    if not _stop.is_set():
        _previous_thread_hook(args)


_previous_thread_hook: Callable[[Any], Any] = threading.excepthook


def _on_stop_signal(signum: int, frame: Any) -> None:
    if _stop.is_set():
        return
    _stop.set()
    threading.Thread(target=_force_exit_later, name="stop_grace", daemon=True).start()


def install_stop_handlers() -> None:
    """Handle SIGINT and SIGTERM as described in the module docstring (idempotent; main thread
    only). rclpy, initialised later, chains its handlers to these."""
    global _installed, _previous_thread_hook
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _on_stop_signal)
    signal.signal(signal.SIGTERM, _on_stop_signal)
    _previous_thread_hook = threading.excepthook
    threading.excepthook = _quiet_thread_errors
    _installed = True


def run_console_script(name: str, argv: Optional[Sequence[str]] = None) -> NoReturn:
    """Run console script ``name`` (a key of :data:`CONSOLE_SCRIPTS`) as a process: stop
    handlers first, then the node's module, then exit with its code (0 after a stop request)."""
    install_stop_handlers()
    module_name, _, func_name = CONSOLE_SCRIPTS[name].partition(":")
    if argv is not None:
        sys.argv = [name, *argv]
    code: Any = 0
    try:
        if not _stop.is_set():
            func = getattr(importlib.import_module(module_name), func_name)
        if not _stop.is_set():
            code = func()
    except SystemExit as exc:
        code = exc.code
    except KeyboardInterrupt:
        code = 0
    except BaseException:
        if not _stop.is_set():
            import traceback

            traceback.print_exc()
            code = 1
    if _stop.is_set():
        code = 0
    elif not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    _exit_now(code)


def collision_checker() -> NoReturn:
    """Console script ``collision_checker``."""
    run_console_script("collision_checker")


def velocity_filter() -> NoReturn:
    """Console script ``velocity_filter``."""
    run_console_script("velocity_filter")


def planner() -> NoReturn:
    """Console script ``planner``."""
    run_console_script("planner")


def mock_arm() -> NoReturn:
    """Console script ``mock_arm``."""
    run_console_script("mock_arm")


def mock_camera() -> NoReturn:
    """Console script ``mock_camera``."""
    run_console_script("mock_camera")


def bringup() -> NoReturn:
    """Console script ``robot_collision_bringup``."""
    run_console_script("robot_collision_bringup")


if __name__ == "__main__":
    # python -m robot_collision.ros.entry NAME [arguments...]: as the console script NAME. (Run
    # through the imported module: its stop state is the one the nodes' run_nodes reads.)
    from robot_collision.ros import entry as _entry

    if len(sys.argv) < 2 or sys.argv[1] not in _entry.CONSOLE_SCRIPTS:
        print(f"usage: python -m robot_collision.ros.entry {{{','.join(CONSOLE_SCRIPTS)}}} "
              "[arguments]", file=sys.stderr)
        raise SystemExit(2)
    _entry.run_console_script(sys.argv[1], sys.argv[2:])
