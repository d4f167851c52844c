"""Wall time of `lockstep fix`, whole process: the seed's broken example and a broken
100-service stack.

    .venv/bin/python bench/bench_fix.py [--services 100] [--runs 3]

The seed's example is `examples/Pulumi.seed003.yaml` (target < 2 s). The large stack is the
bundled example's services copied round-robin under new names, as `bench/bench_render.py`
builds it, with every copy behind an ALB given the seed's broken numbers (a 5 s drain against
a target group checking every 30 s), so each breaks drain-covers-lb-detection and
recovery-within-budget (target < 20 s). Each run includes the check of the answer, the
simulation of it and the diff. Prints the medians beside the targets.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from bench_render import LOCKSTEP, ROOT, many_services

SEED = ROOT / "examples" / "Pulumi.seed003.yaml"
TARGETS_S = {"seed": 2.0, "large": 20.0}


def broken_stack(n: int) -> tuple[dict, int]:
    doc = many_services(n)
    broken = 0
    for svc in doc["config"]["lockstep:services"]:
        lb = svc.get("lb")
        if lb and lb["kind"] == "alb":
            svc["shutdown"]["drain_s"] = 5
            lb["health_check"]["interval_s"] = 30
            broken += 1
    return doc, broken


def timed(stack: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run([str(LOCKSTEP), "fix", str(stack)], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"lockstep fix {stack.name} exited {proc.returncode}: {proc.stderr.strip()}")
    changes = sum(1 for line in proc.stdout.splitlines() if " → " in line and not line.startswith(("+", "-")))
    return wall, changes


def report(label: str, stack: Path, runs: int, target: float) -> bool:
    timed(stack)  # warm the page cache and the bytecode
    results = [timed(stack) for _ in range(runs)]
    median = statistics.median(w for w, _ in results)
    ok = median < target
    print(f"lockstep fix, {label}: wall median {median:.2f}s (best {min(w for w, _ in results):.2f}s), "
          f"{results[0][1]} changes, {runs} runs; target < {target:.0f}s: {'ok' if ok else 'OVER TARGET'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ok = report("the seed's example (examples/Pulumi.seed003.yaml)", SEED, args.runs, TARGETS_S["seed"])
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / f"Pulumi.broken{args.services}.yaml"
        doc, broken = broken_stack(args.services)
        stack.write_text(yaml.safe_dump(doc, sort_keys=False))
        ok &= report(f"{args.services} services, {broken} broken", stack, args.runs, TARGETS_S["large"])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
