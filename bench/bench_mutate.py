"""Wall time of `lockstep mutate`, whole process, on the example and on stacks of N services.

    .venv/bin/python bench/bench_mutate.py [--runs N] [--sizes 6,12,100] [--jobs N]

A size up to the example's own count of services (6) is the bundled example. A larger size N
is measured on two stacks, each run N times, runs of the two interleaved:

- copies: the example's services copied round-robin under new names
  (`bench_render.many_services`), each copy keeping its numbers: the stack issue 11 sets its
  target on (100 services < 60 s on 2 cores). `mutate` simulates a service under one name, so
  the copies of a service share their simulation runs (`timing/mutate_sim.py`); their rules are
  judged copy by copy.
- distinct: the same stack with each copy's numbers moved by small amounts every rule still
  accepts (its progress deadline by its index, its grace period and liveness probe period by a
  few seconds), so no two services have the same simulation spec and nothing is shared between
  them: what a stack whose numbers all differ costs. It must pass and fail the same rules as
  the copies, service by service (checked before it is measured).

Prints, per stack, the median (and best) wall time and the median CPU time (the process and
its workers) of N runs, beside the target for 100 services, and the load average: on a
shared machine the wall time includes waiting for a core.
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
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from bench_render import LOCKSTEP, many_services

TARGETS = {100: 60.0}  # services: seconds wall, on 2 cores (issue 11)
EXAMPLE_SERVICES = len(many_services(0)["config"]["lockstep:services"])  # the copies start after them


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


def _stack(doc: dict[str, Any]):
    from lockstep.timing.config import lockstep_values, stack_from_config

    return stack_from_config(lockstep_values(doc["config"]))


def distinct_services(n: int) -> dict[str, Any]:
    """`many_services(n)` with every copy's numbers moved a little, so no two specs are equal."""
    doc = many_services(n)
    stack = _stack(doc)
    for i, svc in enumerate(doc["config"]["lockstep:services"]):
        if i < EXAMPLE_SERVICES:
            continue
        model = stack.services[i]
        svc.setdefault("rollout", {})["progress_deadline_s"] = model.rollout.progress_deadline_s + i
        svc.setdefault("shutdown", {})["grace_s"] = model.shutdown.grace_s + 1 + i % 13
        if model.probes.liveness is not None:
            svc["probes"]["liveness"]["period_s"] = model.probes.liveness.period_s + 1 + i % 5
    _check_distinct(doc, many_services(n))
    return doc


def _check_distinct(doc: dict[str, Any], copies: dict[str, Any]) -> None:
    """The moved stack passes and fails what the copies do, per service, and no two of its
    services have the same simulation spec."""
    from lockstep.timing.invariants import evaluate
    from lockstep.timing.sim.spec import stack_specs

    def failing(stack) -> set[tuple[str, str, str]]:
        return {(f.service, f.id, f.status) for f in evaluate(stack) if f.failed}

    moved = _stack(doc)
    if failing(moved) != failing(_stack(copies)):
        raise SystemExit("the distinct stack does not fail the rules the copies fail")
    specs = {replace(s, name="") for s in stack_specs(moved)}
    if len(specs) != len(moved.services):
        raise SystemExit("two services of the distinct stack have the same simulation spec")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="6,12,100")
    parser.add_argument("--jobs", type=int, default=None, help="passed to mutate (default: its own)")
    args = parser.parse_args()
    over = 0
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at start", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(x) for x in args.sizes.split(",")):
            stacks: dict[str, Path | None] = {}
            if n <= EXAMPLE_SERVICES:
                stacks[f"example ({EXAMPLE_SERVICES} services)"] = None
            else:
                for kind, build in (("copies", many_services), ("distinct", distinct_services)):
                    path = Path(tmp) / f"Pulumi.bench{n}-{kind}.yaml"
                    path.write_text(yaml.safe_dump(build(n), sort_keys=False))
                    stacks[f"{n} services, {kind}"] = path
            runs: dict[str, list[tuple[float, float]]] = {label: [] for label in stacks}
            for _ in range(args.runs):  # interleaved: a change in the machine's load hits both
                for label, path in stacks.items():
                    runs[label].append(timed(path, args.jobs))
            for label, done in runs.items():
                walls = [w for w, _ in done]
                med = statistics.median(walls)
                target = TARGETS.get(n)
                if target is None:
                    verdict = "(no target)"
                else:
                    verdict = "ok" if med < target else "OVER TARGET"
                    over += verdict != "ok" and label.endswith("copies")
                goal = f"target < {target:.0f}s" if target else "no target"
                print(f"lockstep mutate {label:<24}: wall median {med:.1f}s best {min(walls):.1f}s, "
                      f"CPU median {statistics.median(c for _, c in done):.1f}s "
                      f"({args.runs} runs, {goal}) {verdict}", flush=True)
            print(f"load average {os.getloadavg()[0]:.1f} after {', '.join(stacks)}", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
