"""Kubernetes probes, rollout and disruption rules (INVARIANTS.md, seed 000)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.timing.strategies import (expect_alone, API, BASKETBALL, DELETE, FOOTBALL, build, error_ids,
                                     findings_of, only, seconds)
from lockstep.timing.invariants import context, kube
from lockstep.timing.model import Probe

A = f"services.{API}"
F = f"services.{FOOTBALL}"
B = f"services.{BASKETBALL}"


# ---- startup-covers-warmup -----------------------------------------------------------------------
@given(seconds(0, 80), seconds(1, 100))
@example(20, 6).via("slack 0: (6 - 1) × 5 = 20 + margin 5")
@example(21, 6).via("slack -1")
def test_the_startup_probe_must_tolerate_the_warmup_plus_the_margin(warmup, failures) -> None:
    # warmup ≤ 80 keeps api's stop 50 + pod_ready (warmup + startup period 5 + 44) under the
    # watchdog's 180 s tolerance
    stack = build({f"{A}.app.warmup_s": warmup, f"{A}.probes.startup.failure_threshold": failures})
    expect_alone(stack, "startup-covers-warmup", (failures - 1) * 5 < warmup + 5)
    assert only(stack, "startup-covers-warmup", "api").slack_s == (failures - 1) * 5 - warmup - 5


def test_a_startup_probe_killing_a_slow_start_prints_the_fix() -> None:
    stack = build({f"{A}.app.warmup_s": 21})
    assert only(stack, "startup-covers-warmup", "api").render() == (
        "ERROR startup-covers-warmup  api: startup_tolerance 25s (probes.startup.initial_delay_s 0 + "
        "(probes.startup.failure_threshold 6 - 1) × probes.startup.period_s 5) < warmup 21s (app.warmup_s) "
        "+ margin 5s  slack -1s → raise the startup probe's failure_threshold × period (or add a startup probe)")


@given(seconds(0, 60), seconds(1, 5))
@example(0, 1).via("initial delay 0, one failure: no tolerance at all")
def test_without_a_startup_probe_the_liveness_probe_tolerates_the_start(delay, failures) -> None:
    stack = build({f"{F}.probes.liveness.initial_delay_s": delay, f"{F}.probes.liveness.failure_threshold": failures,
                   f"{F}.app.warmup_s": 20})
    tol = delay + (failures - 1) * 10
    f = only(stack, "startup-covers-warmup", "football-feed")
    assert (f.left.value, f.slack_s) == (tol, tol - 25)
    assert ("startup-covers-warmup" in error_ids(stack)) == (tol < 25)


def test_nothing_kills_a_slow_start_without_startup_and_liveness_probes() -> None:
    stack = build({f"{F}.probes.liveness": DELETE, f"{F}.app.warmup_s": 5000,
                   f"{F}.rollout.progress_deadline_s": 6000, "watchdog.watches": ["api"],
                   "heartbeat_specs.0.loss_time_s": 5100, "heartbeat_specs.0.max_outage_s": 6000,
                   # a NodePool grace cannot hold a PDB-held eviction waiting for so slow a start
                   "nodes.karpenter.0.termination_grace_period_s": None})
    assert findings_of(stack, "startup-covers-warmup", "football-feed") == []
    assert error_ids(stack) == set()


# ---- readiness-before-liveness -------------------------------------------------------------------
SAME_HANDLER = {f"{F}.probes.liveness.http_get.path": "/hc/ready"}


@given(seconds(1, 85), seconds(1, 10), seconds(1, 10))
@example(19, 1, 3).via("slack 0: 19 < 20")
@example(20, 1, 3).via("slack -1: equal restarts the pod as it leaves the Service")
def test_with_identical_probes_readiness_must_fail_before_liveness(period, ready_fail, live_fail) -> None:
    # readiness period ≤ 85 keeps football-feed's pod_ready within the heartbeat's loss time
    stack = build({**SAME_HANDLER, f"{F}.probes.readiness.period_s": period,
                   f"{F}.probes.readiness.failure_threshold": ready_fail,
                   f"{F}.probes.liveness.failure_threshold": live_fail})
    expect_alone(stack, "readiness-before-liveness", period * ready_fail >= (live_fail - 1) * 10)


def test_identical_probes_restarting_an_overloaded_pod_prints_the_fix() -> None:
    stack = build({**SAME_HANDLER, f"{F}.probes.readiness.period_s": 20, f"{F}.probes.readiness.failure_threshold": 1})
    assert only(stack, "readiness-before-liveness", "football-feed").render() == (
        "ERROR readiness-before-liveness  football-feed: unready_after 20s (probes.readiness.period_s 20 × "
        "probes.readiness.failure_threshold 1) ≥ kill_tolerance 20s ((probes.liveness.failure_threshold 3 - 1) × "
        "probes.liveness.period_s 10)  slack -1s → let readiness fail first: raise liveness failure_threshold × "
        "period or use a separate liveness endpoint")


def test_separate_probe_endpoints_make_the_same_timing_a_warning() -> None:
    stack = build({f"{F}.probes.readiness.period_s": 20, f"{F}.probes.readiness.failure_threshold": 1})
    assert error_ids(stack) == set()
    assert only(stack, "readiness-before-liveness", "football-feed").status == "warning"


def test_no_finding_without_both_probes() -> None:
    assert findings_of(build({f"{F}.probes.readiness": DELETE}), "readiness-before-liveness", "football-feed") == []
    assert findings_of(build({f"{F}.probes.liveness": DELETE}), "readiness-before-liveness", "football-feed") == []


@pytest.mark.parametrize(("a", "b", "same"), [
    ({"http_get": {"path": "/a", "port": 1}}, {"http_get": {"path": "/a", "port": 1}}, True),
    ({"http_get": {"path": "/a", "port": 1}}, {"http_get": {"path": "/a", "port": 2}}, False),
    ({"http_get": {"path": "/a", "port": 1}}, {"http_get": {"path": "/b", "port": 1}}, False),
    ({"tcp_socket": {"port": 1}}, {"tcp_socket": {"port": 1}}, True),
    ({"tcp_socket": {"port": 1}}, {"tcp_socket": {"port": 2}}, False),
    ({"tcp_socket": {"port": 1}}, {"grpc": {"port": 1}}, False),
    ({"grpc": {"port": 1}}, {"grpc": {"port": 1}}, True),
    ({"grpc": {"port": 1}}, {"grpc": {"port": 2}}, False),
    ({"exec": {"command": ["ok"]}}, {"exec": {"command": ["ok"]}}, True),
    ({"exec": {"command": ["ok"]}}, {"exec": {"command": ["ok", "2"]}}, False),
    ({"http_get": {"path": "/a", "port": 1}}, {"tcp_socket": {"port": 1}}, False),
])
def test_probes_share_a_handler_only_when_they_ask_the_same_thing(a, b, same) -> None:
    assert (kube.handler_key(Probe(**a)) == kube.handler_key(Probe(**b))) is same


def test_handler_keys_name_the_kind_of_probe() -> None:
    assert kube.handler_key(Probe(http_get={"path": "/a", "port": 1})) == ("http", "/a", 1)
    assert kube.handler_key(Probe(tcp_socket={"port": 2})) == ("tcp", 2)
    assert kube.handler_key(Probe(grpc={"port": 3})) == ("grpc", 3)
    assert kube.handler_key(Probe(exec={"command": ["x"]})) == ("exec", ("x",))


# ---- probe-timeout-within-period (warning) ---------------------------------------------------------
@pytest.mark.parametrize("name", ["startup", "readiness", "liveness"])
def test_a_probe_timeout_longer_than_its_period_is_a_warning(name) -> None:
    at = build({f"{A}.probes.{name}.timeout_s": 5, f"{A}.probes.{name}.period_s": 5})
    assert [f.slack_s for f in findings_of(at, "probe-timeout-within-period", "api")
            if f.left.source == f"probes.{name}.timeout_s"] == [0]
    over = build({f"{A}.probes.{name}.timeout_s": 6, f"{A}.probes.{name}.period_s": 5})
    assert error_ids(over) == set()
    [f] = [f for f in findings_of(over, "probe-timeout-within-period", "api") if f.status != "ok"]
    assert f.render() == (
        f"WARNING probe-timeout-within-period  api: timeout 6s (probes.{name}.timeout_s) > period 5s "
        f"(probes.{name}.period_s)  slack -1s → keep probes.{name}.timeout_s ≤ period_s")


def test_each_declared_probe_is_judged_once() -> None:
    found = findings_of(build(), "probe-timeout-within-period", "football-feed")
    assert [f.left.source for f in found] == ["probes.readiness.timeout_s", "probes.liveness.timeout_s"]


# ---- rollout-keeps-capacity ------------------------------------------------------------------------
PATIENT_SPEC = {"heartbeat_specs.0.loss_time_s": 10000, "heartbeat_specs.0.max_outage_s": 86400}


def capacity_class(n: int, unavailable: int, surge: int) -> str:
    if n - unavailable < 1 or (surge < 1 and unavailable < 1):
        return "error"
    return "warning" if unavailable > 0 else "ok"


@given(seconds(1, 10), seconds(0, 10), seconds(0, 3))
@example(1, 1, 1).via("capacity 0: slack -1")
@example(2, 1, 0).via("capacity 1: slack 0, a warning")
@example(2, 0, 0).via("both 0: rejected by the API")
@example(2, 0, 1).via("surge only")
def test_a_deploy_never_leaves_a_deployment_without_a_pod(n, unavailable, surge) -> None:
    # football-feed's PDB is dropped: it is judged by its own rules (and its heartbeat spec given
    # a loss time no rollout here outlasts, for heartbeat-rides-out-rollout)
    stack = build({f"{F}.pdb": DELETE, f"{F}.replicas": n, f"{F}.rollout.max_unavailable": unavailable,
                   f"{F}.rollout.max_surge": surge, **PATIENT_SPEC})
    cls = capacity_class(n, unavailable, surge)
    expect_alone(stack, "rollout-keeps-capacity", cls == "error")
    assert {f.status for f in findings_of(stack, "rollout-keeps-capacity", "football-feed")} == {cls}


@pytest.mark.parametrize(("n", "unavailable", "surge", "down", "up"), [
    (2, "25%", "25%", 0, 1), (4, "25%", "25%", 1, 1), (3, "50%", "0%", 1, 0), (7, "50%", "10%", 3, 1),
    (10, "0%", "100%", 0, 10), (3, "100%", 1, 3, 1),
])
def test_percentages_round_unavailable_down_and_surge_up(n, unavailable, surge, down, up) -> None:
    stack = build({f"{F}.pdb": DELETE, f"{F}.replicas": n, f"{F}.rollout.max_unavailable": unavailable,
                   f"{F}.rollout.max_surge": surge})
    assert only(stack, "rollout-keeps-capacity", "football-feed").status == capacity_class(n, down, up)


def test_a_rollout_that_can_take_the_last_pod_prints_the_fix() -> None:
    stack = build({f"{F}.pdb": DELETE, f"{F}.replicas": 1, f"{F}.rollout.max_unavailable": 1})
    assert only(stack, "rollout-keeps-capacity", "football-feed").render() == (
        "ERROR rollout-keeps-capacity  football-feed: capacity during rollout 0 pods (replicas 1 - "
        "rollout.max_unavailable 1 → 1 pods) < minimum 1 pod  slack -1 pods → add replicas or set "
        "rollout.max_unavailable: 0 with max_surge ≥ 1")


def test_both_surge_and_unavailable_zero_prints_the_api_rule() -> None:
    stack = build({f"{F}.rollout.max_surge": 0})
    assert error_ids(stack) == {"rollout-keeps-capacity"}
    assert only(stack, "rollout-keeps-capacity", "football-feed").render() == (
        "ERROR rollout-keeps-capacity  football-feed: max_surge 0 (rollout.max_surge) not in allowed not 0 "
        "together with rollout.max_unavailable 0 (Kubernetes API) → set rollout.max_surge ≥ 1 (the API rejects "
        "max_surge and max_unavailable both 0)")


@pytest.mark.parametrize(("surge", "unavailable"), [(0, 0), ("0%", 0), (0, "0%"), ("0%", "0%")])
def test_both_bounds_literally_zero_in_any_spelling_are_the_api_error(surge, unavailable) -> None:
    stack = build({f"{F}.rollout.max_surge": surge, f"{F}.rollout.max_unavailable": unavailable})
    found = only(stack, "rollout-keeps-capacity", "football-feed")
    assert (found.status, found.left.value) == ("error", str(surge))
    assert found.left.fields == ("rollout.max_surge", "rollout.max_unavailable")


def test_bounds_that_only_round_to_zero_take_one_pod_down_as_the_controller_does() -> None:
    """A percentage surge of 0% with max_unavailable 10% of 3 replicas: both round to 0 pods,
    the API accepts it, and the Deployment controller takes 1 pod down (ResolveFenceposts)."""
    stack = build({f"{F}.rollout.max_surge": "0%", f"{F}.rollout.max_unavailable": "10%", f"{F}.replicas": 3,
                   f"{F}.pdb": DELETE})
    found = only(stack, "rollout-keeps-capacity", "football-feed")
    assert (found.status, found.severity, found.left.value) == ("warning", "warning", 1)
    assert "both round to 0 pods: the controller takes 1 down" in found.left.source
    assert found.left.fields == ("replicas", "rollout.max_unavailable", "rollout.max_surge")
    single = build({f"{F}.rollout.max_surge": "0%", f"{F}.rollout.max_unavailable": "10%", f"{F}.replicas": 1,
                    f"{F}.pdb": DELETE})
    broken = only(single, "rollout-keeps-capacity", "football-feed")
    assert (broken.status, broken.left.value) == ("error", 0)


def test_taking_pods_down_with_capacity_left_is_a_warning() -> None:
    stack = build({f"{F}.rollout.max_unavailable": "50%"})
    assert error_ids(stack) == set()
    assert only(stack, "rollout-keeps-capacity", "football-feed").render() == (
        "WARNING rollout-keeps-capacity  football-feed: unavailable during rollout 1 pods "
        "(rollout.max_unavailable 50%) > surge-only 0 pods  slack -1 pods → surge instead: "
        "rollout.max_unavailable: 0 and max_surge ≥ 1")


@given(seconds(1, 5))
@example(2).via("slack 0")
@example(1).via("a StatefulSet singleton: slack -1")
def test_a_statefulset_replaces_pods_in_place_so_needs_two(n) -> None:
    stack = build({f"{B}.replicas": n})
    # a singleton's PDB (maxUnavailable 1) keeps no pod through a drain either
    assert error_ids(stack) == ({"rollout-keeps-capacity", "eviction-leaves-a-target"} if n < 2 else set())


def test_a_statefulset_singleton_prints_the_fix() -> None:
    stack = build({f"{B}.replicas": 1})
    assert only(stack, "rollout-keeps-capacity", "basketball-feed").render() == (
        "ERROR rollout-keeps-capacity  basketball-feed: capacity during rollout 0 pods (replicas 1 - 1 "
        "replaced in place) < minimum 1 pod  slack -1 pods → add replicas or set rollout.max_unavailable: 0 "
        "with max_surge ≥ 1")


def test_an_hpa_floor_is_the_replica_count_judged() -> None:
    stack = build({f"{A}.hpa.min_replicas": 1, f"{A}.rollout.max_unavailable": 1, f"{A}.pdb": DELETE})
    f = only(stack, "rollout-keeps-capacity", "api")
    assert f.status == "error"
    assert f.left.source == "hpa.min_replicas 1 - rollout.max_unavailable 1 → 1 pods"


# ---- rollout-waits-for-lb --------------------------------------------------------------------------
# api's PDB goes with the gate: evictions through a PDB need the gate whatever min_ready says
# (eviction-waits-for-lb), and these tests are about the rollout alone
NO_GATE = {f"{A}.readiness_gate": DELETE, f"{A}.pdb": DELETE}


@given(seconds(0, 109))
@example(29).via("slack 0: registration 15 + interval 5 + timeout 4 + margin 5")
@example(28).via("slack -1")
def test_without_a_gate_min_ready_must_cover_lb_admission(min_ready) -> None:
    stack = build({**NO_GATE, f"{A}.rollout.min_ready_s": min_ready})
    expect_alone(stack, "rollout-waits-for-lb", min_ready < 29)


def test_a_rollout_outrunning_the_lb_prints_the_fix() -> None:
    stack = build({**NO_GATE, f"{A}.rollout.min_ready_s": 28})
    assert only(stack, "rollout-waits-for-lb", "api").render() == (
        "ERROR rollout-waits-for-lb  api: min_ready 28s (rollout.min_ready_s) < lb_admit_new 24s "
        "(lb.registration_propagation_s 15 + lb.health_check.interval_s 5 + lb.health_check.timeout_s 4) + "
        "margin 5s  slack -1s → add a readiness gate or raise rollout.min_ready_s")


def test_a_gate_that_cannot_pass_breaks_both_gate_rules() -> None:
    # rollout-waits-for-lb relies on the gate, so a gate that never turns true breaks it too, and
    # so does eviction-waits-for-lb (api has a PDB: evictions count Ready pods).
    stack = build({f"{A}.readiness_gate.namespace_labelled": False})
    assert error_ids(stack) == {"rollout-waits-for-lb", "readiness-gate-can-pass", "eviction-waits-for-lb"}
    assert only(stack, "rollout-waits-for-lb", "api").render() == (
        "ERROR rollout-waits-for-lb  api: min_ready 0s (rollout.min_ready_s) < lb_admit_new 24s "
        "(lb.registration_propagation_s 15 + lb.health_check.interval_s 5 + lb.health_check.timeout_s 4) + "
        "margin 5s  slack -29s → make the readiness gate passable, or raise rollout.min_ready_s")


@pytest.mark.parametrize(("min_ready", "broken"), [(29, set()), (28, {"rollout-waits-for-lb"})])
def test_a_gate_that_cannot_pass_is_covered_by_a_long_enough_min_ready(min_ready, broken) -> None:
    """The catalogue's "or": minReadySeconds ≥ lb_admit_new + margin satisfies the rule even
    when a declared gate cannot pass; only readiness-gate-can-pass then fails — and
    eviction-waits-for-lb, since minReadySeconds does not hold an eviction back."""
    stack = build({f"{A}.readiness_gate.namespace_labelled": False, f"{A}.rollout.min_ready_s": min_ready})
    assert error_ids(stack) == {"readiness-gate-can-pass", "eviction-waits-for-lb"} | broken


def test_a_gate_that_can_pass_makes_the_rollout_wait_for_the_lb() -> None:
    assert only(build(), "rollout-waits-for-lb", "api").render() == (
        "OK rollout-waits-for-lb  api: readiness gate can pass (readiness_gate) = required can pass")
    assert only(build(), "rollout-waits-for-lb", "api").fix == ""


@pytest.mark.parametrize(("min_ready", "status"), [(0, "skipped"), (28, "skipped"), (29, "ok")])
def test_an_injected_gate_of_unknown_order_leaves_the_rollout_rule_to_min_ready(min_ready, status) -> None:
    """Whether the webhook injected the gate depends on creation order (unknown in manifests):
    a long enough minReadySeconds decides the rollout rule anyway, a short one cannot."""
    stack = build({f"{A}.readiness_gate.injected_after_binding": None, f"{A}.rollout.min_ready_s": min_ready})
    gate = only(stack, "readiness-gate-can-pass", "api")
    assert (gate.status, gate.needs, gate.fix, gate.slack_s) == (
        "skipped", ("readiness_gate.injected_after_binding",), "", None)
    assert gate.render() == (
        "SKIPPED readiness-gate-can-pass  api: readiness gate injected by the webhook (readiness_gate) in missing "
        "nothing → needs readiness_gate.injected_after_binding")
    waits = only(stack, "rollout-waits-for-lb", "api")
    assert waits.status == status
    assert waits.needs == (("readiness_gate.injected_after_binding",) if status == "skipped" else ())
    shown = {"skipped": " → needs readiness_gate.injected_after_binding", "ok": ""}[status]
    assert waits.render() == (  # a skipped finding prints the relation required, with its slack so far
        f"{status.upper()} rollout-waits-for-lb  api: min_ready {min_ready}s (rollout.min_ready_s) ≥ "
        "lb_admit_new 24s (lb.registration_propagation_s 15 + lb.health_check.interval_s 5 + "
        f"lb.health_check.timeout_s 4) + margin 5s  slack {min_ready - 29}s{shown}")


def test_a_declared_gate_needs_neither_the_namespace_label_nor_the_creation_order() -> None:
    stack = build({f"{A}.readiness_gate": {"declared": True, "namespace_labelled": False,
                                           "injected_after_binding": False}})
    assert only(stack, "readiness-gate-can-pass", "api").render() == (
        "OK readiness-gate-can-pass  api: readiness gate declared in the pod template (readiness_gate) in missing "
        "nothing")


def test_instance_targets_need_no_rollout_wait() -> None:
    stack = build({f"{B}.rollout.min_ready_s": 0})
    assert findings_of(stack, "rollout-waits-for-lb", "basketball-feed") == []


# ---- readiness-gate-can-pass ------------------------------------------------------------------------
def test_a_gate_on_instance_targets_never_passes_and_says_why() -> None:
    stack = build({f"{A}.lb.target_type": "instance"})
    assert error_ids(stack) == {"readiness-gate-can-pass"}
    assert only(stack, "readiness-gate-can-pass", "api").render() == (
        "ERROR readiness-gate-can-pass  api: readiness gate injected by the webhook (readiness_gate) not in missing IP targets → "
        "provide IP targets")


def test_a_gate_missing_everything_lists_every_missing_piece() -> None:
    stack = build({f"{A}.lb.target_type": "instance", f"{A}.lb.attach_to_arn": None,
                   f"{A}.readiness_gate": {"namespace_labelled": False, "injected_after_binding": False}})
    assert only(stack, "readiness-gate-can-pass", "api").render() == (
        "ERROR readiness-gate-can-pass  api: readiness gate injected by the webhook (readiness_gate) not in missing IP targets, "
        "a target group attached to a load balancer, the namespace label "
        "elbv2.k8s.aws/pod-readiness-gate-inject=enabled, the Service and TargetGroupBinding created before the "
        "pods → provide IP targets; a target group attached to a load balancer; the namespace label "
        "elbv2.k8s.aws/pod-readiness-gate-inject=enabled; the Service and TargetGroupBinding created before the pods")


@pytest.mark.parametrize(("change", "missing"), [
    ({f"{A}.lb.attach_to_arn": None}, "a target group attached to a load balancer"),
    ({f"{A}.readiness_gate.namespace_labelled": False}, "the namespace label elbv2.k8s.aws/pod-readiness-gate-inject=enabled"),
    ({f"{A}.readiness_gate.injected_after_binding": False}, "the Service and TargetGroupBinding created before the pods"),
])
def test_each_missing_gate_condition_alone_fails_the_gate(change, missing) -> None:
    f = only(build(change), "readiness-gate-can-pass", "api")
    assert (f.status, f.right.value, f.fix) == ("error", missing, f"provide {missing}")


def test_a_gate_that_can_pass_reports_nothing_missing() -> None:
    f = only(build(), "readiness-gate-can-pass", "api")
    assert (f.status, f.right.value, f.fix) == ("ok", "nothing", "")


def test_a_service_without_a_gate_has_no_gate_finding() -> None:
    assert findings_of(build(), "readiness-gate-can-pass", "football-feed") == []


def test_the_gate_rule_without_a_load_balancer_names_both_missing_lb_facts() -> None:
    # `references` rejects a gate without an lb in a stack; the rule itself still says why.
    stack = build()
    svc = stack.services[API].model_copy(update={"lb": None})
    [f] = kube.readiness_gate_can_pass(svc, context(stack))
    assert f.right.value == "IP targets, a target group attached to a load balancer"


# ---- progress-deadline-covers-pod-ready ----------------------------------------------------------------
@given(seconds(1, 600))
@example(36).via("slack 0: pod_ready 30 + margin 5, strictly above")
@example(35).via("slack -1")
def test_the_progress_deadline_must_outlast_a_healthy_slow_pod(deadline) -> None:
    stack = build({f"{F}.rollout.progress_deadline_s": deadline})
    expect_alone(stack, "progress-deadline-covers-pod-ready", deadline <= 35)


def test_a_deadline_below_pod_ready_prints_the_fix() -> None:
    stack = build({f"{F}.rollout.progress_deadline_s": 35})
    assert [f.render() for f in findings_of(stack, "progress-deadline-covers-pod-ready", "football-feed")] == [
        "ERROR progress-deadline-covers-pod-ready  football-feed: progress_deadline 35s "
        "(rollout.progress_deadline_s) ≤ pod_ready 30s (app.warmup_s 20 + readiness 5 + rollout.min_ready_s 5) "
        "+ margin 5s  slack -1s → raise rollout.progress_deadline_s",
        "OK progress-deadline-covers-pod-ready  football-feed: progress_deadline 35s (rollout.progress_deadline_s) "
        "> min_ready 5s (rollout.min_ready_s)  slack 29s",
    ]


def test_the_deadline_must_exceed_min_ready_as_the_api_requires() -> None:
    stack = build({f"{F}.rollout.progress_deadline_s": 5})
    f = findings_of(stack, "progress-deadline-covers-pod-ready", "football-feed")[1]
    assert f.render() == (
        "ERROR progress-deadline-covers-pod-ready  football-feed: progress_deadline 5s (rollout.progress_deadline_s) "
        "≤ min_ready 5s (rollout.min_ready_s)  slack -1s → progressDeadlineSeconds must exceed minReadySeconds "
        "(API rule)")
    assert findings_of(build({f"{F}.rollout.progress_deadline_s": 6}), "progress-deadline-covers-pod-ready",
                       "football-feed")[1].slack_s == 0


def test_statefulsets_have_no_progress_deadline() -> None:
    assert findings_of(build({f"{B}.rollout.progress_deadline_s": 1}), "progress-deadline-covers-pod-ready",
                       "basketball-feed") == []


# ---- pdb-needs-replicas / pdb-allows-eviction ----------------------------------------------------------
ACCEPT_EVICTION = {f"{F}.accept": [{"id": "pdb-allows-eviction", "reason": "single-instance on purpose"}]}


@given(seconds(1, 6), seconds(0, 6))
@example(2, 1).via("slack 0")
@example(1, 1).via("slack -1")
@example(1, 0).via("minAvailable 0 blocks nothing")
def test_a_min_available_pdb_needs_two_replicas(n, min_available) -> None:
    # With one replica, minAvailable ≥ 1 always leaves 0 allowed disruptions too: that rule is
    # accepted here (as a singleton would) to see this one alone.
    stack = build({**ACCEPT_EVICTION, f"{F}.replicas": n, f"{F}.pdb.min_available": min_available})
    expect_alone(stack, "pdb-needs-replicas", min_available >= 1 and n < 2)


def test_a_pdb_on_a_single_replica_prints_both_pdb_rules() -> None:
    stack = build({f"{F}.replicas": 1})
    assert error_ids(stack) == {"pdb-needs-replicas", "pdb-allows-eviction"}
    assert only(stack, "pdb-needs-replicas", "football-feed").render() == (
        "ERROR pdb-needs-replicas  football-feed: replicas 1 (replicas) < replicas 2 (pdb.min_available 1 ≥ 1)  "
        "slack -1 → run ≥2 replicas or drop the PDB")
    assert only(stack, "pdb-allows-eviction", "football-feed").render() == (
        "ERROR pdb-allows-eviction  football-feed: allowed disruptions 0 (pdb.min_available 1 of 1 replicas) < "
        "minimum 1  slack -1 → lower pdb.min_available below replicas (or accept it for a singleton)")


def test_an_accepted_singleton_pdb_is_reported_as_accepted_not_dropped() -> None:
    stack = build({**ACCEPT_EVICTION, f"{F}.replicas": 1})
    assert only(stack, "pdb-allows-eviction", "football-feed").render() == (
        "ACCEPTED pdb-allows-eviction  football-feed: allowed disruptions 0 (pdb.min_available 1 of 1 replicas) "
        "< minimum 1  slack -1 → accepted: single-instance on purpose")


def test_a_max_unavailable_pdb_has_no_replica_floor() -> None:
    stack = build({f"{B}.replicas": 2, f"{B}.pdb.max_unavailable": 1})
    assert findings_of(stack, "pdb-needs-replicas", "basketball-feed") == []
    assert findings_of(build({f"{F}.pdb": DELETE}), "pdb-needs-replicas", "football-feed") == []


def test_an_hpa_floor_counts_as_the_replicas() -> None:
    stack = build({f"{A}.hpa.min_replicas": 1, f"{A}.pdb.min_available": 1,
                   f"{A}.accept": [{"id": "pdb-allows-eviction", "reason": "fine"}]})
    assert only(stack, "pdb-needs-replicas", "api").left.source == "hpa.min_replicas"
    assert error_ids(stack) == {"pdb-needs-replicas"}


@given(seconds(2, 8), st.one_of(seconds(0, 10), st.sampled_from(["0%", "40%", "50%", "51%", "99%", "100%"])))
@example(2, 1).via("slack 0")
@example(2, 2).via("slack -1")
@example(2, "51%").via("51% of 2 rounds up to 2")
def test_a_min_available_pdb_must_allow_one_eviction(n, min_available) -> None:
    stack = build({f"{F}.replicas": n, f"{F}.pdb.min_available": min_available})
    keep = min_available if isinstance(min_available, int) else -(-int(min_available[:-1]) * n // 100)
    expect_alone(stack, "pdb-allows-eviction", n - keep < 1)
    assert only(stack, "pdb-allows-eviction", "football-feed").left.value == n - keep


@given(seconds(2, 6), st.one_of(seconds(0, 3), st.sampled_from(["0%", "1%", "33%", "34%", "50%"])))
@example(3, 0).via("slack -1")
@example(3, "1%").via("1% of 3 rounds up to 1: slack 0")
def test_a_max_unavailable_pdb_must_allow_one_eviction(n, max_unavailable) -> None:
    stack = build({f"{B}.replicas": n, f"{B}.pdb.max_unavailable": max_unavailable})
    gone = max_unavailable if isinstance(max_unavailable, int) else -(-int(max_unavailable[:-1]) * n // 100)
    # a PDB letting every pod go keeps none through a drain of every node
    assert error_ids(stack) == ({"pdb-allows-eviction"} if gone < 1 else set()) | (
        {"eviction-leaves-a-target"} if n - gone < 1 else set())


def test_a_pdb_allowing_no_eviction_by_max_unavailable_prints_the_setting() -> None:
    stack = build({f"{B}.pdb.max_unavailable": 0})
    assert only(stack, "pdb-allows-eviction", "basketball-feed").render() == (
        "ERROR pdb-allows-eviction  basketball-feed: allowed disruptions 0 (pdb.max_unavailable 0 of 3 replicas) "
        "< minimum 1  slack -1 → lower pdb.min_available below replicas (or accept it for a singleton)")


# ---- pdb-selects-workload ----------------------------------------------------------------------------
@pytest.mark.parametrize(("selector", "ok"), [
    (None, True),
    ({"app.kubernetes.io/name": "football-feed"}, True),
    ({"app.kubernetes.io/name": "football-feed", "tier": "feeds"}, True),
    ({"tier": "feeds"}, True),
    ({"app.kubernetes.io/name": "api"}, False),
    ({"tier": "web"}, False),
    ({"other": "feeds"}, False),
    ({}, True),  # policy/v1: an empty selector selects every pod in the namespace
])
def test_a_pdb_must_select_the_workloads_pods(selector, ok) -> None:
    stack = build({f"{F}.labels": {"tier": "feeds"}, f"{F}.pdb.selector": selector})
    assert error_ids(stack) == (set() if ok else {"pdb-selects-workload"})


def test_a_pdb_selecting_nothing_prints_both_label_sets() -> None:
    stack = build({f"{F}.labels": {"tier": "feeds"}, f"{F}.pdb.selector": {"tier": "web", "app": "x"}})
    assert only(stack, "pdb-selects-workload", "football-feed").render() == (
        "ERROR pdb-selects-workload  football-feed: pdb selector app=x,tier=web (pdb.selector) not in pod labels "
        "app.kubernetes.io/name=football-feed,tier=feeds (labels) → make pdb.selector a subset of the pod labels "
        "(or leave it unset)")
    empty = build({f"{F}.pdb.selector": {}})
    assert only(empty, "pdb-selects-workload", "football-feed").left.value == "(empty: every pod in the namespace)"


def test_pod_labels_start_with_the_workload_selector() -> None:
    svc = build({f"{F}.labels": {"tier": "feeds"}}).services[FOOTBALL]
    assert kube.pod_labels(svc) == {"app.kubernetes.io/name": "football-feed", "tier": "feeds"}


# ---- hpa-owns-replicas (warning) ----------------------------------------------------------------------
def test_replicas_set_alongside_an_hpa_is_a_warning() -> None:
    stack = build({f"{A}.replicas": 3})
    assert error_ids(stack) == set()
    assert only(stack, "hpa-owns-replicas", "api").render() == (
        "WARNING hpa-owns-replicas  api: replicas set (replicas) ≠ with an hpa unset → remove replicas: every "
        "apply resets the count the HPA chose")
    assert only(build(), "hpa-owns-replicas", "api").render() == (
        "OK hpa-owns-replicas  api: replicas unset (replicas) = with an hpa unset")
    assert findings_of(build(), "hpa-owns-replicas", "football-feed") == []
