"""Documents → subjects: one model `Service` per workload and load balancer in front of it."""

from __future__ import annotations

from typing import Any

from timing import extract as X
from timing.audit import links, shape
from timing.audit.graph import (GATE_CONDITION, GATE_LABEL, WORKLOADS, Graph, Index, LbSource, Subject, dig,
                                TargetGroup, meta, name, namespace, ref)
from timing.audit.reader import Doc
from timing.model import ReadinessGate


def pod_labels(doc: Doc) -> dict[str, Any]:
    return dig(doc.obj, "spec", "template", "metadata", "labels") or {}


def selects_pods(svc: Doc, labels: dict[str, Any]) -> bool:
    """A Service selector (a plain map) selects pods carrying all its labels; none selects nothing."""
    selector = dig(svc.obj, "spec", "selector")
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def readiness_gate(doc: Doc, idx: Index, src: LbSource | None, notes: list[str]) -> ReadinessGate | None:
    """A gate is relied on when the pod template declares the controller's condition, or the
    namespace label makes the webhook inject it for pods behind IP targets."""
    gates = X.items(dig(doc.obj, "spec", "template", "spec", "readinessGates"))
    if any(str(dig(g, "conditionType") or "").startswith(GATE_CONDITION) for g in gates):
        return ReadinessGate(namespace_labelled=True, injected_after_binding=True)
    if src is None or src.lb.target_type != "ip":
        return None
    ns = idx.namespaces.get(namespace(doc))
    if ns is None:
        notes.append(f"Namespace {namespace(doc)} not in the input: no readiness gate assumed "
                     f"(label {GATE_LABEL}=enabled decides it)")
        return None
    if meta(ns, "labels").get(GATE_LABEL) == "enabled":
        return ReadinessGate(namespace_labelled=True, injected_after_binding=True)
    return None


def lb_sources(doc: Doc, idx: Index, ctx: dict[str, Any], notes: list[str]) -> list[LbSource]:
    labels = pod_labels(doc)
    found: list[LbSource] = []
    for svc in idx.candidates("Service", namespace(doc), labels):
        if not selects_pods(svc, labels):
            continue
        ctx["used_services"].add(id(svc))
        described, replaces = links.tgb_sources(svc, idx, ctx, notes)
        found += described
        if not replaces:
            found += links.alb_sources(svc, doc, idx, ctx)
            nlb = links.nlb_source(svc, doc, ctx)
            found += [nlb] if nlb else []
    unique: dict[tuple[Any, str], LbSource] = {}
    for src in found:
        unique.setdefault((src.lb, src.via.split(" → ")[-1]), src)
    return list(unique.values())



def disruption(doc: Doc, idx: Index, ctx: dict[str, Any], notes: list[str]) -> tuple[Doc | None, Doc | None]:
    """The PDB that selects these pods (or, when none does, one named after the workload:
    `pdb-selects-workload` then says why it misses) and the HPA that scales the workload."""
    ns, labels = namespace(doc), pod_labels(doc)
    pdbs = [p for p in idx.candidates("PodDisruptionBudget", ns, labels)
            if X.selects(dig(p.obj, "spec", "selector"), labels)]
    if not pdbs:
        pdbs = [p for p in idx.of("PodDisruptionBudget", ns) if name(p) in (name(doc), name(doc) + "-pdb")]
    if len(pdbs) > 1:
        notes.append(f"{len(pdbs)} PDBs select these pods (the eviction API refuses such pods); "
                     f"judged: {ref(pdbs[0])}")
    hpas = idx.scalers.get((ns, doc.kind, name(doc)), [])
    for p in pdbs[:1]:
        ctx["used_pdbs"].add(id(p))
    return (pdbs[0] if pdbs else None), (hpas[0] if hpas else None)


def subjects_of(doc: Doc, idx: Index, ctx: dict[str, Any]) -> list[Subject]:
    notes: list[str] = []
    sources = lb_sources(doc, idx, ctx, notes)
    pdb_doc, hpa_doc = disruption(doc, idx, ctx, notes)
    pdb = X.pdb(pdb_doc.obj) if pdb_doc else None
    hpa = X.hpa(hpa_doc.obj) if hpa_doc else None
    out = []
    for src in sources or [None]:
        own = list(notes)
        gate = readiness_gate(doc, idx, src, own)
        svc = X.workload(doc.obj, lb=src.lb if src else None, pdb=pdb, hpa=hpa, readiness_gate=gate)
        docs = {"workload": doc, **(src.docs if src else {})}
        if pdb_doc:
            docs["pdb"] = pdb_doc
        if hpa_doc:
            docs["hpa"] = hpa_doc
        if gate is not None and namespace(doc) in idx.namespaces:
            docs["namespace"] = idx.namespaces[namespace(doc)]
        if src and src.defaults:
            own.append("defaults applied: " + ", ".join(src.defaults))
        out.append(Subject(doc, svc, src.via if src else "", docs, src.origins if src else {}, own))
    return out


