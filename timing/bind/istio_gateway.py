"""Which Istio ingress gateway stands in front of a workload, and the resources that set its
hop's numbers (issue 12): the VirtualServices whose HTTP routes send to a Service selecting the
pods, the Gateways they bind to, the gateway workloads those Gateways select (by pod labels,
in any namespace unless istiod scopes Gateways to their namespace), Istio's mesh-wide
ConfigMap, and the DestinationRule of the Service (`timing.extract.istio_gateway` reads each;
this module finds them).

What the hop feeds (`timing.invariants.path`, read as written; no rule changed for it):
- `keepalive-chain-ordered`: the gateway's pool toward the app (the DestinationRule's
  `connectionPool.http.idleTimeout`, Istio's 1 h unless set) against the next hop's keep-alive
  (the app's, or its sidecar's);
- `timeouts-shrink-inward`: the shortest whole-second route `timeout` against the app's
  longest request (a route without one bounds nothing, and the chain passes over it);
- `keepalive-outlasts-lb-idle` only where the workload has a load balancer of its own in front
  of the path (the path starts at `Service.lb`).
Not `proxy-reload-spares-requests`: Envoy takes new routes over xDS without replacing its
workers (the kind does not `reload`). Not `mesh-drain-covers-lb` nor `sidecar-outlives-app`:
the gateway is no mesh hop. Its drain (ProxyConfig `terminationDrainDuration`, the pod's
annotation over the mesh-wide default) is carried on the hop, but the model's hop has no `lb`
for this kind and no path rule judges an ingress hop's drain. The gateway's drain against the
load balancer in front of it is judged on the gateway's own workload instead (`own_drain`):
on SIGTERM pilot-agent drains Envoy's listeners gracefully (`drain_listeners?graceful`, every
listener for a router) — they keep accepting — for terminationDrainDuration, then kills Envoy
(pkg/envoy/agent.go `terminate`, pkg/envoy/admin.go `DrainListeners`; Envoy's draining docs:
"continue accepting new connections until the drain timeout"). So the gateway pod keeps serving
its preStop wait plus terminationDrainDuration and finishes nothing after: its own
`shutdown.drain_s` and `finish_s` 0, judged by `drain-covers-lb-detection` against its NLB (or
the target group bound to its Service) and by `drain-fits-grace` against its grace.

What cannot be told is a note naming the resource that would: a Gateway missing from the
input, one selecting no gateway workload in it, a route timeout that is not whole seconds.
Several routes to the pods with different timeouts: the shortest is judged, and a note says so.
"""

from __future__ import annotations

from typing import Any

from lockstep.timing.bind.index import Index
from lockstep.timing.bind.mesh import POD_ANNOTATIONS, Origins, destination_rule, mesh_config, read_from
from lockstep.timing.bind.nginx import nginx_path
from lockstep.timing.bind.resource import Resource, dig, pod_labels
from lockstep.timing.extract import istio_gateway as G
from lockstep.timing.extract import mesh as M
from lockstep.timing.hopkinds import ISTIO_GATEWAY
from lockstep.timing.model import Service

DRAIN = "drain_s"
Route = tuple[Resource, int, Any, list[tuple[str, str]]]  # VirtualService, http index, raw timeout, Gateways


def _read_cluster(idx: Index, ctx: dict[str, Any]) -> None:
    """The input's gateway workloads, Istio Gateways and VirtualService routes (by resolved
    destination host), read once per link."""
    if "istio_gateways" in ctx:
        return
    workloads = [r for kind in ("Deployment", "DaemonSet", "StatefulSet") for r in idx.all(kind) if G.is_gateway(r.obj)]
    scoped = any(G.scopes_to_namespace(r.obj) for r in idx.all("Deployment"))
    gateways = {(g.namespace, g.name): g for g in idx.all("Gateway") if G.is_istio(g.obj)}
    by_host: dict[str, list[Route]] = {}
    for vs in idx.all("VirtualService"):
        if not G.is_istio(vs.obj):
            continue
        refs = G.gateway_refs(vs.obj, vs.namespace)
        for i, host, timeout in G.routes(vs.obj, vs.namespace) if refs else ():
            by_host.setdefault(host, []).append((vs, i, timeout, refs))
    ctx["istio_gateways"] = (workloads, scoped, gateways, by_host)


def own_drain(workload: Resource, idx: Index, notes: list[str]) -> tuple[int | None, Origins]:
    """How long a gateway pod keeps serving after SIGTERM: ProxyConfig terminationDrainDuration
    (the pod's annotation, else the mesh-wide default, else Istio's), with where it was
    written (none: Istio's default). None: pilot-agent waits for the connections to end
    instead (a note says so)."""
    annotations = dig(workload.obj, *POD_ANNOTATIONS) or {}
    mesh = mesh_config(idx)
    own = G.proxy_configs(annotations, None)[0]  # the pod's own errors are the workload's
    configs = [own, read_from(mesh, lambda: G.proxy_configs({}, mesh.obj)[1]) if mesh is not None else None]
    if G.exits_on_zero(workload.obj, configs):
        notes.append(f"{workload.ref}: {G.EXIT_ON_ZERO} is on: the gateway stops when its connections end, not after "
                     "terminationDrainDuration: its drain is not judged")
        return None, {}
    drain = M.istio_drain(annotations)
    if drain is not None:
        return drain, {DRAIN: (workload, (*POD_ANNOTATIONS, M.ISTIO_PROXY_CONFIG))}
    if mesh is not None:
        drain = read_from(mesh, lambda: M.istio_mesh_drain(mesh.obj))
        if drain is not None:
            return drain, {DRAIN: (mesh, ("data", M.ISTIO_MESH_CONFIG[2]))}
    notes.append(f"{workload.ref}: no ProxyConfig terminationDrainDuration in its {M.ISTIO_PROXY_CONFIG} annotation "
                 f"or the mesh-wide defaultConfig: Istio's default, {ISTIO_GATEWAY.defaults[DRAIN]}s, applies")
    return ISTIO_GATEWAY.defaults[DRAIN], {}  # nothing states it: a hop reports it as the kind's default


