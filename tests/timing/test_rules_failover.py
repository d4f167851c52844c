"""Regional failover rules (INVARIANTS.md, seed 002)."""

from __future__ import annotations

from hypothesis import example, given

from tests.timing.strategies import expect_alone, API, DELETE, FOOTBALL, build, error_ids, findings_of, only, seconds

A = f"services.{API}"
F = f"services.{FOOTBALL}"
NEGOTIATE = {"failover.mode": "negotiate", "failover.ttl_s": None, "failover.rto_s": 3600}
# api may take one of its 3 pods down: capacity stays (a warning), but a deploy now blips the LB
API_TAKES_A_POD_DOWN = {f"{A}.rollout.max_unavailable": 1}


# ---- failover-within-rto -----------------------------------------------------------------------------
@given(seconds(1, 400), seconds(0, 100))
@example(100, 10).via("slack 0: 10 × 3 + ttl 60 + reconnect 10")
@example(99, 10).via("slack -1")
def test_dns_failover_detection_ttl_and_reconnect_fit_the_rto(rto, reconnect) -> None:
    stack = build({"failover.rto_s": rto, "failover.client_reconnect_s": reconnect})
    expect_alone(stack, "failover-within-rto", 90 + reconnect > rto)


def test_a_dns_failover_slower_than_the_rto_prints_the_fix() -> None:
    stack = build({"failover.rto_s": 99})
    assert only(stack, "failover-within-rto").render() == (
        "ERROR failover-within-rto  failover: failover_time 100s (detect 30 + max(ttl, client_dns_cache) 60 + "
        "failover.client_reconnect_s 10) > rto 99s (failover.rto_s)  slack -1s → check more often, lower the TTL "
        "(and the clients' DNS cache) or the client reconnect time, or agree a longer RTO")


def test_alias_records_answer_with_the_elbs_fixed_60s_ttl() -> None:
    stack = build({"failover.alias": True, "failover.ttl_s": None, "failover.rto_s": 99})
    assert only(stack, "failover-within-rto").render() == (
        "ERROR failover-within-rto  failover: failover_time 100s (detect 30 + max(ttl, client_dns_cache) 60 + "
        "failover.client_reconnect_s 10) > rto 99s (failover.rto_s)  slack -1s → check more often, lower the TTL "
        "(and the clients' DNS cache) or the client reconnect time, or agree a longer RTO")


@given(seconds(1, 60), seconds(1, 10), seconds(1, 400))
@example(10, 3, 40).via("slack 0: poll 10 × 3 + reconnect 10")
@example(10, 3, 39).via("slack -1")
def test_negotiate_failover_has_no_dns_ttl(interval, failures, rto) -> None:
    stack = build({**NEGOTIATE, "failover.check_interval_s": interval, "failover.failure_threshold": failures,
                   "failover.failback_checks": failures, "failover.rto_s": rto})
    assert ("failover-within-rto" in error_ids(stack)) == (interval * failures + 10 > rto)
    assert only(stack, "failover-within-rto").slack_s == rto - interval * failures - 10


# ---- lb-values-in-range (Route 53) ---------------------------------------------------------------------
def test_route53_checks_every_10_or_30_seconds_only() -> None:
    # 20 s checks also lengthen the failover past the 120 s RTO; the RTO is raised to see the range alone.
    stack = build({"failover.check_interval_s": 20, "failover.rto_s": 130})
    assert error_ids(stack) == {"lb-values-in-range"}
    assert findings_of(stack, "lb-values-in-range", "failover")[0].render() == (
        "ERROR lb-values-in-range  failover: request_interval 20s (failover.check_interval_s) not in Route 53 "
        "10s or 30s → Route 53 health checks run every 10 or 30 seconds")
    assert error_ids(build({"failover.check_interval_s": 30, "failover.rto_s": 160})) == set()


@given(seconds(1, 20))
@example(10).via("slack 0")
@example(11).via("slack -1")
@example(1)
def test_route53_failure_threshold_is_one_to_ten(failures) -> None:
    stack = build({"failover.failure_threshold": failures, "failover.rto_s": 3600})
    expect_alone(stack, "lb-values-in-range", failures > 10)
    f = [f for f in findings_of(stack, "lb-values-in-range", "failover") if f.left.label == "failure_threshold"]
    assert [x.slack_s for x in f] == [min(failures - 1, 10 - failures)]


def test_a_route53_failure_threshold_above_ten_prints_the_range() -> None:
    stack = build({"failover.failure_threshold": 11, "failover.rto_s": 3600})
    [f] = [f for f in findings_of(stack, "lb-values-in-range", "failover") if f.status == "error"]
    assert f.render() == (
        "ERROR lb-values-in-range  failover: failure_threshold 11 (failover.failure_threshold) not in API range "
        "1–10  slack -1 → set failover.failure_threshold within 1–10")


def test_negotiate_mode_has_no_route53_limits() -> None:
    stack = build({**NEGOTIATE, "failover.check_interval_s": 20, "failover.failure_threshold": 11,
                   "failover.failback_checks": 11})
    assert findings_of(stack, "lb-values-in-range", "failover") == []
    assert error_ids(stack) == set()


