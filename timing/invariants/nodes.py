"""Pods and nodes that go for other reasons than a rollout: evictions, autoscalers, spot and
the kubelet's node shutdown (issue 13; the relations and sources are in docs/INVARIANTS.md).

Stack-scope checks read `scene.nodes` (the declared node disruption sources, `timing.nodes`);
service-scope checks read only the service.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing import nodes as N
from lockstep.timing.findings import Term, Verdict, holds, judge
from lockstep.timing.findings import unknown as unknown_verdict
from lockstep.timing.invariants import kube
from lockstep.timing.invariants.heartbeat import _observe_delay, _specs
from lockstep.timing.lbkinds import KINDS

if TYPE_CHECKING:
    from lockstep.timing.context import Ctx, Scene
    from lockstep.timing.model import HeartbeatService, Nodes, Service


def _slack(v: Verdict) -> int:
    assert v.slack_s is not None  # judged verdicts always carry a slack
    return v.slack_s


def _tightest(found: list[Verdict]) -> list[Verdict]:
    """Of one service's verdicts over several budgets, the one that decides: a broken one with
    the least slack, else a skipped one, else the passing one with the least slack."""
    if not found:
        return []
    for outcome in ("broken", "skipped", "ok"):
        some = [v for v in found if v.outcome == outcome]
        if some:
            return [min(some, key=_slack)]
    raise AssertionError("a verdict is broken, skipped or ok")  # pragma: no mutate (unreachable)


def _spent(what: Term, lead: Term | None) -> Term:
    return what if lead is None else d.total(f"{what.label} + {lead.label}", what, lead)


def node_budget_covers_drain(scene: Scene, ctx: Ctx) -> list[Verdict]:
    """Every drained node removal the stack declares grants a pod at least drain + finish +
    margin (error), and no less than the pod's own grace period (warning: the node goes first).
    A service stating its own `shutdown.node_termination_budget_s` is judged by
    drain-fits-grace on that number instead."""
    # The warning's relation is what the controllers do: Cluster Autoscaler evicts with the
    # smaller of the pod's grace and its cap, Karpenter's terminationGracePeriod deletes a pod
    # early enough for its grace to end by the node's deadline and kills what is left then
    # (sources in `timing.limits` and `timing.model`).
    nodes = scene.nodes
    if nodes is None:
        return []
    paths = N.budgets(nodes)
    found: list[Verdict] = []
    # lockstep's own heartbeat service runs on the same nodes (the audit sees its Deployment)
    own = (scene.heartbeat,) if scene.heartbeat is not None else ()
    for svc in (*scene.services, *own):
        if svc.shutdown.node_termination_budget_s is not None or not paths:
            continue
        used = d.total("drain + finish", d.drain(svc), d.finish(svc))
        grace = d.field("grace", svc.shutdown, "grace_s", "shutdown.grace_s")
        errors, warnings = [], []
        for b in paths:
            left = _spent(used, b.lead)
            # a grant no field sets (the spot notice) is fixed: only the pod's side can move
            fixed = f"the {b.grant.label} is fixed" if not b.grant.fields else ""
            errors.append(judge(svc.name, left, "<=", b.grant,
                                f"shorten the drain and finish: {fixed}" if fixed else
                                f"raise {b.grant.source} to ≥{int(left.value) + ctx.margin_s}s or shorten the drain",
                                ctx.margin_s, service=svc.name, case="error"))
            warnings.append(judge(svc.name, _spent(grace, b.lead), "<=", b.grant,
                                  f"lower shutdown.grace_s to what the {b.grant.label} grants"
                                  + ("" if fixed else f", or raise {b.grant.source}"),
                                  service=svc.name, case="warning"))
            if b.forces and svc.pdb is not None:
                errors.append(_pdb_wait_fits(svc, b, ctx))
        found += _tightest(errors) + _tightest(warnings)
    return found


def _pdb_wait_fits(svc: Service | HeartbeatService, b: N.Budget, ctx: Ctx) -> Verdict:
    """A removal that `forces` (Karpenter's terminationGracePeriod) deletes a pod the PDB still
    holds when only the pod's grace is left of the node's: the wait for the previous pod's
    replacement (replace_time) and the grace must both fit in the budget, or the next node's
    pods go before any replacement is Ready (found by lockstep's own simulation)."""
    need = d.total("grace + replace_time", d.grace(svc), d.replace_time(svc))
    return judge(svc.name, need, "<=", b.grant,
                 f"raise {b.grant.source} to ≥{int(need.value) + ctx.margin_s}s: a PDB-held eviction waits "
                 "for the previous replacement", ctx.margin_s, service=svc.name, case="error")


def node_shutdown_drains_without_endpoints(scene: Scene, ctx: Ctx) -> list[Verdict]:
    """The kubelet's graceful node shutdown stops pods without deleting them: their endpoints
    stay ready, and new requests stop only once the LB's own health check fails
    (`timing.nodes.shutdown_unrouted`). So the drain must outlast that, and the shutdown must
    leave the last of those requests its finish (kubernetes #116965). Behind kube-proxy nothing
    takes the pod out before it has exited (the kubelet stops its probes), so there an undrained
    shutdown is broken whatever the numbers. Judged when nodes may shut down undrained (spot
    capacity no handler drains, or `nodes.undrained_shutdowns`) under the kubelet's shutdown."""
    nodes = scene.nodes
    if nodes is None or not N.shutdown_may_stop_pods(nodes):
        return []
    shutdown = N.kubelet_budget(nodes)
    maybe = N.undecided_trigger(nodes)
    found = []
    for svc in scene.services:
        if svc.lb is None:
            continue
        unrouted = N.shutdown_unrouted(svc)
        if unrouted is None:
            found.append(_kube_proxy_keeps_it(svc, nodes, maybe))
            continue
        need = d.total(f"{unrouted.label} + finish", unrouted, d.finish(svc))
        grace = d.field("grace", svc.shutdown, "grace_s", "shutdown.grace_s")
        limit = min((grace, shutdown), key=lambda t: int(t.value))
        drain = d.drain(svc)
        if maybe:  # whether the path exists is unknown: each verdict can only hold or be skipped
            limit = replace(limit, unknown=(*limit.unknown, *maybe))
            drain = replace(drain, unknown=(*drain.unknown, *maybe))
        fix = (f"raise nodes.kubelet shutdownGracePeriod (beyond the critical pods' share) and "
               f"shutdown.grace_s to ≥{int(need.value) + ctx.margin_s}s, or drain nodes before they shut down")
        found.append(judge(svc.name, need, "<=", limit, fix, ctx.margin_s, service=svc.name))
        found.append(judge(svc.name, drain, ">=", unrouted,
                           f"raise shutdown.drain_s to ≥{int(unrouted.value) + ctx.margin_s}s: the pod must "
                           "keep serving until the path stops sending", ctx.margin_s, service=svc.name))
    return found


def _kube_proxy_keeps_it(svc: Service, nodes: Nodes, maybe: tuple[str, ...]) -> Verdict:
    """Behind kube-proxy an undrained node shutdown leaves the pod in the endpoints until it has
    exited: broken, unless whether such shutdowns happen is itself unknown (`maybe`)."""
    lb = svc.lb
    assert lb is not None
    path = "externalTrafficPolicy Local" if lb.external_traffic_policy == "Local" else "kube-proxy"
    left = Term("pod leaves the endpoints", "after it has exited", "the kubelet stops its probes on a node shutdown",
                fields=("lb.target_type",))
    why = tuple(N.undrained(nodes))  # judged only when some field says nodes shut down undrained
    right = Term("required", "before it stops serving", "undrained shutdowns: " + ", ".join(why), fields=why)
    fix = (f"drain every node before it shuts down (Karpenter's interruption queue, aws-node-termination-handler, "
           f"an ASG lifecycle hook) and say so with nodes.undrained_shutdowns: false, or use IP targets "
           f"(lb.target_type: ip) so the LB's own health check takes the pod out: behind {path} a node "
           f"shutdown leaves it in the endpoints until it has exited")
    if maybe:
        return unknown_verdict(svc.name, left, "==", right, fix, maybe)
    return holds(svc.name, False, left, "==", right, fix, service=svc.name)


def eviction_waits_for_lb(svc: Service, ctx: Ctx) -> list[Verdict]:
    """An eviction through a PDB counts pods whose Ready condition is true; for IP targets only
    the LB controller's readiness gate keeps a replacement unready until its target is healthy
    (minReadySeconds does not hold an eviction back: aws-load-balancer-controller #1124)."""
    # Checked in the code: the disruption controller's countHealthyPods counts IsPodReady pods,
    # not the available check that minReadySeconds feeds.
    lb = svc.lb
    if lb is None or lb.target_type != "ip" or svc.pdb is None:
        return []
    left = Term("readiness gate", "none" if svc.readiness_gate is None else "set", "readiness_gate",
                fields=("readiness_gate",))
    right = Term("required", "a readiness gate that can pass", "pdb", fields=("pdb",))
    fix = "add a passable readiness gate: a PDB counts Ready pods, whose targets may still be initial"
    if svc.readiness_gate is None:
        return [holds(svc.name, False, left, "==", right, fix)]
    [gate] = kube.readiness_gate_can_pass(svc, ctx)  # pragma: no mutate (the gate rule reads no ctx)
    if gate.outcome == "skipped":
        return [unknown_verdict(svc.name, left, "==", right, fix, gate.needs)]
    return [holds(svc.name, gate.outcome == "ok", left, "==", right, fix)]


def eviction_leaves_a_target(svc: Service, ctx: Ctx) -> list[Verdict]:
    """A node drain evicts a pod without a PDB at once: a single replica behind an LB leaves it
    without a target for a whole pod_ready (found by lockstep's own simulation). A PDB that keeps
    no pod (minAvailable 0, or maxUnavailable at least the replicas) lets a drain of every node
    evict all of them at once. Otherwise with a PDB, pdb-needs-replicas and pdb-allows-eviction
    judge the count; removal by health check only, health-check-drain-needs-peers (the same
    count, one finding)."""
    lb = svc.lb
    if lb is None:
        return []
    keep = _pdb_keeps(svc)
    if keep is not None:
        src, unknown = d.replica_field(svc), d.count_unknown(svc)
        m = svc.pdb.min_available
        if unknown and isinstance(m, int):  # min(count, m) ≥ 1 on any count ≥ 1 iff m ≥ 1: decided
            keep, unknown = min(1, m), ()
        elif unknown:  # a share of the count, or what maxUnavailable leaves: its least is 0
            keep = 0
        allowed, count = kube.pdb_allowed_expr(svc), d.replica_expr(svc)  # pragma: no mutate
        e = None if unknown or allowed is None or count is None else E.sub(count, allowed)  # pragma: no mutate
        kept = Term("pods the PDB keeps", keep, f"{src} - allowed by pdb", unknown, "", (src, "pdb"), e)
        return [judge(svc.name, kept, ">=", d.fixed("kept through a drain", 1, unit=""),
                      "set pdb.min_available ≥ 1 (or pdb.max_unavailable below the replicas)")]
    if set(lb.removal) == {"health_check"}:
        return []
    src = d.replica_field(svc)
    return [judge(svc.name, Term("replicas", d.replicas(svc), src, (), "", (src,), d.replica_expr(svc)), ">=",  # pragma: no mutate
                  d.fixed("targets left by a drain", 2, unit=""),
                  "run ≥2 replicas with a PDB (or accept it for a singleton)")]


def etp_local_drain_covers_node_check(svc: Service, ctx: Ctx) -> list[Verdict]:
    """`externalTrafficPolicy: Local` on instance targets: the LB keeps sending to a node until
    its healthCheckNodePort fails. kube-proxy fails it once the node's local endpoints are all
    terminating, while it still forwards to them if they are ready (KEP-1669, Proxy Terminating
    Endpoints; kubernetes #73362). So the drain must cover the endpoint update reaching the node
    and the LB's detection of the failed node check."""
    lb = svc.lb
    if lb is None or lb.target_type != "instance" or lb.external_traffic_policy != "Local":
        return []
    need = d.total("node check", d.source_field("lb.endpoint_propagation_s", lb, "endpoint_propagation_s"),
                   d.detection(lb))
    return [judge(svc.name, d.drain(svc), ">=", need,
                  f"raise the drain to ≥{int(need.value) + ctx.margin_s}s or check the node faster", ctx.margin_s)]


def nlb_connections_survive_removal(svc: Service, ctx: Ctx) -> list[Verdict]:
    """NLB target groups: a target removed by its health check has its connections reset unless
    `target_health_state.unhealthy.connection_termination.enabled` is false (API default true),
    and then they live for `unhealthy.draining_interval_seconds` (default 0), which must cover
    finish. With `deregistration_delay.connection_termination.enabled` (API default false for
    TCP/TLS groups) the NLB closes a deregistered target's connections when the delay ends, which
    must not be after the pod is gone (delay ≤ grace). (ELBv2 API reference, target group
    attributes.)"""
    lb = svc.lb
    if lb is None or not KINDS[lb.kind].connection_termination:
        return []
    found = []
    if "health_check" in lb.removal:
        if lb.unhealthy_connection_termination:
            flag = Term("unhealthy connection termination", "on", "lb.unhealthy_connection_termination",
                        fields=("lb.unhealthy_connection_termination",))
            found.append(holds(svc.name, False, flag, "==", Term("required", "off", ""),
                               "set lb.unhealthy_connection_termination false and a draining interval ≥ finish"))
        else:
            found.append(judge(svc.name, d.field("unhealthy draining", lb, "unhealthy_draining_interval_s",
                                                 "lb.unhealthy_draining_interval_s"), ">=", d.finish(svc),
                               "raise lb.unhealthy_draining_interval_s to the finish time"))
    if "deregistration" in lb.removal and lb.deregistration_connection_termination:
        found.append(judge(svc.name, d.field("deregistration_delay", lb, "deregistration_delay_s",
                                             "lb.deregistration_delay_s"), "<=", d.grace(svc),
                           "lower lb.deregistration_delay_s to the grace period: closed flows must not outlive the pod"))
    return found


def _pdb_keeps(svc: Service) -> int | None:
    """Pods a PDB keeps available (None: no PDB)."""
    if svc.pdb is None:
        return None
    return d.replicas(svc) - kube._pdb_allowed(svc)


def heartbeat_rides_out_rollout(scene: Scene, ctx: Ctx) -> list[Verdict]:
    """A Deployment rollout that takes pods down below what the heartbeat requires (the PDB's
    minimum, else every replica) keeps the service unhealthy from its first wave to its last:
    the loss time must cover the whole rollout, not one replacement (found by lockstep's own
    simulation)."""
    hb = scene.heartbeat
    if hb is None:
        return []
    found = []
    for spec, svc in _specs(scene):
        if svc.kind != "Deployment":
            continue  # a StatefulSet step is judged by heartbeat-rides-out-pod-replacement
        n, keep = d.replicas(svc), _pdb_keeps(svc)
        required = n if keep is None else min(n, max(1, keep))
        if n - d.unavailable_pods(svc) >= required:
            continue
        need = d.total("rollout_time + observe", d.rollout_time(svc), _observe_delay(hb))
        found.append(judge(f"{spec.name} ({svc.name})", d.field("loss_time", spec, "loss_time_s", "loss_time_s"),
                           ">=", need, f"raise loss_time_s to ≥{int(need.value) + ctx.margin_s}s, surge instead "
                           "(rollout.max_unavailable: 0) or keep pods with a PDB", ctx.margin_s, service=svc.name))
    return found
