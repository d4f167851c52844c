"""A canary routed by the ALB renders as Argo and the AWS Load Balancer Controller need it: the
Rollout with `strategy.canary` (validated against the Rollout schema), the stable and canary
Services and the Ingress (validated as Kubernetes objects), every number from the model; no
stack-owned target group or TargetGroupBinding for that service. What the audit reads back
from the rendered resources is the model's load balancer, number for number."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from lockstep.infra.render_cli import manifest, write
from lockstep.infra import config
from lockstep.infra.config import CONTROLLER_OWNS, deployable_errors
from lockstep.infra.ingress import INGRESS_CLASS, PATH_TYPE, USE_ANNOTATION
from lockstep.timing import limits as L
from lockstep.timing.audit import adapt
from lockstep.timing.audit.reader import read_all
from lockstep.timing.bind.link import link
from lockstep.timing.config import stack_from_config
from lockstep.timing.controllers import LBC_ATTACHED
from lockstep.timing.extract.lbc import ALB_ANNOTATION
from lockstep.timing.inputs import ConfigError
from lockstep.timing.invariants import errors, evaluate
from lockstep.timing.model import Service
from tests.infra.support import Resources, example_values, render

ROLLOUT_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "rollout-v1alpha1.json").read_text())
ARGO = {"strategy": "canary", "traffic_routing": "alb", "scale_down_delay_s": 45, "abort_scale_down_delay_s": 60}
CONTROLLER_OWNED = ("attach_to_arn", *config.CONTROLLER_OWNED)


def canary_values(argo: dict[str, Any] | None = None) -> dict[str, Any]:
    """The example with the api as a canary routed by the ALB: its listener fields dropped
    (the controller makes the ALB from the Ingress)."""
    values = example_values()
    api = values["services"][0]
    api["argo"] = dict(argo or ARGO)
    for key in CONTROLLER_OWNED:
        api["lb"].pop(key, None)
    return values


def api_of(values: dict[str, Any]) -> Service:
    return stack_from_config(values).services[0]


@pytest.fixture(scope="module")
def rendered() -> Resources:
    return render(canary_values())


def test_a_canary_routed_by_the_alb_renders_a_rollout_and_no_deployment(rendered):
    argo = sorted(s.name for s in stack_from_config(canary_values()).services if s.argo is not None)
    assert "api" in argo
    assert sorted(r.inputs["metadata"]["name"] for r in rendered.of("Rollout")) == argo
    assert not [r for r in rendered.of("Deployment") if r.inputs["metadata"]["name"] == "api"]


def test_the_stack_owns_no_target_group_or_binding_for_the_canary(rendered):
    assert not [r.urn for r in rendered.of("TargetGroup") if r.name.startswith("api-")]
    assert not [r.urn for r in rendered.of("ListenerRule") if r.name.startswith("api-")]
    assert not [r.urn for r in rendered.of("TargetGroupBinding") if r.inputs["metadata"]["name"] == "api"]
    # the other services keep theirs (a stack target group: an lb of their own, not attached by the controller)
    bound = sorted(s.name for s in stack_from_config(canary_values()).services
                   if s.lb is not None and s.name != "api")
    assert bound and sorted(r.inputs["metadata"]["name"] for r in rendered.of("TargetGroupBinding")) == bound


def test_the_rollouts_canary_names_the_services_and_the_ingress_and_carries_the_models_numbers(rendered):
    svc = api_of(canary_values())
    spec = rendered.k8s("Rollout", "web", "api").inputs["spec"]
    canary = spec["strategy"]["canary"]
    assert (canary["stableService"], canary["canaryService"]) == ("api", "api-canary")
    assert canary["trafficRouting"] == {"alb": {"ingress": "api", "servicePort": svc.container_port}}
    assert (canary["scaleDownDelaySeconds"], canary["abortScaleDownDelaySeconds"]) == (
        svc.argo.scale_down_delay_s, svc.argo.abort_scale_down_delay_s)
    assert (canary["maxSurge"], canary["maxUnavailable"]) == (svc.rollout.max_surge, svc.rollout.max_unavailable)
    assert "steps" not in canary  # a rolling update's pace, then the switch (infra/rollout.py)
    assert (spec["minReadySeconds"], spec["progressDeadlineSeconds"]) == (
        svc.rollout.min_ready_s, svc.rollout.progress_deadline_s)


def test_the_ingress_backend_is_the_stable_service_on_the_port_argo_requires(rendered):
    spec = rendered.k8s("Ingress", "web", "api").inputs["spec"]
    assert spec["ingressClassName"] == INGRESS_CLASS
    paths = spec["rules"][0]["http"]["paths"]
    assert [p["path"] for p in paths] == list(api_of(canary_values()).lb.path_patterns)
    for p in paths:
        assert p["pathType"] == PATH_TYPE
        assert p["backend"] == {"service": {"name": "api", "port": {"name": USE_ANNOTATION}}}


def test_the_stable_and_canary_services_select_the_same_pods_on_the_same_port(rendered):
    stable = rendered.k8s("Service", "web", "api").inputs["spec"]
    canary = rendered.k8s("Service", "web", "api-canary").inputs["spec"]
    assert canary["selector"] == stable["selector"]
    assert canary["ports"] == stable["ports"]
    assert not [r for r in rendered.of("Service") if r.inputs["metadata"]["name"] == "api-preview"]


def test_the_rollout_waits_for_both_services_but_not_for_the_ingress(rendered):
    rollout = rendered.k8s("Rollout", "web", "api")
    deps = {rendered.by_urn(u).inputs.get("metadata", {}).get("name") for u in rollout.depends_on
            if rendered.by_urn(u).custom}
    assert {"api", "api-canary"} <= deps
    ingress = rendered.k8s("Ingress", "web", "api")
    assert ingress.urn not in rollout.depends_on
    assert rendered.k8s("Service", "web", "api").urn in ingress.depends_on


def test_the_rendered_rollout_validates_against_the_rollout_schema(rendered):
    obj = manifest(rendered.k8s("Rollout", "web", "api"))
    jsonschema.validate(obj, ROLLOUT_SCHEMA)
    as_deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
                     "spec": {"selector": obj["spec"]["selector"], "template": obj["spec"]["template"]}}
    kubernetes_validate.validate(as_deployment, example_values()["kubernetes_version"], strict=True)


@pytest.mark.parametrize("broken", [
    {"trafficRouting": {"alb": {"servicePort": 8080}}},  # no ingress
    {"trafficRouting": {"alb": {"ingress": "api"}}},  # no servicePort
    {"trafficRouting": {"alb": {"ingress": "api", "servicePort": 8080}}, "stableService": None},
    {"scaleDownDelaySeconds": -1},
    {"maxSurge": "150%"},
])
def test_the_schema_refuses_a_canary_argo_would_refuse(rendered, broken):
    obj = manifest(rendered.k8s("Rollout", "web", "api"))
    canary = obj["spec"]["strategy"]["canary"]
    canary.update(broken)
    for key in [k for k, v in broken.items() if v is None]:
        del canary[key]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, ROLLOUT_SCHEMA)


def test_the_services_and_the_ingress_validate_as_kubernetes_objects(rendered):
    version = example_values()["kubernetes_version"]
    objs = [manifest(rendered.k8s(kind, "web", name))
            for kind, name in (("Service", "api"), ("Service", "api-canary"), ("Ingress", "api"))]
    for obj in objs:
        kubernetes_validate.validate(obj, version, strict=True)


def test_instance_targets_make_both_services_node_ports_the_stable_one_on_the_models_port():
    values = canary_values()
    values["services"][0]["lb"].update(target_type="instance", port=30080)
    values["services"][0]["readiness_gate"] = None  # the gate needs IP targets
    # behind kube-proxy a node shutdown leaves the pod until readiness (5 s × 2) and the endpoints
    # (10 s) have followed: the drain outlasts that + margin
    values["services"][0]["shutdown"]["drain_s"] = 25
    res = render(values)
    stable = res.k8s("Service", "web", "api").inputs["spec"]
    canary = res.k8s("Service", "web", "api-canary").inputs["spec"]
    assert (stable["type"], canary["type"]) == ("NodePort", "NodePort")
    assert stable["ports"][0]["nodePort"] == 30080
    assert "nodePort" not in canary["ports"][0]  # Kubernetes allocates it: two Services cannot share one
    version = values["kubernetes_version"]
    for obj in (manifest(res.k8s("Service", "web", "api")), manifest(res.k8s("Service", "web", "api-canary"))):
        kubernetes_validate.validate(obj, version, strict=True)


def test_a_basic_canary_keeps_the_stacks_target_group_and_writes_no_scale_down_delay():
    values = example_values()
    values["services"][0]["argo"] = {"strategy": "canary"}
    res = render(values)
    canary = res.k8s("Rollout", "web", "api").inputs["spec"]["strategy"]["canary"]
    assert set(canary) == {"maxSurge", "maxUnavailable"}
    assert res.k8s("TargetGroupBinding", "web", "api").inputs["spec"]["serviceRef"]["name"] == "api"
    assert not [r for r in res.of("Ingress") if r.inputs["metadata"]["name"] == "api"]  # web's nginx one only
    jsonschema.validate(manifest(res.k8s("Rollout", "web", "api")), ROLLOUT_SCHEMA)


def subjects_of_render(res: Resources, out: Path) -> dict[str, Service]:
    """The services the audit's linker makes of the files `lockstep render` writes."""
    write(res, out)
    docs, problems = read_all([str(out)])
    assert problems == []
    return {s.service.name: s.service for s in link(adapt.resources(docs)).subjects}


