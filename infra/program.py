"""The Pulumi program: stack config → model (once) → components.

`main()` is what `pulumi up` runs (`infra/__main__.py`) and what `lockstep render` runs under
Pulumi's mock runtime (`infra.render.record`): one program, two engines. The model is
validated before the first resource is registered, so a broken stack creates nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from lockstep.infra.config import broker_url, load_stack, read_values
from lockstep.infra.failover import RegionalFailover, RegionalFailoverArgs
from lockstep.infra.heartbeat import HeartbeatService, HeartbeatServiceArgs
from lockstep.infra.namespaces import Namespaces, NamespacesArgs
from lockstep.infra.nodes import NodePools, NodePoolsArgs
from lockstep.infra.rollout import routed_by_alb
from lockstep.infra.target_group import TargetGroup, TargetGroupArgs
from lockstep.infra.workload import Workload, WorkloadArgs
from lockstep.timing.config import NAMESPACE
from lockstep.timing.model import Stack


@dataclass
class Built:
    namespaces: Namespaces
    target_groups: dict[str, TargetGroup]
    workloads: dict[str, Workload]
    heartbeat: HeartbeatService | None
    failover: RegionalFailover | None
    node_pools: NodePools | None = None


def build(stack: Stack, broker: pulumi.Output[str] | None) -> Built:
    """Every component of a validated stack. `broker` is the secret AMQP URL (required when
    the stack declares a heartbeat service)."""
    namespaces = Namespaces("namespaces", NamespacesArgs(stack))
    ns = namespaces.by_name
    watched = {spec.service for spec in stack.heartbeat_specs}
    target_groups: dict[str, TargetGroup] = {}
    workloads: dict[str, Workload] = {}
    for svc in stack.services:
        arn = None
        # A canary routed by the ALB: the controller makes its target groups from the Ingress.
        if svc.lb is not None and not routed_by_alb(svc):
            target_groups[svc.name] = TargetGroup(svc.name, TargetGroupArgs(svc.name, svc.lb))
            arn = target_groups[svc.name].arn
        workloads[svc.name] = Workload(svc.name, WorkloadArgs(
            service=svc, kubernetes_version=stack.kubernetes_version, namespace=ns[svc.namespace],
            target_group_arn=arn, observable=svc.name in watched))
    heartbeat = None
    if stack.heartbeat is not None:
        if broker is None:
            raise ValueError("a heartbeat service needs the broker URL secret")
        heartbeat = HeartbeatService(stack.heartbeat.name, HeartbeatServiceArgs(
            stack=stack, broker_url=broker, namespace=ns[stack.heartbeat.namespace],
            watched={n: ns[n] for n in ns}))
    failover = None
    if stack.failover is not None:
        entry = next(s for s in stack.services if s.name == stack.failover.entry_service)
        failover = RegionalFailover("failover", RegionalFailoverArgs(stack, ns[entry.namespace]))
    node_pools = None
    if stack.nodes is not None and stack.nodes.karpenter:
        node_pools = NodePools("nodepools", NodePoolsArgs(stack.nodes, pulumi.get_stack()))
    return Built(namespaces, target_groups, workloads, heartbeat, failover, node_pools)


def run() -> Built:
    """Read the stack config into the model and build it. Raises `timing.config.ConfigError`
    or `timing.invariants.InvariantErrors` before any resource is registered."""
    config = pulumi.Config(NAMESPACE)
    stack = load_stack(read_values(config))
    built = build(stack, broker_url(config, stack))
    pulumi.export("services", sorted(built.workloads))
    return built


def main() -> None:
    """`pulumi up`: a broken config stops the program with the model's findings, one per
    line, without a traceback."""
    from lockstep.timing.config import ConfigError
    from lockstep.timing.invariants import InvariantErrors

    try:
        run()
    except ConfigError as err:
        raise pulumi.RunError("invalid stack config:\n" + "\n".join(err.lines)) from None
    except InvariantErrors as err:
        raise pulumi.RunError("the timing model breaks invariants:\n"
                              + "\n".join(f.render() for f in err.findings)) from None
