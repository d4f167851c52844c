"""The document graph: Ingress → Service → workload, TargetGroupBinding → Service, PDB/HPA →
workload, as Kubernetes and the AWS Load Balancer Controller follow them.

Each workload becomes one `Subject` per load balancer in front of it (or one without): the
model `Service` that `timing.extract.workload` builds from the documents, plus the documents
it came from, so findings can point at a file and line. Links are made by label selectors
within a namespace; what cannot be linked is kept as a note, never guessed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from timing import extract as X
from timing.audit.reader import Doc
from timing.model import LoadBalancer, Service

GATE_LABEL = "elbv2.k8s.aws/pod-readiness-gate-inject"
GATE_CONDITION = "target-health.elbv2.k8s.aws/"
WORKLOADS = ("Deployment", "StatefulSet")
MANAGED_TGB = ("ingress.k8s.aws/stack", "service.k8s.aws/stack")


@dataclass
class Origin:
    """Where a model field was written: a document and a key path inside it (None: a default)."""

    doc: Doc
    path: tuple[Any, ...] | None


@dataclass
class LbSource:
    lb: LoadBalancer
    via: str  # "Ingress web/edge → Service web/api"
    origins: dict[str, Origin]
    docs: dict[str, Doc]
    defaults: list[str]


@dataclass
class Subject:
    workload: Doc
    service: Service
    via: str = ""
    docs: dict[str, Doc] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.service.namespace}/{self.workload.kind}/{self.service.name}"


@dataclass
class TargetGroup:
    """A described target group no TargetGroupBinding in the input points at (lb rules only)."""

    doc: Doc
    index: int
    name: str
    lb: LoadBalancer


@dataclass
class Graph:
    subjects: list[Subject] = field(default_factory=list)
    target_groups: list[TargetGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    index: Index | None = None


def dig(obj: Any, *path: Any) -> Any:
    """`obj[a][b]...` or None; plain dicts only (what the reader makes), so no ABC checks
    on the hot path (`extract.get` also takes pulumi's read-only mappings)."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def meta(doc: Doc, key: str) -> dict[str, str]:
    return dig(doc.obj, "metadata", key) or {}


def name(doc: Doc) -> str:
    return str(dig(doc.obj, "metadata", "name") or "")


def namespace(doc: Doc) -> str:
    return str(dig(doc.obj, "metadata", "namespace") or "default")


def ref(doc: Doc) -> str:
    return f"{doc.kind} {namespace(doc)}/{name(doc)}"


class Index:
    """Documents by kind and namespace, and AWS target groups by ARN and name."""

    def __init__(self, docs: list[Doc]) -> None:
        self.kinds: dict[str, dict[str, list[Doc]]] = defaultdict(lambda: defaultdict(list))
        self.namespaces: dict[str, Doc] = {}
        self.tgs: list[tuple[Doc, int, dict[str, Any]]] = []
        self.attributes: dict[str, dict[str, str]] = {}
        self.attribute_docs: dict[str, Doc] = {}
        self.loose_attributes: list[tuple[Doc, dict[str, str]]] = []
        self.ignored = 0
        for doc in docs:
            kind = doc.kind
            if kind == "Namespace":
                self.namespaces[name(doc)] = doc
            elif kind:
                self.kinds[kind][namespace(doc)].append(doc)
            elif isinstance(doc.obj.get("TargetGroups"), list):
                self.tgs.extend((doc, i, tg) for i, tg in enumerate(doc.obj["TargetGroups"]))
            elif "Attributes" in doc.obj:
                attrs = X.attribute_map(doc.obj["Attributes"])
                arn = doc.obj.get("TargetGroupArn")
                if isinstance(arn, str):
                    self.attributes[arn] = attrs
                    self.attribute_docs[arn] = doc
                else:
                    self.loose_attributes.append((doc, attrs))
            else:
                self.ignored += 1

    def link(self, backends: Any) -> None:
        """Lookup tables, so linking stays linear in the number of documents: Services and
        PDBs by one of their selector's labels, Ingress backends, bindings and HPAs by name."""
        self.by_label: dict[tuple[str, str, str, Any], list[Doc]] = defaultdict(list)
        self.unlabelled: dict[tuple[str, str], list[Doc]] = defaultdict(list)
        for kind, path in (("Service", ("spec", "selector")),
                           ("PodDisruptionBudget", ("spec", "selector", "matchLabels"))):
            for doc in self.all(kind):
                labels = dig(doc.obj, *path) or {}
                if labels:
                    k, v = next(iter(labels.items()))
                    self.by_label[(kind, namespace(doc), k, v)].append(doc)
                else:
                    self.unlabelled[(kind, namespace(doc))].append(doc)
        self.backends: dict[tuple[str, str], list[tuple[Doc, Any]]] = defaultdict(list)
        for ing in self.all("Ingress"):
            for svc, port in backends(ing):
                self.backends[(namespace(ing), svc)].append((ing, port))
        self.bindings: dict[tuple[str, str], list[Doc]] = defaultdict(list)
        for tgb in self.all("TargetGroupBinding"):
            self.bindings[(namespace(tgb), X.binding(tgb.obj).service)].append(tgb)
        self.scalers: dict[tuple[str, str, str], list[Doc]] = defaultdict(list)
        for hpa in self.all("HorizontalPodAutoscaler"):
            self.scalers[(namespace(hpa), *X.hpa_target(hpa.obj))].append(hpa)

    def candidates(self, kind: str, ns: str, labels: dict[str, Any]) -> list[Doc]:
        """Services or PDBs that may select pods with `labels` (callers check the whole selector)."""
        found = list(self.unlabelled.get((kind, ns), []))
        for k, v in labels.items():
            found += self.by_label.get((kind, ns, k, v), [])
        return list({id(d): d for d in found}.values())

    def of(self, kind: str, ns: str) -> list[Doc]:
        return self.kinds.get(kind, {}).get(ns, [])

    def all(self, kind: str) -> list[Doc]:
        return [d for docs in self.kinds.get(kind, {}).values() for d in docs]

    def tg_attributes(self, arn: str) -> dict[str, str]:
        if arn in self.attributes:
            return self.attributes[arn]
        if len(self.loose_attributes) == 1 and len(self.tgs) == 1:
            return self.loose_attributes[0][1]
        return {}

    def find_tg(self, arn: str | None, tg_name: str | None) -> tuple[Doc, int, dict[str, Any]] | None:
        for doc, i, tg in self.tgs:
            if (arn and tg.get("TargetGroupArn") == arn) or (tg_name and tg.get("TargetGroupName") == tg_name):
                return doc, i, tg
        return None
