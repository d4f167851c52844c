"""Benchmark validating a 1,000-service stack: `Stack.model_validate` including every invariant.

    .venv/bin/python bench/bench_validate.py [--services 1000] [--runs 5]

Builds a valid stack from the bundled example: its three services (ALB/IP with a readiness
gate, a consumer without LB, an NLB StatefulSet) cloned under unique names up to N services,
plus the example's watchdog, heartbeat, specs and failover. Times the whole validation (shape,
references, all 34 rules over every service, all findings built) and prints the median of
the runs. Target: < 1 s for 1,000 services.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time
from typing import Any

import yaml

from lockstep.timing.config import EXAMPLE, lockstep_values
from lockstep.timing.invariants import errors, evaluate
from lockstep.timing.model import Stack


def big_stack_values(n: int) -> dict[str, Any]:
    values = lockstep_values(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["config"])
    originals = values["services"]
    services = list(originals)
    for i in range(len(originals), n):
        svc = copy.deepcopy(originals[i % len(originals)])
        svc["name"] = f"{svc['name']}-{i}"
        services.append(svc)
    values["services"] = services[:n]
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    values = big_stack_values(args.services)
    stack = Stack.model_validate(values)  # warm-up; raises if the stack were not valid
    findings = evaluate(stack)
    assert not errors(findings)
    times, cpu = [], []
    for _ in range(args.runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        Stack.model_validate(values)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    median = statistics.median(times)
    verdict = "within" if median < 1.0 else "OVER"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_validate: {args.services} services, {len(findings)} findings: model_validate incl. all "
          f"invariants {median:.3f}s wall median of {args.runs} (min {min(times):.3f}s, CPU median "
          f"{statistics.median(cpu):.3f}s, load avg {load:.1f}) — {verdict} the 1 s target")


if __name__ == "__main__":
    main()
