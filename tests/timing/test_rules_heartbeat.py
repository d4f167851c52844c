"""Watchdog and heartbeat rules (INVARIANTS.md, seeds 003 and 000)."""

from __future__ import annotations

import pytest
from hypothesis import example, given

from tests.timing.strategies import expect_alone, BASKETBALL, DELETE, FOOTBALL, base, build, error_ids, findings_of, only, seconds

F = f"services.{FOOTBALL}"
B = f"services.{BASKETBALL}"
FOOTBALL_SPEC_ONLY = {"heartbeat_specs": [base()["heartbeat_specs"][0]]}


# ---- watchdog-shares-deploy-lock ------------------------------------------------------------------
def test_a_watchdog_without_the_deploys_lock_prints_the_fix() -> None:
    stack = build({"watchdog.deploy_lock": None})
    assert error_ids(stack) == {"watchdog-shares-deploy-lock"}
    assert only(stack, "watchdog-shares-deploy-lock").render() == (
        "ERROR watchdog-shares-deploy-lock  watchdog: deploy_lock unset (watchdog.deploy_lock) ≠ lock the "
        "deploy's lock → make the deploy take the watchdog's lock (watchdog.deploy_lock)")


def test_an_empty_lock_path_is_no_lock() -> None:
    assert error_ids(build({"watchdog.deploy_lock": ""})) == {"watchdog-shares-deploy-lock"}


def test_no_watchdog_no_watchdog_findings() -> None:
    stack = build({"watchdog": DELETE})
    assert findings_of(stack, "watchdog-shares-deploy-lock") == []
    assert findings_of(stack, "watchdog-tolerates-planned-drain") == []


# ---- watchdog-tolerates-planned-drain ---------------------------------------------------------------
@given(seconds(1, 10), seconds(1, 120))
@example(4, 60).via("the seed's fix: 180 s")
@example(2, 110).via("slack 0 against api's 109 s")
@example(2, 109).via("slack -1: equal fires as the pod comes back")
def test_the_watchdog_tolerates_every_watched_services_stop_and_restart(failures, period) -> None:
    stack = build({"watchdog.failures_before_action": failures, "watchdog.period_s": period})
    tol = (failures - 1) * period
    # api: stop 50 + pod_ready 59 = 109; football-feed: stop 20 + pod_ready 30 = 50
    expect_alone(stack, "watchdog-tolerates-planned-drain", tol <= 109)
    assert {f.subject: f.slack_s for f in findings_of(stack, "watchdog-tolerates-planned-drain")} == {
        "api": tol - 110, "football-feed": tol - 51}


def test_a_watchdog_firing_mid_drain_prints_the_failures_it_needs() -> None:
    stack = build({"watchdog.failures_before_action": 2, "watchdog.period_s": 109})
    assert only(stack, "watchdog-tolerates-planned-drain", "api").render() == (
        "ERROR watchdog-tolerates-planned-drain  api: watchdog tolerance 109s ((watchdog.failures_before_action 2 "
        "- 1) × watchdog.period_s 109) ≤ stop + pod_ready 109s (stop 50 + pod_ready 59)  slack -1s → raise "
        "watchdog.failures_before_action to ≥3")


def test_the_fix_names_the_smallest_failure_count_that_passes() -> None:
    for period in (1, 7, 30, 54, 60, 108, 109, 110):
        stack = build({"watchdog.failures_before_action": 1, "watchdog.period_s": period})
        fix = only(stack, "watchdog-tolerates-planned-drain", "api").fix
        need = int(fix.rsplit("≥", 1)[1])
        assert (need - 1) * period > 109, period
        assert (need - 2) * period <= 109 + period, period  # at most one more than needed


def test_a_watched_service_accepting_the_rule_is_reported_as_accepted() -> None:
    stack = build({"watchdog.failures_before_action": 1,
                   f"{F}.accept": [{"id": "watchdog-tolerates-planned-drain", "reason": "restarts are cheap"}]})
    assert only(stack, "watchdog-tolerates-planned-drain", "football-feed").status == "accepted"
    assert only(stack, "watchdog-tolerates-planned-drain", "api").status == "error"


