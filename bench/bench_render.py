"""Wall time of `lockstep render`, whole process (interpreter start, imports, mock run, files).

    .venv/bin/python bench/bench_render.py [--runs N]

Two stacks: the bundled example (target < 3 s) and a generated 100-service stack (target
< 10 s): the example's three services copied round-robin under new names, each copy keeping
its numbers, so every copy passes the same rules. Prints best and median of N runs per stack.
"""

from __future__ import annotations

import argparse
import copy
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
LOCKSTEP = ROOT / ".venv" / "bin" / "lockstep"
TARGETS = {"example": 3.0, "100 services": 10.0}


def many_services(n: int) -> dict:
    doc = yaml.safe_load((ROOT / "Pulumi.example.yaml").read_text())
    config = doc["config"]
    originals = config["lockstep:services"]
    services = list(originals)
    for i in range(len(originals), n):
        svc = copy.deepcopy(originals[i % len(originals)])
        svc["name"] = f"{svc['name']}-{i}"
        if svc.get("lb"):
            if svc["lb"].get("rule_priority") is not None:
                svc["lb"]["rule_priority"] = 100 + i  # listener rule priorities are unique
            if svc["lb"].get("listener_port") is not None:
                svc["lb"]["listener_port"] = 7000 + i  # one NLB listener per port
        services.append(svc)
    config["lockstep:services"] = services
    return doc


def timed(stack: Path | None, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child): on a shared machine the CPU time shows how
    much of the wall time was waiting for a core."""
    argv = [str(LOCKSTEP), "render", *([str(stack)] if stack else []), "-o", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    over = 0
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "Pulumi.bench100.yaml"
        big.write_text(yaml.safe_dump(many_services(100), sort_keys=False))
        for label, stack in (("example", None), ("100 services", big)):
            runs = [timed(stack, Path(tmp) / "out") for _ in range(args.runs)]
            times = [w for w, _ in runs]
            target = TARGETS[label]
            verdict = "ok" if min(times) < target else "OVER TARGET"
            over += verdict != "ok"
            print(f"lockstep render {label:<13} wall best {min(times):.2f}s median "
                  f"{statistics.median(times):.2f}s, CPU best {min(c for _, c in runs):.2f}s "
                  f"({args.runs} runs, target < {target:.0f}s wall) {verdict}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
