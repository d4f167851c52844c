"""From the stack's resources to the model pieces the invariants judge.

`timing.extract` reads one resource at a time; this module finds which resources belong
together, the way the cluster and the AWS Load Balancer Controller do:

    workload ──(pod labels selected by)──► Service ◄──(serviceRef)── TargetGroupBinding
    TargetGroupBinding ──(targetGroupARN or a dependency)──► TargetGroup
    TargetGroup ◄──(forwarded to by)── Listener / ListenerRule   (attached ⇒ can report healthy)
    PodDisruptionBudget ──(selector, else the workload's name)──► workload
    HorizontalPodAutoscaler ──(scaleTargetRef)──► workload
    Namespace label elbv2.k8s.aws/pod-readiness-gate-inject=enabled ⇒ readiness gate

A link is followed by value when the value is known and by Pulumi dependency otherwise
(during a preview a new target group's ARN is not known yet, but the binding depends on it).
Only plain data flows through here, so tests build resources by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from timing import extract as x
from timing.heartbeat_config import CONFIGMAP_KEY
from timing.model import LoadBalancer, ReadinessGate, Service

from policies.settings import Settings

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
STATEFULSET = "kubernetes:apps/v1:StatefulSet"
WORKLOADS = (DEPLOYMENT, STATEFULSET)
K8S_SERVICE = "kubernetes:core/v1:Service"
NAMESPACE = "kubernetes:core/v1:Namespace"
CONFIGMAP = "kubernetes:core/v1:ConfigMap"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
HPA = "kubernetes:autoscaling/v2:HorizontalPodAutoscaler"
TGB = "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding"
TARGET_GROUPS = ("aws:lb/targetGroup:TargetGroup", "aws:alb/targetGroup:TargetGroup")
LISTENERS = ("aws:lb/listener:Listener", "aws:alb/listener:Listener",
             "aws:lb/listenerRule:ListenerRule", "aws:alb/listenerRule:ListenerRule")
R53_CHECK = "aws:route53/healthCheck:HealthCheck"
R53_RECORD = "aws:route53/record:Record"
GATE_LABEL = ("elbv2.k8s.aws/pod-readiness-gate-inject", "enabled")
GATE_CONDITION = "target-health.elbv2.k8s.aws/"


@dataclass(frozen=True)
class Res:
    """A resource as policies see it: type, properties, URN, name and the URNs it depends on."""

    type: str
    props: Mapping[str, Any]
    urn: str
    name: str = ""
    deps: tuple[str, ...] = ()

    @property
    def namespace(self) -> str:
        return x.get(self.props, "metadata", "namespace") or "default"

    @property
    def meta_name(self) -> str:
        return str(x.get(self.props, "metadata", "name") or self.name)


def from_policy_resources(resources: Sequence[Any]) -> list[Res]:
    """`pulumi_policy.PolicyResource`s (anything with the same attributes) → `Res`."""
    return [Res(r.resource_type, r.props, r.urn, r.name,
                tuple(d.urn for d in (r.dependencies or []))) for r in resources]


@dataclass(frozen=True)
class Bound:
    """A workload assembled with everything bound to it."""

    service: Service
    urn: str
    namespace: str


@dataclass
class Unreadable:
    """Resources `timing.extract` could not read, with the reason (reported, never guessed)."""

    problems: list[tuple[str, str]] = field(default_factory=list)


def of_type(resources: Sequence[Res], *types: str) -> list[Res]:
    return [r for r in resources if r.type in types]


def pod_labels(workload: Res) -> dict[str, Any]:
    return dict(x.get(workload.props, "spec", "template", "metadata", "labels") or {})


def known(obj: Any, *path: str) -> Any:
    """The value at `path`, or None while a preview cannot know it (a new resource's ARN)."""
    try:
        return x.get(obj, *path)
    except UnknownValueError:
        return None


def linked(source: Res, value: Any, target: Res) -> bool:
    """`source` names `target` by ARN (when both are known) or depends on it."""
    arn = known(target.props, "arn")
    return (arn is not None and value == arn) or target.urn in source.deps


def listener_arn(tg: Res, resources: Sequence[Res]) -> str | None:
    """The listener (or the listener a rule belongs to) that forwards to `tg`; None: unattached."""
    for lis in of_type(resources, *LISTENERS):
        actions = x.items(x.get(lis.props, "actions")) + x.items(x.get(lis.props, "defaultActions"))
        if any(linked(lis, known(a, "targetGroupArn"), tg) for a in actions):
            return known(lis.props, "listenerArn") or known(lis.props, "loadBalancerArn") or lis.urn
    return None


def load_balancer(tg: Res, resources: Sequence[Res], settings: Settings) -> LoadBalancer:
    return x.target_group(tg.props, attach_to_arn=listener_arn(tg, resources),
                          idle_timeout_s=settings.alb_idle_timeout_s,
                          deregistration_propagation_s=settings.deregistration_propagation_s,
                          registration_propagation_s=settings.registration_propagation_s)


def services_selecting(workload: Res, resources: Sequence[Res]) -> list[Res]:
    labels = pod_labels(workload)
    return [s for s in of_type(resources, K8S_SERVICE) if s.namespace == workload.namespace
            and x.get(s.props, "spec", "selector") and x.selects({"matchLabels": s.props["spec"]["selector"]}, labels)]


def bindings_for(services: Sequence[Res], resources: Sequence[Res]) -> list[Res]:
    names = {(s.namespace, s.meta_name) for s in services}
    return [b for b in of_type(resources, TGB)
            if (b.namespace, str(x.get(b.props, "spec", "serviceRef", "name"))) in names]


def target_group_of(binding: Res, resources: Sequence[Res]) -> Res | None:
    arn = known(binding.props, "spec", "targetGroupARN")
    return next((tg for tg in of_type(resources, *TARGET_GROUPS) if linked(binding, arn, tg)), None)


def namespace_labelled(namespace: str, resources: Sequence[Res]) -> bool:
    for ns in of_type(resources, NAMESPACE):
        if ns.meta_name == namespace:
            return (x.get(ns.props, "metadata", "labels") or {}).get(GATE_LABEL[0]) == GATE_LABEL[1]
    return False


def declares_gate(workload: Res) -> bool:
    gates = x.items(x.get(workload.props, "spec", "template", "spec", "readinessGates"))
    return any(str(x.get(g, "conditionType") or "").startswith(GATE_CONDITION) for g in gates)


def readiness_gate(workload: Res, lb: LoadBalancer | None, linked_to: Sequence[Res],
                   resources: Sequence[Res]) -> ReadinessGate | None:
    """The controller injects a gate into pods of a labelled namespace whose Service is bound
    to IP targets, and only into pods created after the binding exists."""
    labelled = namespace_labelled(workload.namespace, resources)
    relied_on = declares_gate(workload) or (labelled and lb is not None and lb.target_type == "ip")
    if not relied_on:
        return None
    after = bool(linked_to) and all(r.urn in workload.deps for r in linked_to)
    return ReadinessGate(namespace_labelled=labelled, injected_after_binding=after)


def pdb_for(workload: Res, resources: Sequence[Res]) -> Res | None:
    """The PDB selecting the workload's pods; else one named like the workload (whose
    selector then fails `pdb-selects-workload`)."""
    same_ns = [p for p in of_type(resources, PDB) if p.namespace == workload.namespace]
    labels = pod_labels(workload)
    chosen = [p for p in same_ns if x.selects(x.get(p.props, "spec", "selector"), labels)]
    chosen = chosen or [p for p in same_ns if p.meta_name == workload.meta_name]
    return chosen[0] if chosen else None


def hpa_for(workload: Res, resources: Sequence[Res]) -> Res | None:
    kind = x.get(workload.props, "kind") or workload.type.rsplit(":", 1)[-1]
    return next((h for h in of_type(resources, HPA) if h.namespace == workload.namespace
                 and x.hpa_target(h.props) == (kind, workload.meta_name)), None)


def with_kind(workload: Res) -> Mapping[str, Any]:
    """Kubernetes inputs carry `kind`; a hand-written resource may not."""
    if x.get(workload.props, "kind"):
        return workload.props
    return {**workload.props, "kind": workload.type.rsplit(":", 1)[-1]}


def bind(workload: Res, resources: Sequence[Res], settings: Settings) -> Bound:
    services = services_selecting(workload, resources)
    bindings = bindings_for(services, resources)
    tg = target_group_of(bindings[0], resources) if bindings else None
    lb = load_balancer(tg, resources, settings) if tg is not None else None
    pdb_res, hpa_res = pdb_for(workload, resources), hpa_for(workload, resources)
    svc = x.workload(with_kind(workload), lb=lb,
                     pdb=x.pdb(pdb_res.props) if pdb_res is not None else None,
                     hpa=x.hpa(hpa_res.props) if hpa_res is not None else None,
                     readiness_gate=readiness_gate(workload, lb, [*services, *bindings], resources))
    return Bound(svc, workload.urn, workload.namespace)


def bound_services(resources: Sequence[Res], settings: Settings,
                   unreadable: Unreadable | None = None) -> list[Bound]:
    """Every workload of the stack with its LB, PDB, HPA and readiness gate."""
    out = []
    for workload in of_type(resources, *WORKLOADS):
        try:
            out.append(bind(workload, resources, settings))
        except x.ExtractError as err:
            if unreadable is not None:
                unreadable.problems.append((workload.urn, str(err)))
    return out


def heartbeat_configmaps(resources: Sequence[Res]) -> list[Res]:
    return [c for c in of_type(resources, CONFIGMAP) if x.get(c.props, "data", CONFIGMAP_KEY) is not None]
