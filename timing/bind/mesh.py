"""Which mesh proxy runs in a workload's pods, and the resources that set its numbers (issue 12):
the pod template, its Namespace, Istio's mesh-wide ConfigMap, and the DestinationRule of the
Service that selects the pods (`timing.extract.mesh` reads each; this module finds them).

A DestinationRule applies to the Service whose host it names: a host with no dot is relative to
the rule's own namespace (`api` in `web` is `api.web.svc.cluster.local`); one with a dot is
taken as written, as istiod does (`extract.mesh.istio_host`). Among several for one
host the one in the Service's namespace is judged, else the one in Istio's root namespace
(`istio-system`), and the others are a note; a wildcard host, or a rule limited to some
client workloads (`workloadSelector`), is not matched to one Service: a note, never a guess.
"""

from __future__ import annotations

from typing import Any, Callable

from lockstep.timing.bind.index import Index
from lockstep.timing.bind.resource import Resource, dig
from lockstep.timing.extract import mesh as M
from lockstep.timing.extract.values import ExtractError

Origins = dict[str, tuple[Resource, tuple[Any, ...]]]  # field → where it was written
POD_ANNOTATIONS = ("spec", "template", "metadata", "annotations")


def mesh_config(idx: Index) -> Resource | None:
    """Istio's mesh-wide ConfigMap (`istio` in `istio-system`), if the input has it."""
    ns, name, _ = M.ISTIO_MESH_CONFIG
    return next((c for c in idx.of("ConfigMap", ns) if c.name == name), None)


def destination_rule(services: list[Resource], idx: Index, notes: list[str]) -> Resource | None:
    """The DestinationRule judged for the Services selecting a workload's pods."""
    hosts = {M.service_host(s.name, s.namespace): s.namespace for s in services}
    found = []
    for rule in idx.all("DestinationRule"):
        host = str(dig(rule.obj, "spec", "host") or "")
        if "*" in host:
            notes.append(f"{rule.ref}: wildcard host {host!r} is not matched to one Service: not read")
            continue
        name = M.istio_host(host, rule.namespace)
        if name not in hosts:
            partial = [h for h in hosts if h.startswith(f"{host}.") and host.count(".") in (1, 2)]
            if partial:  # `api.web`: istiod does not complete a dotted name, so it names nothing
                notes.append(f"{rule.ref}: host {host!r} names no Service: Istio completes only a name without a dot; "
                             f"write {partial[0]!r} (or the short name in the Service's namespace): not read")
            continue
        if dig(rule.obj, "spec", "workloadSelector") is not None:
            notes.append(f"{rule.ref}: applies to some client workloads only (workloadSelector): not read")
            continue
        rank = 0 if rule.namespace == hosts[name] else 1 if rule.namespace == M.ISTIO_MESH_CONFIG[0] else 2
        found.append((rank, rule.namespace, rule.name, rule))
    if not found:
        return None
    found.sort(key=lambda f: f[:3])
    if len(found) > 1:
        notes.append(f"{len(found)} DestinationRules name these pods' Service; judged: {found[0][3].ref}")
    return found[0][3]


def read_from(source: Resource, read: Callable[[], Any]) -> Any:
    """A number read from another resource than the workload: bad input names that resource."""
    try:
        return read()
    except ExtractError as err:
        raise ExtractError(f"{source.ref} ({source.where}): {err}") from None


def mesh_path(workload: Resource, services: list[Resource], idx: Index, notes: list[str],
              undecided: set[str]) -> list[tuple[dict[str, Any], Origins]]:
    """The workload's `path` entry for its mesh proxy (none: none is injected), with where each
    of its numbers was written (hop field → resource and key path). A namespace that would
    decide it and is missing from the input goes into `undecided`."""
    template = dig(workload.obj, "spec", "template", "metadata") or {}
    labels, annotations = dig(template, "labels") or {}, dig(template, "annotations") or {}
    namespace = idx.namespaces.get(workload.namespace)
    kind, why = M.injected(labels, annotations, namespace.obj if namespace else None)
    if why:
        undecided.add(workload.namespace)
    if kind is None:
        return []
    pod = POD_ANNOTATIONS
    hop: dict[str, Any] = {"kind": kind}
    origins: Origins = {}
    if kind == "istio-sidecar":
        key = M.ISTIO_MESH_CONFIG[2]
        mesh = mesh_config(idx)
        hop["drain_s"] = M.istio_drain(annotations)
        origins["drain_s"] = (workload, (*pod, M.ISTIO_PROXY_CONFIG))
        if hop["drain_s"] is None and mesh is not None:
            hop["drain_s"] = read_from(mesh, lambda: M.istio_mesh_drain(mesh.obj))
            origins["drain_s"] = (mesh, ("data", key))
        hop["app_waits"] = M.istio_app_waits(annotations, None)  # the pod's own errors are the workload's
        if mesh is not None:
            hop["app_waits"] = read_from(mesh, lambda: M.istio_app_waits(annotations, mesh.obj))
        stated = M.istio_app_waits(annotations, None) is True or M.ISTIO_NATIVE in annotations
        origins["app_waits"] = ((workload, (*pod, M.ISTIO_PROXY_CONFIG)) if stated or mesh is None
                                else (mesh, ("data", key)))
        rule = destination_rule(services, idx, notes)
        if rule is not None:
            hop["upstream_idle_s"] = read_from(rule, lambda: M.destination_idle(rule.obj))
            origins["upstream_idle_s"] = (rule, M.DESTINATION_IDLE[:2])  # stated or not: its line is the policy's
    else:
        hop["drain_s"] = M.linkerd_drain(annotations, namespace.obj if namespace else None)
        origins["drain_s"] = (workload, (*pod, M.LINKERD_WAIT))
        hop["app_waits"] = M.linkerd_app_waits(annotations, namespace.obj if namespace else None)
        origins["app_waits"] = (workload, (*pod, M.LINKERD_AWAIT))
    return [({k: v for k, v in hop.items() if v is not None}, origins)]
