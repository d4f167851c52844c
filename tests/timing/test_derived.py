"""Each derived time against its formula in INVARIANTS.md ("Derived times")."""

from __future__ import annotations

from types import SimpleNamespace

from dataclasses import replace

import pytest
from hypothesis import given

from tests.timing.strategies import API, BASKETBALL, DELETE, FOOTBALL, build, seconds
from lockstep.timing import derived as d
from lockstep.timing.findings import Term
from lockstep.timing.model import Probe


def at(value: object) -> SimpleNamespace:
    """A model object holding one number as `v`, for the field helpers."""
    return SimpleNamespace(v=value)

A = f"services.{API}"
F = f"services.{FOOTBALL}"
B = f"services.{BASKETBALL}"


def shown(t: Term) -> Term:
    """A term as printed and judged; its fields are pinned by the tests at the end."""
    return replace(t, fields=())


def svc(i: int, changes: dict | None = None):
    return build(changes).services[i]


# ---- building blocks --------------------------------------------------------------------------
def test_a_known_field_is_a_term_with_its_source() -> None:
    assert shown(d.field("drain", at(5), "v", "shutdown.drain_s")) == Term("drain", 5, "shutdown.drain_s", (), "s")
    assert shown(d.field("n", at(3), "v", "replicas", "")) == Term("n", 3, "replicas", (), "")


def test_an_unknown_field_counts_as_zero_and_is_remembered() -> None:
    assert shown(d.field("finish", at(None), "v", "shutdown.finish_s")) == Term("finish", 0, "shutdown.finish_s",
                                                               ("shutdown.finish_s",), "s")
    assert shown(d.field("n", at(None), "v", "replicas", "")) == Term("n", 0, "replicas", ("replicas",), "")


def test_a_part_of_a_sum_is_named_by_its_field_path() -> None:
    assert shown(d.source_field("app.warmup_s", at(9), "v")) == Term("app.warmup_s", 9, "app.warmup_s", (), "s")
    assert shown(d.source_field("app.warmup_s", at(None), "v")) == Term("app.warmup_s", 0, "app.warmup_s", ("app.warmup_s",))


def test_a_total_sums_its_parts_and_shows_each_with_its_number_a_part_with_unknowns_as_its_bound() -> None:
    t = d.total("stop", d.field("drain", at(20), "v", "shutdown.drain_s"), d.field("finish", at(None), "v", "shutdown.finish_s"),
                Term("ready", 7, "a 3 + b 4", ("b",)))
    assert shown(t) == Term("stop", 27, "shutdown.drain_s 20 + shutdown.finish_s ? + ready ≥7",
                     ("shutdown.finish_s", "b"))


def test_a_product_multiplies_and_shows_both_factors() -> None:
    t = d.product("detect", d.field("i", at(5), "v", "lb.interval_s"), d.field("n", at(None), "v", "lb.threshold", ""))
    assert shown(t) == Term("detect", 0, "lb.interval_s 5 × lb.threshold ?", ("lb.threshold",))