# ---- failover-ignores-deploys ------------------------------------------------------------------------------
@given(seconds(1, 60), seconds(1, 20))
@example(5, 12).via("slack 0: (12 - 1) × 5 = 55 > 54")
@example(6, 10).via("slack -1: 54")
def test_a_deploy_blip_of_the_entry_service_must_not_flip_the_region(interval, failures) -> None:
    # api's blip: lb_detect 15 + gated admission (15 + 5 + 4 + controller poll 15) = 54
    stack = build({**NEGOTIATE, **API_TAKES_A_POD_DOWN, "failover.check_interval_s": interval,
                   "failover.failure_threshold": failures, "failover.failback_checks": failures})
    expect_alone(stack, "failover-ignores-deploys", (failures - 1) * interval <= 54)
    assert only(stack, "failover-ignores-deploys").slack_s == (failures - 1) * interval - 55


def test_a_region_flipping_on_a_deploy_prints_the_fix() -> None:
    stack = build(API_TAKES_A_POD_DOWN)
    assert only(stack, "failover-ignores-deploys").render() == (
        "ERROR failover-ignores-deploys  failover: tolerance 20s ((failover.failure_threshold 3 - 1) × "
        "failover.check_interval_s 10) ≤ deploy blip 54s (lb_detect 15 + lb_admit_new 39)  slack -35s → make the "
        "entry service's rollout keep capacity, or tolerate more failed checks")


def test_the_entry_service_may_acknowledge_a_region_flip_on_deploys() -> None:
    stack = build({**API_TAKES_A_POD_DOWN, f"{A}.accept": [{"id": "failover-ignores-deploys", "reason": "agreed"}]})
    assert error_ids(stack) == set()
    assert only(stack, "failover-ignores-deploys").status == "accepted"


def test_an_entry_service_that_keeps_capacity_never_flips_the_region() -> None:
    f = only(build({"failover.failure_threshold": 1, "failover.failback_checks": 1}), "failover-ignores-deploys")
    assert f.render() == (
        "OK failover-ignores-deploys  failover: entry service api (failover.entry_service) = rollout keeps capacity "
        "(failover.entry_service rollout)")


def test_an_ungated_entry_service_blips_for_detection_and_ungated_admission() -> None:
    stack = build({**API_TAKES_A_POD_DOWN, f"{A}.readiness_gate": DELETE, f"{A}.rollout.min_ready_s": 29})
    assert only(stack, "failover-ignores-deploys").right.value == 15 + 24


def test_an_entry_service_without_an_lb_blips_for_its_pod_ready() -> None:
    stack = build({"failover.entry_service": "football-feed", f"{F}.rollout.max_unavailable": 1})
    f = only(stack, "failover-ignores-deploys")
    assert (f.right.label, f.right.value, f.status) == ("pod_ready", 30, "error")
    assert error_ids(stack) == {"failover-ignores-deploys"}


def test_no_failover_no_failover_findings() -> None:
    stack = build({"failover": DELETE})
    assert [r for r in ("failover-within-rto", "failover-ignores-deploys", "failback-is-deliberate",
                        "lb-values-in-range") if findings_of(stack, r, "failover")] == []


# ---- failback-is-deliberate (warning) ------------------------------------------------------------------------
def test_failing_back_on_fewer_checks_than_failing_over_is_a_warning() -> None:
    stack = build({"failover.failback_checks": 2})
    assert error_ids(stack) == set()
    assert [f.render() for f in findings_of(stack, "failback-is-deliberate")] == [
        "WARNING failback-is-deliberate  failover: failback_checks 2 (failover.failback_checks) < failure_threshold "
        "3 (failover.failure_threshold)  slack -1 → wait for as many passing checks before failback as failing ones "
        "before failover",
        "OK failback-is-deliberate  failover: close secondary staggered (failover.failback_close) in deliberate "
        "never or staggered",
    ]


def test_closing_secondary_connections_at_once_is_a_warning() -> None:
    stack = build({"failover.failback_close": "immediate"})
    assert error_ids(stack) == set()
    assert findings_of(stack, "failback-is-deliberate")[1].render() == (
        "WARNING failback-is-deliberate  failover: close secondary immediate (failover.failback_close) not in "
        "deliberate never or staggered → close secondary connections in a staggered step, or let clients stay")
    assert findings_of(build({"failover.failback_close": "never"}), "failback-is-deliberate")[1].status == "ok"


def test_a_health_check_that_names_no_entry_service_judges_only_its_own_values() -> None:
    """What one Route 53 health check says (no record, no entry service) is enough for its
    ranges, and nothing for the rules that need the entry workload."""
    from lockstep.timing.context import Scene, context
    from lockstep.timing.invariants import walk
    from lockstep.timing.model import FailoverTiming

    stack = build()
    fo = FailoverTiming(mode="dns", entry_service=None, check_interval_s=10, failure_threshold=3,
                        client_reconnect_s=None, rto_s=None, failback_checks=None)
    found = walk(Scene(services=stack.services, failover=fo), context(stack), scopes=("stack",))
    assert {f.id for f in found if f.id.startswith("failover-ignores")} == set()
    assert {f.status for f in found if f.id == "lb-values-in-range"} == {"ok"}