def test_the_audit_reads_the_rendered_ingress_back_as_the_models_load_balancer(rendered, tmp_path):
    model = api_of(canary_values())
    read = subjects_of_render(rendered, tmp_path)["api"]
    # (the audit reads no listener-rule paths: no rule judges them; the Ingress test pins them)
    assert read.lb.model_dump(exclude={"path_patterns"}) == model.lb.model_dump(exclude={"path_patterns"})
    assert read.lb.attach_to_arn == LBC_ATTACHED
    assert read.argo == model.argo
    assert read.rollout == model.rollout


# ---- every number in the output is the model's, over random models inside the ranges ---------
@st.composite
def canary_models(draw: st.DrawFn) -> dict[str, Any]:
    """The api's load-balancer and Argo numbers drawn inside their ranges, within bounds that
    keep the error-level rules satisfied (the program renders only a stack that passes them;
    the few draws that still break one are discarded): detection fast enough for the drain,
    the idle timeout below the server's keep-alive, the delays past the switch."""
    values = example_values()
    api = values["services"][0]
    switch = api["lb"]["deregistration_propagation_s"] + L.ENDPOINT_PROPAGATION_DEFAULT + values["margin_s"]
    delay = st.integers(switch, L.SECONDS.hi)
    values = canary_values({"strategy": "canary", "traffic_routing": "alb", "scale_down_delay_s": draw(delay),
                            "abort_scale_down_delay_s": draw(st.one_of(st.just(0), delay))})
    api = values["services"][0]
    lb, hc = api["lb"], api["lb"]["health_check"]
    hc["interval_s"] = draw(st.integers(L.HC_INTERVAL.lo, 10))
    hc["timeout_s"] = draw(st.integers(L.HC_TIMEOUT.lo, hc["interval_s"] - 1))
    hc["healthy_threshold"] = draw(st.integers(L.HC_THRESHOLD.lo, 3))
    hc["unhealthy_threshold"] = draw(st.integers(L.HC_THRESHOLD.lo, 5))
    hc["port"] = draw(st.one_of(st.just("traffic-port"), st.integers(L.PORT.lo, L.PORT.hi)))
    hc["protocol"] = draw(st.sampled_from(["HTTP", "HTTPS"]))
    lb["protocol"] = draw(st.sampled_from(["HTTP", "HTTPS"]))
    lb["idle_timeout_s"] = draw(st.integers(L.ALB_IDLE_TIMEOUT.lo, api["app"]["keepalive_s"] - 1))
    lb["deregistration_delay_s"] = draw(st.integers(api["app"]["max_request_s"], L.DEREGISTRATION_DELAY.hi))
    lb["slow_start_s"] = draw(st.one_of(st.just(0), st.integers(L.SLOW_START.lo, L.SLOW_START.hi)))
    api["rollout"] = {**api["rollout"], "max_surge": draw(st.integers(1, 3)),
                      "min_ready_s": draw(st.integers(L.MIN_READY.lo, 30)),
                      "progress_deadline_s": draw(st.integers(300, L.PROGRESS_DEADLINE.hi))}
    assume(not errors(evaluate(stack_from_config(values))))
    return values


