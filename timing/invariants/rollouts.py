"""Argo Rollouts' switch and readiness behind a load balancer (Argo Rollouts docs: blue-green,
canary with traffic routing, scaledown-aborted-rs; Kubernetes docs: readiness probes).

Blue-green switches the active Service's selector to the new ReplicaSet; a canary routed by
the ALB moves the listener's weights and switches the stable Service. Either way the old
ReplicaSet keeps receiving traffic until the switch has propagated: kube-proxy and the load
balancer controller learn the new endpoints (`lb.endpoint_propagation_s`), and an IP target
group then deregisters the old pods (`lb.deregistration_propagation_s`). The old ReplicaSet is
scaled down `scaleDownDelaySeconds` after the switch; an aborted update's new ReplicaSet
`abortScaleDownDelaySeconds` after the abort (0: never). Each delay must outlast the switch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import limits as L
from lockstep.timing.findings import Term, Verdict, holds, judge

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import Service


SWITCH = "switch"  # the label of the switch time on every path


def switch_time(svc: Service) -> Term:
    """From the Service switch to the last request the old pods get: the endpoints change
    propagates, then an IP target group deregisters the old pods. Without a load balancer,
    kube-proxy's propagation alone (the documented default)."""
    lb = svc.lb
    if lb is None:
        return d.fixed(SWITCH, L.ENDPOINT_PROPAGATION_DEFAULT, "endpoint propagation (default)")
    ends = d.source_field("lb.endpoint_propagation_s", lb, "endpoint_propagation_s")
    if lb.target_type != "ip":
        return d.relabel(ends, SWITCH)
    return d.total(SWITCH, ends, d.lb_field(lb, "lb.deregistration_propagation_s", lb, "deregistration_propagation_s"))


def rollout_scale_down_outlasts_switch(svc: Service, ctx: Ctx) -> list[Verdict]:
    argo = svc.argo
    if argo is None or (argo.strategy == "canary" and argo.traffic_routing is None):
        return []  # a basic canary is weighted by pod counts: old pods leave as a Deployment's do
    switch = switch_time(svc)
    need = int(switch.value) + ctx.margin_s
    found = [judge(svc.name, d.field("scale_down_delay", argo, "scale_down_delay_s", "argo.scale_down_delay_s"),
                   ">=", switch, f"raise scaleDownDelaySeconds (argo.scale_down_delay_s) to ≥{need}s", ctx.margin_s)]
    if argo.abort_scale_down_delay_s != 0:  # 0: the aborted ReplicaSet is kept, never scaled down
        found.append(judge(svc.name, d.field("abort_scale_down_delay", argo, "abort_scale_down_delay_s",
                                             "argo.abort_scale_down_delay_s"),
                           ">=", switch, f"raise abortScaleDownDelaySeconds (argo.abort_scale_down_delay_s) to "
                           f"≥{need}s, or 0 to keep the aborted ReplicaSet", ctx.margin_s))
    return found


def readiness_probe_behind_lb(svc: Service, ctx: Ctx) -> list[Verdict]:
    if svc.lb is None:
        return []
    probe = svc.probes.readiness
    return [holds(svc.name, probe is not None,
                  Term("readiness probe", "absent" if probe is None else "set", "probes.readiness",
                       fields=("probes.readiness",)), "==",
                  Term("behind a load balancer", "required", ""),
                  "add a readiness probe: without one a pod is Ready, and routed to, as soon as it starts")]
