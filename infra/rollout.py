"""An Argo Rollout (`argoproj.io/v1alpha1`) in place of a Deployment: the same pod template,
and the blue-green or canary strategy with every number from the model.

Blue-green switches the active Service (the one the TargetGroupBinding binds, so the target
group follows the switch) from the old ReplicaSet to the new one once it is available, and
scales the old one down `argo.scale_down_delay_s` later (`rollout-scale-down-outlasts-switch`);
the preview Service reaches the new pods before the switch.

A canary routed by the ALB (`argo.traffic_routing: alb`, Argo Rollouts' "AWS Load Balancer
Controller" traffic-management page) names a stable and a canary Service and the Ingress
`infra/ingress.py` renders; Argo writes the weighted forward action into that Ingress and, at
the end of the update, points the stable Service at the new ReplicaSet and scales the old one
down `scaleDownDelaySeconds` later (an aborted update's new one `abortScaleDownDelaySeconds`
later) — the same switch the rule and the simulation judge. The ReplicaSets are paced by the
model's `rollout.max_surge`/`max_unavailable` (the canary's `maxSurge`/`maxUnavailable`, what
`timing.extract.argo_rollout_pace` reads back).

Steps: none are emitted. Argo Rollouts' canary without `steps` mimics a rolling update, paced
by `maxSurge`/`maxUnavailable` as a Deployment's (its canary page, "Mimicking Rolling Update"):
the pace `replace_time`/`rollout_time` and the audit assume, ending in the one switch the timing
rules reason about. Weights and pauses in between would be numbers no rule reads, and a pause
without a duration stops every update until someone promotes it. A canary without traffic
routing (weighted by pod counts) is rendered the same way without Services or an Ingress of its
own: its pods sit behind the stack's own target group, as a Deployment's do.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from lockstep.timing.model import Service

API_VERSION = "argoproj.io/v1alpha1"
KIND = "Rollout"


def preview_name(svc: Service) -> str:
    return f"{svc.name}-preview"


def canary_name(svc: Service) -> str:
    return f"{svc.name}-canary"


def ingress_name(svc: Service) -> str:
    return svc.name


def routed_by_alb(svc: Service) -> bool:
    return svc.argo is not None and svc.argo.traffic_routing == "alb"


def strategy(svc: Service) -> dict[str, Any]:
    """`spec.strategy` of the Rollout. The stable Service is the service's own (`svc.name`),
    so the name every other resource refers to keeps meaning "the pods that serve"."""
    argo = svc.argo
    assert argo is not None
    delays = {"scaleDownDelaySeconds": argo.scale_down_delay_s,
              "abortScaleDownDelaySeconds": argo.abort_scale_down_delay_s}
    if argo.strategy == "blueGreen":
        return {"blueGreen": {"activeService": svc.name, "previewService": preview_name(svc),
                              "autoPromotionEnabled": True, **delays}}
    canary: dict[str, Any] = {"maxSurge": svc.rollout.max_surge, "maxUnavailable": svc.rollout.max_unavailable}
    if routed_by_alb(svc):
        # The Ingress's backend is the stable Service itself: no rootService (Argo then writes the
        # action named after stableService). servicePort is the Services' one port.
        canary.update(stableService=svc.name, canaryService=canary_name(svc),
                      trafficRouting={"alb": {"ingress": ingress_name(svc), "servicePort": svc.container_port}},
                      **delays)
    # A basic canary has no scale-down delay (Argo applies it only with traffic routing), so
    # none is written: the model's would be a number nothing reads.
    return {"canary": canary}


def spec(svc: Service, replicas: int | None, selector: dict[str, str],
         template: k8s.core.v1.PodTemplateSpecArgs) -> dict[str, Any]:
    out: dict[str, Any] = {
        "selector": {"matchLabels": selector}, "template": template,
        "minReadySeconds": svc.rollout.min_ready_s, "progressDeadlineSeconds": svc.rollout.progress_deadline_s,
        "strategy": strategy(svc),
    }
    if replicas is not None:
        out["replicas"] = replicas
    return out


def rollout(name: str, svc: Service, meta: k8s.meta.v1.ObjectMetaArgs, replicas: int | None,
            selector: dict[str, str], template: k8s.core.v1.PodTemplateSpecArgs,
            opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(f"{name}-rollout", api_version=API_VERSION, kind=KIND,
                                            metadata=meta, spec=spec(svc, replicas, selector, template), opts=opts)
