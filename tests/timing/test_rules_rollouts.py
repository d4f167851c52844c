"""Argo Rollout scale-down and readiness behind a load balancer (INVARIANTS.md, issue 14).

Each rule: a property over a region where only that rule can break (the validator names it
alone iff the catalogue's formula is broken), its boundary (slack 0 passes, −1 fails), and
the exact line `lockstep check` prints when it fails.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.timing.strategies import API, DELETE, FOOTBALL, build, error_ids, expect_alone, findings_of, only, seconds
from lockstep.timing import limits as L
from lockstep.timing.invariants import rollouts

A = f"services.{API}"
F = f"services.{FOOTBALL}"
RULE = "rollout-scale-down-outlasts-switch"
BLUE_GREEN = {"strategy": "blueGreen"}


def blue_green(prefix: str, **argo: int) -> dict:
    """The changes that make a service a blue-green Rollout (whose pace is a whole surge)."""
    return {f"{prefix}.argo": {**BLUE_GREEN, **argo}, f"{prefix}.rollout.max_surge": "100%",
            f"{prefix}.rollout.max_unavailable": 0}


# ---- rollout-scale-down-outlasts-switch --------------------------------------------------------
# api: ALB on IP targets. Its deregistration propagation stays ≤ 15 (the drain rule holds 20 ≥ it + 5).
@given(delay=seconds(0, 120), ends=seconds(0, 60), dereg=seconds(0, 15), margin=seconds(0, 5))
@example(delay=30, ends=10, dereg=15, margin=5).via("slack 0: Argo's default delay with the ALB defaults")
@example(delay=29, ends=10, dereg=15, margin=5).via("slack -1")
def test_a_blue_green_scale_down_delay_must_outlast_endpoints_and_deregistration(delay, ends, dereg, margin) -> None:
    stack = build({**blue_green(A, scale_down_delay_s=delay, abort_scale_down_delay_s=0),
                   f"{A}.lb.endpoint_propagation_s": ends, f"{A}.lb.deregistration_propagation_s": dereg,
                   "margin_s": margin})
    expect_alone(stack, RULE, delay < ends + dereg + margin)
    assert only(stack, RULE, "api").slack_s == delay - ends - dereg - margin


@given(abort=seconds(0, 120), ends=seconds(0, 60))
@example(abort=30, ends=10).via("slack 0")
@example(abort=29, ends=10).via("slack -1")
@example(abort=0, ends=60).via("0 keeps the aborted ReplicaSet: nothing to outlast")
def test_an_abort_scale_down_delay_must_outlast_the_switch_unless_it_keeps_the_replica_set(abort, ends) -> None:
    stack = build({**blue_green(A, scale_down_delay_s=3600, abort_scale_down_delay_s=abort),
                   f"{A}.lb.endpoint_propagation_s": ends})
    expect_alone(stack, RULE, 0 < abort < ends + 15 + 5)
    assert len(findings_of(stack, RULE, "api")) == (1 if abort == 0 else 2)


@given(delay=seconds(0, 60), routing=st.sampled_from([None, "alb"]))
def test_only_a_canary_routed_by_the_alb_waits_before_scaling_down(delay, routing) -> None:
    stack = build({f"{A}.argo": {"strategy": "canary", "traffic_routing": routing, "scale_down_delay_s": delay,
                                 "abort_scale_down_delay_s": 3600}})
    expect_alone(stack, RULE, routing == "alb" and delay < 30)
    assert len(findings_of(stack, RULE, "api")) == (2 if routing == "alb" else 0)


def test_unstated_delays_are_argos_thirty_seconds_which_hold_at_exactly_the_alb_defaults() -> None:
    stack = build(blue_green(A))
    found = findings_of(stack, RULE, "api")
    assert [f.slack_s for f in found] == [0, 0]
    assert [f.left.value for f in found] == [L.ARGO_SCALE_DOWN_DELAY_DEFAULT] * 2


def test_instance_targets_switch_when_the_endpoints_do() -> None:
    svc = build({f"{A}.lb.target_type": "instance", f"{A}.readiness_gate": DELETE,
                 f"{A}.lb.endpoint_propagation_s": 12}).services[API]
    term = rollouts.switch_time(svc)
    assert (term.label, term.value, term.source, term.fields) == (
        "switch", 12, "lb.endpoint_propagation_s", ("lb.endpoint_propagation_s",))
    assert term.unknown == () and term.unit == "s"


def test_ip_targets_switch_when_the_endpoints_and_then_the_deregistration_have_propagated() -> None:
    term = rollouts.switch_time(build().services[API])
    assert (term.label, term.value, term.source) == (
        "switch", 25, "lb.endpoint_propagation_s 10 + lb.deregistration_propagation_s 15")
    assert term.fields == ("lb.endpoint_propagation_s", "lb.deregistration_propagation_s")


@given(delay=seconds(0, 30))
@example(delay=15).via("slack 0: the endpoint propagation default + margin")
@example(delay=14).via("slack -1")
def test_without_a_load_balancer_the_delay_must_outlast_the_endpoint_propagation_default(delay) -> None:
    stack = build(blue_green(F, scale_down_delay_s=delay, abort_scale_down_delay_s=0))
    expect_alone(stack, RULE, delay < L.ENDPOINT_PROPAGATION_DEFAULT + 5)
    term = rollouts.switch_time(stack.services[FOOTBALL])
    assert (term.label, term.value, term.source, term.fields) == ("switch", 10, "endpoint propagation (default)", ())
    assert term.unknown == () and term.unit == "s"


def test_a_short_scale_down_delay_prints_both_sides_and_the_fix() -> None:
    stack = build(blue_green(A, scale_down_delay_s=10, abort_scale_down_delay_s=0))
    assert only(stack, RULE, "api").render() == (
        "ERROR rollout-scale-down-outlasts-switch  api: scale_down_delay 10s (argo.scale_down_delay_s) < switch 25s "
        "(lb.endpoint_propagation_s 10 + lb.deregistration_propagation_s 15) + margin 5s  slack -20s → raise "
        "scaleDownDelaySeconds (argo.scale_down_delay_s) to ≥30s")


def test_a_short_abort_delay_prints_its_own_fix() -> None:
    stack = build(blue_green(A, abort_scale_down_delay_s=5))
    [broken] = [f for f in findings_of(stack, RULE, "api") if f.status == "error"]
    assert broken.render() == (
        "ERROR rollout-scale-down-outlasts-switch  api: abort_scale_down_delay 5s (argo.abort_scale_down_delay_s) < "
        "switch 25s (lb.endpoint_propagation_s 10 + lb.deregistration_propagation_s 15) + margin 5s  slack -25s → "
        "raise abortScaleDownDelaySeconds (argo.abort_scale_down_delay_s) to ≥30s, or 0 to keep the aborted ReplicaSet")


def test_a_deployment_has_no_scale_down_delay_to_judge() -> None:
    assert findings_of(build(), RULE, "api") == []


# ---- readiness-probe-behind-lb -----------------------------------------------------------------
def test_a_pod_behind_a_load_balancer_without_a_readiness_probe_is_an_error() -> None:
    stack = build({f"{A}.probes.readiness": DELETE})
    assert RULE not in error_ids(stack)
    found = only(stack, "readiness-probe-behind-lb", "api")
    assert found.render() == (
        "ERROR readiness-probe-behind-lb  api: readiness probe absent (probes.readiness) ≠ behind a load balancer "
        "required → add a readiness probe: without one a pod is Ready, and routed to, as soon as it starts")
    assert error_ids(stack) >= {"readiness-probe-behind-lb"}


def test_a_pod_behind_a_load_balancer_with_a_readiness_probe_passes() -> None:
    [found] = findings_of(build(), "readiness-probe-behind-lb", "api")
    assert (found.status, found.render()) == (
        "ok", "OK readiness-probe-behind-lb  api: readiness probe set (probes.readiness) = behind a load balancer "
        "required")


def test_a_pod_behind_no_load_balancer_needs_no_readiness_probe_for_this_rule() -> None:
    stack = build({f"{F}.probes.readiness": DELETE})
    assert findings_of(stack, "readiness-probe-behind-lb", "football-feed") == []
    assert "readiness-probe-behind-lb" not in error_ids(stack)


# ---- what a stack must say about a Rollout -----------------------------------------------------
def test_a_blue_green_rollout_of_a_stack_states_its_whole_surge() -> None:
    with pytest.raises(ValueError, match="a blue-green Rollout brings the whole new ReplicaSet up beside the old one"):
        build({f"{A}.argo": BLUE_GREEN})
    with pytest.raises(ValueError, match="max_surge '100%', max_unavailable 0"):
        build({**blue_green(A), f"{A}.rollout.max_unavailable": 1})
    assert build({**blue_green(A), f"{A}.rollout.max_unavailable": "0%"}).services[API].argo is not None


def test_only_a_deployment_can_be_a_rollout() -> None:
    with pytest.raises(ValueError, match="services.2.argo: an Argo Rollout rolls ReplicaSets: kind must be Deployment"):
        build({"services.2.argo": {"strategy": "canary"}})


def test_blue_green_takes_no_traffic_routing() -> None:
    with pytest.raises(ValueError, match="traffic_routing is a canary setting"):
        build({**blue_green(A), f"{A}.argo.traffic_routing": "alb"})


def test_a_stack_states_every_drain_and_deploys_no_prestop_command() -> None:
    with pytest.raises(ValueError, match=r"services.0.shutdown.drain_s: required \(the preStop drain a stack deploys\)"):
        build({f"{A}.shutdown.drain_s": None})
    with pytest.raises(ValueError, match=re.escape(
            "services.0.shutdown.prestop: 'command' is what audit reads from a preStop that is not a sleep; a stack "
            "deploys sleep, exec or none")):
        build({f"{A}.shutdown.prestop": "command"})
