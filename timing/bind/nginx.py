"""Which ingress-nginx controller stands in front of a workload, and the resources that set its
hop's numbers (issue 12): the Ingresses routing to the Services that select the pods, the
controller serving their class (by image: `timing.extract.ingress_nginx`), its `--configmap`
ConfigMap, its flags and grace.

An Ingress belongs to a controller when its IngressClass (in the input) names the controller's
`--controller-class`, or, without that IngressClass in the input, when its class (or the
legacy `kubernetes.io/ingress.class` annotation) is the controller's `--ingress-class`. One
that names no class takes the cluster's default IngressClass (the one annotated
`ingressclass.kubernetes.io/is-default-class: "true"`, which admission gives it when it is
created), else belongs to a controller run with `--watch-ingress-without-class`. An
Ingress of an ingress-nginx IngressClass whose controller is not in the input gets the
controller's defaults, and a note says so; one whose class no input resource explains is
not read. Several Ingresses with different `proxy-read-timeout`s: the shortest is
judged (the one a request can break), and a note names it.

The controller's preStop sleep counts in the hop's shutdown delay (`extract.ingress_nginx.prestop_wait`;
a command of unknown length leaves the LB in front unjudged, with a note). The hop's `lb` is
the NLB of the LoadBalancer Service selecting the controller's pods (read as
any NLB Service is, `bind.lbs.nlb_source`); with several, the one slowest to stop sending to a
leaving pod is judged, and a note says so. None in the input: the controller's shutdown delay
is not judged against it, and a note says which resource would tell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lockstep.timing import derived as d
from lockstep.timing.bind.index import Index
from lockstep.timing.bind.lbs import LbSource, ingress_class, nlb_source
from lockstep.timing.bind.mesh import Origins, read_from
from lockstep.timing.bind.resource import Resource, pod_labels, selects_pods
from lockstep.timing.conventions import ANNOTATION, DRAIN_ANNOTATION
from lockstep.timing.extract.annotations import annotations_of, seconds_annotation
from lockstep.timing.extract import ingress_nginx as N
from lockstep.timing.hopkinds import INGRESS_NGINX

POD = ("spec", "template", "spec")


@dataclass(frozen=True)
class Controller:
    resource: Resource
    flags: dict[str, str]
    configmap: Resource | None
    configmap_ref: tuple[str, str] | None
    controller_class: str
    ingress_class: str
    watch_classless: bool = False


def controllers(idx: Index) -> list[Controller]:
    out = []
    for r in idx.all("Deployment") + idx.all("DaemonSet"):
        container = N.controller_container(r.obj)
        if container is None:
            continue
        given = N.flags(container)
        ref = N.configmap_ref(given, r.namespace)
        cm = next((m for m in idx.of("ConfigMap", ref[0]) if m.name == ref[1]), None) if ref else None
        out.append(Controller(r, given, cm, ref, *N.classes(given), N.watches_classless(given)))
    return out


def default_class(idx: Index) -> str | None:
    """The cluster's default IngressClass in the input (none, or two: none)."""
    marked = [c.name for c in idx.all("IngressClass")
              if str(c.meta("annotations").get(N.DEFAULT_CLASS_ANNOTATION, "")).lower() == "true"]
    return marked[0] if len(marked) == 1 else None


def _read_cluster(idx: Index, ctx: dict[str, Any]) -> None:
    """The input's ingress-nginx controllers and default IngressClass, read once per link."""
    if "nginx" not in ctx:
        ctx["nginx"], ctx["default_class"] = controllers(idx), default_class(idx)


def serving(ing: Resource, found: list[Controller], classes: dict[str, Any],
            default: str | None = None) -> tuple[Controller | None, bool]:
    """(the controller serving the Ingress, whether the Ingress is ingress-nginx's at all)."""
    cls = ingress_class(ing) or default
    if cls is None:
        match = [c for c in found if c.watch_classless]
        return (match[0] if match else None), bool(match)
    if cls in classes:
        match = [c for c in found if c.controller_class == classes[cls]]
        return (match[0] if match else None), bool(match) or classes[cls] == N.CONTROLLER_CLASS
    match = [c for c in found if c.ingress_class == cls]
    return (match[0] if match else None), bool(match)


