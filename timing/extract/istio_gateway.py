"""An Istio ingress gateway as its resources state it: which workloads are gateways, which
Gateway a VirtualService binds to, where its HTTP routes send requests and how long they wait,
read into the fields of the `istio-gateway` hop (`timing.hopkinds.ISTIO_GATEWAY`).
`timing.bind.istio_gateway` finds which resources belong together.

Which pods are a gateway (istio/istio): the pilot-agent of a gateway runs as `proxy router`
(a sidecar as `proxy sidecar`), in the `proxyv2` image — as the legacy `istio-ingressgateway`
Deployment spells it out; the gateway Helm chart (manifests/charts/gateway) writes a container
`image: auto` instead, with the pod annotation `inject.istio.io/templates: gateway`, and the
injection webhook fills in the gateway template (files/gateway-injection-template.yaml:
`proxyv2`, `proxy router`). The annotation is a comma-separated list of templates. Either
way, the injected proxy is the gateway itself, not a sidecar in front of an app.

A VirtualService's `gateways` (networking/v1alpha3/virtual_service.proto; pilot/pkg/model
`resolveGatewayName`): `name` is a Gateway in the VirtualService's namespace, `ns/name` one in
`ns`, `./name` the same as `name`, and the legacy `name.ns.svc.cluster.local` one in `ns`; the
reserved `mesh` means the sidecars, not a gateway. A VirtualService naming no gateway applies
to the sidecars only.

A route's `destination.host` (pilot/pkg/model `ResolveShortnameToFQDN`): a name without a dot
is relative to the VirtualService's namespace (`api` in `web` is `api.web.svc.cluster.local`);
any other name is taken as written. The docs recommend fully qualified names and speak only of
the one-label short form; the code keeps `api.web` as it is, which names no Service: the code
wins here.

A route's `timeout` is a duration; unset, the route has none (the docs: "default is disabled",
and the hop kind's `unbounded`). It is judged in whole seconds: "30s", "1m" and "1m30s" are,
"1.5s" or "500ms" is not, and such a route's timeout is a note, not a guess. A timeout of 0
turns the route's timeout off (Envoy's route `timeout`: 0 disables it), like none at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final


from lockstep.timing.extract import mesh as M
from lockstep.timing.extract.ingress_nginx import GO_TRUE  # istio pkg/env reads a bool env var with Go's ParseBool
from lockstep.timing.extract.nodes import FieldError
from lockstep.timing.extract.values import get, items

ISTIO_GROUP: Final = "networking.istio.io/"  # v1 (Istio 1.22+), v1beta1, v1alpha3: the same fields
PROXY_IMAGE: Final = "proxyv2"
ROUTER: Final = "router"  # pilot-agent's node type for a gateway (`proxy router`)
TEMPLATES_ANNOTATION: Final = "inject.istio.io/templates"
GATEWAY_TEMPLATE: Final = "gateway"
MESH: Final = "mesh"  # the reserved gateway name: the sidecars
# pilot-agent's EXIT_ON_ZERO_ACTIVE_CONNECTIONS (pkg/envoy/agent.go `terminate`): on SIGTERM
# the agent waits MINIMUM_DRAIN_DURATION, then until no connection is left, instead of
# terminationDrainDuration: how long it keeps serving then depends on its clients.
EXIT_ON_ZERO: Final = "EXIT_ON_ZERO_ACTIVE_CONNECTIONS"
_DURATION: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(h|ms|m|s|us|µs|ns)")
_NANOS: Final = {"h": 3600 * 10**9, "m": 60 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "µs": 10**3, "ns": 1}


def is_istio(obj: Mapping[str, Any]) -> bool:
    """An Istio networking resource (a Gateway API `Gateway` has the same kind, another group)."""
    return str(get(obj, "apiVersion")).startswith(ISTIO_GROUP)


def image_name(container: Mapping[str, Any]) -> str:
    """A container image's name without its registry, path, tag or digest
    (`docker.io/istio/proxyv2:1.24.2` → `proxyv2`); "" when it states none."""
    image = get(container, "image")
    return re.split(r"[:@]", image.split("/")[-1])[0] if isinstance(image, str) else ""


def _runs_router(container: Mapping[str, Any]) -> bool:
    return image_name(container) == PROXY_IMAGE and ROUTER in [str(a) for a in items(get(container, "args"))]


def is_gateway(workload: Mapping[str, Any]) -> bool:
    """Whether a workload's pods are an Istio gateway: the gateway injection template, or a
    `proxyv2` container running pilot-agent as a router."""
    templates = (get(workload, "spec", "template", "metadata", "annotations") or {}).get(TEMPLATES_ANNOTATION)
    if isinstance(templates, str) and GATEWAY_TEMPLATE in [t.strip() for t in templates.split(",")]:
        return True
    return any(_runs_router(c) for c in items(get(workload, "spec", "template", "spec", "containers")))


def exits_on_zero(workload: Mapping[str, Any], proxy_configs: list[Any]) -> bool:
    """Whether pilot-agent exits when the connections are gone rather than after
    terminationDrainDuration: its container's environment, else the first ProxyConfig (the
    pod's, then the mesh-wide default) whose `proxyMetadata` sets it."""
    env = {str(get(e, "name")): get(e, "value") for c in items(get(workload, "spec", "template", "spec", "containers"))
           for e in items(get(c, "env"))}
    stated = [env[EXIT_ON_ZERO]] if EXIT_ON_ZERO in env else []
    stated += [get(c, "proxyMetadata", EXIT_ON_ZERO) for c in proxy_configs if get(c, "proxyMetadata", EXIT_ON_ZERO) is not None]
    return bool(stated) and str(stated[0]) in GO_TRUE


