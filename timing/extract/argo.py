"""Argo Rollouts (`argoproj.io/v1alpha1 Rollout`) → the model's rollout pace and `ArgoRollout`.

A Rollout carries a Deployment's pod template (its own, or the `workloadRef`'d Deployment's:
the linker merges that in) and rolls ReplicaSets as a Deployment does. What is its own:
- blue-green: the new ReplicaSet comes up whole beside the old one (the preview), the active
  Service is switched, and the old ReplicaSet is scaled down `scaleDownDelaySeconds` later;
- canary: `maxSurge`/`maxUnavailable` pace the ReplicaSets (25% each by default, as a
  Deployment's); with `trafficRouting` the weights move at the traffic provider and, after
  the stable Service is switched, the old ReplicaSet is scaled down after the same delay.
Defaults: `timing.limits.ARGO_SCALE_DOWN_DELAY_DEFAULT` (Argo's utils/defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockstep.timing.extract.values import ExtractError, amount, build, get, num, put
from lockstep.timing.model import ArgoRollout, Rollout

STRATEGIES = ("blueGreen", "canary")


def strategy_of(spec: Mapping[str, Any] | None) -> str:
    """The one strategy a Rollout declares (the Argo API requires exactly one)."""
    found = [s for s in STRATEGIES if get(spec, "strategy", s) is not None]
    if len(found) != 1:
        raise ExtractError("spec.strategy: a Rollout declares exactly one of blueGreen or canary")
    return found[0]


def argo_rollout_pace(spec: Mapping[str, Any] | None) -> Rollout:
    """The rollout pace: a blue-green Rollout brings the whole new ReplicaSet up before the
    switch and takes nothing away (surge 100%, unavailable 0); a canary is paced by its
    `maxSurge`/`maxUnavailable`."""
    data: dict[str, Any] = {}
    if strategy_of(spec) == "blueGreen":
        data.update(max_surge="100%", max_unavailable=0)
    else:
        put(data, "max_surge", amount(spec, "strategy", "canary", "maxSurge"))
        put(data, "max_unavailable", amount(spec, "strategy", "canary", "maxUnavailable"))
    put(data, "min_ready_s", num(spec, "minReadySeconds"))
    put(data, "progress_deadline_s", num(spec, "progressDeadlineSeconds"))
    return build(Rollout, data)


def argo_strategy(obj: Mapping[str, Any]) -> ArgoRollout | None:
    """`ArgoRollout` of a Rollout manifest (None for any other kind). Only ALB traffic routing
    is modelled; a canary routed by another provider (Istio, nginx, ...) is an input the model
    cannot hold and is named as such."""
    if get(obj, "kind") != "Rollout":
        return None
    spec = get(obj, "spec")
    strategy = strategy_of(spec)
    body = get(spec, "strategy", strategy)
    data: dict[str, Any] = {"strategy": strategy}
    routing = get(body, "trafficRouting")
    if strategy == "canary" and routing is not None:
        providers = sorted(k for k in routing if k not in ("managedRoutes", "maxTrafficWeight"))
        if providers != ["alb"]:
            raise ExtractError(f"spec.strategy.canary.trafficRouting: {', '.join(providers) or 'none'}: only alb "
                               "is modelled")
        data["traffic_routing"] = "alb"
    put(data, "scale_down_delay_s", num(body, "scaleDownDelaySeconds"))
    put(data, "abort_scale_down_delay_s", num(body, "abortScaleDownDelaySeconds"))
    return build(ArgoRollout, data)


def alb_routing(obj: Mapping[str, Any]) -> tuple[str, str, Any] | None:
    """(Ingress name, the Service its backend names, servicePort) of a canary routed by the
    ALB: the Ingress's backend is the root Service (default: the stable Service) with port
    `use-annotation`; the controller writes the weighted forward action into the Ingress."""
    alb = get(obj, "spec", "strategy", "canary", "trafficRouting", "alb")
    if alb is None:
        return None
    stable = get(obj, "spec", "strategy", "canary", "stableService")
    root = get(alb, "rootService") or stable
    ingress = get(alb, "ingress")
    if not isinstance(ingress, str) or not isinstance(root, str):
        raise ExtractError("spec.strategy.canary.trafficRouting.alb: ingress and stableService must be named")
    return ingress, root, get(alb, "servicePort")