def _workloads_of(gateway: Resource, found: list[Resource], scoped: bool) -> list[Resource]:
    selector = dig(gateway.obj, "spec", "selector")
    return [w for w in found if read_from(gateway, lambda: G.selects(selector, pod_labels(w)))
            and (not scoped or w.namespace == gateway.namespace)]


def _timeout(routes: list[Route], notes: list[str]) -> tuple[int, Resource, int] | None:
    """The shortest whole-second route timeout (its VirtualService and http index); None: no
    route bounds a request."""
    timeouts = []
    for vs, i, raw, _ in routes:
        value, note = read_from(vs, lambda: G.route_timeout(raw, f"spec.http[{i}].timeout"))
        notes += [f"{vs.ref}: {note}"] if note else []
        timeouts += [(value, vs, i)] if value is not None else []
    if not timeouts:
        return None
    shortest = min(timeouts, key=lambda t: t[0])
    if len({t[0] for t in timeouts}) > 1 or len(timeouts) < len(routes):
        notes.append(f"{len(routes)} Istio gateway routes send to these pods with different timeouts: the shortest, "
                     f"{shortest[0]}s ({shortest[1].ref} spec.http[{shortest[2]}]), is judged")
    return shortest


def gateway_path(services: list[Resource], idx: Index, ctx: dict[str, Any],
                 notes: list[str]) -> list[tuple[dict[str, Any], Origins]]:
    """The workload's Istio gateway hop (none: no VirtualService bound to a Gateway routes to a
    Service selecting its pods), with where each of its numbers was written."""
    _read_cluster(idx, ctx)
    found, scoped, gateways, by_host = ctx["istio_gateways"]
    hosts = [M.service_host(s.name, s.namespace) for s in services]
    routes = [r for h in dict.fromkeys(hosts) for r in by_host.get(h, [])]
    if not routes:
        return []
    hop: dict[str, Any] = {"kind": ISTIO_GATEWAY.name}
    origins: Origins = {}
    refs = list(dict.fromkeys(ref for _, _, _, rs in routes for ref in rs))
    present = [gateways[r] for r in refs if r in gateways]
    for ns, name in (r for r in refs if r not in gateways):
        notes.append(f"Gateway {ns}/{name} (named by {routes[0][0].ref}) not in the input: its gateway workload is "
                     "unknown")
    workloads = list({id(w): w for g in present for w in _workloads_of(g, found, scoped)}.values())
    if present and not workloads:
        notes.append(f"{present[0].ref}: selects no gateway workload in the input (spec.selector): the gateway's "
                     "drain is Istio's default")
    if len(workloads) > 1:
        notes.append(f"{len(workloads)} gateway workloads serve these routes; the drain of {workloads[0].ref} is the "
                     "hop's")
    if workloads:
        gateway = workloads[0]
        drain, where = read_from(gateway, lambda: own_drain(gateway, idx, []))
        if where:
            hop[DRAIN] = drain
            origins.update(where)
    shortest = _timeout(routes, notes)
    if shortest is not None:
        hop["request_timeout_s"] = shortest[0]
        origins["request_timeout_s"] = (shortest[1], ("spec", "http", shortest[2], "timeout"))
    rule = destination_rule(services, idx, notes)  # the mesh hop may note the same rule: a subject's notes are once each
    if rule is not None:
        idle = read_from(rule, lambda: M.destination_idle(rule.obj))
        if idle is not None:
            hop["upstream_idle_s"] = idle
            origins["upstream_idle_s"] = (rule, M.DESTINATION_IDLE)
    return [(hop, origins)]


def ingress_path(selecting: list[Resource], idx: Index, ctx: dict[str, Any],
                 notes: list[str]) -> list[tuple[dict[str, Any], Origins]]:
    """The ingress proxy in front of the pods: ingress-nginx, else an Istio gateway. Both at
    once are two paths side by side, which one list of hops cannot hold: ingress-nginx's is
    judged, and a note says so."""
    nginx = nginx_path(selecting, idx, ctx, notes)
    istio = gateway_path(selecting, idx, ctx, notes)
    if nginx and istio:
        notes.append("an Istio gateway routes to these pods too: only the ingress-nginx path is judged")
    return nginx or istio


def gateway_shutdown(svc: Service, drain: int | None) -> Service:
    """An Istio gateway pod as it stops: it keeps serving its preStop wait plus
    terminationDrainDuration (`own_drain`), then its Envoy is killed with
    nothing left to finish. Unknown either way: the drain stays unknown."""
    wait = svc.shutdown.drain_s
    total = None if wait is None or drain is None else wait + drain
    return svc.model_copy(update={"shutdown": svc.shutdown.model_copy(update={"drain_s": total, "finish_s": 0})})
