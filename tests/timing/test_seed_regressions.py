"""Regression examples from the issue (seed 003's field report), pinned to their verdicts."""

from __future__ import annotations

import pytest

from tests.timing.strategies import DELETE, build, error_ids, only

HEALTH_CHECK_DRAIN = {"services.0.lb.removal": ["health_check"]}


def test_a_5s_drain_against_30s_x_2_health_check_detection_fails() -> None:
    stack = build({**HEALTH_CHECK_DRAIN, "services.0.shutdown.drain_s": 5,
                   "services.0.lb.health_check.interval_s": 30, "services.0.lb.health_check.timeout_s": 5})
    assert "drain-covers-lb-detection" in error_ids(stack)
    assert only(stack, "drain-covers-lb-detection", "api").render() == (
        "ERROR drain-covers-lb-detection  api: drain 5s (shutdown.drain_s) < lb_detect 60s (health_check: "
        "lb.health_check.interval_s 30 × lb.health_check.unhealthy_threshold 2) + margin 5s  slack -60s → "
        "raise the drain to ≥65s or detect faster")


def test_a_15s_drain_against_5s_x_2_health_check_detection_passes() -> None:
    stack = build({**HEALTH_CHECK_DRAIN, "services.0.shutdown.drain_s": 15})
    f = only(stack, "drain-covers-lb-detection", "api")
    assert (f.status, f.slack_s) == ("ok", 0)
    assert error_ids(stack) == set()


# A service the watchdog watches, drained on purpose for 150 s, that starts fast (pod_ready 10 s).
PLANNED_150S_DRAIN = {
    "watchdog.watches": ["football-feed"], "watchdog.period_s": 60,
    "services.1.shutdown.drain_s": 130, "services.1.shutdown.finish_s": 20, "services.1.shutdown.grace_s": 155,
    "services.1.app.warmup_s": 0,
    "nodes": DELETE,  # seed 003's drain is a host's: a 150 s drain could never fit a spot notice
}


@pytest.mark.parametrize(("failures", "broken"), [(1, True), (3, True), (4, False)])
def test_a_watchdog_of_n_x_60s_against_a_150s_planned_drain(failures, broken) -> None:
    stack = build({**PLANNED_150S_DRAIN, "watchdog.failures_before_action": failures})
    f = only(stack, "watchdog-tolerates-planned-drain", "football-feed")
    assert f.right.value == 150 + 10
    assert error_ids(stack) == ({"watchdog-tolerates-planned-drain"} if broken else set())


def test_three_failures_fail_because_tolerance_is_the_lower_bound_not_the_detection_bound() -> None:
    # 3 × 60 = 180 s would outlast the 160 s drain and restart, but the first failed check may
    # land just after the drain began: the watchdog can act after (3 − 1) × 60 = 120 s.
    stack = build({**PLANNED_150S_DRAIN, "watchdog.failures_before_action": 3})
    assert only(stack, "watchdog-tolerates-planned-drain", "football-feed").render() == (
        "ERROR watchdog-tolerates-planned-drain  football-feed: watchdog tolerance 120s "
        "((watchdog.failures_before_action 3 - 1) × watchdog.period_s 60) ≤ stop + pod_ready 160s "
        "(stop 150 + pod_ready 10)  slack -41s → raise watchdog.failures_before_action to ≥4")


def test_the_seeds_one_failure_watchdog_prints_the_fix() -> None:
    stack = build({**PLANNED_150S_DRAIN, "watchdog.failures_before_action": 1})
    assert only(stack, "watchdog-tolerates-planned-drain", "football-feed").render() == (
        "ERROR watchdog-tolerates-planned-drain  football-feed: watchdog tolerance 0s "
        "((watchdog.failures_before_action 1 - 1) × watchdog.period_s 60) ≤ stop + pod_ready 160s "
        "(stop 150 + pod_ready 10)  slack -161s → raise watchdog.failures_before_action to ≥4")
