"""The simulation spread over processes gives the serial report, entry for entry."""

from __future__ import annotations

import yaml

from bench.bench_render import many_services
from lockstep.timing.config import lockstep_values, stack_from_config
from lockstep.timing.simulate import PARALLEL_FROM, simulate_stack


def test_a_parallel_simulation_is_the_serial_one() -> None:
    doc = many_services(PARALLEL_FROM + 1)
    stack = stack_from_config(lockstep_values(doc["config"]))
    serial = simulate_stack(stack, phases=3, scenarios=("rollout", "replace", "crash", "node-drain"))
    parallel = simulate_stack(stack, phases=3, scenarios=("rollout", "replace", "crash", "node-drain"), jobs=2)
    assert len(serial.scenarios) > PARALLEL_FROM
    assert yaml.safe_dump(parallel.as_dict()) == yaml.safe_dump(serial.as_dict())
