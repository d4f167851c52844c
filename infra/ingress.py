"""The Ingress of a canary routed by the ALB: the AWS Load Balancer Controller makes the ALB.

What the stack then owns: the Rollout, its stable and canary Services, and this Ingress with
every load-balancer number of the model as the controller's `alb.ingress.kubernetes.io/*`
annotations. What it does not own: the ALB, its listener and rules, and the target groups with
their TargetGroupBindings — the controller makes them from the Ingress (one target group per
backend Service, so the canary Service gets its own with the same annotations), and Argo
Rollouts writes the weighted forward action into the Ingress during an update. So such a
service has no `TargetGroup` component and no stack-made TargetGroupBinding, and the model's
listener fields (`attach_to_arn`, `rule_priority`, `listener_port`, `vpc_id`) must stay unset
(`timing.references`): the listener is the controller's default (HTTP 80, or HTTPS 443 with a
certificate: LBC Ingress annotations, `listen-ports`), in the cluster's VPC.

Sources:
- Argo Rollouts, traffic management "AWS Load Balancer Controller": the Ingress's rule backend
  names the root Service (default: the stable Service) with the port `use-annotation`, which
  tells the controller to read the action annotation Argo maintains for that Service.
- LBC "Ingress annotations": Service annotations override the Ingress's, `target-type`
  instance needs a NodePort Service, `target-group-attributes` and `load-balancer-attributes`
  are stringMaps (`k1=v1,k2=v2`), numbers are strings; "Ingress specification": a path such as
  `/*` with `pathType: ImplementationSpecific` is the listener rule's path pattern as written.
The annotation names and attribute keys are the ones the audit reads back (`timing.lbkinds`'
table, `timing.bind.lbs.ATTRIBUTES`): nothing here is typed a second time.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from lockstep.infra import kube
from lockstep.infra import rollout as argo
from lockstep.timing.bind.lbs import ATTRIBUTES
from lockstep.timing.controllers import LEGACY_ALB_CLASS
from lockstep.timing.extract.lbc import ALB_ANNOTATION, LBC_ANNOTATIONS
from lockstep.timing.lbkinds import KINDS
from lockstep.timing.model import LoadBalancer, Service

# The port name Argo's ALB integration requires on the Ingress backend (Argo Rollouts' ALB page).
USE_ANNOTATION = "use-annotation"
# The LBC's Helm chart creates an IngressClass of this name for its controller
# (`ingress.k8s.aws/alb`); the audit takes an Ingress of this class for the LBC's.
INGRESS_CLASS = LEGACY_ALB_CLASS
# What the LBC takes a path written as the model's listener-rule pattern (`/api/*`) to be.
PATH_TYPE = "ImplementationSpecific"


def annotations(lb: LoadBalancer) -> dict[str, str]:
    """Every load-balancer number and choice of the model, as the controller's annotations.
    A health-check path or matcher the model leaves unset is left to the controller's
    default, as the TargetGroup component leaves it to the API's."""
    keys = LBC_ANNOTATIONS[lb.kind]
    hc = lb.health_check

    def key(field: str) -> str:
        return ALB_ANNOTATION + keys[field]

    def attrs(*fields: tuple[str, int]) -> str:
        return ",".join(f"{ATTRIBUTES[f]}={v}" for f, v in fields)

    out = {
        key("lb.target_type"): lb.target_type, key("lb.protocol"): lb.protocol,
        key("lb.health_check.protocol"): hc.protocol, key("lb.health_check.port"): str(hc.port),
        key("lb.health_check.interval_s"): str(hc.interval_s), key("lb.health_check.timeout_s"): str(hc.timeout_s),
        key("lb.health_check.healthy_threshold"): str(hc.healthy_threshold),
        key("lb.health_check.unhealthy_threshold"): str(hc.unhealthy_threshold),
        key("lb.idle_timeout_s"): attrs(("lb.idle_timeout_s", lb.idle_timeout_s)),
    }
    group = [("lb.deregistration_delay_s", lb.deregistration_delay_s)]
    if KINDS[lb.kind].slow_start:
        group.append(("lb.slow_start_s", lb.slow_start_s))
    out[key("lb.deregistration_delay_s")] = attrs(*group)
    if hc.path is not None:
        out[key("lb.health_check.path")] = hc.path
    if hc.matcher is not None:
        out[key("lb.health_check.matcher")] = hc.matcher
    return out


def spec(svc: Service) -> k8s.networking.v1.IngressSpecArgs:
    assert svc.lb is not None
    backend = k8s.networking.v1.IngressBackendArgs(service=k8s.networking.v1.IngressServiceBackendArgs(
        name=svc.name, port=k8s.networking.v1.ServiceBackendPortArgs(name=USE_ANNOTATION)))
    paths = [k8s.networking.v1.HTTPIngressPathArgs(path=p, path_type=PATH_TYPE, backend=backend)
             for p in svc.lb.path_patterns]
    return k8s.networking.v1.IngressSpecArgs(
        ingress_class_name=INGRESS_CLASS,
        rules=[k8s.networking.v1.IngressRuleArgs(http=k8s.networking.v1.HTTPIngressRuleValueArgs(paths=paths))])


def ingress(name: str, svc: Service, opts: pulumi.ResourceOptions) -> k8s.networking.v1.Ingress:
    assert svc.lb is not None
    return k8s.networking.v1.Ingress(
        f"{name}-ingress", metadata=kube.metadata(argo.ingress_name(svc), svc.namespace,
                                                  annotations=annotations(svc.lb)),
        spec=spec(svc), opts=opts)