def gateway_ref(name: str, namespace: str) -> tuple[str, str] | None:
    """(namespace, name) of the Gateway a VirtualService's `gateways` entry names; None: `mesh`."""
    if name == MESH:
        return None
    if "/" in name:
        ns, _, short = name.partition("/")
        return (namespace if ns == "." else ns), short
    if "." in name:
        short, ns = name.split(".")[:2]
        return ns, short
    return namespace, name


def gateway_refs(virtual_service: Mapping[str, Any], namespace: str) -> list[tuple[str, str]]:
    """The Gateways a VirtualService binds to (not the sidecars: `mesh`, or no `gateways`)."""
    refs = [gateway_ref(g, namespace) for g in items(get(virtual_service, "spec", "gateways")) if isinstance(g, str)]
    return list(dict.fromkeys(r for r in refs if r is not None))


def routes(virtual_service: Mapping[str, Any], namespace: str) -> list[tuple[int, str, Any]]:
    """(index in `spec.http`, resolved destination host, raw `timeout` or None) of every HTTP
    route destination, each host once per route."""
    out = []
    for i, route in enumerate(items(get(virtual_service, "spec", "http"))):
        hosts = [str(get(r, "destination", "host")) for r in items(get(route, "route"))
                 if isinstance(get(r, "destination", "host"), str)]
        out += [(i, M.istio_host(h, namespace), get(route, "timeout")) for h in dict.fromkeys(hosts)]
    return out


def _nanos(text: str, where: str) -> int:
    pos, total = 0, 0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        whole, _, frac = m.group(1).partition(".")
        unit = _NANOS[m.group(2)]
        total += int(whole or 0) * unit + int(frac or 0) * unit // 10 ** len(frac)
        pos = m.end()
    if pos != len(text) or not text:
        raise FieldError(f"{where}: {text!r} is not a duration (such as 30s, 1m or 1m30s)")
    return total


def route_timeout(raw: Any, where: str) -> tuple[int | None, str]:
    """A route's `timeout`: (whole seconds, "") or (None, a note saying why it is not judged).
    Not a duration at all: a `FieldError` naming `where`."""
    if raw is None:
        return None, ""
    nanos = _nanos(str(raw).strip(), where)
    if nanos == 0:  # Envoy reads a route timeout of 0 as none (route.proto `timeout`)
        return None, f"{where}: {raw!r} disables the route's timeout"
    if nanos % 10**9:
        return None, f"{where}: {raw!r} is not whole seconds: this route's timeout is not judged"
    return nanos // 10**9, ""


def proxy_configs(pod_annotations: Mapping[str, Any], mesh_configmap: Mapping[str, Any] | None) -> list[Any]:
    """The ProxyConfigs that set a gateway pod's proxy, most specific first: its own
    `proxy.istio.io/config` annotation, then the mesh-wide `defaultConfig` (the `istio`
    ConfigMap's `mesh` key; `timing.extract.mesh` reads the drain from the same two)."""
    own = M.embedded_yaml(pod_annotations.get(M.ISTIO_PROXY_CONFIG), f"metadata.annotations.{M.ISTIO_PROXY_CONFIG}")
    key = M.ISTIO_MESH_CONFIG[2]
    mesh = M.embedded_yaml(get(mesh_configmap, "data", key), f"data.{key}")
    return [own, get(mesh, "defaultConfig")]


# istiod's PILOT_SCOPE_GATEWAY_TO_NAMESPACE (pilot/pkg/features, false unless set; read by
# PushContext `mergeGateways`): a gateway workload takes only the Gateways of its own namespace.
# Unset, a Gateway's selector matches gateway pods in every namespace (gateway.proto
# `selector`), and a Gateway with no selector applies to every gateway workload.
SCOPE_TO_NAMESPACE: Final = "PILOT_SCOPE_GATEWAY_TO_NAMESPACE"
PILOT_IMAGE: Final = "pilot"


def scopes_to_namespace(workload: Mapping[str, Any]) -> bool | None:
    """Whether an istiod Deployment (its `pilot` container) scopes Gateways to their
    namespace; None: the workload is not istiod."""
    for c in items(get(workload, "spec", "template", "spec", "containers")):
        if image_name(c) == PILOT_IMAGE:
            env = {str(get(e, "name")): get(e, "value") for e in items(get(c, "env"))}
            return str(env.get(SCOPE_TO_NAMESPACE)) in GO_TRUE
    return None


def selects(selector: Any, pod_labels: Mapping[str, Any]) -> bool:
    """A Gateway's `selector` (a plain label map) picks pods carrying all its labels; none,
    or an empty one, picks every gateway workload. Anything else: a `FieldError`."""
    if selector is not None and not isinstance(selector, Mapping):
        raise FieldError(f"spec.selector: expected a map of labels, got {selector!r}")
    return all(pod_labels.get(k) == v for k, v in (selector or {}).items())
