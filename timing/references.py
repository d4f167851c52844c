"""Structural checks of a stack: names are unique and every reference resolves.

These are input errors (exit 2), not timing findings: a spec watching a service that does
not exist cannot be judged at all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.timing.workloads import WORKLOAD_KINDS

if TYPE_CHECKING:
    from lockstep.timing.model import Service, Stack


def reference_errors(stack: Stack) -> list[str]:
    problems: list[str] = []
    names = [s.name for s in stack.services]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        problems.append(f"services: duplicate name(s) {', '.join(dupes)}")
    known = set(names)
    specs = [s.name for s in stack.heartbeat_specs]
    for dupe in sorted({n for n in specs if specs.count(n) > 1}):
        problems.append(f"heartbeat_specs: duplicate name {dupe}")
    for i, spec in enumerate(stack.heartbeat_specs):
        if spec.service not in known:
            problems.append(f"heartbeat_specs.{i}.service: unknown service {spec.service!r} "
                            f"(known: {', '.join(sorted(known))})")
    by_name = {s.name: s for s in stack.services}
    for i, spec in enumerate(stack.heartbeat_specs):
        watched = by_name.get(spec.service)
        if watched is not None and not WORKLOAD_KINDS[watched.kind].heartbeat_watches:
            problems.append(f"heartbeat_specs.{i}.service: {spec.service} is a {watched.kind}; the heartbeat "
                            "service watches Deployments and StatefulSets")
    # Unknown (null) only where resources cannot say it; a stack config states its own budget.
    for i, spec in enumerate(stack.heartbeat_specs):
        if spec.max_outage_s is None:
            problems.append(f"heartbeat_specs.{i}.max_outage_s: required (the agreed outage budget)")
    if stack.heartbeat is not None and stack.heartbeat.rollout.update_strategy != "RollingUpdate":
        problems.append("heartbeat.rollout.update_strategy: the heartbeat service is a Deployment: RollingUpdate only")
    if stack.heartbeat is not None and stack.heartbeat.warmup_s is None:
        problems.append("heartbeat.warmup_s: required (start to first successful readiness check)")
    if stack.heartbeat_specs and stack.heartbeat is None:
        problems.append("heartbeat: heartbeat_specs are set but no heartbeat service is declared")
    if stack.watchdog is not None:
        for i, watched in enumerate(stack.watchdog.watches):
            if watched not in known:
                problems.append(f"watchdog.watches.{i}: unknown service {watched!r}")
    if stack.failover is not None and stack.failover.entry_service not in known:
        problems.append(f"failover.entry_service: unknown service {stack.failover.entry_service!r}")
    for i, svc in enumerate(stack.services):
        # (an HPA on a StatefulSet is allowed: HPAs scale StatefulSets too)
        if svc.readiness_gate is not None and svc.lb is None:
            problems.append(f"services.{i}.readiness_gate: needs an lb (the gate reports target health)")
        # What audit reads from a preStop command it cannot time; a stack deploys a sleep.
        if svc.shutdown.drain_s is None:
            problems.append(f"services.{i}.shutdown.drain_s: required (the preStop drain a stack deploys)")
        if svc.shutdown.prestop == "command":
            problems.append(f"services.{i}.shutdown.prestop: 'command' is what audit reads from a preStop that "
                            "is not a sleep; a stack deploys sleep, exec or none")
        if svc.argo is not None and svc.kind != "Deployment":
            problems.append(f"services.{i}.argo: an Argo Rollout rolls ReplicaSets: kind must be Deployment")
        if svc.argo is not None and svc.argo.strategy == "blueGreen" and (
                svc.rollout.max_surge != "100%" or svc.rollout.max_unavailable not in (0, "0%")):
            problems.append(f"services.{i}.rollout: a blue-green Rollout brings the whole new ReplicaSet up beside "
                            "the old one: max_surge '100%', max_unavailable 0")
        if svc.argo is not None and svc.argo.traffic_routing == "alb":
            problems += canary_alb_errors(i, svc)
    return problems


def canary_alb_errors(i: int, svc: Service) -> list[str]:
    """A canary routed by the ALB needs an ALB in the model: Argo's `trafficRouting.alb` sets
    weights on the listener rule of the ALB the controller makes from the Ingress."""
    from lockstep.timing.lbkinds import ALB, KINDS

    lb = svc.lb
    if lb is None or KINDS[lb.kind] is not ALB:
        return [f"services.{i}.lb.kind: a canary routed by the ALB (argo.traffic_routing alb) needs lb.kind alb "
                f"(got {'no lb' if lb is None else lb.kind})"]
    return []
