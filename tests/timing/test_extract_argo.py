"""Argo Rollouts → the model: the pace of each strategy, the scale-down delays, ALB routing."""

from __future__ import annotations

import pytest

from lockstep.timing import extract as x
from lockstep.timing import limits as L


def rollout(strategy: dict, **spec: object) -> dict:
    pod = {"containers": [{"name": "web", "image": "web:2", "ports": [{"containerPort": 8080}],
                           "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}}}]}
    base = {"replicas": 4, "strategy": strategy, "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "web", "namespace": "shop"},
            "spec": {**base, **spec}}


def test_a_blue_green_rollout_brings_the_whole_new_set_up_and_takes_nothing_away():
    svc = x.workload(rollout({"blueGreen": {"activeService": "web", "scaleDownDelaySeconds": 12}}))
    assert (svc.kind, svc.rollout.max_surge, svc.rollout.max_unavailable) == ("Deployment", "100%", 0)
    assert (svc.argo.strategy, svc.argo.scale_down_delay_s, svc.argo.traffic_routing) == ("blueGreen", 12, None)


def test_unstated_delays_take_argos_defaults():
    argo = x.workload(rollout({"blueGreen": {"activeService": "web"}})).argo
    assert argo.scale_down_delay_s == argo.abort_scale_down_delay_s == L.ARGO_SCALE_DOWN_DELAY_DEFAULT == 30


def test_a_canary_is_paced_by_its_own_surge_and_unavailability_and_reads_alb_routing():
    canary = {"canary": {"maxSurge": 2, "maxUnavailable": 0, "stableService": "web-stable", "canaryService": "web-canary",
                         "abortScaleDownDelaySeconds": 0, "scaleDownDelaySeconds": 45,
                         "trafficRouting": {"alb": {"ingress": "web", "servicePort": 80}}}}
    svc = x.workload(rollout(canary, minReadySeconds=7, progressDeadlineSeconds=300))
    assert (svc.rollout.max_surge, svc.rollout.max_unavailable, svc.rollout.min_ready_s,
            svc.rollout.progress_deadline_s) == (2, 0, 7, 300)
    assert (svc.argo.traffic_routing, svc.argo.scale_down_delay_s, svc.argo.abort_scale_down_delay_s) == ("alb", 45, 0)
    assert x.alb_routing(rollout(canary)) == ("web", "web-stable", 80)


def test_a_canary_without_stated_pace_rolls_as_a_deployment_does_by_default():
    svc = x.workload(rollout({"canary": {}}))
    assert (svc.rollout.max_surge, svc.rollout.max_unavailable) == (L.K8S_DEFAULTS["max_surge"],
                                                                     L.K8S_DEFAULTS["max_unavailable"])
    assert svc.argo.traffic_routing is None and x.alb_routing(rollout({"canary": {}})) is None


def test_the_alb_root_service_overrides_the_stable_service():
    canary = {"canary": {"stableService": "s", "trafficRouting": {"alb": {"ingress": "i", "rootService": "root"}}}}
    assert x.alb_routing(rollout(canary)) == ("i", "root", None)


@pytest.mark.parametrize("strategy, message", [
    ({}, "spec.strategy: a Rollout declares exactly one of blueGreen or canary"),
    ({"blueGreen": {}, "canary": {}}, "spec.strategy: a Rollout declares exactly one of blueGreen or canary"),
    ({"canary": {"trafficRouting": {"istio": {}}}}, "spec.strategy.canary.trafficRouting: istio: only alb is modelled"),
    ({"canary": {"trafficRouting": {}}}, "spec.strategy.canary.trafficRouting: none: only alb is modelled"),
    ({"canary": {"trafficRouting": {"istio": {}, "alb": {}}}},
     "spec.strategy.canary.trafficRouting: alb, istio: only alb is modelled"),
])
def test_a_rollout_the_model_cannot_hold_is_named(strategy, message):
    with pytest.raises(x.ExtractError) as err:
        x.workload(rollout(strategy))
    assert str(err.value) == message


@pytest.mark.parametrize("canary", [
    {"trafficRouting": {"alb": {"servicePort": 80}}},
    {"stableService": "s", "trafficRouting": {"alb": {"servicePort": 80}}},
    {"trafficRouting": {"alb": {"ingress": "i", "servicePort": 80}}},
])
def test_alb_routing_without_its_ingress_or_service_is_named(canary):
    with pytest.raises(x.ExtractError) as err:
        x.alb_routing(rollout({"canary": canary}))
    assert str(err.value) == "spec.strategy.canary.trafficRouting.alb: ingress and stableService must be named"


def test_managed_routes_and_the_weight_cap_are_no_traffic_provider():
    canary = {"canary": {"stableService": "s",
                         "trafficRouting": {"alb": {"ingress": "i"}, "maxTrafficWeight": 1000, "managedRoutes": []}}}
    assert x.workload(rollout(canary)).argo.traffic_routing == "alb"


def test_other_kinds_are_no_argo_rollout():
    obj = rollout({"canary": {}})
    obj["kind"] = "Deployment"
    assert x.argo_strategy(obj) is None
