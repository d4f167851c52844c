"""The simulation through each hop of the delivery path (issue 12): every link's keep-alive
race, each hop's wait for an answer, an ingress proxy's reload and a mesh proxy's drain, with
the losses counted per hop. The oracle reads the proxies' raw numbers, never the rules."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.timing.config import read_stack_file
from lockstep.timing.invariants import evaluate
from lockstep.timing.mutate import mutate_stack
from lockstep.timing.sim.spec import LinkSpec, PathSpec, path_spec, service_spec
from lockstep.timing.simulate import applies, run_scenario, simulate_stack
from tests.timing.strategies import edit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PATH = read_stack_file(str(EXAMPLES.parent / "Pulumi.example.yaml"))
WEB, CHECKOUT = 4, 5  # the path example's service behind ingress-nginx, and the meshed one


def service(stack, name):
    return next(s for s in stack.services if s.name == name)


def variant(changes: dict):
    return type(PATH).model_validate(edit(PATH.model_dump(mode="json"), changes))


def test_the_path_is_read_hop_by_hop_from_the_proxies_numbers() -> None:
    web = path_spec(service(PATH, "web"))
    assert dataclasses.replace(web, stops=()) == PathSpec(
        links=(LinkSpec("path[0] (ingress-nginx) → the app", 60, 65),),
        waits=(("path[0] (ingress-nginx)", 60),), reloads=(("path[0] (ingress-nginx)", 240),))
    (stop,) = web.stops  # its pod: accepting 125 s after SIGTERM, workers 240 s, killed at 370 s
    assert (stop.name, stop.delay, stop.worker, stop.grace) == ("path[0] (ingress-nginx)", 125, 240, 370)
    assert (stop.front.kind, stop.front.removal, stop.front.deregistration_propagation) == ("nlb", ("deregistration",), 120)
    # the ALB pools toward the sidecar (Envoy's 1 h idle toward it), the sidecar toward the app
    assert path_spec(service(PATH, "checkout")) == PathSpec(
        links=(LinkSpec("the LB → path[0] (istio-sidecar)", 60, 3600), LinkSpec("path[0] (istio-sidecar) → the app", 60, 75)),
        waits=(("the LB", 60),), mesh_drain=45)
    assert service_spec(PATH, service(PATH, "checkout")).sidecar_drain == 45
    # an NLB's TCP listener passes the connection through: no link, no wait of its own
    assert path_spec(service(PATH, "odds-stream")) == PathSpec()


@given(st.integers(1, 4000), st.integers(1, 4000))
def test_a_link_races_exactly_when_the_inner_hop_closes_first(pool, client) -> None:
    assert LinkSpec("a → b", pool, client).races == (client <= pool)


def test_the_path_example_loses_nothing_in_any_scenario() -> None:
    report = simulate_stack(PATH, phases=2, seed=1)
    lost = {(s.service, s.scenario): s.counts.lost for s in report.scenarios if s.counts.lost}
    assert lost == {}
    assert {("web", "reload"), ("web", "proxy-stop")} <= {(s.service, s.scenario) for s in report.scenarios}


@pytest.mark.parametrize(("name", "service_name", "scenario", "where"), [
    ("path-node-keepalive", "web", "quiet", "502 keep-alive race: path[0] (ingress-nginx) → the app"),
    ("path-istio-idle", "checkout", "quiet", "502 keep-alive race: path[0] (istio-sidecar) → the app"),
    ("path-read-timeout", "web", "rollout", "504 path[0] (ingress-nginx) gave up after 20s"),
    ("path-reload-cut", "web", "reload", "cut by path[0] (ingress-nginx)'s reload"),
    ("path-controller-drain", "web", "proxy-stop",
     "refused by path[0] (ingress-nginx): stopped accepting before the LB in front stopped sending"),
])
def test_each_broken_path_variant_loses_requests_at_its_hop(name, service_name, scenario, where) -> None:
    stack = read_stack_file(str(EXAMPLES / f"Pulumi.{name}.yaml"))
    spec = service_spec(stack, service(stack, service_name))
    report = run_scenario(spec, scenario, phases=3, seed=0, rate=20.0)
    assert report.harmful
    assert set(report.counts.by_hop) == {where}
    assert sum(report.counts.by_hop.values()) > 0


def test_a_mesh_proxy_that_leaves_before_the_lb_stops_sending_refuses_its_requests() -> None:
    stack = read_stack_file(str(EXAMPLES / "Pulumi.path-linkerd-drain.yaml"))
    report = run_scenario(service_spec(stack, service(stack, "checkout")), "replace", phases=3, seed=0, rate=20.0)
    assert report.counts.refused_502 + report.counts.cut > 0


@settings(max_examples=12, deadline=None)
@given(st.integers(5, 120), st.integers(0, 40))
def test_a_hop_that_waits_less_than_the_longest_request_answers_504(max_request, below) -> None:
    wait = max(1, max_request - below)
    stack = variant({f"services.{WEB}.path.0.request_timeout_s": wait,
                     f"services.{WEB}.app.max_request_s": max_request})
    report = run_scenario(service_spec(stack, service(stack, "web")), "replace", phases=1, seed=0, rate=20.0)
    # the longest requests take exactly max_request: answered in time iff the hop waits as long
    assert (report.counts.timeout_504 > 0) == (wait < max_request)


@settings(max_examples=8, deadline=None)
@given(st.integers(10, 60), st.integers(-3, 3))
def test_a_reload_cuts_only_requests_longer_than_the_old_workers_may_finish(max_request, delta) -> None:
    shutdown = max(1, max_request + delta)
    stack = variant({f"services.{WEB}.path.0.worker_shutdown_s": shutdown,
                     f"services.{WEB}.app.max_request_s": max_request,
                     f"services.{WEB}.shutdown.finish_s": max_request,
                     f"services.{WEB}.shutdown.grace_s": max_request + 60})
    report = run_scenario(service_spec(stack, service(stack, "web")), "reload", phases=6, seed=0, rate=40.0)
    # a verdict alone (what mutate asks) stops serving new requests once the old workers are
    # the only way to lose one
    verdict = run_scenario(service_spec(stack, service(stack, "web")), "reload", phases=6, seed=0, rate=40.0,
                           fast=True)
    if shutdown >= max_request:
        assert report.counts.cut == 0 and not verdict.harmful
    elif max_request - shutdown >= 2:
        assert report.counts.cut > 0  # a window of ≥2 s of long requests at 0.8/s: found in 6 phases
        assert verdict.harmful


def test_the_reload_runs_only_behind_a_proxy_that_reloads() -> None:
    assert applies(service_spec(PATH, service(PATH, "web")), "reload")
    assert not applies(service_spec(PATH, service(PATH, "checkout")), "reload")


def test_every_harmful_mutant_of_a_hop_number_is_caught_by_a_rule() -> None:
    # web's ingress-nginx and app; checkout's sidecar, LB and app: the numbers the path reads
    report = mutate_stack(PATH, phases=1, jobs=2, only=f"services.{WEB}.path")
    assert not report.baseline_harm and not report.baseline_errors
    caught = {r for v in report.by("caught") for r in v.rules}
    assert {"keepalive-chain-ordered", "timeouts-shrink-inward", "proxy-reload-spares-requests"} <= caught
    assert [f"{v.mutant.where} → {v.mutant.value}" for v in report.by("gap")] == []
    meshed = mutate_stack(PATH, phases=1, jobs=2, only=f"services.{CHECKOUT}.path")
    assert {"keepalive-chain-ordered", "mesh-drain-covers-lb"} <= {r for v in meshed.by("caught") for r in v.rules}
    assert [f"{v.mutant.where} → {v.mutant.value}" for v in meshed.by("gap")] == []
    assert not [f for f in evaluate(PATH) if f.failed]


@pytest.mark.parametrize(("changes", "where"), [
    # the NLB stops sending at 120 s, so what the pod carries has ended by 150 s
    ({"grace_s": 140}, "cut by path[0] (ingress-nginx)'s pod going"),  # killed at 140 s
    ({"worker_shutdown_s": 20}, "cut by path[0] (ingress-nginx)'s pod going"),  # its workers killed at 125 + 20
])
def test_a_controller_pod_killed_before_its_workers_finish_cuts_what_it_carries(changes, where) -> None:
    stack = variant({f"services.{WEB}.path.0.{k}": v for k, v in changes.items()})
    spec = service_spec(stack, service(stack, "web"))
    report = run_scenario(spec, "proxy-stop", phases=3, seed=0, rate=20.0)
    assert report.harmful and set(report.counts.by_hop) == {where}


def test_a_controller_pod_killed_after_what_it_carries_has_ended_harms_nothing() -> None:
    # grace below worker-shutdown-timeout + delay breaks the rule, which allows for requests as long as
    # the workers' wait (WebSockets); the simulated ones last at most the app's 30 s
    stack = variant({f"services.{WEB}.path.0.grace_s": 151})
    assert not run_scenario(service_spec(stack, service(stack, "web")), "proxy-stop", phases=3, seed=0,
                            rate=20.0).harmful
