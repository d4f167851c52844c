"""For any valid model near the example, the rendered resources carry exactly its numbers.

The strategy turns the example's numbers within bounds that keep every error-level rule
satisfied (the few draws that still break one are discarded), renders the stack through the
recorder and reads every timing number back from the rendered inputs.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.infra.support import example_values, render
from lockstep.timing.config import stack_from_config
from lockstep.timing.conventions import prestop_action
from lockstep.timing.heartbeat_config import CONFIGMAP_KEY
from lockstep.timing.invariants import errors, evaluate
from lockstep.timing.model import Probe, Stack

PROBE_FIELDS = {"initial_delay_s": "initialDelaySeconds", "period_s": "periodSeconds",
                "timeout_s": "timeoutSeconds", "success_threshold": "successThreshold",
                "failure_threshold": "failureThreshold"}


@st.composite
def valid_values(draw: st.DrawFn) -> dict[str, Any]:
    v = example_values()
    api, football, basket = v["services"][:3]  # odds-stream's numbers stay the example's
    hc = api["lb"]["health_check"]
    hc["interval_s"] = draw(st.integers(5, 10))
    hc["timeout_s"] = draw(st.integers(2, hc["interval_s"] - 1))
    hc["healthy_threshold"] = draw(st.integers(2, 3))
    hc["unhealthy_threshold"] = draw(st.integers(2, 3))
    api["lb"]["deregistration_delay_s"] = draw(st.integers(45, 600))
    api["lb"]["slow_start_s"] = draw(st.sampled_from([0, 30, 60]))
    for svc, lo, spread in ((api, 20, 10), (basket, 30, 5)):
        sd = svc["shutdown"]
        sd["drain_s"] = draw(st.integers(lo, lo + spread))
        sd["finish_s"] = draw(st.integers(svc["app"]["max_request_s"], svc["app"]["max_request_s"] + spread))
        sd["grace_s"] = sd["drain_s"] + sd["finish_s"] + 5 + draw(st.integers(0, 30))
    api["probes"]["startup"]["failure_threshold"] = draw(st.integers(4, 12))
    api["probes"]["readiness"]["period_s"] = draw(st.integers(1, 5))
    api["probes"]["readiness"]["failure_threshold"] = draw(st.integers(1, 3))
    api["hpa"]["min_replicas"] = draw(st.integers(3, 5))
    api["hpa"]["max_replicas"] = draw(st.integers(api["hpa"]["min_replicas"], 20))
    football["replicas"] = draw(st.integers(2, 6))
    football["rollout"]["min_ready_s"] = draw(st.integers(0, 10))
    football["rollout"]["progress_deadline_s"] = draw(st.integers(120, 900))
    basket["replicas"] = draw(st.integers(2, 5))
    basket["lb"]["health_check"]["healthy_threshold"] = draw(st.integers(2, 6))
    basket["lb"]["health_check"]["unhealthy_threshold"] = draw(st.integers(2, 10))
    # a kubelet node shutdown leaves endpoints ready: the drain must outlast what takes the pod
    # out (api: its ALB's check; basketball, behind kube-proxy: readiness 5 s × 3 + the endpoints'
    # 10 s) and the grace (and the kubelet's period) that + finish (node-shutdown-drains-without-endpoints)
    v["nodes"]["kubelet"]["shutdown_grace_period_s"] = 300
    c = api["lb"]["health_check"]
    for svc, unrouted in ((api, c["interval_s"] * c["unhealthy_threshold"]), (basket, 5 * 3 + 10)):
        sd = svc["shutdown"]
        sd["drain_s"] = max(sd["drain_s"], unrouted + 5)
        sd["grace_s"] = max(sd["grace_s"], sd["drain_s"] + sd["finish_s"] + 5)
    # basketball's heartbeat spec rides out one replacement of its longer stop
    v["heartbeat_specs"][1]["loss_time_s"] = 150
    hb = v["heartbeat"]
    hb["replicas"] = draw(st.integers(1, 3))
    hb["publish_interval_s"] = draw(st.integers(1, 5))
    hb["client_timeout_s"] = draw(st.integers(30, 60))
    hb["beat_ttl_s"] = draw(st.integers(1, hb["client_timeout_s"]))
    hb["observe_interval_s"] = draw(st.integers(1, 15))
    fo = v["failover"]
    fo["check_interval_s"], fo["failure_threshold"] = draw(st.sampled_from([(10, 1), (10, 2), (10, 3), (30, 1)]))
    fo["ttl_s"] = draw(st.integers(0, 30))
    fo["client_dns_cache_s"] = draw(st.integers(0, fo["ttl_s"]))  # client-dns-cache-within-ttl
    return v


def probe_numbers(p: Probe | None) -> dict[str, int] | None:
    return None if p is None else {k8s: getattr(p, f) for f, k8s in PROBE_FIELDS.items()}


def rendered_probe(c: dict[str, Any], key: str) -> dict[str, int] | None:
    p = c.get(key)
    return None if p is None else {k: int(p[k]) for k in PROBE_FIELDS.values()}


def assert_numbers(stack: Stack, res) -> None:
    for svc in stack.services:
        # an Argo Rollout is registered in place of its Deployment, with the same numbers
        w = res.k8s("Rollout" if svc.argo is not None else svc.kind, svc.namespace, svc.name)
        spec, pod = w.inputs["spec"], w.inputs["spec"]["template"]["spec"]
        c = pod["containers"][0]
        assert int(pod["terminationGracePeriodSeconds"]) == svc.shutdown.grace_s, w.urn
        assert int(spec["minReadySeconds"]) == svc.rollout.min_ready_s, w.urn
        if svc.kind == "Deployment":
            assert int(spec["progressDeadlineSeconds"]) == svc.rollout.progress_deadline_s, w.urn
        for key, probe in (("startupProbe", svc.probes.startup), ("readinessProbe", svc.probes.readiness),
                           ("livenessProbe", svc.probes.liveness)):
            assert rendered_probe(c, key) == probe_numbers(probe), f"{w.urn}: {key}"
        action = prestop_action(svc.shutdown, stack.kubernetes_version)
        pre = c.get("lifecycle", {}).get("preStop")
        if action == "sleep":
            assert int(pre["sleep"]["seconds"]) == svc.shutdown.drain_s, w.urn
        elif action == "exec":
            assert pre["exec"]["command"] == ["sleep", str(svc.shutdown.drain_s)], w.urn
        else:
            assert pre is None, w.urn
        assert ("replicas" in spec) == (svc.hpa is None), w.urn
        if svc.hpa is None:
            assert int(spec["replicas"]) == svc.replicas, w.urn
        if svc.lb is not None:
            tg = res.one("TargetGroup", f"{svc.name}-tg")
            hc, m = tg.inputs["healthCheck"], svc.lb.health_check
            got = (int(hc["interval"]), int(hc["timeout"]), int(hc["healthyThreshold"]),
                   int(hc["unhealthyThreshold"]), int(tg.inputs["deregistrationDelay"]), int(tg.inputs["port"]))
            want = (m.interval_s, m.timeout_s, m.healthy_threshold, m.unhealthy_threshold,
                    svc.lb.deregistration_delay_s, svc.lb.port)
            assert got == want, tg.urn
            if svc.lb.kind == "alb":
                assert int(tg.inputs["slowStart"]) == svc.lb.slow_start_s, tg.urn
    hb = stack.heartbeat
    d = res.one("Deployment", "heartbeat-deployment")
    assert int(d.inputs["spec"]["replicas"]) == hb.replicas, d.urn
    assert bool(res.of("Role") and [r for r in res.of("Role") if r.name.endswith("-leader")]) == (hb.replicas > 1)
    cm = json.loads(res.one("ConfigMap", "heartbeat-config").inputs["data"][CONFIGMAP_KEY])
    assert (cm["publish_interval_s"], cm["client_timeout_s"], cm["beat_ttl_s"], cm["observe_interval_s"]) == \
        (hb.publish_interval_s, hb.client_timeout_s, hb.beat_ttl_s, hb.observe_interval_s)
    fo = stack.failover
    for region in fo.regions:
        check = res.one("HealthCheck", f"failover-{region.name}-health")
        record = res.one("Record", f"failover-{region.name}-record")
        assert (int(check.inputs["requestInterval"]), int(check.inputs["failureThreshold"])) == \
            (fo.check_interval_s, fo.failure_threshold), check.urn
        assert int(record.inputs["ttl"]) == fo.ttl_s, record.urn


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_values())
def test_rendered_resources_carry_exactly_the_models_numbers(values):
    stack = stack_from_config(values)
    assume(not errors(evaluate(stack)))
    assert_numbers(stack, render(values))
