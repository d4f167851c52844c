"""The simulation agrees with the rules: any model the validator accepts, with its numbers
varied around the example stack's, loses no request, blocks no scope falsely and trips no
watchdog in a simulated rollout, pod replacement or crash, over random phases."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lockstep.timing.config import read_stack_file
from lockstep.timing.invariants import errors, evaluate
from lockstep.timing.mutate import build, with_value
from lockstep.timing.sim.spec import service_spec
from lockstep.timing.simulate import simulate_specs

EXAMPLE = read_stack_file(None).model_dump()

# Numbers the drain, rollout and heartbeat rules relate, per example service, with a range
# around the example's value. Each draw sets some of them; the validator decides.
API = {
    ("app", "warmup_s"): (0, 40), ("app", "max_request_s"): (1, 60), ("app", "keepalive_s"): (30, 120),
    ("lb", "idle_timeout_s"): (20, 120), ("lb", "health_check", "interval_s"): (5, 30),
    ("lb", "health_check", "timeout_s"): (2, 29),
    ("lb", "health_check", "unhealthy_threshold"): (2, 5),
    ("lb", "health_check", "healthy_threshold"): (2, 5),
    ("lb", "deregistration_delay_s"): (0, 300), ("lb", "deregistration_propagation_s"): (0, 40),
    ("lb", "registration_propagation_s"): (0, 40),
    ("shutdown", "drain_s"): (0, 90), ("shutdown", "finish_s"): (0, 90), ("shutdown", "grace_s"): (10, 200),
    ("rollout", "min_ready_s"): (0, 60), ("rollout", "max_surge"): (1, 3),
    ("hpa", "min_replicas"): (2, 6), ("probes", "readiness", "period_s"): (1, 10),
    ("probes", "readiness", "failure_threshold"): (1, 5),
}
FEED = {
    ("app", "warmup_s"): (0, 60), ("app", "max_request_s"): (0, 30), ("app", "catch_up_s"): (0, 120),
    ("shutdown", "drain_s"): (0, 30), ("shutdown", "finish_s"): (0, 60), ("shutdown", "grace_s"): (5, 120),
    ("rollout", "min_ready_s"): (0, 30), ("replicas",): (2, 5),
    ("probes", "readiness", "period_s"): (1, 10),
}
BASKETBALL = {
    ("app", "warmup_s"): (0, 60), ("app", "max_request_s"): (0, 30),
    ("lb", "endpoint_propagation_s"): (0, 30), ("shutdown", "drain_s"): (0, 60),
    ("shutdown", "finish_s"): (0, 60), ("shutdown", "grace_s"): (5, 150), ("replicas",): (2, 5),
    ("schedule_s",): (0, 30), ("probes", "readiness", "period_s"): (1, 10),
}
STACK = {
    ("watchdog", "period_s"): (10, 120), ("watchdog", "failures_before_action"): (1, 8),
    ("heartbeat", "observe_interval_s"): (1, 20), ("heartbeat_specs", 0, "loss_time_s"): (20, 200),
    ("heartbeat_specs", 0, "recovery_time_s"): (0, 120), ("heartbeat_specs", 1, "loss_time_s"): (20, 200),
    ("heartbeat_specs", 1, "recovery_time_s"): (0, 120),
}
SERVICES = {0: API, 1: FEED, 2: BASKETBALL}


@st.composite
def accepted_variants(draw: st.DrawFn) -> tuple[Any, int]:
    index = draw(st.sampled_from(sorted(SERVICES)))
    data: dict[str, Any] = EXAMPLE
    table = {("services", index, *k): v for k, v in SERVICES[index].items()} | STACK
    chosen = draw(st.lists(st.sampled_from(sorted(table, key=str)), min_size=1, max_size=5, unique=True))
    for path in chosen:
        lo, hi = table[path]
        data = with_value(data, path, draw(st.integers(lo, hi)))
    try:
        stack = build(data)
    except ValueError:
        assume(False)
    assume(not errors(evaluate(stack)))
    return stack, index


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(accepted_variants())
def test_a_model_the_rules_accept_loses_nothing_in_simulation(variant):
    stack, index = variant
    spec = service_spec(stack, stack.services[index])
    for report in simulate_specs([spec], phases=3, seed=11, rate=8, fast=True):
        assert not report.harmful, (report.scenario, report.counts, report.metrics)