@given(seconds(0, 10000), seconds(1, 10000))
def test_ceil_div_rounds_up(a, b) -> None:
    assert d.ceil_div(a, b) == -(-a // b) == (a + b - 1) // b


@pytest.mark.parametrize(("value", "n", "up", "pods"), [
    (3, 10, True, 3), (3, 10, False, 3), ("25%", 10, True, 3), ("25%", 10, False, 2), ("25%", 4, True, 1),
    ("25%", 4, False, 1), ("0%", 7, True, 0), ("100%", 7, False, 7), ("1%", 1, True, 1), ("1%", 1, False, 0),
    ("50%", 3, True, 2), ("50%", 3, False, 1), ("1%", 101, True, 2), ("1%", 101, False, 1), ("99%", 100, True, 99),
])
def test_percentages_resolve_against_replicas_as_kubernetes_rounds(value, n, up, pods) -> None:
    assert d.scaled(value, n, round_up=up) == pods


def test_an_hpa_floor_is_the_replica_count_the_capacity_rules_judge() -> None:
    assert d.replicas(svc(API)) == 3
    assert d.replicas(svc(FOOTBALL)) == 2
    assert d.replicas(svc(API, {f"{A}.replicas": 7})) == 3


def test_surge_rounds_up_and_unavailable_down_statefulsets_replace_one_at_a_time() -> None:
    s = svc(FOOTBALL, {f"{F}.replicas": 10, f"{F}.rollout.max_surge": "25%", f"{F}.rollout.max_unavailable": "25%"})
    assert (d.surge_pods(s), d.unavailable_pods(s)) == (3, 2)
    assert d.unavailable_pods(svc(BASKETBALL, {f"{B}.rollout.max_unavailable": 2})) == 1


# ---- load balancer ------------------------------------------------------------------------------
def test_health_check_detection_is_interval_times_unhealthy_threshold() -> None:
    lb = svc(API, {f"{A}.lb.health_check.interval_s": 30}).lb
    assert shown(d.detection(lb)) == Term("health_check", 60, "lb.health_check.interval_s 30 × "
                                   "lb.health_check.unhealthy_threshold 2", ())


def test_each_removal_path_has_its_own_time() -> None:
    lb = svc(API, {f"{A}.lb.removal": ["deregistration", "endpoints", "health_check"],
                   f"{A}.lb.endpoint_propagation_s": 7}).lb
    assert [shown(t) for t in d.removal_paths(lb)] == [
        Term("deregistration", 15, "lb.deregistration_propagation_s"),
        Term("endpoints", 7, "lb.endpoint_propagation_s"),
        Term("health_check", 10, "lb.health_check.interval_s 5 × lb.health_check.unhealthy_threshold 2"),
    ]


@pytest.mark.parametrize(("removal", "value", "source"), [
    (["deregistration"], 15, "deregistration: lb.deregistration_propagation_s"),
    (["endpoints"], 12, "endpoints: lb.endpoint_propagation_s"),
    (["health_check"], 10, "health_check: lb.health_check.interval_s 5 × lb.health_check.unhealthy_threshold 2"),
    (["deregistration", "endpoints"], 12, "endpoints: lb.endpoint_propagation_s"),
    (["health_check", "deregistration", "endpoints"], 10,
     "health_check: lb.health_check.interval_s 5 × lb.health_check.unhealthy_threshold 2"),
])
def test_lb_detect_is_the_fastest_removal_path(removal, value, source) -> None:
    lb = svc(API, {f"{A}.lb.removal": removal, f"{A}.lb.endpoint_propagation_s": 12}).lb
    assert shown(d.lb_detect(lb)) == Term("lb_detect", value, source, ())


def test_lb_detect_carries_an_unknown_removal_time() -> None:
    lb = svc(API).lb.model_copy(update={"deregistration_propagation_s": None})  # as an extractor may leave it
    assert shown(d.lb_detect(lb)) == Term("lb_detect", 0, "deregistration: lb.deregistration_propagation_s",
                                   ("lb.deregistration_propagation_s",))


def test_lb_admit_new_is_registration_plus_one_check_plus_the_controller_poll_when_gated() -> None:
    lb = svc(API).lb
    assert shown(d.lb_admit_new(lb, gated=False)) == Term(
        "lb_admit_new", 24, "lb.registration_propagation_s 15 + lb.health_check.interval_s 5 + "
        "lb.health_check.timeout_s 4", ())
    assert shown(d.lb_admit_new(lb, gated=True)) == Term(
        "lb_admit_new", 39, "lb.registration_propagation_s 15 + lb.health_check.interval_s 5 + "
        "lb.health_check.timeout_s 4 + controller poll 15", ())


def test_lb_recover_is_interval_times_healthy_threshold() -> None:
    assert shown(d.lb_recover(svc(BASKETBALL).lb)) == Term(
        "lb_recover", 30, "lb.health_check.interval_s 10 × lb.health_check.healthy_threshold 3", ())


# ---- pod lifecycle -----------------------------------------------------------------------------------
def test_drain_finish_and_stop() -> None:
    s = svc(API)
    assert shown(d.drain(s)) == Term("drain", 20, "shutdown.drain_s")
    assert shown(d.finish(s)) == Term("finish", 30, "shutdown.finish_s")
    assert shown(d.stop(s)) == Term("stop", 50, "shutdown.drain_s 20 + shutdown.finish_s 30", ())


@pytest.mark.parametrize(("budget", "value", "source"), [
    (None, 60, "shutdown.grace_s"), (59, 59, "shutdown.node_termination_budget_s"), (60, 60, "shutdown.grace_s"),
    (61, 60, "shutdown.grace_s"), (0, 0, "shutdown.node_termination_budget_s"),
])
def test_grace_is_the_grace_period_capped_by_a_node_termination_budget(budget, value, source) -> None:
    assert shown(d.grace(svc(API, {f"{A}.shutdown.node_termination_budget_s": budget}))) == Term("grace", value, source)


def test_tolerance_is_initial_delay_plus_failures_minus_one_periods() -> None:
    p = Probe(exec={"command": ["x"]}, initial_delay_s=7, period_s=4, failure_threshold=3)
    assert shown(d.tolerance(p, "probes.x")) == Term(
        "tolerance", 15, "probes.x.initial_delay_s 7 + (probes.x.failure_threshold 3 - 1) × probes.x.period_s 4")


def test_startup_tolerance_uses_the_startup_probe_else_liveness_else_none() -> None:
    assert shown(d.startup_tolerance(svc(API))) == Term(
        "startup_tolerance", 25, "probes.startup.initial_delay_s 0 + (probes.startup.failure_threshold 6 - 1) × "
        "probes.startup.period_s 5")
    assert shown(d.startup_tolerance(svc(FOOTBALL))) == Term(
        "startup_tolerance", 50, "probes.liveness.initial_delay_s 30 + (probes.liveness.failure_threshold 3 - 1) × "
        "probes.liveness.period_s 10")
    assert d.startup_tolerance(svc(FOOTBALL, {f"{F}.probes.liveness": DELETE})) is None


def test_unready_after_is_detection_and_kill_tolerance_is_tolerance() -> None:
    s = svc(API)
    assert shown(d.unready_after(s.probes.readiness)) == Term(
        "unready_after", 10, "probes.readiness.period_s 5 × probes.readiness.failure_threshold 2")
    assert shown(d.kill_tolerance(s.probes.liveness)) == Term(
        "kill_tolerance", 20, "(probes.liveness.failure_threshold 3 - 1) × probes.liveness.period_s 10")


def test_pod_ready_is_warmup_plus_readiness_successes_plus_min_ready_plus_gated_admission() -> None:
    assert shown(d.pod_ready(svc(API))) == Term(
        "pod_ready", 59, "started 15 + readiness 5 + rollout.min_ready_s 0 + lb_admit_new 39", ())
    assert shown(d.pod_ready(svc(FOOTBALL, {f"{F}.probes.readiness.success_threshold": 3}))) == Term(
        "pod_ready", 40, "app.warmup_s 20 + readiness 15 + rollout.min_ready_s 5", ())
    assert shown(d.pod_ready(svc(FOOTBALL, {f"{F}.probes.readiness": DELETE}))) == Term(
        "pod_ready", 25, "app.warmup_s 20 + rollout.min_ready_s 5", ())
    assert d.pod_ready(svc(API, {f"{A}.readiness_gate": DELETE})).value == 20
    unknown = d.pod_ready(svc(FOOTBALL, {f"{F}.app.warmup_s": None}))
    assert (unknown.value, unknown.unknown) == (10, ("app.warmup_s",))


def test_without_startup_probe_or_readiness_delay_a_pod_starts_after_its_warmup() -> None:
    assert shown(d.started(svc(FOOTBALL))) == Term("app.warmup_s", 20, "app.warmup_s", ())


def test_a_startup_probe_catches_the_warmup_at_most_one_period_late() -> None:
    assert shown(d.started(svc(API))) == Term(
        "started", 15, "max(app.warmup_s 10, probes.startup.initial_delay_s 0) + probes.startup.period_s 5", ())
    late = svc(API, {f"{A}.probes.startup.initial_delay_s": 30})
    assert d.started(late).value == 35


def test_readiness_is_not_probed_before_its_initial_delay() -> None:
    assert shown(d.started(svc(API, {f"{A}.probes.readiness.initial_delay_s": 40}))) == Term(
        "started", 40, "max(max(app.warmup_s 10, probes.startup.initial_delay_s 0) + probes.startup.period_s 5, "
        "probes.readiness.initial_delay_s 40)", ())
    assert shown(d.started(svc(FOOTBALL, {f"{F}.probes.readiness.initial_delay_s": 1}))) == Term(
        "started", 20, "max(app.warmup_s 20, probes.readiness.initial_delay_s 1)", ())
    assert d.pod_ready(svc(FOOTBALL, {f"{F}.probes.readiness.initial_delay_s": 320})).value == 330


def test_an_unknown_warmup_stays_unknown_behind_the_startup_probe() -> None:
    started = d.started(svc(API, {f"{A}.app.warmup_s": None}))
    assert (started.value, started.unknown) == (5, ("app.warmup_s",))
    assert started.source == ("max(app.warmup_s ?, probes.startup.initial_delay_s 0) + "
                              "probes.startup.period_s 5")


def test_a_heartbeat_service_is_ready_after_its_warmup_readiness_and_min_ready() -> None:
    hb = build({"heartbeat.min_ready_s": 3}).heartbeat
    assert shown(d.pod_ready(hb)) == Term("pod_ready", 13, "warmup_s 5 + readiness 5 + min_ready_s 3", ())


def test_a_deployment_replacement_costs_pod_ready_and_a_statefulset_stop_schedule_and_pod_ready() -> None:
    assert shown(d.replace_time(svc(FOOTBALL))) == Term(
        "replace_time", 30, "app.warmup_s 20 + readiness 5 + rollout.min_ready_s 5", ())
    assert shown(d.replace_time(svc(BASKETBALL, {f"{B}.schedule_s": 12}))) == Term(
        "replace_time", 82, "stop 40 + schedule_s 12 + pod_ready 30", ())
    assert d.replace_time(svc(FOOTBALL, {f"{F}.app.warmup_s": None})).unknown == ("app.warmup_s",)


def test_a_deployment_rollout_takes_waves_of_pod_ready_plus_one_stop() -> None:
    s = svc(FOOTBALL, {f"{F}.replicas": 5, f"{F}.rollout.max_surge": 2})
    assert shown(d.rollout_time(s)) == Term("rollout_time", 3 * 30 + 20,
                                     "ceil(replicas 5 / 2 per wave) × pod_ready 30 + stop 20", ())
    wide = svc(FOOTBALL, {f"{F}.replicas": 5, f"{F}.rollout.max_surge": 1, f"{F}.rollout.max_unavailable": 3})
    assert d.rollout_time(wide).value == 2 * 30 + 20
    unknown = svc(FOOTBALL, {f"{F}.shutdown.finish_s": None, f"{F}.app.max_request_s": None,
                             f"{F}.app.warmup_s": None})
    assert d.rollout_time(unknown).unknown == ("app.warmup_s", "shutdown.finish_s")


def test_a_deployment_rollout_with_neither_surge_nor_unavailable_still_counts_one_pod_per_wave() -> None:
    s = svc(FOOTBALL, {f"{F}.replicas": 3, f"{F}.rollout.max_surge": 0})
    assert d.rollout_time(s).value == 3 * 30 + 20


def test_a_statefulset_rollout_replaces_every_pod_in_turn() -> None:
    assert shown(d.rollout_time(svc(BASKETBALL))) == Term("rollout_time", 3 * 80, "replicas 3 × replace_time 80", ())
    unknown = svc(BASKETBALL, {f"{B}.app.warmup_s": None})
    assert d.rollout_time(unknown).unknown == ("app.warmup_s",)


# ---- failover -------------------------------------------------------------------------------------------
def test_failover_time_in_dns_mode_is_detection_plus_the_longer_of_ttl_and_cache_plus_reconnect() -> None:
    fo = build().failover
    assert shown(d.failover_ttl(fo)) == Term("ttl", 60, "failover.ttl_s")
    assert shown(d.stale_for(fo)) == Term("max(ttl, client_dns_cache)", 60,
                                          "max(failover.ttl_s 60, failover.client_dns_cache_s 30)", ())
    assert shown(d.failover_time(fo)) == Term(
        "failover_time", 100, "detect 30 + max(ttl, client_dns_cache) 60 + failover.client_reconnect_s 10", ())
    longer = build({"failover.client_dns_cache_s": 90}).failover
    assert (d.stale_for(longer).value, d.failover_time(longer).value) == (90, 130)
    unknown = build({"failover.client_dns_cache_s": None}).failover
    assert shown(d.stale_for(unknown)) == Term("max(ttl, client_dns_cache)", 60,
                                               "max(failover.ttl_s 60, failover.client_dns_cache_s ?)",
                                               ("failover.client_dns_cache_s",))


def test_alias_records_have_the_fixed_60s_ttl() -> None:
    fo = build({"failover.alias": True, "failover.ttl_s": None}).failover
    assert shown(d.failover_ttl(fo)) == Term("ttl", 60, "alias record: fixed")


def test_failover_time_in_negotiate_mode_is_polling_plus_reconnect() -> None:
    fo = build({"failover.mode": "negotiate", "failover.check_interval_s": 7, "failover.ttl_s": None}).failover
    assert shown(d.failover_time(fo)) == Term("failover_time", 31, "detect 21 + failover.client_reconnect_s 10", ())


def test_failover_tolerance_is_failures_minus_one_intervals() -> None:
    fo = build({"failover.failure_threshold": 4}).failover
    assert shown(d.failover_tolerance(fo)) == Term(
        "tolerance", 30, "(failover.failure_threshold 4 - 1) × failover.check_interval_s 10")


# ---- the model fields each derived time carries (locating a finding reads them) ----------------
STARTUP = ("probes.startup.initial_delay_s", "probes.startup.period_s")
READY = ("probes.readiness.period_s", "probes.readiness.success_threshold")
ADMIT = ("lb.registration_propagation_s", "lb.health_check.interval_s", "lb.health_check.timeout_s")
STOP = ("shutdown.drain_s", "shutdown.finish_s")


def test_each_derived_time_carries_every_field_it_reads_in_order() -> None:
    stack = build()
    api, feed, basket = (stack.services[i] for i in (API, FOOTBALL, BASKETBALL))
    assert d.started(api).fields == ("app.warmup_s", *STARTUP)
    assert d.started(feed).fields == ("app.warmup_s",)
    assert d.pod_ready(api).fields == ("app.warmup_s", *STARTUP, *READY, "rollout.min_ready_s", *ADMIT)
    assert d.replace_time(api).fields == d.pod_ready(api).fields
    assert d.replace_time(basket).fields == (*STOP, "schedule_s", "app.warmup_s", *STARTUP, *READY,
                                             "rollout.min_ready_s")
    assert d.rollout_time(api).fields == ("hpa.min_replicas", *d.pod_ready(api).fields, *STOP)
    assert d.rollout_time(feed).fields == ("replicas", *d.pod_ready(feed).fields, *STOP)
    assert d.rollout_time(basket).fields == ("replicas", *d.replace_time(basket).fields)
    assert d.startup_tolerance(api).fields == ("probes.startup.initial_delay_s", "probes.startup.failure_threshold",
                                               "probes.startup.period_s")
    assert d.startup_tolerance(feed).fields == ("probes.liveness.initial_delay_s",
                                                "probes.liveness.failure_threshold", "probes.liveness.period_s")
    assert d.lb_detect(api.lb).fields == ("lb.deregistration_propagation_s",)
    assert d.lb_detect(basket.lb).fields == ("lb.endpoint_propagation_s",)
    assert d.lb_admit_new(api.lb, gated=True).fields == ADMIT
    assert d.unready_after(api.probes.readiness).fields == ("probes.readiness.period_s",
                                                           "probes.readiness.failure_threshold")
    assert d.kill_tolerance(api.probes.liveness).fields == ("probes.liveness.failure_threshold",
                                                           "probes.liveness.period_s")
    assert d.pod_ready(stack.heartbeat).fields == ("warmup_s", *READY, "min_ready_s")
    assert d.failover_time(stack.failover).fields == ("failover.check_interval_s", "failover.failure_threshold",
                                                      "failover.ttl_s", "failover.client_dns_cache_s",
                                                      "failover.client_reconnect_s")
    assert d.failover_tolerance(stack.failover).fields == ("failover.failure_threshold",
                                                           "failover.check_interval_s")


def test_a_readiness_initial_delay_is_a_field_of_the_start() -> None:
    feed = svc(FOOTBALL, {f"{F}.probes.readiness.initial_delay_s": 30})
    assert d.started(feed).fields == ("app.warmup_s", "probes.readiness.initial_delay_s")


def test_a_field_total_and_product_carry_their_parts_fields_once() -> None:
    a, b = d.field("a", at(1), "v", "lb.a"), d.field("b", at(None), "v", "lb.b")
    assert a.fields == ("lb.a",) and b.fields == ("lb.b",)
    assert d.total("t", a, b, a).fields == ("lb.a", "lb.b")
    assert d.product("p", b, a).fields == ("lb.b", "lb.a")
