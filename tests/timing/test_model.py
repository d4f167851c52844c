"""Model constraints: API ranges, shapes and documented defaults, each rejected value named by
its path before any rule runs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.timing.strategies import DELETE, base, build, edit
from lockstep.timing import limits as L
from lockstep.timing.conventions import prestop_action
from lockstep.timing.invariants import InvariantErrors, validate
from lockstep.timing.model import HealthCheck, Shutdown, Stack, fill_lb_defaults


def rejected(changes: dict) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(edit(base(), changes), context={"skip_invariants": True})
    return [(".".join(str(p) for p in e["loc"]), e["msg"]) for e in err.value.errors()]


# ---- ranges ----------------------------------------------------------------------------------------
RANGED = [
    ("services.0.lb.health_check.interval_s", L.HC_INTERVAL),
    ("services.0.lb.health_check.healthy_threshold", L.HC_THRESHOLD),
    ("services.0.lb.deregistration_delay_s", L.DEREGISTRATION_DELAY),
    ("services.0.lb.deregistration_propagation_s", L.PROPAGATION),
    ("services.0.probes.liveness.period_s", L.PROBE_PERIOD),
    ("services.0.probes.liveness.failure_threshold", L.PROBE_THRESHOLD),
    ("services.0.probes.liveness.initial_delay_s", L.PROBE_INITIAL_DELAY),
    ("services.0.shutdown.grace_s", L.GRACE),
    ("services.0.shutdown.drain_s", L.SECONDS),
    ("services.1.replicas", L.REPLICAS),
    ("services.1.rollout.progress_deadline_s", L.PROGRESS_DEADLINE),
    ("services.0.container_port", L.PORT),
    ("failover.ttl_s", L.DNS_TTL),
]


@pytest.mark.parametrize(("path", "r"), RANGED)
def test_both_ends_of_an_api_range_are_accepted(path, r) -> None:
    for value in (r.lo, r.hi):
        node = build({path: value})
        for part in path.split("."):
            node = node[int(part)] if part.isdigit() else getattr(node, part)
        assert node == value


@pytest.mark.parametrize(("path", "r"), RANGED)
def test_one_past_either_end_of_an_api_range_is_rejected_with_its_path(path, r) -> None:
    assert rejected({path: r.lo - 1}) == [(path, f"Input should be greater than or equal to {r.lo}")]
    assert rejected({path: r.hi + 1}) == [(path, f"Input should be less than or equal to {r.hi}")]


@pytest.mark.parametrize("value", ["5", 5.0, True])
def test_numbers_are_strict_integers(value) -> None:
    assert rejected({"services.0.shutdown.drain_s": value})[0][0] == "services.0.shutdown.drain_s"


def test_unknown_keys_are_rejected_with_their_path() -> None:
    assert rejected({"services.0.shutdown.drain": 5}) == [("services.0.shutdown.drain",
                                                          "Extra inputs are not permitted")]


@pytest.mark.parametrize(("changes", "path"), [
    ({"services.0.name": "API"}, "services.0.name"),
    ({"services.0.name": "-api"}, "services.0.name"),
    ({"kubernetes_version": "1.3.0"}, "kubernetes_version"),
    ({"services.1.rollout.max_surge": "101%"}, "services.1.rollout.max_surge"),
    ({"services.0.accept": [{"id": "Drain", "reason": "why"}]}, "services.0.accept.0.id"),
])
def test_names_versions_and_percentages_follow_their_patterns(changes, path) -> None:
    assert any(loc.startswith(path) for loc, _ in rejected(changes))


# ---- shapes ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("changes", "path", "message"), [
    ({"services.1.probes.readiness.tcp_socket": {"port": 1}}, "services.1.probes.readiness",
     "Value error, a probe needs exactly one handler: http_get, tcp_socket, exec or grpc"),
    ({"services.0.probes.startup.success_threshold": 2}, "services.0.probes",
     "Value error, startup.success_threshold must be 1 (Kubernetes API rule)"),
    ({"services.0.probes.liveness.success_threshold": 2}, "services.0.probes",
     "Value error, liveness.success_threshold must be 1 (Kubernetes API rule)"),
    ({"services.1.pdb": {}}, "services.1.pdb", "Value error, set exactly one of min_available or max_unavailable"),
    ({"services.1.pdb.max_unavailable": 1}, "services.1.pdb",
     "Value error, set exactly one of min_available or max_unavailable"),
    ({"services.0.hpa.max_replicas": 2}, "services.0.hpa", "Value error, max_replicas must be >= min_replicas"),
    ({"services.1.replicas": None}, "services.1",
     "Value error, replicas is required unless an hpa owns the replica count"),
    ({"heartbeat.lease_renew_deadline_s": 15}, "heartbeat",
     "Value error, lease_duration_s > lease_renew_deadline_s > lease_retry_period_s required"),
    ({"failover.ttl_s": None}, "failover", "Value error, dns mode without alias records needs ttl_s"),
    ({"failover.alias": True, "failover.ttl_s": 30}, "failover",
     "Value error, alias records have a fixed 60s TTL: leave ttl_s unset"),
    ({"failover.regions.1.role": "primary"}, "failover",
     "Value error, failover routing needs exactly one primary and one secondary region"),
    ({"services.0.lb.removal": []}, "services.0.lb.removal", "Tuple should have at least 1 item after validation, not 0"),
])
def test_impossible_shapes_are_rejected_with_their_path(changes, path, message) -> None:
    assert rejected(changes) == [(path, message)]


def test_alias_records_may_state_the_fixed_ttl_and_weighted_routing_needs_no_roles() -> None:
    assert build({"failover.alias": True, "failover.ttl_s": 60}).failover.ttl_s == 60
    assert build({"failover.routing": "weighted", "failover.regions.1.role": "primary"}).failover.routing == "weighted"


def test_an_hpa_may_own_the_replica_count() -> None:
    assert build().services[0].replicas is None


# ---- documented defaults ---------------------------------------------------------------------------
def test_propagation_defaults_follow_the_lb_kind() -> None:
    assert {k: v for k, v in fill_lb_defaults({"kind": "alb"}).items() if "propagation" in k} == {
        "deregistration_propagation_s": 15, "registration_propagation_s": 15}
    assert {k: v for k, v in fill_lb_defaults({"kind": "nlb"}).items() if "propagation" in k} == {
        "deregistration_propagation_s": 120, "registration_propagation_s": 120}
    assert fill_lb_defaults({"kind": "nlb", "registration_propagation_s": 3})["registration_propagation_s"] == 3


@pytest.mark.parametrize(("data", "removal"), [
    ({"target_type": "ip"}, ("deregistration",)),
    ({"target_type": "instance"}, ("endpoints",)),
    ({"target_type": "ip", "removal": ["health_check"]}, ["health_check"]),
    ({"target_type": "lambda"}, None),
    ({}, None),
])
def test_the_removal_path_follows_the_target_type_unless_stated(data, removal) -> None:
    assert fill_lb_defaults({"kind": "alb", **data}).get("removal") == removal


@pytest.mark.parametrize(("kind", "protocol", "idle"), [
    ("nlb", "TCP", 350), ("nlb", "TLS", 350), ("nlb", "HTTP", None), ("alb", "TCP", None), ("alb", "HTTP", None),
])
def test_an_nlb_tcp_listener_has_the_fixed_idle_timeout(kind, protocol, idle) -> None:
    assert fill_lb_defaults({"kind": kind, "protocol": protocol}).get("idle_timeout_s") == idle
    assert fill_lb_defaults({"kind": kind, "protocol": protocol, "idle_timeout_s": 9})["idle_timeout_s"] == 9


def test_filling_defaults_leaves_the_input_alone() -> None:
    data = {"kind": "nlb", "target_type": "ip", "protocol": "TCP"}
    out = fill_lb_defaults(data)
    assert data == {"kind": "nlb", "target_type": "ip", "protocol": "TCP"}
    assert out == {**data, "deregistration_propagation_s": 120, "registration_propagation_s": 120,
                   "removal": ("deregistration",), "idle_timeout_s": 350}


def test_an_unknown_kind_gets_no_defaults() -> None:
    assert fill_lb_defaults({"kind": "gwlb", "protocol": "TCP"}) == {"kind": "gwlb", "protocol": "TCP"}


def test_the_model_fills_the_documented_defaults() -> None:
    nlb = build().services[2].lb
    assert (nlb.deregistration_propagation_s, nlb.registration_propagation_s, nlb.removal, nlb.idle_timeout_s) == (
        120, 120, ("endpoints",), 350)
    hc = HealthCheck(protocol="TCP", interval_s=10, timeout_s=10, healthy_threshold=3, unhealthy_threshold=3)
    assert hc.port == "traffic-port"


# ---- the preStop handler that carries the drain -----------------------------------------------------
@pytest.mark.parametrize(("prestop", "drain", "version", "action"), [
    (None, 20, "1.30", "sleep"), (None, 20, "1.31", "sleep"), (None, 20, "1.29", "exec"),
    (None, 0, "1.30", "none"), (None, 0, "1.29", "none"), ("exec", 20, "1.30", "exec"),
    ("sleep", 20, "1.29", "sleep"), ("none", 20, "1.30", "none"),
    ("exec", 0, "1.30", "none"),  # a zero drain needs no hook: `exec sleep 0` would only add a failure mode
])
def test_the_drain_uses_the_native_sleep_action_where_the_cluster_has_it(prestop, drain, version, action) -> None:
    sd = Shutdown(drain_s=drain, finish_s=1, grace_s=60, prestop=prestop)
    assert prestop_action(sd, version) == action


def test_a_stack_passes_validation_only_with_its_invariants() -> None:
    values = edit(base(), {"services.0.shutdown.drain_s": 19})
    with pytest.raises(InvariantErrors, match="drain-covers-lb-detection"):
        validate(values)
    # the model holds types only: validating it runs no rule
    assert Stack.model_validate(values).services[0].shutdown.drain_s == 19
    assert validate(edit(base(), {})).services[0].shutdown.drain_s == 20
    assert Stack.model_validate(edit(base(), {"watchdog": DELETE})).watchdog is None


def test_a_stack_config_must_state_the_outage_budget_and_the_heartbeats_warm_up() -> None:
    """null is 'unknown' only where resources are read; a stack config states its own numbers."""
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(edit(base(), {"heartbeat_specs.0.max_outage_s": None, "heartbeat.warmup_s": None}))
    (error,) = err.value.errors()
    assert error["msg"] == ("Value error, heartbeat_specs.0.max_outage_s: required (the agreed outage budget); "
                            "heartbeat.warmup_s: required (start to first successful readiness check)")
