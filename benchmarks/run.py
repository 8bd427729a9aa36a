"""Benchmark runner: ``python benchmarks/run.py NAME [--json] [--quick] [--minutes N]``.

Each benchmark lives in ``benchmarks/bench_NAME.py`` and exposes ``run(quick: bool) -> dict``
(benchmarks that run for a chosen time, e.g. ``soak``, also take ``minutes``). The runner prints
a human-readable summary and, with ``--json``, one JSON object as the last line of output.
``all`` runs every benchmark in turn.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))


def available() -> list[str]:
    return sorted(p.stem[len("bench_") :] for p in HERE.glob("bench_*.py"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("name", help="benchmark name or 'all'; one of: " + ", ".join(available()))
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (smoke test)")
    ap.add_argument("--minutes", type=float,
                    help="duration of benchmarks that run for a chosen time (soak)")
    args = ap.parse_args(argv)
    names = available() if args.name == "all" else [args.name]
    results: dict[str, dict] = {}
    for name in names:
        if name not in available():
            ap.error(f"unknown benchmark {name!r}; choose from {', '.join(available())}")
        mod = importlib.import_module(f"bench_{name}")
        t0 = time.perf_counter()
        kwargs = {}
        if args.minutes is not None and "minutes" in inspect.signature(mod.run).parameters:
            kwargs["minutes"] = args.minutes
        res = mod.run(quick=args.quick, **kwargs)
        res["wall_s"] = round(time.perf_counter() - t0, 2)
        results[name] = res
        print(f"== {name}")
        for k, v in res.items():
            if not isinstance(v, (dict, list)):
                print(f"  {k}: {v}")
    if args.json:
        print(json.dumps(results[names[0]] if len(names) == 1 else results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
