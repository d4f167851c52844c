"""Wall time of `lockstep mutate`, whole process, on stacks of 3, 12, 30 and 100 services.

    .venv/bin/python bench/bench_mutate.py [--runs N] [--sizes 3,12,30,100] [--jobs N]

The 3-service stack is the bundled example; the others copy its services round-robin under
new names (`bench_render.many_services`), each copy keeping its numbers. Prints, per size, the
median (and best) of N runs beside the target the issue sets: 100 services < 60 s on 2 cores.
Smaller sizes have no target of their own; they show how the run grows with the stack.

No part of a run is shared between copies: `mutate` keeps no content cache across services,
and the simulation seeds its random phases with the service's name (`timing.simulate`), so
every copy is judged and simulated on its own, as a stack whose numbers all differ would be.
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

from bench_render import LOCKSTEP, many_services

TARGETS = {100: 60.0}  # services: seconds wall, on 2 cores (issue 11)


def timed(stack: Path | None, jobs: int | None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its workers)."""
    argv = [str(LOCKSTEP), "mutate", *([str(stack)] if stack else []), "--format", "json",
            *(["--jobs", str(jobs)] if jobs else [])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: a gap, still a finished run
        raise SystemExit(f"lockstep mutate exited {done.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="3,12,30,100")
    parser.add_argument("--jobs", type=int, default=None, help="passed to mutate (default: its own)")
    args = parser.parse_args()
    over = 0
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at start")
    print("copies share nothing: no content cache, and each service's name seeds its own simulation")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            stack = None
            if n != 3:
                stack = Path(tmp) / f"Pulumi.bench{n}.yaml"
                stack.write_text(yaml.safe_dump(many_services(n), sort_keys=False))
            runs = [timed(stack, args.jobs) for _ in range(args.runs)]
            walls = [w for w, _ in runs]
            med = statistics.median(walls)
            target = TARGETS.get(n)
            if target is None:
                verdict = "(no target)"
            else:
                verdict = "ok" if med < target else "OVER TARGET"
                over += verdict != "ok"
            goal = f"target < {target:.0f}s" if target else "no target"
            print(f"lockstep mutate {n:>3} services: wall median {med:.1f}s best {min(walls):.1f}s, "
                  f"CPU median {statistics.median(c for _, c in runs):.1f}s "
                  f"({args.runs} runs, {goal}) {verdict}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at end")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
