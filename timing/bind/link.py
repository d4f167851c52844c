"""The one linker: which resources belong together, as Kubernetes and the AWS Load Balancer
Controller decide it, for the audit and the policy pack alike.

    workload ──(pod labels selected by)──► Service ◄──(serviceRef)── TargetGroupBinding ──► TargetGroup
    Ingress (controller's class) ──(backend)──► Service           TargetGroup ◄── Listener / ListenerRule
    LoadBalancer Service (controller's) ──► its NLB               PodDisruptionBudget ──(selector)──► pods
    HorizontalPodAutoscaler ──(scaleTargetRef)──► workload        Namespace label / template ⇒ readiness gate
    pod template / Namespace ⇒ mesh proxy ◄── DestinationRule (Service host), istio mesh ConfigMap
    Ingress (ingress-nginx class) ──► its controller ──(--configmap)──► ConfigMap: the ingress hop
    VirtualService (route host) ──(gateways)──► Gateway ──(selector)──► gateway workload: the Istio gateway hop
    heartbeat ConfigMap ──► its Deployment, the watched workloads Route 53 record ──► its health check

Each workload becomes one `Subject` per load balancer in front of it (or one without). A
link is followed by value when the value is known and by dependency otherwise (a preview does
not know a new target group's ARN, but the binding depends on it). What cannot be linked is a
note, and what cannot be read is `unreadable` with the reason: never a guess.

The module is long because the linking order is in one place: the shared context (`plan`),
each workload's links (`link_workloads`, which the audit runs in slices), and what follows
from all of them together (`finish`: lone target groups, heartbeats, the failover, notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockstep.timing import extract as X
from lockstep.timing.bind import lbs
from lockstep.timing.bind.entry import entry_workload, unreached
from lockstep.timing.bind.index import Index
from lockstep.timing.bind.istio_gateway import gateway_shutdown, ingress_path, own_drain
from lockstep.timing.bind.lbs import LbSource
from lockstep.timing.bind.mesh import Origins, mesh_path
from lockstep.timing.bind.nginx import unexplained
from lockstep.timing.bind.nodes import NodesRead, read_nodes
from lockstep.timing.bind.resource import OTHER_WORKLOADS, WORKLOADS, Resource, dig, known, pod_labels, selects_pods
from lockstep.timing.context import Scene
from lockstep.timing.extract import istio_gateway as G
from lockstep.timing.extract import mesh as M
from lockstep.timing.conventions import GATE_CONDITION, GATE_LABEL
from lockstep.timing.heartbeat_config import CONFIGMAP_KEY
from lockstep.timing.model import LoadBalancer, ReadinessGate, Service


@dataclass
class Subject:
    workload: Resource
    service: Service
    source: LbSource | None = None
    pdb: Resource | None = None
    hpa: Resource | None = None
    namespace: Resource | None = None
    notes: list[str] = field(default_factory=list)
    nodes: NodesRead | None = None  # the cluster's node disruption sources, shared by every subject
    path_origins: Origins = field(default_factory=dict)  # where each `path[i].*` number was written
    field_origins: Origins = field(default_factory=dict)  # other fields a resource beside the workload set

    @property
    def key(self) -> str:
        return f"{self.service.namespace}/{self.workload.kind}/{self.service.name}"

    @property
    def via(self) -> str:
        return self.source.via if self.source is not None else ""


@dataclass
class LoneTarget:
    """A target group no binding in the input points at: the load-balancer rules alone."""

    resource: Resource
    lb: LoadBalancer


@dataclass
class HeartbeatLink:
    configmap: Resource
    deployment: Resource | None
    scene: Scene
    watched: dict[str, Subject]  # by service name
    notes: list[str]


@dataclass
class FailoverLink:
    check: Resource
    record: Resource | None
    scene: Scene
    entry: Subject | None


@dataclass
class Linked:
    subjects: list[Subject] = field(default_factory=list)
    lone: list[LoneTarget] = field(default_factory=list)
    heartbeats: list[HeartbeatLink] = field(default_factory=list)
    failovers: list[FailoverLink] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    nodes: NodesRead = field(default_factory=NodesRead)  # the node disruption sources (timing.bind.nodes)
    unreadable: list[tuple[Resource, str]] = field(default_factory=list)  # input errors
    not_judged: list[tuple[Resource, str]] = field(default_factory=list)  # valid, but outside the model
    warnings: list[tuple[Resource, str]] = field(default_factory=list)  # links that lead nowhere: likely a mistake


def declared_gates(workload: Resource) -> list[str]:
    gates = X.items(dig(workload.obj, "spec", "template", "spec", "readinessGates"))
    return [str(dig(g, "conditionType")) for g in gates if str(dig(g, "conditionType") or "").startswith(GATE_CONDITION)]


def readiness_gate(workload: Resource, idx: Index, src: LbSource | None, linked_to: list[Resource],
                   notes: list[str]) -> ReadinessGate | None:
    """The gate the pods carry: declared in the template (the controller sets the condition of
    any pod that has it), or injected by the webhook into pods behind IP targets in a labelled
    namespace — only into pods created after the Service and binding exist."""
    ns = idx.namespaces.get(workload.namespace)
    labelled = ns is not None and ns.meta("labels").get(GATE_LABEL[0]) == GATE_LABEL[1]
    if declared_gates(workload):
        return ReadinessGate(declared=True, namespace_labelled=labelled, injected_after_binding=True)
    if src is None or src.lb.target_type != "ip":
        return None
    if ns is None:
        notes.append(f"Namespace {workload.namespace} not in the input: no readiness gate assumed "
                     f"(label {GATE_LABEL[0]}={GATE_LABEL[1]} decides it)")
        return None
    if not labelled:
        return None
    order = [workload.depends_on(r) for r in linked_to]
    after = None if any(o is None for o in order) else all(order) and bool(order)
    return ReadinessGate(namespace_labelled=True, injected_after_binding=after)


def disruption(workload: Resource, idx: Index, ctx: dict[str, Any],
               notes: list[str]) -> tuple[Resource | None, Resource | None]:
    """The PDB that selects these pods — by its selector only, as the eviction API decides (a
    PDB named like the workload that selects other pods protects nothing: it is a note) — and
    the HPA that scales the workload."""
    ns, labels = workload.namespace, pod_labels(workload)
    pdbs = [p for p in idx.candidates("PodDisruptionBudget", ns, labels)
            if X.selects(dig(p.obj, "spec", "selector"), labels)]
    if len(pdbs) > 1:
        notes.append(f"{len(pdbs)} PDBs select these pods (the eviction API refuses such pods); judged: {pdbs[0].ref}")
    hpas = idx.scalers.get((ns, workload.kind, workload.name), [])
    for p in pdbs[:1]:
        ctx["used_pdbs"].add(id(p))
    return (pdbs[0] if pdbs else None), (hpas[0] if hpas else None)


def lb_sources(workload: Resource, idx: Index, ctx: dict[str, Any], notes: list[str]) -> list[LbSource]:
    labels = pod_labels(workload)
    found: list[LbSource] = []
    for svc in idx.candidates("Service", workload.namespace, labels):
        if not selects_pods(svc, labels):
            continue
        ctx["used_services"].add(id(svc))
        bound, replaces = lbs.tgb_sources(svc, workload, idx, ctx, notes)
        found += bound
        if not replaces:
            found += lbs.alb_sources(svc, workload, idx, ctx, notes)
            nlb = lbs.nlb_source(svc, workload, ctx, notes)
            found += [nlb] if nlb else []
    found += lbs.argo_alb_sources(workload, idx, ctx, notes)
    unique: dict[tuple[Any, str], LbSource] = {}
    for src in found:
        unique.setdefault((src.lb, src.via.split(" → ")[-1]), src)
    return list(unique.values())


def subjects_of(workload: Resource, idx: Index, ctx: dict[str, Any]) -> list[Subject]:
    notes: list[str] = []
    sources = lb_sources(workload, idx, ctx, notes)
    pdb_res, hpa_res = disruption(workload, idx, ctx, notes)
    pdb = X.pdb(pdb_res.obj) if pdb_res else None
    hpa = X.hpa(hpa_res.obj) if hpa_res else None
    selecting = [s for s in idx.candidates("Service", workload.namespace, pod_labels(workload))
                 if selects_pods(s, pod_labels(workload))]
    # An Istio gateway's own proxy is the gateway, not a sidecar in front of an app: it has no path
    gateway = G.is_gateway(workload.obj)
    hops = [] if gateway else ingress_path(selecting, idx, ctx, notes) + mesh_path(
        workload, selecting, idx, notes, ctx["mesh_undecided"])
    path = tuple(h for h, _ in hops)  # outermost first: the ingress proxy, then the pod's own
    path_origins = {f"path[{i}].{f}": o for i, (_, og) in enumerate(hops) for f, o in og.items()}
    drain, own_origins = own_drain(workload, idx, notes) if gateway else (None, {})
    field_origins = {f"shutdown.{f}": o for f, o in own_origins.items()}
    notes = list(dict.fromkeys(notes))  # two hops may note the same resource (a DestinationRule)
    out = []
    for src in sources or [None]:
        own = list(notes)
        # what the webhook needs to exist when a pod is created: the Services and the binding
        linked_to = selecting + ([src.binding] if src is not None and src.binding is not None else [])
        gate = readiness_gate(workload, idx, src, linked_to, own)
        svc = X.workload(workload.obj, lb=src.lb if src else None, pdb=pdb, hpa=hpa, readiness_gate=gate,
                         port_hint=service_port(workload, idx), path=path)
        if gateway:
            svc = gateway_shutdown(svc, drain)
        if src and src.defaults:
            own.append("defaults applied: " + ", ".join(src.defaults))
        ns = idx.namespaces.get(workload.namespace) if gate is not None else None
        out.append(Subject(workload, svc, src, pdb_res, hpa_res, ns, own, path_origins=path_origins,
                           field_origins=field_origins))
    return out


def service_port(workload: Resource, idx: Index) -> int | None:
    """The pod port the first Service selecting these pods sends to (a container that declares
    no port still listens on it)."""
    labels = pod_labels(workload)
    for svc in idx.candidates("Service", workload.namespace, labels):
        if selects_pods(svc, labels):
            port = lbs.target_port(svc, None, workload)
            if port is not None:
                return port
    return None


def with_template(rollout: Resource, idx: Index) -> tuple[Resource | None, Resource | None, str]:
    """A Rollout as the linker judges it: its own template, or the template of the Deployment
    its `workloadRef` names (that Deployment's own `replicas: 0` is deliberate: it only holds
    the template). (rollout, referenced Deployment, why not) — None and the reason when the
    reference does not resolve."""
    ref = dig(rollout.obj, "spec", "workloadRef")
    if not isinstance(ref, dict):
        return rollout, None, ""
    name, kind = dig(ref, "name"), dig(ref, "kind") or "Deployment"
    target = next((d for d in idx.of(str(kind), rollout.namespace) if d.name == name), None)
    if target is None or dig(target.obj, "spec", "template") is None:
        return None, None, f"workloadRef {kind} {rollout.namespace}/{name} not in the input (it holds the pod template)"
    spec = {**(dig(rollout.obj, "spec") or {}), "template": dig(target.obj, "spec", "template")}
    merged = Resource(rollout.kind, {**rollout.obj, "spec": spec}, rollout.origin, rollout.deps)
    return merged, target, ""


def heartbeat_links(idx: Index, subjects: list[Subject], linked: Linked) -> None:
    """Every ConfigMap carrying `heartbeat.json`: its Deployment, the workloads its specs watch."""
    by_workload: dict[tuple[str, str], Subject] = {}
    for s in subjects:
        by_workload.setdefault((s.service.namespace, s.service.name), s)
    for cm in idx.all("ConfigMap"):
        if not isinstance(dig(cm.obj, "data", CONFIGMAP_KEY), str):
            continue
        try:
            config = X.heartbeat_config(cm.obj)
            deployment = next((d for d in idx.of("Deployment", config.lease.namespace) if d.name == config.service), None)
            hb = X.heartbeat_service(config, deployment.obj if deployment else None)
            specs = X.heartbeat_specs(config)
        except (X.ExtractError, ValueError) as err:
            linked.unreadable.append((cm, str(err)))
            continue
        notes = [] if deployment else [f"Deployment {config.lease.namespace}/{config.service} not in the "
                                       "input: the heartbeat's own probes and drain are unknown"]
        kept, watched = [], {}
        for spec, cfg in zip(specs, config.specs):
            subject = by_workload.get((cfg.workload.namespace, cfg.workload.name))
            if subject is None:
                notes.append(f"spec {spec.name}: watched {cfg.workload.kind} {cfg.workload.namespace}/"
                             f"{cfg.workload.name} not in the input: not judged")
                continue
            kept.append(spec)
            watched[subject.service.name] = subject
        scene = Scene(services=tuple(s.service for s in watched.values()), heartbeat=hb, heartbeat_specs=tuple(kept))
        linked.heartbeats.append(HeartbeatLink(cm, deployment, scene, watched, notes))


def guards(check: Resource, record: Resource) -> bool:
    """The record names the health check by id (when known) or depends on it."""
    check_id = known(dig(check.obj, "id"))
    return bool(record.depends_on(check)) or (check_id is not None and known(dig(record.obj, "healthCheckId")) == check_id)


def failover_links(idx: Index, subjects: list[Subject], options: dict[str, Any], linked: Linked) -> None:
    """The Route 53 failover: every health check (its own values), and the primary's record
    with the regional entry workload (`timing.bind.entry`: the configured one, else the one
    the health check reaches) for the stack rules."""
    pairs = [(c, r) for r in idx.records for c in idx.checks if guards(c, r)]
    primary = [p for p in pairs if any(dig(f, "type") == "PRIMARY"
                                       for f in X.items(dig(p[1].obj, "failoverRoutingPolicies")))]
    chosen = (primary or pairs or [None])[0]
    for check in idx.checks:
        record = chosen[1] if chosen is not None and chosen[0] is check else None
        entry = None
        if record is not None:
            wanted = options.get("entry_service")
            path = known(dig(check.obj, "resourcePath"))
            entry = entry_workload([(s.service, s) for s in subjects], path if isinstance(path, str) else None,
                                   wanted if isinstance(wanted, str) else None)
            if entry is None:
                linked.unreadable.append((check, f"cannot tell the regional entry workload{unreached(wanted, path)}: "
                                          "set the policy config key entry_service (lockstep audit: "
                                          "--entry-service NAME)"))
        try:
            fo = X.failover(check.obj, record.obj if record is not None and entry is not None else {},
                            entry.service.name if entry is not None else None)
        except X.ExtractError as err:
            linked.unreadable.append((check, str(err)))
            continue
        services = (entry.service,) if entry is not None else ()
        linked.failovers.append(FailoverLink(check, record if entry else None, Scene(services=services, failover=fo),
                                             entry))


@dataclass
class Plan:
    """A linking in progress: the index and the shared context every workload is linked in,
    the workloads to link (`link_workloads`, in any number of slices, in order), and what
    `finish` adds once they are done."""

    idx: Index
    ctx: dict[str, Any]
    options: dict[str, Any]
    workloads: list[Resource]
    out: Linked
    nodes: NodesRead  # the cluster's node disruption sources, every subject judged on them

    @property
    def links_subjects(self) -> bool:
        """`finish` reads the workloads' subjects: a heartbeat ConfigMap names the workloads it
        watches, and a Route 53 failover its entry workload."""
        return bool(self.idx.checks) or any(isinstance(dig(cm.obj, "data", CONFIGMAP_KEY), str)
                                            for cm in self.idx.all("ConfigMap"))


# What linking a workload adds to the shared context: the resources some workload used (the
# rest are notes and lone target groups) and the namespaces whose mesh the input leaves open.
USED = ("used_tgs", "used_pdbs", "used_services", "mesh_undecided")


def plan(resources: list[Resource], options: dict[str, Any] | None = None) -> Plan:
    """The index, the shared context and the workloads to judge (`link`'s first step)."""
    options = dict(options or {})
    propagation = {k: options[k] for k in ("deregistration_propagation_s", "registration_propagation_s")
                   if options.get(k) is not None}
    tg_options = {**propagation, "idle_timeout_s": options.get("alb_idle_timeout_s")}
    idx = Index(resources)
    out = Linked()
    ctx: dict[str, Any] = {
        "options": propagation, "tg_options": tg_options, "used_tgs": set(), "used_pdbs": set(),
        "used_services": set(), "classes": {d.name: dig(d.obj, "spec", "controller") for d in idx.all("IngressClass")},
        "groups": {}, "assume_lbc_services": bool(options.get("assume_lbc_services")),
        "class_params": lbs.class_params(idx), "mesh_undecided": set(),
    }
    for ing in idx.all("Ingress"):
        group = ing.meta("annotations").get(X.ALB_ANNOTATION + "group.name")
        if group and X.ALB_ANNOTATION + "load-balancer-attributes" in ing.meta("annotations"):
            ctx["groups"].setdefault(group, ing)
    templates: dict[int, Resource] = {}  # Deployments that only hold a Rollout's template
    rollouts: list[Resource] = []
    for r in idx.all("Rollout"):
        merged, target, why = with_template(r, idx)
        if merged is None:
            out.not_judged.append((r, why))
            continue
        if target is not None:
            templates[id(target)] = r
        rollouts.append(merged)
    judged = [r for kind in WORKLOADS if kind != "Rollout" for r in idx.all(kind) if id(r) not in templates]
    judged += rollouts
    for r in idx.all("Deployment") + idx.all("StatefulSet"):
        if id(r) in templates:
            out.notes.append(f"{r.ref} ({r.where}): the pod template of {templates[id(r)].ref} (workloadRef; "
                             "its own replicas are deliberate): judged as the Rollout")
    return Plan(idx, ctx, options, judged, out, read_nodes(idx))  # (what removes every workload's nodes)


def link_workloads(p: Plan, workloads: list[Resource]) -> None:
    """Each workload's subjects, or why it is not judged, onto `p.out` (in order); each
    subject on the node disruption sources, when the input has them."""
    out = p.out
    nodes = p.nodes if p.nodes.nodes is not None else None
    for r in workloads:
        try:
            found = subjects_of(r, p.idx, p.ctx)
            for s in found:
                s.nodes = nodes
            out.subjects += found
        except (X.ExtractError, ValueError) as err:
            if "declares no port" in str(err) or "is modelled" in str(err):
                # A valid workload the model cannot hold (a queue consumer: no port anywhere).
                out.not_judged.append((r, str(err)))
            else:
                out.unreadable.append((r, str(err)))


def finish(p: Plan) -> Linked:
    """After every workload is linked: lone target groups, the node disruption sources, the
    heartbeats, the failover, and the notes on what could not be linked."""
    idx, ctx, out = p.idx, p.ctx, p.out
    for kind, why in OTHER_WORKLOADS.items():
        out.not_judged += [(r, f"{kind}: {why}") for r in idx.all(kind)]
    for tg in idx.target_groups:
        if id(tg) in ctx["used_tgs"]:
            continue
        if lbs.unsupported(tg):
            out.notes.append(f"target group {tg.name} ({tg.where}): {lbs.unsupported(tg)} is not modelled")
            continue
        try:
            out.lone.append(LoneTarget(tg, X.target_group(tg.obj, attach_to_arn=idx.attached(tg), **ctx["tg_options"])))
        except (X.ExtractError, ValueError) as err:
            out.unreadable.append((tg, str(err)))
    out.notes += [f"Namespace {ns} {M.UNDECIDED_NOTE}" for ns in sorted(ctx["mesh_undecided"])]
    out.nodes = p.nodes  # what removes every workload's nodes (timing.bind.nodes)
    out.unreadable += out.nodes.unreadable
    out.notes += out.nodes.report()
    heartbeat_links(idx, out.subjects, out)
    failover_links(idx, out.subjects, p.options, out)
    out.notes += [f"{r.ref} ({r.where}) not judged: {why}" for r, why in out.not_judged]
    out.notes += unlinked(idx, ctx, out.warnings) + unexplained(idx, ctx)
    return out


def link(resources: list[Resource], options: dict[str, Any] | None = None) -> Linked:
    """Every workload's subjects, lone target groups, heartbeats, the failover, and what could
    not be linked or read. `options`: propagation delays (`deregistration_propagation_s`,
    `registration_propagation_s`), `alb_idle_timeout_s` for target groups whose ALB is not in
    the input, `entry_service` for the failover. (`plan`, `link_workloads` over every
    workload, `finish`: the audit links slices of the workloads in worker processes.)"""
    p = plan(resources, options)
    link_workloads(p, p.workloads)
    return finish(p)


def unlinked(idx: Index, ctx: dict[str, Any], warnings: list[tuple[Resource, str]]) -> list[str]:
    """Load balancer ends that lead nowhere, and PDBs that protect nothing: said, never guessed.
    An Ingress backend naming a Service the input lacks is a warning: the controller answers
    its path with 503s (or the input is incomplete, which the user should know too)."""
    notes = []
    services = {(d.namespace, d.name) for d in idx.all("Service")}
    for (ns, svc), uses in sorted(idx.backends.items(), key=lambda kv: kv[0]):
        if (ns, svc) not in services:
            warnings.append((uses[0][0], f"{uses[0][0].ref}: backend Service {ns}/{svc} not in the input: its "
                                         "paths reach no pod (or add the Service to the input)"))
    for ing in idx.all("Ingress"):
        if not lbs.is_alb(ing, ctx["classes"]) and any(str(k).startswith(X.ALB_ANNOTATION)
                                                       for k in ing.meta("annotations")):
            cls = dig(ing.obj, "spec", "ingressClassName")
            notes.append(f"{ing.ref}: class {cls!r} is not the controller's as far as the input shows "
                         "(add its IngressClass): not audited")
    for svc in idx.all("Service"):
        spec = dig(svc.obj, "spec") or {}
        if dig(spec, "type") != "LoadBalancer":
            continue
        if not lbs.nlb_managed(svc, ctx):
            notes.append(f"{svc.ref}: a LoadBalancer the AWS Load Balancer Controller does not reconcile "
                         "(in-tree cloud provider): not modelled (with LBC ≥ 2.5 its webhook makes new ones "
                         "LBC NLBs: pass --assume-lbc-services)")
        elif id(svc) not in ctx["used_services"]:
            notes.append(f"{svc.ref}: selects no workload the model judges ({', '.join(WORKLOADS)}) in the input")
    for pdb in idx.all("PodDisruptionBudget"):
        if id(pdb) not in ctx["used_pdbs"]:
            notes.append(f"{pdb.ref} ({pdb.where}) selects no workload's pods in the input: it protects nothing")
    return notes
