"""`Workload`: one service's Deployment, StatefulSet or DaemonSet and everything its timing depends on.

Service, PodDisruptionBudget, the controller's TargetGroupBinding and an optional HPA. The
pods are created last: the LBC's webhook injects readiness gates only when a pod is created,
so the Service and TargetGroupBinding must exist first (`readiness-gate-can-pass`).

An Argo Rollout replaces the Deployment (`infra/rollout.py`): blue-green adds the preview
Service; a canary routed by the ALB adds the canary Service and the Ingress the controller
makes the ALB from (`infra/ingress.py`), and has no stack-made TargetGroupBinding.

The mesh's own webhook adds a mesh proxy; a mesh hop of `svc.path` (an Istio sidecar, the
Linkerd proxy) puts the pods in that mesh and states the drain the stack set, with the keys the
audit reads back (`timing.extract.mesh`), and an Istio hop's pool idle timeout toward the app
becomes the Service's DestinationRule. The `sidecar` short form records only a drain: nothing
is written for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from lockstep.infra import ingress as alb_ingress
from lockstep.infra import kube
from lockstep.infra import nginx_ingress
from lockstep.infra import rollout as argo
from lockstep.timing.conventions import fact_annotations
from lockstep.timing.extract import mesh as M
from lockstep.timing.hopkinds import HOP_KINDS
from lockstep.timing.extract import traffic as T
from lockstep.timing.heartbeat_config import OBSERVABLE_LABEL
from lockstep.timing.invariants.kube import pod_labels
from lockstep.timing.model import Service

TYPE = "lockstep:infra:Workload"
TGB_API_VERSION = "elbv2.k8s.aws/v1beta1"


@dataclass(frozen=True)
class WorkloadArgs:
    """`target_group_arn` is required when `service.lb` is set (except for a canary routed by
    the ALB: the controller makes its target groups from the Ingress); `observable` adds the
    heartbeat's `is-observable` label; `namespace` is the Namespace resource to wait for."""

    service: Service
    kubernetes_version: str
    namespace: pulumi.Resource
    target_group_arn: pulumi.Input[str] | None = None
    observable: bool = False


