"""The config mutator's parts: ranges from the model, rule boundaries by bisection, verdicts."""

from __future__ import annotations

import pytest

from timing.config import read_stack_file
from timing.mutate import (Mutant, SimCache, _statuses, candidates, field_range, judge, numbers,
                           with_value)
from timing.sim.spec import stack_specs

EXAMPLE = read_stack_file(None)
DATA = EXAMPLE.model_dump()
DRAIN = ("services", 0, "shutdown", "drain_s")


@pytest.mark.parametrize("path, expected", [
    (("services", 0, "lb", "health_check", "interval_s"), (5, 300)),
    (("services", 0, "lb", "health_check", "unhealthy_threshold"), (2, 10)),
    (("services", 1, "replicas"), (0, 10000)),
    (("services", 0, "rollout", "max_surge"), (0, 10000)),
    (DRAIN, (0, 86400)),
    (("watchdog", "failures_before_action"), (1, 100)),
])
def test_ranges_come_from_the_models_field_constraints(path, expected):
    assert field_range(path) == expected


def test_every_integer_of_the_stack_is_found_and_no_boolean():
    found = dict(numbers(DATA))
    assert found[DRAIN] == 20
    assert all(isinstance(v, int) and not isinstance(v, bool) for v in found.values())
    assert len(found) == 175


def test_changing_one_number_leaves_the_original_untouched():
    changed = with_value(DATA, DRAIN, 3)
    assert changed["services"][0]["shutdown"]["drain_s"] == 3
    assert DATA["services"][0]["shutdown"]["drain_s"] == 20


def test_the_drains_wrong_values_include_both_sides_of_its_rule_boundary():
    # drain-covers-lb-detection: drain ≥ 15 s + margin 5 s, so 20 passes and 19 fails.
    base = _statuses(DATA)
    values = {m.value: m.why for m in candidates(DATA, DRAIN, 20, base)}
    assert {0, 10, 40, 200, 86400} <= set(values)
    assert "drain-covers-lb-detection" in values[19] and "drain-covers-lb-detection" in values[18]


def _judge(path, value):
    mutant = Mutant(path, dict(numbers(DATA))[path], value, "test")
    return judge(DATA, mutant, SimCache(phases=1, seed=0, rate=10), tuple(stack_specs(EXAMPLE)))


def test_a_value_the_model_rejects_is_counted_and_not_simulated():
    verdict = _judge(("services", 0, "lb", "health_check", "interval_s"), 0)
    assert verdict.category == "rejected_by_model" and not verdict.simulated
    assert "interval_s" in verdict.problem


def test_a_harmful_drain_is_caught_by_its_rule():
    verdict = _judge(DRAIN, 5)
    assert verdict.category == "caught"
    assert verdict.rules == ("drain-covers-lb-detection",)
    assert any("api rollout: requests lost" in h for h in verdict.harm)


def test_a_drain_inside_the_margin_is_rejected_but_harmless():
    assert _judge(DRAIN, 19).category == "strict"


def test_a_number_the_simulation_does_not_read_is_outside_it():
    assert _judge(("services", 0, "container_port"), 9090).category == "outside"
