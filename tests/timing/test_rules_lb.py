"""Load balancer, connections and drain rules (INVARIANTS.md, seed 003).

Each rule: a property over a region where only that rule can break (the validator names it
alone iff the catalogue's formula is broken), its boundary (slack 0 passes, −1 fails), and
the exact line `lockstep check` prints when it fails.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.timing.strategies import (expect_alone, stamped, API, BASKETBALL, DELETE, FOOTBALL, build,
                                     error_ids, findings_of, only, seconds)
from lockstep.timing import derived as d
from lockstep.timing.invariants import context, lb

A = f"services.{API}"
F = f"services.{FOOTBALL}"
B = f"services.{BASKETBALL}"


# ---- lb-timeout-below-interval ---------------------------------------------------------------
@st.composite
def alb_interval_timeout(draw):
    # interval ≤ 7 keeps node-shutdown-drains-without-endpoints (drain 20 ≥ ×2 + margin 5; then also
    # recovery-within-budget, ×2 ≤ 30); interval + timeout ≤ 79 keeps the watchdog's 180 s
    # above api's stop 50 + pod_ready 50 + interval + timeout.
    interval = draw(seconds(5, 7))
    return interval, draw(seconds(2, min(120, 79 - interval)))


@given(alb_interval_timeout())
@example((5, 4)).via("slack 0")
@example((5, 5)).via("slack -1: equal is rejected for ALB")
def test_alb_health_check_timeout_must_stay_below_its_interval(it) -> None:
    interval, timeout = it
    stack = build({f"{A}.lb.health_check.interval_s": interval, f"{A}.lb.health_check.timeout_s": timeout})
    expect_alone(stack, "lb-timeout-below-interval", timeout >= interval)
    assert only(stack, "lb-timeout-below-interval", "api").slack_s == interval - timeout - 1


def test_alb_timeout_equal_to_interval_prints_the_fix() -> None:
    stack = build({f"{A}.lb.health_check.timeout_s": 5})
    assert only(stack, "lb-timeout-below-interval", "api").render() == (
        "ERROR lb-timeout-below-interval  api: timeout 5s (lb.health_check.timeout_s) ≥ interval 5s "
        "(lb.health_check.interval_s)  slack -1s → lower the timeout to ≤4s or raise the interval")


def test_nlb_may_have_a_timeout_equal_to_its_interval() -> None:
    stack = build()  # basketball-feed: NLB, interval 10 = timeout 10
    assert findings_of(stack, "lb-timeout-below-interval", "basketball-feed") == []
    assert error_ids(stack) == set()


# ---- lb-values-in-range ------------------------------------------------------------------------
@given(seconds(0, 900))
@example(30).via("slack 0: slow start's lower bound")
@example(29).via("slack -1")
@example(0).via("0 disables slow start")
@example(900).via("upper bound")
def test_alb_slow_start_is_zero_or_thirty_to_nine_hundred(slow) -> None:
    stack = build({f"{A}.lb.slow_start_s": slow})
    expect_alone(stack, "lb-values-in-range", 0 < slow < 30)


def test_alb_slow_start_just_below_thirty_prints_the_range() -> None:
    stack = build({f"{A}.lb.slow_start_s": 29})
    assert only(stack, "lb-values-in-range", "api").render() == (
        "ERROR lb-values-in-range  api: slow_start 29s (lb.slow_start_s) not in API range 30–900s  "
        "slack -1s → set lb.slow_start_s within 30–900")


def test_nlb_has_no_slow_start_and_says_so() -> None:
    stack = build({f"{B}.lb.slow_start_s": 30})
    assert error_ids(stack) == {"lb-values-in-range"}
    assert only(stack, "lb-values-in-range", "basketball-feed").render() == (
        "ERROR lb-values-in-range  basketball-feed: slow_start 30s (lb.slow_start_s) ≠ NLB target groups no slow "
        "start → set lb.slow_start_s to 0: slow start is for ALB target groups only")
    assert only(stack, "lb-values-in-range", "basketball-feed").left.fields == ("lb.slow_start_s",)


@given(seconds(1, 7000))
@example(59).via("one below the TCP listener's minimum")
@example(60)
@example(350).via("the default")
@example(6000)
@example(6001)
def test_an_nlb_tcp_listener_takes_an_idle_timeout_of_60_to_6000s(idle) -> None:
    stack = build({f"{B}.lb.idle_timeout_s": idle}) if idle <= 6000 else None
    if stack is None:  # beyond any kind's idle timeout: the model refuses it as input
        with pytest.raises(ValueError):
            build({f"{B}.lb.idle_timeout_s": idle})
        return
    expect_alone(stack, "lb-values-in-range", not 60 <= idle <= 6000)


def test_an_nlb_tcp_idle_timeout_below_the_range_prints_it() -> None:
    stack = build({f"{B}.lb.idle_timeout_s": 59})
    assert only(stack, "lb-values-in-range", "basketball-feed").render() == (
        "ERROR lb-values-in-range  basketball-feed: idle_timeout 59s (lb.idle_timeout_s) not in API range "
        "60–6000s  slack -1s → set lb.idle_timeout_s within 60–6000")


@pytest.mark.parametrize(("idle", "broken"), [(350, False), (351, True), (349, True)])
def test_an_nlb_tls_listener_has_the_fixed_350s_idle_timeout(idle, broken) -> None:
    stack = build({f"{B}.lb.protocol": "TLS", f"{B}.lb.idle_timeout_s": idle})
    assert error_ids(stack) == ({"lb-values-in-range"} if broken else set())


def test_an_nlb_tls_listener_without_an_idle_timeout_gets_the_fixed_one() -> None:
    assert build({f"{B}.lb.protocol": "TLS", f"{B}.lb.idle_timeout_s": DELETE}).services[BASKETBALL].lb.idle_timeout_s == 350


def test_nlb_with_an_http_listener_has_no_fixed_idle_timeout() -> None:
    stack = build({f"{B}.lb.protocol": "HTTP", f"{B}.lb.idle_timeout_s": 60})
    assert error_ids(stack) == set()


def test_in_range_target_groups_report_one_passing_summary_with_the_smallest_slack() -> None:
    stack = build({f"{A}.lb.health_check.interval_s": 7, f"{A}.lb.health_check.healthy_threshold": 4,
                   f"{A}.lb.health_check.unhealthy_threshold": 5})
    # interval 7 → 2 above 5, timeout 4 → 2 above 2, thresholds 4/5 → 2/3, delay 60, idle 59
    assert only(stack, "lb-values-in-range", "api").render() == (
        "OK lb-values-in-range  api: target group values 6 in API ranges ELBv2  slack 2")
    assert only(stack, "lb-values-in-range", "basketball-feed").right.value == "ELBv2"
    assert only(stack, "lb-values-in-range", "api").as_dict()["fix"] == ""  # a passing summary has no fix
    nlb = only(stack, "lb-values-in-range", "basketball-feed")
    assert (nlb.left.value, nlb.slack_s) == (6, 1)  # thresholds 3: one above the API's minimum 2


def test_values_at_both_ends_of_the_api_ranges_pass() -> None:
    hi = build({f"{A}.lb.health_check.interval_s": 300, f"{A}.lb.health_check.timeout_s": 120,
                f"{A}.lb.health_check.healthy_threshold": 10, f"{A}.lb.health_check.unhealthy_threshold": 10,
                f"{A}.lb.deregistration_delay_s": 3600, f"{A}.lb.idle_timeout_s": 4000,
                f"{A}.lb.slow_start_s": 900})
    assert [f.outcome for f in lb.lb_values_in_range("api", hi.services[API].lb)] == ["ok"]
    assert lb.lb_values_in_range("api", hi.services[API].lb)[0].slack_s == 0


def test_each_out_of_range_value_is_its_own_finding() -> None:
    # The model already bounds these fields; the rule restates the API ranges for callers
    # (policy pack, audit) that build LoadBalancers without them: construct one unchecked.
    stack = build()
    bad = stack.services[API].lb.health_check.model_construct(
        **{**stack.services[API].lb.health_check.model_dump(), "interval_s": 301, "timeout_s": 1,
           "healthy_threshold": 11, "unhealthy_threshold": 1})
    lb_ = stack.services[API].lb.model_construct(
        **{**dict(stack.services[API].lb), "health_check": bad, "deregistration_delay_s": 3601,
           "idle_timeout_s": 0})
    found = stamped("lb-values-in-range", lb.lb_values_in_range("api", lb_))
    assert {(f.severity, f.status, f.margin_s) for f in found} == {("error", "error", 0)}
    assert [f.render() for f in found] == [
        "ERROR lb-values-in-range  api: interval 301s (lb.health_check.interval_s) not in API range 5–300s  "
        "slack -1s → set lb.health_check.interval_s within 5–300",
        "ERROR lb-values-in-range  api: timeout 1s (lb.health_check.timeout_s) not in API range 2–120s  "
        "slack -1s → set lb.health_check.timeout_s within 2–120",
        "ERROR lb-values-in-range  api: healthy_threshold 11 (lb.health_check.healthy_threshold) not in "
        "API range 2–10  slack -1 → set lb.health_check.healthy_threshold within 2–10",
        "ERROR lb-values-in-range  api: unhealthy_threshold 1 (lb.health_check.unhealthy_threshold) not in "
        "API range 2–10  slack -1 → set lb.health_check.unhealthy_threshold within 2–10",
        "ERROR lb-values-in-range  api: deregistration_delay 3601s (lb.deregistration_delay_s) not in "
        "API range 0–3600s  slack -1s → set lb.deregistration_delay_s within 0–3600",
        "ERROR lb-values-in-range  api: idle_timeout 0s (lb.idle_timeout_s) not in API range 1–4000s  "
        "slack -1s → set lb.idle_timeout_s within 1–4000",
    ]


# ---- keepalive-outlasts-lb-idle ----------------------------------------------------------------
# idle ≥ 30: below api's longest request the ALB's idle timeout also breaks timeouts-shrink-inward
@given(seconds(0, 200), seconds(30, 4000))
@example(61, 60).via("slack 0")
@example(60, 60).via("slack -1: equal closes the socket the LB reuses")
def test_app_keepalive_must_outlast_the_alb_idle_timeout(keepalive, idle) -> None:
    stack = build({f"{A}.app.keepalive_s": keepalive, f"{A}.lb.idle_timeout_s": idle})
    expect_alone(stack, "keepalive-outlasts-lb-idle", keepalive <= idle)
    assert only(stack, "keepalive-outlasts-lb-idle", "api").slack_s == keepalive - idle - 1


def test_node_default_keepalive_of_5s_behind_an_alb_prints_the_fix() -> None:
    stack = build({f"{A}.app.keepalive_s": 5})
    assert only(stack, "keepalive-outlasts-lb-idle", "api").render() == (
        "ERROR keepalive-outlasts-lb-idle  api: keepalive 5s (app.keepalive_s) ≤ idle_timeout 60s "
        "(lb.idle_timeout_s)  slack -56s → raise the app's keep-alive timeout to ≥61s or lower the LB's idle timeout")


def test_unknown_keepalive_is_skipped_naming_the_field_never_guessed() -> None:
    stack = build({f"{A}.app.keepalive_s": None})
    f = only(stack, "keepalive-outlasts-lb-idle", "api")
    assert f.status == "skipped"
    assert f.render() == (
        "SKIPPED keepalive-outlasts-lb-idle  api: keepalive unknown (app.keepalive_s) > idle_timeout 60s "
        "(lb.idle_timeout_s)  slack -61s → needs app.keepalive_s")
    assert error_ids(stack) == set()


def test_keepalive_rule_applies_to_https_albs_but_not_tcp_listeners_or_nlbs() -> None:
    assert error_ids(build({f"{A}.lb.protocol": "HTTPS", f"{A}.app.keepalive_s": 5})) == {
        "keepalive-outlasts-lb-idle"}
    assert findings_of(build({f"{A}.lb.protocol": "TCP", f"{A}.app.keepalive_s": 5}),
                       "keepalive-outlasts-lb-idle", "api") == []
    assert findings_of(build({f"{B}.lb.protocol": "TLS"}), "keepalive-outlasts-lb-idle", "basketball-feed") == []


# ---- drain-covers-lb-detection ------------------------------------------------------------------
@given(seconds(0, 25), seconds(0, 30))
@example(20, 15).via("slack 0: drain = detection + margin")
@example(19, 15).via("slack -1")
def test_drain_must_cover_the_lb_detection_plus_the_margin(drain, propagation) -> None:
    # drain ≤ 25 keeps drain + finish 30 + margin within grace 60; propagation ≤ 30 keeps the
    # deregistration delay 60 ≥ detection + max_request 30.
    # no kubelet shutdown: its drain relation (≥ the ALB's check 10 s + margin) would fire below 15 s
    stack = build({f"{A}.shutdown.drain_s": drain, f"{A}.lb.deregistration_propagation_s": propagation})
    expect_alone(stack, "drain-covers-lb-detection", drain < propagation + 5)
    assert only(stack, "drain-covers-lb-detection", "api").slack_s == drain - propagation - 5


def test_drain_outlasting_detection_by_exactly_the_margin_passes() -> None:
    assert only(build(), "drain-covers-lb-detection", "api").render() == (
        "OK drain-covers-lb-detection  api: drain 20s (shutdown.drain_s) ≥ lb_detect 15s "
        "(deregistration: lb.deregistration_propagation_s) + margin 5s  slack 0s")


def test_drain_one_second_short_of_detection_plus_margin_prints_the_fix() -> None:
    stack = build({f"{A}.shutdown.drain_s": 19})
    assert only(stack, "drain-covers-lb-detection", "api").render() == (
        "ERROR drain-covers-lb-detection  api: drain 19s (shutdown.drain_s) < lb_detect 15s "
        "(deregistration: lb.deregistration_propagation_s) + margin 5s  slack -1s → raise the drain to ≥20s "
        "or detect faster")


def test_instance_targets_leave_by_endpoint_propagation() -> None:
    stack = build({f"{B}.shutdown.drain_s": 14})
    assert error_ids(stack) == {"drain-covers-lb-detection"}
    assert only(stack, "drain-covers-lb-detection", "basketball-feed").render() == (
        "ERROR drain-covers-lb-detection  basketball-feed: drain 14s (shutdown.drain_s) < lb_detect 10s "
        "(endpoints: lb.endpoint_propagation_s) + margin 5s  slack -1s → raise the drain to ≥15s or detect faster")


def test_the_margin_is_the_stacks_margin() -> None:
    stack = build({"margin_s": 0, f"{A}.shutdown.drain_s": 15})
    f = only(stack, "drain-covers-lb-detection", "api")
    assert (f.status, f.slack_s, f.margin_s) == ("ok", 0, 0)
    assert " + margin" not in f.render()


def test_a_service_without_a_load_balancer_has_no_detection_to_cover() -> None:
    assert findings_of(build(), "drain-covers-lb-detection", "football-feed") == []
    assert findings_of(build(), "recovery-within-budget", "football-feed") == []


# ---- drain-fits-grace --------------------------------------------------------------------------
@given(seconds(0, 50), seconds(5, 60), seconds(0, 150))
@example(0, 20, 25).via("slack 0")
@example(0, 20, 24).via("slack -1")
def test_drain_and_finish_must_end_a_margin_before_the_kill(drain, finish, grace) -> None:
    # football-feed has no LB; finish ≥ its 5 s max request; drain + finish ≤ 149 under the watchdog
    # and ≤ 110 within the spot notice (120 - reaction 5 - margin 5: node-budget-covers-drain)
    stack = build({f"{F}.shutdown.drain_s": drain, f"{F}.shutdown.finish_s": finish, f"{F}.shutdown.grace_s": grace})
    expect_alone(stack, "drain-fits-grace", drain + finish + 5 > grace)
    assert only(stack, "drain-fits-grace", "football-feed").slack_s == grace - drain - finish - 5


def test_drain_and_finish_past_the_grace_period_prints_the_fix() -> None:
    stack = build({f"{F}.shutdown.grace_s": 24})
    assert only(stack, "drain-fits-grace", "football-feed").render() == (
        "ERROR drain-fits-grace  football-feed: drain + finish 20s (shutdown.drain_s 0 + shutdown.finish_s 20) "
        "+ margin 5s > grace 24s (shutdown.grace_s)  slack -1s → raise the grace period to ≥25s or shorten the drain")


@given(seconds(0, 86400))
@example(25).via("slack 0 against the budget")
@example(24).via("slack -1")
@example(30).via("equal to grace: grace is used")
@example(31)
def test_a_node_termination_budget_below_the_grace_period_caps_it(budget) -> None:
    stack = build({f"{F}.shutdown.node_termination_budget_s": budget})
    expect_alone(stack, "drain-fits-grace", min(budget, 30) < 25)
    f = only(stack, "drain-fits-grace", "football-feed")
    assert f.right.value == min(budget, 30)
    assert f.right.source == ("shutdown.node_termination_budget_s" if budget < 30 else "shutdown.grace_s")


def test_unknown_finish_decides_only_when_the_drain_alone_breaks_the_grace() -> None:
    ok_unknown = build({f"{F}.shutdown.finish_s": None, f"{F}.app.max_request_s": None})
    f = only(ok_unknown, "drain-fits-grace", "football-feed")
    assert (f.status, f.needs) == ("skipped", ("shutdown.finish_s",))
    broken = build({f"{F}.shutdown.finish_s": None, f"{F}.app.max_request_s": None,
                    f"{F}.shutdown.drain_s": 26})
    f = only(broken, "drain-fits-grace", "football-feed")
    assert f.status == "error"
    assert f.render() == (
        "ERROR drain-fits-grace  football-feed: drain + finish ≥26s (shutdown.drain_s 26 + shutdown.finish_s ?) "
        "+ margin 5s > grace 30s (shutdown.grace_s)  slack -1s → raise the grace period to ≥31s or shorten the drain")


# ---- finish-covers-requests ---------------------------------------------------------------------
# finish ≤ 10 keeps basketball's drain 30 + finish + margin 5 within grace 50 (drain-fits-grace) and
# its heartbeat spec's loss time above a replacement
@given(seconds(0, 10), seconds(0, 40))
@example(10, 10).via("slack 0")
@example(9, 10).via("slack -1")
def test_finish_must_cover_the_longest_request(finish, max_request) -> None:
    stack = build({f"{B}.shutdown.finish_s": finish, f"{B}.app.max_request_s": max_request})
    expect_alone(stack, "finish-covers-requests", finish < max_request)


def test_finish_shorter_than_the_longest_request_prints_the_fix() -> None:
    stack = build({f"{B}.shutdown.finish_s": 9})
    assert only(stack, "finish-covers-requests", "basketball-feed").render() == (
        "ERROR finish-covers-requests  basketball-feed: finish 9s (shutdown.finish_s) < max_request 10s "
        "(app.max_request_s)  slack -1s → let in-flight requests finish: raise shutdown.finish_s to the longest request")


# ---- deregistration-covers-requests ---------------------------------------------------------------
@given(seconds(0, 120), seconds(0, 30))
@example(45, 30).via("slack 0")
@example(44, 30).via("slack -1")
def test_deregistration_delay_must_cover_detection_plus_the_longest_request(delay, max_request) -> None:
    stack = build({f"{A}.lb.deregistration_delay_s": delay, f"{A}.app.max_request_s": max_request})
    expect_alone(stack, "deregistration-covers-requests", delay < 15 + max_request)


def test_deregistration_delay_one_short_prints_the_fix() -> None:
    stack = build({f"{A}.lb.deregistration_delay_s": 44})
    assert only(stack, "deregistration-covers-requests", "api").render() == (
        "ERROR deregistration-covers-requests  api: deregistration_delay 44s (lb.deregistration_delay_s) < "
        "lb_detect + max_request 45s (lb_detect 15 + app.max_request_s 30)  slack -1s → raise the deregistration "
        "delay to ≥45s")


def test_deregistration_delay_matters_only_when_targets_leave_by_deregistration() -> None:
    stack = build({f"{B}.lb.deregistration_delay_s": 0})
    assert findings_of(stack, "deregistration-covers-requests", "basketball-feed") == []
    mixed = build({f"{A}.lb.removal": ["endpoints", "deregistration"], f"{A}.lb.deregistration_delay_s": 39})
    # lb_detect is the faster path (endpoints 10): 10 + 30 = 40 > 39
    assert only(mixed, "deregistration-covers-requests", "api").slack_s == -1


# ---- health-check-drain-needs-peers ---------------------------------------------------------------
HC_ONLY = {f"{A}.lb.removal": ["health_check"], f"{A}.pdb": DELETE}


@given(seconds(1, 12))
@example(2).via("slack 0")
@example(1).via("slack -1: the last target never drains")
def test_draining_by_failing_health_checks_needs_a_peer(min_replicas) -> None:
    # api's PDB is dropped: with one replica it would break the PDB rules as well.
    stack = build({**HC_ONLY, f"{A}.hpa.min_replicas": min_replicas})
    expect_alone(stack, "health-check-drain-needs-peers", min_replicas < 2)


def test_a_single_health_check_drained_target_prints_the_fix() -> None:
    stack = build({**HC_ONLY, f"{A}.hpa.min_replicas": 1})
    assert only(stack, "health-check-drain-needs-peers", "api").render() == (
        "ERROR health-check-drain-needs-peers  api: targets 1 (hpa.min_replicas) < targets 2  slack -1 → "
        "run ≥2 targets: an LB fails open when every target is unhealthy")
    fixed = build({**HC_ONLY, f"{A}.hpa": DELETE, f"{A}.replicas": 1})
    assert only(fixed, "health-check-drain-needs-peers", "api").left.source == "replicas"


def test_another_removal_path_lets_a_single_target_leave() -> None:
    stack = build({f"{A}.lb.removal": ["health_check", "deregistration"], f"{A}.pdb": DELETE,
                   f"{A}.hpa.min_replicas": 1})
    assert findings_of(stack, "health-check-drain-needs-peers") == []
    # but a node drain still leaves it without a target: no PDB holds the eviction back
    assert error_ids(stack) == {"eviction-leaves-a-target"}


# ---- recovery-within-budget -------------------------------------------------------------------------
# interval ≤ 7 keeps node-shutdown-drains-without-endpoints (drain 20 ≥ ×2 unhealthy + margin 5)
@given(seconds(5, 7), seconds(2, 10), seconds(0, 200))
@example(5, 2, 10).via("slack 0")
@example(5, 2, 9).via("slack -1")
def test_regaining_lb_health_must_fit_the_agreed_budget(interval, healthy, budget) -> None:
    stack = build({f"{A}.lb.health_check.interval_s": interval, f"{A}.lb.health_check.healthy_threshold": healthy,
                   f"{A}.app.max_recovery_s": budget})
    expect_alone(stack, "recovery-within-budget", interval * healthy > budget)


def test_slow_lb_recovery_prints_the_fix() -> None:
    stack = build({f"{A}.app.max_recovery_s": 9})
    assert only(stack, "recovery-within-budget", "api").render() == (
        "ERROR recovery-within-budget  api: lb_recover 10s (lb.health_check.interval_s 5 × "
        "lb.health_check.healthy_threshold 2) > max_recovery 9s (app.max_recovery_s)  slack -1s → "
        "lower the healthy threshold or the interval")


# ---- sidecar-outlives-app ---------------------------------------------------------------------------
@given(seconds(0, 200))
@example(50).via("slack 0")
@example(49).via("slack -1")
@example(19).via("mesh-drain-covers-lb slack -1: the ALB still sends (detection 15 + margin 5)")
def test_a_mesh_sidecar_must_outlive_drain_and_finish(sidecar) -> None:
    stack = build({f"{A}.sidecar": {"drain_s": sidecar}})
    detect = int(d.lb_detect(stack.services[API].lb).value) + stack.margin_s
    assert error_ids(stack) == ({"sidecar-outlives-app"} if sidecar < 50 else set()) | (
        {"mesh-drain-covers-lb"} if sidecar < detect else set())


def test_a_sidecar_exiting_before_the_app_prints_the_fix() -> None:
    stack = build({f"{A}.sidecar": {"drain_s": 49}})
    assert only(stack, "sidecar-outlives-app", "api").render() == (
        "ERROR sidecar-outlives-app  api: sidecar.drain 49s (sidecar.drain_s) < stop 50s "
        "(shutdown.drain_s 20 + shutdown.finish_s 30)  slack -1s → keep the mesh proxy up until the app "
        "has drained and finished")


# ---- prestop-uses-native-sleep (warning) ---------------------------------------------------------------
def test_exec_sleep_on_a_cluster_with_the_native_action_is_a_warning_not_an_error() -> None:
    stack = build({f"{A}.shutdown.prestop": "exec"})
    assert error_ids(stack) == set()
    assert only(stack, "prestop-uses-native-sleep", "api").render() == (
        "WARNING prestop-uses-native-sleep  api: preStop exec sleep (shutdown.prestop) ≠ kubelet sleep action "
        "(Kubernetes 1.30) → use the native sleep action (set shutdown.prestop: sleep or leave it unset)")


def test_exec_sleep_is_fine_before_1_30_without_a_drain_or_with_the_native_action() -> None:
    assert findings_of(build({"kubernetes_version": "1.29", f"{A}.shutdown.prestop": "exec"}),
                       "prestop-uses-native-sleep") == []
    assert findings_of(build({f"{F}.shutdown.prestop": "exec"}), "prestop-uses-native-sleep") == []
    assert findings_of(build({f"{A}.shutdown.prestop": "sleep"}), "prestop-uses-native-sleep") == []
    assert len(findings_of(build({"kubernetes_version": "1.31", f"{A}.shutdown.prestop": "exec"}),
                           "prestop-uses-native-sleep")) == 1
