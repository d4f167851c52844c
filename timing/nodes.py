"""What the stack's node disruption sources grant a pod (issue 13), each written once.

A node goes away in two ways. *Drained*: something evicts its pods first (Cluster Autoscaler,
Karpenter, a spot handler, aws-node-termination-handler on an ASG lifecycle hook) and gives
each pod at most its own budget before the node is deleted. *Undrained*: the instance shuts
down with no drain in front (spot capacity that no handler watches: EC2 reclaims it when the
two-minute notice runs out, and without Karpenter's interruption queue or a handler nothing
acts on the notice; or whatever else stops a node the platform does not drain first,
`Nodes.undrained_shutdowns`) and only the kubelet's graceful node shutdown stops the pods; they
get no deletion, so their endpoints stay ready (kubernetes #116965, open).

Rules (`timing.invariants.nodes`) and the simulation's spec (`timing.sim.spec`) read these.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing import limits as L
from lockstep.timing.derived import field, fixed, source_field
from lockstep.timing.findings import Term

if TYPE_CHECKING:
    from lockstep.timing.model import Nodes, Service, TerminationHandler


@dataclass(frozen=True, slots=True)
class Budget:
    """One drained removal path: the time it grants (`grant`), what it spends before the drain
    starts (`lead`: a spot handler's reaction to the notice, or None), and whether it `forces`
    the pods a PDB holds."""

    grant: Term
    lead: Term | None = None
    # The removal deletes what the PDB still holds when its time is up (Karpenter's
    # terminationGracePeriod), so a PDB-held eviction must fit in it too.
    forces: bool = False


# The sources an input may leave unstated (`Nodes.unknown`, set by the audit's linker).
KUBELET = "nodes.kubelet"
QUEUE = "nodes.karpenter.interruption_queue"
UNDRAINED = "nodes.undrained_shutdowns"


def spot_pools(nodes: Nodes) -> list[int]:
    """Indices of the Karpenter NodePools that may launch spot capacity."""
    return [i for i, p in enumerate(nodes.karpenter) if "spot" in p.capacity_types]


def _spot_drained_by_karpenter(nodes: Nodes, i: int) -> bool:
    # Karpenter acts on spot notices only with settings.interruptionQueue set; a termination
    # handler (IMDS on every node, or a queue fed by EventBridge) drains any instance's notice.
    return nodes.karpenter[i].interruption_queue or nodes.termination_handler is not None


def _spot_delaying_handler(nodes: Nodes) -> TerminationHandler | None:
    """aws-node-termination-handler in IMDS mode that drains some spot capacity (node-group spot,
    or a NodePool without Karpenter's queue) with a --node-termination-grace-period under the
    notice: it schedules the drain at the interruption time minus that period, so the pods get
    only the period (the handler's interruption event store, TimeUntilDrain; see `limits`)."""
    handler = nodes.termination_handler
    if handler is None or handler.mode != "imds" or handler.node_termination_grace_period_s >= L.SPOT_NOTICE_S:
        return None
    if nodes.asg_spot or any(not nodes.karpenter[i].interruption_queue for i in spot_pools(nodes)):
        return handler
    return None


def undrained_spot(nodes: Nodes) -> list[str]:
    """The spot capacity no handler drains on its interruption notice, by the field that says so."""
    found = [QUEUE for i in spot_pools(nodes)
             if not _spot_drained_by_karpenter(nodes, i)]
    if nodes.asg_spot and nodes.termination_handler is None:
        found.append("nodes.termination_handler")
    return found


def budgets(nodes: Nodes) -> list[Budget]:
    """Every drained removal path the stack declares, with what it grants a pod."""
    out = []
    if nodes.cluster_autoscaler is not None:
        out.append(Budget(field("cluster autoscaler", nodes.cluster_autoscaler, "max_graceful_termination_s",
                                "nodes.cluster_autoscaler.max_graceful_termination_s")))
    for i, pool in enumerate(nodes.karpenter):
        if pool.termination_grace_period_s is not None:
            out.append(Budget(field(f"nodepool {pool.name}", pool, "termination_grace_period_s",
                                    "nodes.karpenter.termination_grace_period_s"), forces=True))
    drained_spot = (any(_spot_drained_by_karpenter(nodes, i) for i in spot_pools(nodes))
                    or (nodes.asg_spot and nodes.termination_handler is not None))
    if drained_spot:
        notice = "spot notice"  # shown by its label: one literal for label and source
        out.append(Budget(fixed(notice, L.SPOT_NOTICE_S, notice),
                          field("spot reaction", nodes, "spot_reaction_s", "nodes.spot_reaction_s")))
    handler = nodes.termination_handler
    delaying = _spot_delaying_handler(nodes)
    if delaying is not None:
        out.append(Budget(field("handler node grace", delaying, "node_termination_grace_period_s",
                                "nodes.termination_handler.node_termination_grace_period_s")))
    if handler is not None and handler.pod_termination_grace_period_s is not None:
        out.append(Budget(field("handler pod grace", handler, "pod_termination_grace_period_s",
                                "nodes.termination_handler.pod_termination_grace_period_s")))
    if nodes.asg_lifecycle_hook is not None:
        out.append(Budget(field("lifecycle hook", nodes.asg_lifecycle_hook, "heartbeat_timeout_s",
                                "nodes.asg_lifecycle_hook.heartbeat_timeout_s")))
    return out


def kubelet_budget(nodes: Nodes) -> Term:
    """What the kubelet's graceful shutdown leaves ordinary pods: shutdownGracePeriod minus the
    part reserved for critical pods; no kubelet configuration is shutdownGracePeriod 0 (off)."""
    # From the kubelet's code (pkg/kubelet/nodeshutdown, migrateConfig and killPods): a
    # shutdownGracePeriod of 0 builds no shutdown groups at all; otherwise ordinary pods form one
    # group with shutdownGracePeriod − shutdownGracePeriodCriticalPods, and each is killed with
    # the smaller of that and its own terminationGracePeriodSeconds. A critical share of 0 is
    # accepted (the docs ask for both non-zero; the code, which wins, gives ordinary pods all).
    k = nodes.kubelet
    if KUBELET in nodes.unknown:
        return Term("kubelet shutdown", 0, KUBELET, (KUBELET,), fields=(KUBELET,))
    if k is None:
        return Term("kubelet shutdown", 0, "nodes.kubelet unset: no graceful node shutdown", fields=("nodes.kubelet",))
    total = source_field("nodes.kubelet.shutdown_grace_period_s", k, "shutdown_grace_period_s")
    critical = source_field("nodes.kubelet.shutdown_grace_period_critical_pods_s",
                            k, "shutdown_grace_period_critical_pods_s")
    e = None if total.expr is None or critical.expr is None else E.sub(total.expr, critical.expr)  # pragma: no mutate
    return Term("kubelet shutdown", int(total.value) - int(critical.value),
                f"{total.source} {total.value} - {critical.source} {critical.value}",
                fields=(*total.fields, *critical.fields), expr=e)  # pragma: no mutate


def node_budget_s(svc: Service, nodes: Nodes | None) -> int | None:
    """The seconds a node removal grants this service's pods: the service's own
    `shutdown.node_termination_budget_s` when stated, else the smallest a declared source
    grants (a spot handler's unknown reaction counted as 0), else None (no budget)."""
    own = svc.shutdown.node_termination_budget_s
    if own is not None or nodes is None:
        return own
    granted = [int(b.grant.value) - (int(b.lead.value) if b.lead is not None else 0) for b in budgets(nodes)]
    return min(granted) if granted else None


def shutdown_unrouted(svc: Service) -> Term | None:
    """How long after the kubelet's node shutdown signals a pod (no deletion: its endpoint stays
    ready) new requests still reach it, worst case: the LB's own health check, which the app
    fails from SIGTERM on. None: nothing takes the pod out before it has exited — every path
    through kube-proxy (instance targets removed by endpoints, `externalTrafficPolicy` Cluster or
    Local), because there only the endpoint's readiness decides, and it stays true.

    From the kubelet's code: its node-shutdown manager removes the pod's probe workers before it
    kills the pod (kubernetes #105215), and a container with no readiness worker keeps the ready
    status it last had (kubernetes #105780, #116965, both open); the node lifecycle controller
    marks a node's pods unready only when the node's Ready goes Unknown, not when the kubelet
    itself reports it False for the shutdown (kubernetes #109998, open). So kube-proxy — and,
    for `Local`, its healthCheckNodePort, which counts the node's ready endpoints — keeps sending
    to the pod until it has exited, whatever its drain."""
    lb = svc.lb
    assert lb is not None  # judged for services behind an LB
    if lb.target_type == "instance" and (lb.external_traffic_policy == "Local" or "endpoints" in lb.removal):
        return None
    return replace(d.detection(lb), label="lb detection")


def undrained(nodes: Nodes) -> list[str]:
    """The fields that say some node shuts down with no drain in front: spot capacity no handler
    drains, and `nodes.undrained_shutdowns` (the platform's other shutdowns)."""
    return [*undrained_spot(nodes), *((UNDRAINED,) if nodes.undrained_shutdowns else ())]


def _undrained_under_kubelet(nodes: Nodes) -> bool:
    """Nodes may shut down undrained (`nodes.undrained_shutdowns`) where the kubelet's shutdown
    is configured or no input says whether it is."""
    return nodes.undrained_shutdowns and (nodes.kubelet is not None or KUBELET in nodes.unknown)


def shutdown_may_stop_pods(nodes: Nodes) -> bool:
    """The kubelet's graceful shutdown may be what stops pods here: spot capacity runs that no
    handler drains, or nodes may shut down undrained (`nodes.undrained_shutdowns`) where the
    kubelet's shutdown is configured or no input says whether it is. (Undrained with no graceful
    shutdown at all, a node's pods die with it: a crash, not this.)"""
    return bool(undrained_spot(nodes)) or _undrained_under_kubelet(nodes)


def undecided_trigger(nodes: Nodes) -> tuple[str, ...]:
    """What decides whether undrained shutdowns happen at all, when only an unstated source
    (the Karpenter controller's interruption queue) says spot nodes go undrained."""
    if _undrained_under_kubelet(nodes):
        return ()
    found = undrained_spot(nodes)
    return (QUEUE,) if found and QUEUE in nodes.unknown and set(found) == {QUEUE} else ()