def nginx_path(services: list[Resource], idx: Index, ctx: dict[str, Any],
               notes: list[str]) -> list[tuple[dict[str, Any], Origins]]:
    """The workload's ingress-nginx hop (none: no ingress-nginx Ingress routes to it), with
    where each of its numbers was written."""
    _read_cluster(idx, ctx)
    ingresses = [ing for s in services for ing, _ in idx.backends.get((s.namespace, s.name), [])]
    routed = [(ing, *serving(ing, ctx["nginx"], ctx["classes"], ctx["default_class"]))
              for ing in dict.fromkeys(ingresses)]
    routed = [(ing, ctl) for ing, ctl, ours in routed if ours]
    if not routed:
        return []
    ctl = next((c for _, c in routed if c is not None), None)
    hop: dict[str, Any] = {"kind": INGRESS_NGINX.name}
    origins: Origins = {}
    if ctl is None:
        notes.append(f"{routed[0][0].ref}: its ingress-nginx controller is not in the input: its ConfigMap, "
                     "flags and grace are the controller's defaults")
    else:
        if ctl.configmap is not None:
            cm = ctl.configmap
            values = read_from(cm, lambda: N.configmap_values(cm.obj))
            hop.update(values)
            origins.update({f: (cm, ("data", N.NAMES[f])) for f in values})
        elif ctl.configmap_ref is not None:
            notes.append(f"{ctl.resource.ref}: ConfigMap {'/'.join(ctl.configmap_ref)} not in the input: "
                         "the controller's defaults are judged")
        values = read_from(ctl.resource, lambda: N.controller_values(ctl.resource.obj, ctl.flags))
        hop.update(values)
        origins.update({f: (ctl.resource, (*POD, "terminationGracePeriodSeconds") if f == "grace_s" else POD)
                        for f in values})
        wait = read_from(ctl.resource, lambda: N.prestop_wait(
            N.controller_container(ctl.resource.obj) or {},
            seconds_annotation(annotations_of(ctl.resource.obj), DRAIN_ANNOTATION)))
        if wait is None:
            notes.append(f"{ctl.resource.ref}: its preStop runs a command whose length nothing states (set "
                         f"{ANNOTATION}{DRAIN_ANNOTATION}): its shutdown delay is not judged against the load "
                         "balancer in front of it")
        elif wait:
            hop["shutdown_delay_s"] = wait + hop.get("shutdown_delay_s", INGRESS_NGINX.defaults["shutdown_delay_s"])
            origins["shutdown_delay_s"] = (ctl.resource, POD)
            notes.append(f"{ctl.resource.ref}: its preStop keeps it accepting {wait}s before "
                         f"{N.SHUTDOWN_FLAG} starts: both count in the hop's shutdown delay")
        src = None if wait is None else front_lb(ctl.resource, idx, ctx, notes)
        if src is not None:
            hop["lb"] = src.lb
            origins.update(src.origins)
            notes += [f"{src.via} in front of the controller: defaults applied: {', '.join(src.defaults)}"
                      ] if src.defaults else []
    base = hop.get("request_timeout_s", INGRESS_NGINX.defaults["request_timeout_s"])
    timeouts: list[tuple[int, Resource | None]] = []
    for ing, _ in routed:
        value, note = N.read_timeout(ing.meta("annotations"))
        notes += [f"{ing.ref}: {note}"] if note else []
        timeouts.append((value, ing) if value is not None else (base, None))
    shortest = min(timeouts, key=lambda t: t[0])
    if len({t for t, _ in timeouts}) > 1:
        notes.append(f"{len(timeouts)} Ingresses route to these pods with different proxy-read-timeouts: "
                     f"the shortest, {shortest[0]}s, is judged")
    if shortest[1] is not None:
        hop["request_timeout_s"] = shortest[0]
        origins["request_timeout_s"] = (shortest[1], ("metadata", "annotations", N.READ_TIMEOUT_ANNOTATION))
    return [(hop, origins)]


def front_lb(controller: Resource, idx: Index, ctx: dict[str, Any], notes: list[str]) -> LbSource | None:
    """The NLB in front of the controller's pods: of the LoadBalancer Services selecting them,
    the one slowest to stop sending to a leaving pod (none: a note)."""
    labels = pod_labels(controller)
    found = [src for svc in idx.candidates("Service", controller.namespace, labels) if selects_pods(svc, labels)
             for src in [nlb_source(svc, controller, ctx, notes)] if src is not None]
    if not found:
        notes.append(f"{controller.ref}: no NLB Service selecting its pods in the input: its --shutdown-grace-period "
                     "is not judged against the load balancer in front of it")
        return None
    slowest = max(found, key=lambda src: int(d.lb_detect(src.lb).value))
    if len(found) > 1:
        notes.append(f"{len(found)} NLB Services send to {controller.ref}: {slowest.via}, the slowest to stop "
                     "sending to a leaving pod, is judged")
    return slowest


def unexplained(idx: Index, ctx: dict[str, Any]) -> list[str]:
    """Ingresses no controller in the input is known to serve: neither the LBC's nor
    ingress-nginx's as far as the input shows. Their proxy hop is not audited, and a note says
    which resource would tell."""
    from lockstep.timing.bind.lbs import is_alb

    _read_cluster(idx, ctx)
    out = []
    for ing in idx.all("Ingress"):
        if is_alb(ing, ctx["classes"]) or serving(ing, ctx["nginx"], ctx["classes"], ctx["default_class"])[1]:
            continue
        cls = ingress_class(ing) or ctx["default_class"]
        if cls is None or cls not in ctx["classes"]:
            out.append(f"{ing.ref}: no controller in the input serves class {cls!r} (add its IngressClass, or the "
                       "ingress-nginx controller's Deployment): its proxy hop is not audited")
    return out