def ingress_numbers(ann: dict[str, str]) -> dict[str, int | str]:
    """The rendered annotations as field → value, each parsed by its documented format."""
    from lockstep.timing.extract.lbc import string_map

    tg = string_map(ann[ALB_ANNOTATION + "target-group-attributes"], "target-group-attributes")
    lb = string_map(ann[ALB_ANNOTATION + "load-balancer-attributes"], "load-balancer-attributes")
    port = ann[ALB_ANNOTATION + "healthcheck-port"]
    return {"interval_s": int(ann[ALB_ANNOTATION + "healthcheck-interval-seconds"]),
            "timeout_s": int(ann[ALB_ANNOTATION + "healthcheck-timeout-seconds"]),
            "healthy_threshold": int(ann[ALB_ANNOTATION + "healthy-threshold-count"]),
            "unhealthy_threshold": int(ann[ALB_ANNOTATION + "unhealthy-threshold-count"]),
            "port": port if port == "traffic-port" else int(port),
            "deregistration_delay_s": int(tg["deregistration_delay.timeout_seconds"]),
            "slow_start_s": int(tg["slow_start.duration_seconds"]),
            "idle_timeout_s": int(lb["idle_timeout.timeout_seconds"])}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(values=canary_models())
def test_every_rendered_number_is_the_models(values):
    svc = api_of(values)
    res = render(values)
    ann = res.k8s("Ingress", "web", "api").inputs["metadata"]["annotations"]
    lb, hc = svc.lb, svc.lb.health_check
    assert ingress_numbers(ann) == {
        "interval_s": hc.interval_s, "timeout_s": hc.timeout_s, "healthy_threshold": hc.healthy_threshold,
        "unhealthy_threshold": hc.unhealthy_threshold, "port": hc.port,
        "deregistration_delay_s": lb.deregistration_delay_s, "slow_start_s": lb.slow_start_s,
        "idle_timeout_s": lb.idle_timeout_s}
    assert (ann[ALB_ANNOTATION + "backend-protocol"], ann[ALB_ANNOTATION + "healthcheck-protocol"],
            ann[ALB_ANNOTATION + "target-type"]) == (lb.protocol, hc.protocol, lb.target_type)
    spec = res.k8s("Rollout", "web", "api").inputs["spec"]
    canary = spec["strategy"]["canary"]
    assert (canary["scaleDownDelaySeconds"], canary["abortScaleDownDelaySeconds"], canary["maxSurge"],
            spec["minReadySeconds"], spec["progressDeadlineSeconds"]) == (
        svc.argo.scale_down_delay_s, svc.argo.abort_scale_down_delay_s, svc.rollout.max_surge,
        svc.rollout.min_ready_s, svc.rollout.progress_deadline_s)
    jsonschema.validate(manifest(res.k8s("Rollout", "web", "api")), ROLLOUT_SCHEMA)