# ---- heartbeat-rides-out-pod-replacement --------------------------------------------------------------
@given(seconds(10, 170))
@example(90).via("slack 0: replace 80 + resync 5 + margin 5")
@example(89).via("slack -1")
def test_a_spec_tolerates_one_statefulset_pod_replacement(loss) -> None:
    # basketball-feed is a StatefulSet: stop 40 + schedule 10 + pod_ready 30; loss ≥ 10 keeps
    # relisting every 5 s twice per loss time, ≤ 170 keeps the 180 s outage budget
    stack = build({"heartbeat_specs.1.loss_time_s": loss})
    expect_alone(stack, "heartbeat-rides-out-pod-replacement", loss < 90)


def test_a_loss_time_shorter_than_a_replacement_prints_the_fix() -> None:
    stack = build({"heartbeat_specs.1.loss_time_s": 89})
    assert only(stack, "heartbeat-rides-out-pod-replacement", "basketball-live (basketball-feed)").render() == (
        "ERROR heartbeat-rides-out-pod-replacement  basketball-live (basketball-feed): loss_time 89s (loss_time_s) "
        "< replace_time + observe 85s (replace_time 80 + heartbeat.resync_period_s 5) + margin 5s  slack -1s → "
        "raise loss_time_s to ≥90s or replace pods faster")


@given(seconds(1, 20))
@example(6).via("slack 0: replace 80 + observe 6 + margin 5 = 91")
@example(5).via("slack 1")
def test_in_poll_mode_the_observe_interval_is_what_a_replacement_must_ride_out(observe) -> None:
    stack = build({"heartbeat.observe_mode": "poll", "heartbeat.observe_interval_s": observe,
                   "heartbeat_specs.1.loss_time_s": 91})
    expect_alone(stack, "heartbeat-rides-out-pod-replacement", 80 + observe + 5 > 91)
    assert "heartbeat.observe_interval_s" in only(stack, "heartbeat-rides-out-pod-replacement",
                                                  "basketball-live (basketball-feed)").right.source


@given(seconds(1, 3600))
def test_in_watch_mode_the_observe_interval_decides_nothing(observe) -> None:
    assert error_ids(build({"heartbeat.observe_interval_s": observe})) == set()


@given(seconds(40, 180))
@example(40).via("slack 0: a Deployment's replacement is its pod_ready 30")
@example(39)
def test_a_deployment_replacement_costs_only_pod_ready(loss) -> None:
    stack = build({"heartbeat_specs.0.loss_time_s": loss})
    expect_alone(stack, "heartbeat-rides-out-pod-replacement", loss < 40)


# ---- heartbeat-within-outage-budget ---------------------------------------------------------------------
@given(seconds(1, 400))
@example(100).via("slack 0: loss 90 + resync 5 + ack 5")
@example(99).via("slack -1")
def test_the_block_must_be_applied_inside_the_outage_budget(budget) -> None:
    stack = build({"heartbeat_specs.1.max_outage_s": budget})
    expect_alone(stack, "heartbeat-within-outage-budget", budget < 100)


@given(seconds(1, 3600))
@example(85).via("slack 0: 90 + 5 + 85 = 180")
@example(86).via("slack -1")
def test_the_gateways_ack_timeout_counts_against_the_outage_budget(ack) -> None:
    stack = build({"heartbeat.ack_timeout_s": ack})
    expect_alone(stack, "heartbeat-within-outage-budget", 90 + 5 + ack > 180)


def test_a_loss_time_past_the_outage_budget_prints_the_fix() -> None:
    stack = build({"heartbeat_specs.1.max_outage_s": 99})
    assert only(stack, "heartbeat-within-outage-budget", "basketball-live (basketball-feed)").render() == (
        "ERROR heartbeat-within-outage-budget  basketball-live (basketball-feed): loss_time + observe + ack 100s "
        "(loss_time_s 90 + heartbeat.resync_period_s 5 + heartbeat.ack_timeout_s 5) > max_outage 99s "
        "(max_outage_s)  slack -1s → lower loss_time_s, observe more often or shorten heartbeat.ack_timeout_s "
        "(the outage budget is agreed)")


