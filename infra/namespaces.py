"""`Namespaces`: the Kubernetes namespaces the stack's workloads live in.

A namespace gets the controller's readiness-gate label when one of its services relies on a
gate: the LBC's webhook injects gates only into pods of labelled namespaces, and a gate that
is never injected protects nothing (`readiness-gate-can-pass`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from lockstep.infra import kube
from lockstep.timing.model import Stack

TYPE = "lockstep:infra:Namespaces"
GATE_LABEL = ("elbv2.k8s.aws/pod-readiness-gate-inject", "enabled")


@dataclass(frozen=True)
class NamespacesArgs:
    stack: Stack


def gated_namespaces(stack: Stack) -> set[str]:
    return {s.namespace for s in stack.services
            if s.readiness_gate is not None and s.readiness_gate.namespace_labelled}


def used_namespaces(stack: Stack) -> list[str]:
    """Every namespace a component creates objects in, in first-use order."""
    used = [s.namespace for s in stack.services]
    if stack.heartbeat is not None:
        used.append(stack.heartbeat.namespace)
    return list(dict.fromkeys(used))


class Namespaces(pulumi.ComponentResource):
    """Outputs: `by_name`, the Namespace resource of every namespace the stack uses."""

    by_name: dict[str, k8s.core.v1.Namespace]

    def __init__(self, name: str, args: NamespacesArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        gated = gated_namespaces(args.stack)
        self.by_name = {
            ns: k8s.core.v1.Namespace(
                f"{name}-{ns}",
                metadata=kube.metadata(ns, None, {GATE_LABEL[0]: GATE_LABEL[1]} if ns in gated else None),
                opts=pulumi.ResourceOptions(parent=self))
            for ns in used_namespaces(args.stack)
        }
        self.register_outputs({"namespaces": sorted(self.by_name)})