class Workload(pulumi.ComponentResource):
    """Outputs: `workload` (Deployment, StatefulSet or Rollout), `service`, `preview` (a
    blue-green Rollout's, or None), `canary` and `ingress` (a canary routed by the ALB's, or
    None), `pdb` (or None), `binding` (TargetGroupBinding, or None without an LB and for a
    canary routed by the ALB), `hpa` (or None)."""

    workload: (k8s.apps.v1.Deployment | k8s.apps.v1.StatefulSet | k8s.apps.v1.DaemonSet
               | k8s.apiextensions.CustomResource)
    service: k8s.core.v1.Service
    preview: k8s.core.v1.Service | None
    canary: k8s.core.v1.Service | None
    ingress: k8s.networking.v1.Ingress | None
    pdb: k8s.policy.v1.PodDisruptionBudget | None
    binding: k8s.apiextensions.CustomResource | None
    hpa: k8s.autoscaling.v2.HorizontalPodAutoscaler | None

    def __init__(self, name: str, args: WorkloadArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        svc = args.service
        routed = argo.routed_by_alb(svc)
        if svc.lb is not None and not routed and args.target_group_arn is None:
            raise ValueError(f"{svc.name}: a service with an lb needs its target group's ARN")
        base = pod_labels(svc)
        labels = {**base, OBSERVABLE_LABEL[0]: OBSERVABLE_LABEL[1]} if args.observable else base
        selector = kube.selector_labels(base)
        child = pulumi.ResourceOptions(parent=self, depends_on=[args.namespace])

        self.service = self._service(name, svc, selector, child)
        self.preview = self._preview(name, svc, selector, child)
        self.canary = self._canary(name, svc, selector, child)
        # The Ingress needs its backend Service; the Rollout does not wait for the Ingress: its
        # ALB appears only once Argo, reconciling the Rollout, has written the action that the
        # backend's `use-annotation` port asks for.
        self.ingress = (alb_ingress.ingress(name, svc, pulumi.ResourceOptions(
            parent=self, depends_on=[args.namespace, self.service])) if routed else None)
        self.nginx_ingress = nginx_ingress.ingress(name, svc, pulumi.ResourceOptions(
            parent=self, depends_on=[args.namespace, self.service]))
        headless = self._headless(name, svc, selector, child)
        self.binding = self._binding(name, svc, args.target_group_arn, child)
        self.pdb = (k8s.policy.v1.PodDisruptionBudget(
            f"{name}-pdb", metadata=kube.metadata(svc.name, svc.namespace, base),
            spec=kube.pdb_spec(svc.pdb, base), opts=child)
            if svc.pdb is not None else None)

        # The webhook injects readiness gates only when a pod is created: the Service and the
        # TargetGroupBinding must exist before the first pod, or the gate protects nothing.
        # An Argo Rollout also needs its active and preview Services before it starts.
        before = [args.namespace, self.service] + [r for r in (headless, self.binding, self.preview, self.canary) if r]
        self.workload = self._workload(name, svc, args.kubernetes_version, labels, selector,
                                       headless, pulumi.ResourceOptions(parent=self,
                                                                        depends_on=before))
        self.hpa = self._hpa(name, svc, child)
        self.destination_rule = self._destination_rule(name, svc, selector, child)
        # A CustomResource's metadata is untyped (a mapping), a Deployment's an ObjectMeta.
        name_of = self.workload.metadata.apply(lambda m: m["name"] if isinstance(m, dict) else m.name)
        self.register_outputs({"workload": name_of,
                               "service": self.service.metadata.name})

    def _service(self, name: str, svc: Service, selector: dict[str, str],
                 opts: pulumi.ResourceOptions) -> k8s.core.v1.Service:
        # Instance targets reach pods through a node port: the target group's port is that
        # node port, so the NLB and the Service agree on it. (The controller's instance mode
        # for an Ingress needs a NodePort Service too: LBC Ingress annotations, `target-type`.)
        node_port = svc.lb is not None and svc.lb.target_type == "instance"
        port = k8s.core.v1.ServicePortArgs(name="traffic", port=svc.container_port,
                                           target_port=svc.container_port, protocol="TCP",
                                           node_port=svc.lb.port if node_port else None)
        return k8s.core.v1.Service(
            f"{name}-service", metadata=kube.metadata(svc.name, svc.namespace, selector),
            spec=k8s.core.v1.ServiceSpecArgs(type="NodePort" if node_port else "ClusterIP",
                                             selector=selector, ports=[port],
                                             # only node-port Services take a traffic policy; Local
                                             # sends a node's traffic to its own pods only
                                             # (etp-local-drain-covers-node-check judges the drain)
                                             **{T.ETP_ARG: svc.lb.external_traffic_policy
                                                if node_port else None}),
            opts=opts)

    def _preview(self, name: str, svc: Service, selector: dict[str, str],
                 opts: pulumi.ResourceOptions) -> k8s.core.v1.Service | None:
        """A blue-green Rollout's preview Service: the new pods before the switch (the
        controller adds the ReplicaSet's hash to both Services' selectors)."""
        if svc.argo is None or svc.argo.strategy != "blueGreen":
            return None
        port = k8s.core.v1.ServicePortArgs(name="traffic", port=svc.container_port,
                                           target_port=svc.container_port, protocol="TCP")
        return k8s.core.v1.Service(
            f"{name}-preview", metadata=kube.metadata(argo.preview_name(svc), svc.namespace, selector),
            spec=k8s.core.v1.ServiceSpecArgs(type="ClusterIP", selector=selector, ports=[port]), opts=opts)

    def _canary(self, name: str, svc: Service, selector: dict[str, str],
                opts: pulumi.ResourceOptions) -> k8s.core.v1.Service | None:
        """A canary routed by the ALB's canary Service: the controller adds the canary
        ReplicaSet's hash to its selector, and the ALB weights it against the stable one. With
        instance targets it is a NodePort Service whose port Kubernetes allocates (the stable
        Service holds the model's `lb.port`; two Services cannot share a node port)."""
        if not argo.routed_by_alb(svc):
            return None
        assert svc.lb is not None
        port = k8s.core.v1.ServicePortArgs(name="traffic", port=svc.container_port,
                                           target_port=svc.container_port, protocol="TCP")
        kind = "NodePort" if svc.lb.target_type == "instance" else "ClusterIP"
        return k8s.core.v1.Service(
            f"{name}-canary", metadata=kube.metadata(argo.canary_name(svc), svc.namespace, selector),
            spec=k8s.core.v1.ServiceSpecArgs(type=kind, selector=selector, ports=[port]), opts=opts)

    def _headless(self, name: str, svc: Service, selector: dict[str, str],
                  opts: pulumi.ResourceOptions) -> k8s.core.v1.Service | None:
        """A StatefulSet's governing Service must be headless to give pods stable DNS."""
        if svc.kind != "StatefulSet":
            return None
        return k8s.core.v1.Service(
            f"{name}-headless", metadata=kube.metadata(f"{svc.name}-pods", svc.namespace, selector),
            spec=k8s.core.v1.ServiceSpecArgs(cluster_ip="None", selector=selector,
                                             publish_not_ready_addresses=False,
                                             ports=[k8s.core.v1.ServicePortArgs(
                                                 name="traffic", port=svc.container_port,
                                                 target_port=svc.container_port,
                                                 protocol="TCP")]),
            opts=opts)

    def _binding(self, name: str, svc: Service, arn: pulumi.Input[str] | None,
                 opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource | None:
        if svc.lb is None or argo.routed_by_alb(svc):
            return None  # a canary routed by the ALB: the controller binds the groups it makes
        return k8s.apiextensions.CustomResource(
            f"{name}-tgb", api_version=TGB_API_VERSION, kind="TargetGroupBinding",
            metadata=kube.metadata(svc.name, svc.namespace),
            spec={"serviceRef": {"name": svc.name, "port": svc.container_port},
                  "targetGroupARN": arn, "targetType": svc.lb.target_type},
            opts=opts)

    def _workload(self, name: str, svc: Service, version: str, labels: dict[str, str],
                  selector: dict[str, str], headless: k8s.core.v1.Service | None,
                  opts: pulumi.ResourceOptions
                  ) -> (k8s.apps.v1.Deployment | k8s.apps.v1.StatefulSet | k8s.apps.v1.DaemonSet
                        | k8s.apiextensions.CustomResource):
        volumes, mounts = kube.scratch(svc.hardening)
        container = k8s.core.v1.ContainerArgs(
            name=svc.name, image=svc.image,
            ports=[k8s.core.v1.ContainerPortArgs(name="traffic", container_port=svc.container_port,
                                                 protocol="TCP")],
            startup_probe=kube.probe(svc.probes.startup),
            readiness_probe=kube.probe(svc.probes.readiness),
            liveness_probe=kube.probe(svc.probes.liveness),
            lifecycle=kube.lifecycle(svc.shutdown, version),
            resources=kube.resources(svc.resources),
            security_context=kube.security_context(svc.hardening),
            volume_mounts=mounts or None)
        mesh_labels, mesh_annotations = _mesh_metadata(svc)
        template = k8s.core.v1.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(labels={**labels, **mesh_labels},
                                                annotations=mesh_annotations or None),
            spec=k8s.core.v1.PodSpecArgs(
                containers=[container], volumes=volumes or None,
                termination_grace_period_seconds=svc.shutdown.grace_s))
        # App facts travel with the workload, so the policy pack and `lockstep audit` judge
        # the rules that need them on what was deployed instead of reporting them skipped.
        meta = kube.metadata(svc.name, svc.namespace, labels, fact_annotations(svc))
        match = k8s.meta.v1.LabelSelectorArgs(match_labels=selector)
        # Under an HPA, `replicas` stays unset: every apply would reset the HPA's count.
        replicas = svc.replicas if svc.hpa is None else None
        if svc.argo is not None:
            return argo.rollout(name, svc, meta, replicas, selector, template, opts)
        if svc.kind == "Deployment":
            return k8s.apps.v1.Deployment(
                f"{name}-deployment", metadata=meta,
                spec=k8s.apps.v1.DeploymentSpecArgs(
                    replicas=replicas, selector=match, template=template,
                    strategy=kube.deployment_strategy(svc.rollout),
                    min_ready_seconds=svc.rollout.min_ready_s,
                    progress_deadline_seconds=svc.rollout.progress_deadline_s),
                opts=opts)
        if svc.kind == "DaemonSet":
            # One pod per node: no replicas field (the node count travels as the
            # lockstep.dev/nodes annotation, `fact_annotations`), and no progress deadline.
            return k8s.apps.v1.DaemonSet(
                f"{name}-daemonset", metadata=meta,
                spec=k8s.apps.v1.DaemonSetSpecArgs(
                    selector=match, template=template,
                    update_strategy=kube.daemonset_strategy(svc.rollout),
                    min_ready_seconds=svc.rollout.min_ready_s),
                opts=opts)
        assert headless is not None
        return k8s.apps.v1.StatefulSet(
            f"{name}-statefulset", metadata=meta,
            spec=k8s.apps.v1.StatefulSetSpecArgs(
                replicas=replicas, selector=match, template=template,
                service_name=headless.metadata.name,
                # One pod at a time, the pace `replace_time` and `rollout_time` assume.
                pod_management_policy="OrderedReady",
                update_strategy=k8s.apps.v1.StatefulSetUpdateStrategyArgs(type="RollingUpdate"),
                min_ready_seconds=svc.rollout.min_ready_s),
            opts=opts)

    def _destination_rule(self, name: str, svc: Service, selector: dict[str, str],
                          opts: pulumi.ResourceOptions) -> k8s.apiextensions.CustomResource | None:
        """The Service's DestinationRule, when the stack sets its Istio sidecar's pool idle
        timeout toward the app (left unset, Istio's default applies and nothing is written)."""
        hop = next((h for h in svc.path if h.kind == "istio-sidecar"), None)
        if hop is None or hop.upstream_idle_s is None or "upstream_idle_s" in hop.defaulted:
            return None
        return k8s.apiextensions.CustomResource(
            f"{name}-destinationrule", api_version=M.DESTINATION_RULE_API, kind="DestinationRule",
            metadata=kube.metadata(svc.name, svc.namespace, selector),
            spec={"host": svc.name,  # relative to its namespace: the Service's own
                  "trafficPolicy": {"connectionPool": {"http": {"idleTimeout": f"{hop.upstream_idle_s}s"}}}},
            opts=opts)

    def _hpa(self, name: str, svc: Service,
             opts: pulumi.ResourceOptions) -> k8s.autoscaling.v2.HorizontalPodAutoscaler | None:
        if svc.hpa is None:
            return None
        v2 = k8s.autoscaling.v2
        return v2.HorizontalPodAutoscaler(
            f"{name}-hpa", metadata=kube.metadata(svc.name, svc.namespace),
            spec=v2.HorizontalPodAutoscalerSpecArgs(
                scale_target_ref=v2.CrossVersionObjectReferenceArgs(
                    api_version=argo.API_VERSION if svc.argo else "apps/v1",
                    kind=argo.KIND if svc.argo else svc.kind, name=svc.name),
                min_replicas=svc.hpa.min_replicas, max_replicas=svc.hpa.max_replicas,
                metrics=[v2.MetricSpecArgs(type="Resource", resource=v2.ResourceMetricSourceArgs(
                    name="cpu", target=v2.MetricTargetArgs(
                        type="Utilization", average_utilization=svc.hpa.target_cpu_percent)))]),
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                depends_on=[self.workload])))


def _mesh_metadata(svc: Service) -> tuple[dict[str, str], dict[str, str]]:
    """The pod labels and annotations of the service's mesh hop: the drain and start order only
    where the stack set them (a defaulted one is the mesh's own default already)."""
    hop = next((h for h in svc.path if HOP_KINDS[h.kind].role == "mesh"), None)
    if hop is None:
        return {}, {}
    return M.pod_metadata(hop.kind, None if "drain_s" in hop.defaulted else hop.drain_s,
                          None if "app_waits" in hop.defaulted else hop.app_waits)