# ---- heartbeat-samples-often ------------------------------------------------------------------------------
@given(seconds(1, 85))
@example(60).via("slack 0: half of 120")
@example(61).via("slack -1")
def test_the_heartbeat_relists_at_least_twice_per_loss_time(resync) -> None:
    # only the football spec (loss 120, replacement 30): its other rules hold for resync ≤ 85
    stack = build({**FOOTBALL_SPEC_ONLY, "heartbeat.resync_period_s": resync})
    expect_alone(stack, "heartbeat-samples-often", resync > 60)


@given(seconds(1, 85))
@example(60).via("slack 0: half of 120")
@example(61).via("slack -1")
def test_in_poll_mode_the_heartbeat_observes_at_least_twice_per_loss_time(observe) -> None:
    stack = build({**FOOTBALL_SPEC_ONLY, "heartbeat.observe_mode": "poll", "heartbeat.observe_interval_s": observe})
    expect_alone(stack, "heartbeat-samples-often", observe > 60)


def test_an_odd_loss_time_rounds_the_half_down() -> None:
    poll = {**FOOTBALL_SPEC_ONLY, "heartbeat.observe_mode": "poll", "heartbeat_specs.0.loss_time_s": 121}
    stack = build({**poll, "heartbeat.observe_interval_s": 60})
    assert only(stack, "heartbeat-samples-often").slack_s == 0
    stack = build({**poll, "heartbeat.observe_interval_s": 61})
    assert only(stack, "heartbeat-samples-often").render() == (
        "ERROR heartbeat-samples-often  football-live (football-feed): observe_interval 61s "
        "(heartbeat.observe_interval_s) > loss_time / 2 60s (loss_time_s 121 / 2)  slack -1s → observe at least "
        "every 60s")


@pytest.mark.parametrize(("mode", "field"), [("poll", "heartbeat.observe_interval_s"),
                                             ("watch", "heartbeat.resync_period_s")])
def test_a_sampling_finding_names_the_fields_that_decide_it(mode, field) -> None:
    found = only(build({**FOOTBALL_SPEC_ONLY, "heartbeat.observe_mode": mode, "heartbeat.observe_interval_s": 61,
                        "heartbeat.resync_period_s": 61}), "heartbeat-samples-often")
    assert (found.left.fields, found.right.fields) == ((field,), ("loss_time_s",))


def test_a_watch_relisting_too_rarely_prints_the_resync_period() -> None:
    stack = build({**FOOTBALL_SPEC_ONLY, "heartbeat.resync_period_s": 61, "heartbeat_specs.0.loss_time_s": 121})
    assert only(stack, "heartbeat-samples-often").render() == (
        "ERROR heartbeat-samples-often  football-live (football-feed): resync_period 61s "
        "(heartbeat.resync_period_s) > loss_time / 2 60s (loss_time_s 121 / 2)  slack -1s → observe at least "
        "every 60s")


# ---- heartbeat-recovery-covers-catch-up -------------------------------------------------------------------
@given(seconds(0, 200))
@example(30).via("slack 0")
@example(29).via("slack -1")
def test_recovery_time_must_cover_the_consumer_catch_up(recovery) -> None:
    stack = build({"heartbeat_specs.0.recovery_time_s": recovery})
    expect_alone(stack, "heartbeat-recovery-covers-catch-up", recovery < 30)


def test_a_recovery_before_catch_up_prints_the_fix() -> None:
    stack = build({"heartbeat_specs.0.recovery_time_s": 29})
    assert only(stack, "heartbeat-recovery-covers-catch-up", "football-live (football-feed)").render() == (
        "ERROR heartbeat-recovery-covers-catch-up  football-live (football-feed): recovery_time 29s "
        "(recovery_time_s) < catch_up 30s (app.catch_up_s)  slack -1s → raise recovery_time_s to the consumer's "
        "catch-up time")


