"""Timelines are the derived times laid out in order: pinned exactly on the example stack."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing.config import read_stack_file
from lockstep.timing.timeline import (
    Span,
    Timeline,
    derived_times,
    drain_timeline,
    failover_timeline,
    failure_timeline,
    path_timelines,
    proxy_timelines,
    recovery_timeline,
    render_mermaid,
    render_text,
    rollout_timeline,
    stack_timelines,
)


@pytest.fixture(scope="module")
def stack():
    return read_stack_file(None)


def svc(stack, name):
    return next(s for s in stack.services if s.name == name)


def spec(stack, name):
    return next(s for s in stack.heartbeat_specs if s.name == name)


def test_drain_handshake_orders_lb_detection_before_the_server_stops_listening(stack):
    tl = drain_timeline(svc(stack, "api"))
    assert tl.title == "api: drain handshake"
    assert tl.spans == (
        Span(0, 20, "serving while leaving (drain)", "shutdown.drain_s"),
        Span(0, 15, "LB still sends new requests", "deregistration: lb.deregistration_propagation_s"),
        Span(20, 20, "server stops listening"),
        Span(20, 50, "finishing in-flight work", "shutdown.finish_s"),
        Span(50, 50, "process exits"),
        Span(60, 60, "kill (grace ends)", "shutdown.grace_s"),
    )
    assert tl.end_s == 60


def test_drain_of_a_service_without_load_balancer_has_no_lb_span(stack):
    tl = drain_timeline(svc(stack, "football-feed"))
    assert [s.label for s in tl.spans] == [
        "serving while leaving (drain)", "server stops listening", "finishing in-flight work",
        "process exits", "kill (grace ends)"]
    assert tl.spans[-1] == Span(30, 30, "kill (grace ends)", "shutdown.grace_s")


def test_node_termination_budget_moves_the_kill_forward(stack):
    api = svc(stack, "api")
    capped = api.model_copy(update={"shutdown": api.shutdown.model_copy(
        update={"node_termination_budget_s": 55})})
    assert drain_timeline(capped).spans[-1] == Span(55, 55, "kill (grace ends)",
                                                    "shutdown.node_termination_budget_s")


def test_deployment_rollout_runs_one_wave_per_surge_then_drains_the_last_old_pods(stack):
    tl = rollout_timeline(svc(stack, "api"))
    assert tl.title == "api: rolling deploy"
    assert tl.spans == (
        Span(0, 59, "wave 1: up to 1 new pods ready"),
        Span(59, 118, "wave 2: up to 1 new pods ready"),
        Span(118, 177, "wave 3: up to 1 new pods ready"),
        Span(177, 227, "last old pods drain and stop"),
        Span(227, 227, "rollout complete",
             "ceil(replicas 3 / 1 per wave) × pod_ready 59 + stop 50"),
    )


def test_surge_of_two_halves_the_waves(stack):
    api = svc(stack, "api")
    wide = api.model_copy(update={"rollout": api.rollout.model_copy(update={"max_surge": 2})})
    labels = [s.label for s in rollout_timeline(wide).spans]
    assert labels[:2] == ["wave 1: up to 2 new pods ready", "wave 2: up to 2 new pods ready"]
    assert rollout_timeline(wide).spans[2] == Span(118, 168, "last old pods drain and stop")


def test_statefulset_rollout_replaces_from_the_highest_ordinal_one_at_a_time(stack):
    tl = rollout_timeline(svc(stack, "basketball-feed"))
    assert tl.spans == (
        Span(0, 80, "replace basketball-feed-2"),
        Span(80, 160, "replace basketball-feed-1"),
        Span(160, 240, "replace basketball-feed-0"),
        Span(240, 240, "rollout complete", "replicas 3 × replace_time 80"),
    )


def test_failure_blocks_the_scope_after_loss_time_plus_one_observation(stack):
    tl = failure_timeline(spec(stack, "football-live"), svc(stack, "football-feed"), stack.heartbeat)
    assert tl.title == "football-live (football-feed): failure to block"
    assert tl.spans == (
        Span(0, 5, "first observation sees the failure", "heartbeat.observe_interval_s"),
        Span(0, 125, "unhealthy for loss_time (+ one observation)", "loss_time_s"),
        Span(125, 125, "block command confirmed for football-live"),
        Span(125, 130, "next beat reports the scope blocked", "heartbeat.publish_interval_s"),
        Span(300, 300, "outage budget ends", "max_outage_s"),
    )


def test_recovery_waits_for_the_load_balancer_and_recovery_time(stack):
    tl = recovery_timeline(spec(stack, "basketball-live"), svc(stack, "basketball-feed"), stack.heartbeat)
    assert tl.spans == (
        Span(0, 30, "LB routes to the service again",
             "lb.health_check.interval_s 10 × lb.health_check.healthy_threshold 3"),
        Span(0, 65, "healthy for recovery_time (+ one observation)", "recovery_time_s"),
        Span(65, 65, "unblock command for basketball-live"),
    )
    no_lb = recovery_timeline(spec(stack, "football-live"), svc(stack, "football-feed"), stack.heartbeat)
    assert no_lb.title == "football-live (football-feed): recovery to unblock"
    assert len(no_lb.spans) == 2


def test_dns_failover_waits_for_detection_ttl_and_reconnect(stack):
    tl = failover_timeline(stack.failover)
    assert tl.title == "failover (dns): region loss to clients served"
    assert tl.spans == (
        Span(0, 30, "health checks fail (interval × failures)", "failover.check_interval_s"),
        Span(30, 90, "resolvers and clients keep the old answer (TTL, or the clients' DNS cache when longer)",
             "max(failover.ttl_s 60, failover.client_dns_cache_s 30)"),
        Span(90, 100, "clients reconnect", "failover.client_reconnect_s"),
        Span(100, 100, "clients served by the other region",
             "detect 30 + max(ttl, client_dns_cache) 60 + failover.client_reconnect_s 10"),
        Span(120, 120, "recovery time objective", "failover.rto_s"),
    )


def test_negotiate_failover_has_no_dns_ttl(stack):
    fo = stack.failover.model_copy(update={"mode": "negotiate"})
    tl = failover_timeline(fo)
    assert tl.spans[1] == Span(30, 30, "negotiate returns the secondary endpoint")
    assert tl.spans[2] == Span(30, 40, "clients reconnect", "failover.client_reconnect_s")
    assert tl.spans[3].start_s == 40


def test_alias_records_use_the_fixed_sixty_second_ttl(stack):
    fo = stack.failover.model_copy(update={"alias": True, "ttl_s": None})
    assert failover_timeline(fo).spans[1] == Span(
        30, 90, "resolvers and clients keep the old answer (TTL, or the clients' DNS cache when longer)",
        "max(ttl 60, failover.client_dns_cache_s 30)")


def test_stack_timelines_cover_every_service_spec_and_the_failover(stack):
    titles = [t.title for t in stack_timelines(stack)]
    assert titles == [
        "api: drain handshake", "api: idle connections along the path", "api: one request along the path",
        "api: rolling deploy",
        "football-feed: drain handshake", "football-feed: rolling deploy",
        "basketball-feed: drain handshake", "basketball-feed: rolling deploy",
        "odds-stream: drain handshake", "odds-stream: rolling deploy",
        "web: drain handshake", "web: idle connections along the path", "web: one request along the path",
        "web: path[0] (ingress-nginx) reloads", "web: path[0] (ingress-nginx)'s pod goes", "web: rolling deploy",
        "checkout: drain handshake", "checkout: idle connections along the path",
        "checkout: one request along the path", "checkout: rolling deploy",
        "football-live (football-feed): failure to block",
        "football-live (football-feed): recovery to unblock",
        "basketball-live (basketball-feed): failure to block",
        "basketball-live (basketball-feed): recovery to unblock",
        "failover (dns): region loss to clients served",
    ]
    bare = stack.model_copy(update={"heartbeat": None, "heartbeat_specs": (), "failover": None})
    assert len(stack_timelines(bare)) == 20


def test_text_rendering_sorts_by_time_and_names_sources():
    tl = Timeline("x: demo", (Span(5, 5, "b"), Span(0, 10, "a", "f.a_s"), Span(0, 3, "c")))
    assert render_text(tl) == (
        "x: demo\n"
        "  t=0s..3s       c\n"
        "  t=0s..10s      a  (f.a_s)\n"
        "  t=5s           b")


def test_mermaid_gantt_starts_in_milliseconds_and_escapes_label_terminators():
    tl = Timeline("svc: drain", (Span(0, 20, "wave 1: go #1; now"), Span(20, 20, "stop")))
    assert render_mermaid([tl]) == (
        "gantt\n"
        "  dateFormat x\n"
        "  axisFormat %M:%S\n"
        "  section svc  drain\n"
        "  wave 1  go no.1, now :t0_0, 0, 20s\n"
        "  stop :milestone, t0_1, 20000, 0s")


def test_derived_times_of_the_example(stack):
    times = derived_times(stack)
    assert times["api"] == {
        "drain": 20, "stop": 50, "grace": 60, "started": 15, "pod_ready": 59, "replace_time": 59,
        "rollout_time": 227, "lb_detect": 15, "lb_admit_new": 39, "lb_recover": 10,
        "startup_tolerance": 25, "unready_after": 10, "kill_tolerance": 20}
    assert times["football-feed"] == {
        "drain": 0, "stop": 20, "grace": 30, "started": 20, "pod_ready": 30, "replace_time": 30,
        "rollout_time": 80, "startup_tolerance": 50, "unready_after": 15, "kill_tolerance": 20}
    assert times["basketball-feed"]["replace_time"] == 80
    assert times["basketball-feed"]["lb_admit_new"] == 140
    assert times["failover"] == {"failover_time": 100}


def test_derived_times_omit_probe_times_a_service_does_not_have(stack):
    feed = svc(stack, "football-feed")
    bare = feed.model_copy(update={"probes": feed.probes.model_copy(
        update={"readiness": None, "liveness": None})})
    lone = stack.model_copy(update={"services": (bare,), "heartbeat": None, "heartbeat_specs": (),
                                    "failover": None, "watchdog": None})
    assert set(derived_times(lone)["football-feed"]) == {
        "drain", "stop", "grace", "started", "pod_ready", "replace_time", "rollout_time"}


def test_a_rollout_that_only_takes_pods_down_moves_as_many_per_wave_as_it_may_remove(stack):
    api = svc(stack, "api")
    down = api.model_copy(update={"rollout": api.rollout.model_copy(
        update={"max_surge": 0, "max_unavailable": 2})})
    labels = [s.label for s in rollout_timeline(down).spans]
    assert labels[:2] == ["wave 1: up to 2 new pods ready", "wave 2: up to 2 new pods ready"]
    assert len(labels) == 4  # 2 waves, the drain of the last old pods, completion


def test_a_rollout_allowed_to_move_no_pod_still_counts_one_pod_per_wave(stack):
    # Both 0 is rejected by the API (rollout-keeps-capacity says so); the estimate stays finite.
    api = svc(stack, "api")
    stuck = api.model_copy(update={"rollout": api.rollout.model_copy(
        update={"max_surge": 0, "max_unavailable": 0})})
    assert [s.label for s in rollout_timeline(stuck).spans][:3] == [
        "wave 1: up to 1 new pods ready", "wave 2: up to 1 new pods ready",
        "wave 3: up to 1 new pods ready"]


@given(start=st.integers(0, 10**6), length=st.integers(0, 10**6))
@example(start=0, length=0)
@example(start=1, length=1)
def test_mermaid_rows_give_each_span_its_start_in_ms_and_its_length_in_seconds(start, length):
    tl = Timeline("t", (Span(start, start + length, "s"),))
    row = render_mermaid([tl]).splitlines()[-1]
    tag = "milestone, " if length == 0 else ""
    assert row == f"  s :{tag}t0_0, {start * 1000}, {length}s"


def test_mermaid_ids_number_timelines_and_their_spans():
    tls = [Timeline("a", (Span(0, 1, "x"), Span(1, 2, "y"))), Timeline("b", (Span(0, 3, "z"),))]
    rows = [r.split(" :", 1)[1] for r in render_mermaid(tls).splitlines() if " :" in r]
    assert [r.split(",")[0] for r in rows] == ["t0_0", "t0_1", "t1_0"]


def test_a_clients_longer_dns_cache_holds_the_old_answer_as_long(stack):
    fo = stack.failover.model_copy(update={"client_dns_cache_s": 90})
    spans = failover_timeline(fo).spans
    assert (spans[1].start_s, spans[1].end_s, spans[3].start_s) == (30, 120, 130)


# ---- the delivery path, hop by hop -------------------------------------------------------------
@pytest.fixture(scope="module")
def path_stack():
    from pathlib import Path
    return read_stack_file(str(Path(__file__).resolve().parents[2] / "Pulumi.example.yaml"))


def test_the_path_timelines_show_each_hops_idle_and_request_wait(stack):
    idle, request = path_timelines(svc(stack, "api"))
    assert idle == Timeline("api: idle connections along the path", (
        Span(0, 60, "the LB reuses an idle pooled connection to the next hop for up to 60s (idle_timeout)",
             "lb.idle_timeout_s"),
        Span(0, 75, "the app closes a connection idle from the hop in front after 75s (keepalive)", "app.keepalive_s")))
    assert request == Timeline("api: one request along the path", (
        Span(0, 60, "the LB waits for the next hop's answer for up to 60s (idle_timeout)", "lb.idle_timeout_s"),
        Span(0, 30, "the app's longest request takes 30s (max_request)", "app.max_request_s")))


def test_a_path_with_one_hop_stating_its_numbers_draws_none(stack):
    # an NLB passes TCP through: only the app states a request time, nothing to compare it with
    assert path_timelines(svc(stack, "odds-stream")) == []
    assert path_timelines(svc(stack, "football-feed")) == []


def test_an_ingress_proxy_between_the_lb_and_the_app_is_drawn_between_them(path_stack):
    idle, request = path_timelines(svc(path_stack, "web"))
    assert [(s.end_s, s.source) for s in idle.spans] == [
        (75, "path[0].client_idle_s"), (60, "path[0].upstream_idle_s"), (65, "app.keepalive_s")]
    assert idle.spans[1].label == ("path[0] (ingress-nginx) reuses an idle pooled connection to the next hop for up "
                                   "to 60s (upstream-keepalive-timeout (ingress-nginx default))")
    assert [(s.end_s, s.source) for s in request.spans] == [(60, "path[0].request_timeout_s"), (30, "app.max_request_s")]


def test_the_drain_shows_the_mesh_proxy_passing_requests(path_stack):
    spans = drain_timeline(svc(path_stack, "checkout")).spans
    assert Span(0, 45, "path[0] (istio-sidecar) passes requests (ProxyConfig terminationDrainDuration)",
                "path[0].drain_s") in spans
    assert not any("passes requests" in s.label for s in drain_timeline(svc(path_stack, "web")).spans)


def test_an_ingress_proxy_is_drawn_reloading_and_its_pod_going_from_its_hops_numbers(path_stack):
    web = svc(path_stack, "web")
    hop = web.path[0]
    reload, going = proxy_timelines(web)
    worker = hop.worker_shutdown_s
    assert reload.spans == (
        Span(0, 0, "configuration change: new workers take new connections"),
        Span(0, web.app.max_request_s, "the longest request on an old worker (max_request)", "app.max_request_s"),
        Span(0, worker, "old workers finish (worker-shutdown-timeout (ingress-nginx default))",
             "path[0].worker_shutdown_s"),
        Span(worker, worker, "old workers closed"))
    delay = hop.shutdown_delay_s
    assert going.spans == (
        Span(0, hop.lb.deregistration_propagation_s, "the LB in front still sends new connections",
             "deregistration: path[0].lb.deregistration_propagation_s"),
        Span(0, delay, "accepting while leaving (--shutdown-grace-period)", "path[0].shutdown_delay_s"),
        Span(delay, delay + worker, "old workers finish (worker-shutdown-timeout (ingress-nginx default))",
             "path[0].worker_shutdown_s"),
        Span(hop.grace_s, hop.grace_s, "kill (terminationGracePeriodSeconds)", "path[0].grace_s"))
    unstated = web.model_copy(update={"path": (hop.model_copy(update={"lb": None}),)})
    assert [s.label for s in proxy_timelines(unstated)[1].spans][0].startswith("accepting while leaving")
    assert proxy_timelines(svc(path_stack, "checkout")) == []  # Envoy does not reload so
