"""Wall time of `lockstep check` on a generated 1,000-service stack, whole process.

    .venv/bin/python bench/bench_check.py [--services 1000] [--runs 5]

The stack is the bundled example's services copied round-robin under new names, as
`bench/bench_render.py` builds it (each copy keeps its numbers, so every copy passes the same
rules): about 1.2 MB of YAML. Times interpreter start, imports, reading the file (PyYAML's C
loader with line marks, the duplicate-key check and the input limits), validation and every
rule, and printing. Prints the median beside the target (< 1 s), and how much of one run is
reading the YAML (in-process, best of the runs).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from bench_render import LOCKSTEP, many_services  # the same generated stack

from lockstep.timing.inputs import BASE, load_yaml, read_text

TARGET_S = 1.0


def timed(stack: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([str(LOCKSTEP), "check", str(stack)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"lockstep check exited {proc.returncode}: {proc.stderr.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def reading(stack: Path, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        load_yaml(read_text(stack), stack.name, single=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / f"Pulumi.bench{args.services}.yaml"
        stack.write_text(yaml.safe_dump(many_services(args.services), sort_keys=False))
        size_mb = stack.stat().st_size / 1e6
        timed(stack)  # warm the page cache and the bytecode
        runs = [timed(stack) for _ in range(args.runs)]
        read_s = reading(stack, args.runs)
    walls = [w for w, _ in runs]
    median = statistics.median(walls)
    verdict = "ok" if median < TARGET_S else "OVER TARGET"
    print(f"lockstep check, {args.services} services ({size_mb:.1f} MB): wall median {median:.2f}s "
          f"(best {min(walls):.2f}s), CPU median {statistics.median(c for _, c in runs):.2f}s, "
          f"{args.runs} runs; target < {TARGET_S:.0f}s wall: {verdict}")
    print(f"  of which reading the YAML ({BASE.__name__}): {read_s:.2f}s best in-process")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0 if verdict == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