@given(seconds(0, 100))
@example(30).via("slack 0: interval 10 × healthy 3")
@example(29).via("slack -1")
def test_behind_an_lb_recovery_must_also_cover_lb_recovery(recovery) -> None:
    stack = build({f"{B}.app.catch_up_s": 0, "heartbeat_specs.1.recovery_time_s": recovery})
    expect_alone(stack, "heartbeat-recovery-covers-catch-up", recovery < 30)


def test_a_recovery_before_the_lb_routes_again_prints_the_fix() -> None:
    stack = build({f"{B}.app.catch_up_s": 0, "heartbeat_specs.1.recovery_time_s": 29})
    found = findings_of(stack, "heartbeat-recovery-covers-catch-up", "basketball-live (basketball-feed)")
    assert [f.render() for f in found] == [
        "OK heartbeat-recovery-covers-catch-up  basketball-live (basketball-feed): recovery_time 29s "
        "(recovery_time_s) ≥ catch_up 0s (app.catch_up_s)  slack 29s",
        "ERROR heartbeat-recovery-covers-catch-up  basketball-live (basketball-feed): recovery_time 29s "
        "(recovery_time_s) < lb_recover 30s (lb.health_check.interval_s 10 × lb.health_check.healthy_threshold 3)  "
        "slack -1s → raise recovery_time_s: the LB must route to the service again first",
    ]


def test_an_unknown_catch_up_is_skipped_until_stated() -> None:
    f = only(build({f"{F}.app.catch_up_s": None}), "heartbeat-recovery-covers-catch-up",
             "football-live (football-feed)")
    assert (f.status, f.needs) == ("skipped", ("app.catch_up_s",))


# ---- heartbeat-client-tolerates-beat-gaps ----------------------------------------------------------------
@given(seconds(1, 12))
@example(10).via("slack 0: 3 × 10 = client timeout 30")
@example(11).via("slack -1")
def test_a_client_waits_three_beats_before_declaring_silence(publish) -> None:
    # publish ≤ 12 keeps lease 15 + retry 2 + publish below the client timeout 30
    stack = build({"heartbeat.publish_interval_s": publish})
    expect_alone(stack, "heartbeat-client-tolerates-beat-gaps", 3 * publish > 30)


def test_a_client_timing_out_on_one_late_beat_prints_the_fix() -> None:
    stack = build({"heartbeat.publish_interval_s": 11})
    assert only(stack, "heartbeat-client-tolerates-beat-gaps").render() == (
        "ERROR heartbeat-client-tolerates-beat-gaps  heartbeat: client_timeout 30s (heartbeat.client_timeout_s) < "
        "3 beats 33s (3 × heartbeat.publish_interval_s 11)  slack -3s → raise heartbeat.client_timeout_s to ≥33s "
        "or publish more often")


# ---- heartbeat-beats-expire ---------------------------------------------------------------------------------
@given(seconds(1, 100))
@example(30).via("slack 0")
@example(31).via("slack -1")
def test_a_queued_beat_expires_before_a_client_would_time_out(ttl) -> None:
    stack = build({"heartbeat.beat_ttl_s": ttl})
    expect_alone(stack, "heartbeat-beats-expire", ttl > 30)


def test_a_beat_outliving_the_client_timeout_prints_the_fix() -> None:
    stack = build({"heartbeat.beat_ttl_s": 31})
    assert only(stack, "heartbeat-beats-expire").render() == (
        "ERROR heartbeat-beats-expire  heartbeat: beat_ttl 31s (heartbeat.beat_ttl_s) > client_timeout 30s "
        "(heartbeat.client_timeout_s)  slack -1s → lower heartbeat.beat_ttl_s to ≤30s")