# ---- what the stack refuses ---------------------------------------------------------------------
def test_a_canary_routed_by_the_alb_needs_an_alb():
    values = canary_values()
    values["services"][2]["argo"] = dict(ARGO)  # basketball-feed: a StatefulSet behind an NLB
    values["services"][2]["kind"] = "Deployment"
    with pytest.raises(ConfigError, match=r"services\.2\.lb\.kind: a canary routed by the ALB .* needs lb.kind alb "
                                          r"\(got nlb\)"):
        stack_from_config(values)


@pytest.mark.parametrize("field,value", [
    ("attach_to_arn", "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/edge/1/2"),
    ("rule_priority", 100), ("listener_port", 443), ("vpc_id", "vpc-0a1b2c3d4e5f60789")])
def test_a_canary_routed_by_the_alb_refuses_a_listener_of_the_stacks_own(field, value):
    values = canary_values()
    values["services"][0]["lb"][field] = value
    assert deployable_errors(stack_from_config(values)) == [f"lockstep:services.0.lb.{field}: {CONTROLLER_OWNS}"]
    with pytest.raises(ConfigError, match=rf"services\.0\.lb\.{field}: leave unset for a canary routed by the ALB"):
        render(values)


def test_the_examples_listener_on_a_canary_is_named_field_by_field():
    values = example_values()
    values["services"][0]["argo"] = dict(ARGO)
    assert deployable_errors(stack_from_config(values)) == [
        f"lockstep:services.0.lb.{f}: {CONTROLLER_OWNS}" for f in ("attach_to_arn", "rule_priority", "vpc_id")]
