"""Benchmark: the simulation of a 10-replica rolling update at 100 requests/s over 600
simulated seconds (target: under 2 s wall on the CI machine).

The service is the example stack's `api` (ALB, IP targets, readiness gate, keep-alive
connections) with its HPA floor raised to 10 replicas.

    .venv/bin/python bench/bench_simulate.py [--repeat N]
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace

from lockstep.timing.config import read_stack_file
from lockstep.timing.sim.engine import Counts, World
from lockstep.timing.sim.scenarios import DeploymentRollout
from lockstep.timing.sim.spec import service_spec

REPLICAS, RATE, SIMULATED_S, START_S = 10, 100.0, 600.0, 30.0


def one_run(seed: int) -> tuple[float, float, Counts, float | None, int]:
    stack = read_stack_file(None)
    spec = replace(service_spec(stack, stack.services[0]), replicas=REPLICAS)
    wall, cpu = time.perf_counter(), time.process_time()
    w = World(spec, random.Random(seed), RATE, Counts(), None)
    pods = [w.add_pod(f"api-{i}", steady=True) for i in range(REPLICAS)]
    w.run(START_S)
    ctl = DeploymentRollout(w, pods)
    w.on_change = ctl.reconcile
    ctl.reconcile()
    while w.t < SIMULATED_S:
        w.stop_flag = False  # the controller stops a scenario once done; the bench runs on
        w.run(SIMULATED_S)
    done = None if ctl.done_at is None else ctl.done_at - START_S
    return time.perf_counter() - wall, time.process_time() - cpu, w.c, done, w.seq


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(seed) for seed in range(args.repeat)]
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    _, _, counts, done, events = runs[0]
    print(f"bench_simulate: {REPLICAS}-replica rollout, {RATE:g} requests/s, {SIMULATED_S:g} simulated s: "
          f"{wall:.2f}s wall, {cpu:.2f}s CPU (best of {args.repeat}); {counts.requests} requests, "
          f"{events} control events, rollout {done:.0f}s, lost {counts.lost}")


if __name__ == "__main__":
    main()