# ---- heartbeat-deploy-invisible ------------------------------------------------------------------------------
@given(seconds(11, 60))
@example(22).via("slack 0: 22 + 2 + 5 = 29 < 30")
@example(23).via("slack -1")
def test_a_leader_failover_stays_shorter_than_the_client_timeout(lease) -> None:
    stack = build({"heartbeat.lease_duration_s": lease})
    expect_alone(stack, "heartbeat-deploy-invisible", lease + 2 + 5 >= 30)


def test_a_slow_leader_failover_prints_the_fix() -> None:
    stack = build({"heartbeat.lease_duration_s": 23})
    assert only(stack, "heartbeat-deploy-invisible").render() == (
        "ERROR heartbeat-deploy-invisible  heartbeat: silence 30s (heartbeat.lease_duration_s 23 + "
        "heartbeat.lease_retry_period_s 2 + heartbeat.publish_interval_s 5) ≥ client_timeout 30s "
        "(heartbeat.client_timeout_s)  slack -1s → shorten the lease or raise heartbeat.client_timeout_s")


@given(seconds(0, 60))
@example(14).via("slack 0: warmup 14 + readiness 5 + min_ready 0 + publish 5 = 24 < 25")
@example(15).via("slack -1")
def test_a_single_heartbeat_restarts_within_the_client_timeout(warmup) -> None:
    stack = build({"heartbeat.replicas": 1, "heartbeat.warmup_s": warmup, "heartbeat.min_ready_s": 0,
                   "heartbeat.client_timeout_s": 25, "heartbeat.beat_ttl_s": 25})
    expect_alone(stack, "heartbeat-deploy-invisible", warmup + 5 + 5 >= 25)


def test_a_single_slow_heartbeat_prints_the_fix() -> None:
    stack = build({"heartbeat.replicas": 1, "heartbeat.warmup_s": 15, "heartbeat.min_ready_s": 1,
                   "heartbeat.client_timeout_s": 26, "heartbeat.beat_ttl_s": 25})
    assert only(stack, "heartbeat-deploy-invisible").render() == (
        "ERROR heartbeat-deploy-invisible  heartbeat: silence 26s (pod_ready 21 + heartbeat.publish_interval_s 5) "
        "≥ client_timeout 26s (heartbeat.client_timeout_s)  slack -1s → run 2 replicas with leader election, or "
        "start faster")


def test_no_heartbeat_service_no_heartbeat_findings() -> None:
    stack = build({"heartbeat": DELETE, "heartbeat_specs": []})
    assert [f for f in (findings_of(stack, r) for r in (
        "heartbeat-rides-out-pod-replacement", "heartbeat-within-outage-budget", "heartbeat-samples-often",
        "heartbeat-client-tolerates-beat-gaps", "heartbeat-beats-expire", "heartbeat-deploy-invisible",
        "heartbeat-recovery-covers-catch-up")) if f] == []


# ---- a watched service may acknowledge a heartbeat rule it deliberately breaks ---------------------
@pytest.mark.parametrize(("rule", "service", "changes"), [
    ("heartbeat-rides-out-pod-replacement", BASKETBALL, {"heartbeat_specs.1.loss_time_s": 69}),
    ("heartbeat-within-outage-budget", BASKETBALL, {"heartbeat_specs.1.max_outage_s": 99}),
    ("heartbeat-samples-often", FOOTBALL, {**FOOTBALL_SPEC_ONLY, "heartbeat.resync_period_s": 61}),
    ("heartbeat-recovery-covers-catch-up", FOOTBALL, {"heartbeat_specs.0.recovery_time_s": 29}),
    ("heartbeat-recovery-covers-catch-up", BASKETBALL, {f"{B}.app.catch_up_s": 0, "heartbeat_specs.1.recovery_time_s": 29}),
])
def test_a_spec_rule_is_accepted_on_the_watched_service_not_the_spec(rule, service, changes) -> None:
    broken = build(changes)
    assert error_ids(broken) == {rule}
    accepted = build({**changes, f"services.{service}.accept": [{"id": rule, "reason": "agreed with the business"}]})
    assert error_ids(accepted) == set()
    assert "accepted" in {f.status for f in findings_of(accepted, rule)}
