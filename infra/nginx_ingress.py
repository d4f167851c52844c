"""The Ingress of a service behind ingress-nginx, when the stack owns its routes (`path[i].routes`).

What the stack writes: one Ingress of the controller's class (`path[i].ingress_class`, else the
kind's `nginx`) routing each route to the service's `traffic` port, with the hop's
`proxy-read-timeout` as the Ingress's own `nginx.ingress.kubernetes.io/proxy-read-timeout`
annotation (whole seconds, the form the controller's annotation parser takes), so the number
the rules judge is the one deployed whatever the controller's ConfigMap says. What it does
not write: the controller, its ConfigMap and its pods (a cluster's, shared by every Ingress):
their numbers (`keep-alive`, `upstream-keepalive-timeout`, `worker-shutdown-timeout`, the
shutdown delay and grace) stay the config's statement of what runs, which `lockstep audit`
checks against those resources when they are in its input.

The annotation name and the class come from the tables the audit reads back
(`timing.extract.ingress_nginx`, `timing.hopkinds`): nothing here is typed a second time.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from lockstep.infra import kube
from lockstep.timing.extract.ingress_nginx import READ_TIMEOUT_ANNOTATION
from lockstep.timing.hopkinds import HOP_KINDS
from lockstep.timing.model import Hop, Service

PORT_NAME = "traffic"  # the service's one port (`Workload._service`)


def owned_hop(svc: Service) -> Hop | None:
    """The ingress hop whose Ingress the stack writes (the first with routes), if any."""
    return next((h for h in svc.path if h.routes and HOP_KINDS[h.kind].ingress_class), None)


def annotations(hop: Hop) -> dict[str, str]:
    return {READ_TIMEOUT_ANNOTATION: str(hop.request_timeout_s)} if hop.request_timeout_s is not None else {}


def spec(svc: Service, hop: Hop) -> k8s.networking.v1.IngressSpecArgs:
    backend = k8s.networking.v1.IngressBackendArgs(service=k8s.networking.v1.IngressServiceBackendArgs(
        name=svc.name, port=k8s.networking.v1.ServiceBackendPortArgs(name=PORT_NAME)))
    rules: dict[str | None, list[k8s.networking.v1.HTTPIngressPathArgs]] = {}
    for r in hop.routes:  # one rule per host, its paths in the config's order
        rules.setdefault(r.host, []).append(
            k8s.networking.v1.HTTPIngressPathArgs(path=r.path, path_type=r.path_type, backend=backend))
    return k8s.networking.v1.IngressSpecArgs(
        ingress_class_name=hop.ingress_class or HOP_KINDS[hop.kind].ingress_class,
        rules=[k8s.networking.v1.IngressRuleArgs(host=host, http=k8s.networking.v1.HTTPIngressRuleValueArgs(paths=paths))
               for host, paths in rules.items()])


def ingress(name: str, svc: Service, opts: pulumi.ResourceOptions) -> k8s.networking.v1.Ingress | None:
    hop = owned_hop(svc)
    if hop is None:
        return None
    return k8s.networking.v1.Ingress(
        f"{name}-nginx-ingress", metadata=kube.metadata(svc.name, svc.namespace, annotations=annotations(hop)),
        spec=spec(svc, hop), opts=opts)