def build_graph(docs: list[Doc], options: dict[str, Any]) -> Graph:
    """Every workload's subjects, unlinked target groups, and what could not be linked."""
    g = Graph()
    for doc in docs:
        g.problems += shape.doc_problems(doc)
    if g.problems:
        return g
    try:
        idx = Index(docs)
    except X.ExtractError as err:
        g.problems.append(f"describe-target-group-attributes output: {err}")
        return g
    g.index = idx
    idx.link(links.backends)
    ctx: dict[str, Any] = {
        "options": options, "used_tgs": set(), "used_pdbs": set(), "used_services": set(),
        "classes": {name(d): dig(d.obj, "spec", "controller") for d in idx.all("IngressClass")},
        "groups": {},
    }
    for ing in idx.all("Ingress"):
        group = meta(ing, "annotations").get(X.ALB_ANNOTATION + "group.name")
        if group and X.ALB_ANNOTATION + "load-balancer-attributes" in meta(ing, "annotations"):
            ctx["groups"].setdefault(group, ing)
    for kind in WORKLOADS:
        for doc in idx.all(kind):
            try:
                g.subjects += subjects_of(doc, idx, ctx)
            except (X.ExtractError, ValueError) as err:
                if "declares no port" in str(err):
                    # A valid workload (a queue consumer) the model cannot hold: it needs a port.
                    g.notes.append(f"{ref(doc)} ({doc.where}) not judged: {err}")
                else:
                    g.problems.append(f"{doc.where}: {ref(doc)}: {err}")
    for doc, i, tg in idx.tgs:
        if (doc.file, doc.index, i) in ctx["used_tgs"]:
            continue
        if links.unsupported(tg):
            g.notes.append(f"target group {tg.get('TargetGroupName')} ({doc.where}): "
                           f"{links.unsupported(tg)} is not modelled")
            continue
        try:
            lb = X.described_target_group(tg, idx.tg_attributes(str(tg.get("TargetGroupArn"))), **options)
        except (X.ExtractError, ValueError) as err:
            g.problems.append(f"{doc.where}: target group {tg.get('TargetGroupName')}: {err}")
            continue
        g.target_groups.append(TargetGroup(doc, i, str(tg.get("TargetGroupName") or tg.get("TargetGroupArn")), lb))
    g.notes += unlinked(idx, ctx)
    for pdb in idx.all("PodDisruptionBudget"):
        if id(pdb) not in ctx["used_pdbs"]:
            g.notes.append(f"{ref(pdb)} ({pdb.where}) selects no workload in the input")
    g.notes += [f"{idx.ignored} documents of other kinds ignored"] if idx.ignored else []
    return g


def unlinked(idx: Index, ctx: dict[str, Any]) -> list[str]:
    """Load balancer ends that lead nowhere: said, never guessed."""
    notes = []
    services = {(namespace(d), name(d)) for d in idx.all("Service")}
    for (ns, svc), uses in sorted(idx.backends.items(), key=lambda kv: kv[0]):
        if (ns, svc) not in services:
            notes.append(f"{ref(uses[0][0])}: backend Service {ns}/{svc} not in the input")
    for ing in idx.all("Ingress"):
        if not links.is_alb(ing, ctx["classes"]) and any(k.startswith(X.ALB_ANNOTATION)
                                                         for k in meta(ing, "annotations")):
            cls = dig(ing.obj, "spec", "ingressClassName")
            notes.append(f"{ref(ing)}: class {cls!r} is not the controller's as far as the input shows "
                         "(add its IngressClass): not audited")
    for svc in idx.all("Service"):
        spec = svc.obj.get("spec") or {}
        if spec.get("type") != "LoadBalancer":
            continue
        if not X.nlb_managed(meta(svc, "annotations"), spec.get("loadBalancerClass")):
            notes.append(f"{ref(svc)}: a LoadBalancer the AWS Load Balancer Controller does not reconcile "
                         "(in-tree cloud provider): not modelled")
        elif id(svc) not in ctx["used_services"]:
            notes.append(f"{ref(svc)}: selects no Deployment or StatefulSet in the input")
    return notes
