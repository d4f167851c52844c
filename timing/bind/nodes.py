"""Which resources are the cluster's node disruption sources, and the one `Nodes` they make
(issue 13), for the audit and the policy pack alike.

    NodePool (karpenter.sh/v1) ──(nodeClassRef)──► EC2NodeClass ──(userData: NodeConfig)──► kubelet
    Karpenter controller Deployment ──(INTERRUPTION_QUEUE)──► every NodePool's spot handling
    cluster-autoscaler Deployment (args) · aws-node-termination-handler DaemonSet/Deployment
    KubeletConfiguration document (when the input holds one) ──► kubelet

A controller is recognised by its container image (`public.ecr.aws/karpenter/controller`,
`registry.k8s.io/autoscaling/cluster-autoscaler`, `.../aws-node-termination-handler`), the
names its publishers ship it under. Absent sources are absent (no budget from them); a field a
present source leaves unset is its upstream default, reported as applied; what the input
cannot say (the kubelet's shutdown when neither a KubeletConfiguration nor every NodePool's
NodeConfig states it; the interruption queue when NodePools come without their controller) is
`Nodes.unknown`, and the rules that need it are skipped naming it.

Three facts no resource states travel as annotations on the NodePool, when the stack states
them (`lockstep render` writes them from `lockstep:nodes`): `lockstep.dev/interruption-queue`
("true"/"false": the controller's queue, when the controller is not in the input),
`lockstep.dev/spot-reaction-seconds` (how long the handler takes from the notice to the drain)
and `lockstep.dev/undrained-shutdowns` ("true"/"false": whether nodes may shut down with no
drain first; unstated, the model's default true, reported as applied; any pool saying "true"
makes it true).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from lockstep.timing import extract as X
from lockstep.timing import nodes as N
from lockstep.timing.bind.index import Index
from lockstep.timing.bind.resource import Origin, Resource, dig
from lockstep.timing.conventions import ANNOTATION
from lockstep.timing.extract import nodes as XN
from lockstep.timing.model import KubeletShutdown, Nodes

QUEUE_ANNOTATION = ANNOTATION + "interruption-queue"
REACTION_ANNOTATION = ANNOTATION + "spot-reaction-seconds"
UNDRAINED_ANNOTATION = ANNOTATION + "undrained-shutdowns"
KARPENTER_GROUP = "karpenter.sh/"
KUBELET_API = "kubelet.config.k8s.io/"
CONTROLLERS = ("Deployment", "DaemonSet")
# What an unknown source would be decided by, for the report (`timing.audit.locate`).
DECIDED_BY = {
    N.KUBELET: "KubeletConfiguration shutdownGracePeriod (a document, or each NodePool's EC2NodeClass NodeConfig)",
    N.QUEUE: f"the Karpenter controller's INTERRUPTION_QUEUE (or {QUEUE_ANNOTATION} on the NodePool)",
    "nodes.spot_reaction_s": f"{REACTION_ANNOTATION} on the NodePool",
}


@dataclass
class NodesRead:
    nodes: Nodes | None = None
    # model field → (resource, key path) where the input states it (locating a finding)
    origins: dict[str, tuple[Resource, tuple[Any, ...]]] = field(default_factory=dict)
    defaults: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreadable: list[tuple[Resource, str]] = field(default_factory=list)
    sources: list[Resource] = field(default_factory=list)  # the resources read, in input order

    def report(self) -> list[str]:
        """The linker's notes on the node sources: the defaults applied, and what is not read."""
        if self.nodes is None:
            return []
        out = ["node sources: defaults applied: " + "; ".join(self.defaults)] if self.defaults else []
        return out + [f"node sources: {n}" for n in self.notes]


def at(r: Resource, err: X.ExtractError, path: tuple[Any, ...] | None = None) -> Resource:
    """The resource as the report names it for a bad field: at the field's line when known."""
    path = path if path is not None else getattr(err, "path", ())
    if not path:
        return r
    file, line = r.origin.locate(path)
    if not line:
        return r
    return replace(r, origin=Origin(r.origin.id, file, lambda _p: (file, line)))


def containers(r: Resource) -> list[dict[str, Any]]:
    return [c for c in X.items(dig(r.obj, "spec", "template", "spec", "containers")) if isinstance(c, dict)]


def repository(container: dict[str, Any]) -> str:
    """The image's repository: registry, tag and digest left out."""
    image = str(container.get("image") or "").split("@")[0]
    return image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image


def image_is(container: dict[str, Any], *names: str) -> bool:
    """The image's repository ends with one of `names`."""
    return repo_is(repository(container), names)


def repo_is(repo: str, names: tuple[str, ...]) -> bool:
    return any(repo == n or repo.endswith("/" + n) for n in names)


Images = list[tuple[Resource, dict[str, Any], str]]


def images(idx: Index) -> Images:
    """Every container of every Deployment and DaemonSet, with its image's repository (read
    once for the three controllers looked for: each looked through 2,000 containers on 1,000
    workloads)."""
    return [(r, c, repository(c)) for kind in CONTROLLERS for r in idx.all(kind) for c in containers(r)]


def controller(idx: Index | Images, *names: str) -> list[tuple[Resource, dict[str, Any]]]:
    found = images(idx) if isinstance(idx, Index) else idx
    return [(r, c) for r, c, repo in found if repo_is(repo, names)]


def _kubelet_of_pools(pools: list[Resource], classes: dict[str, Resource], read: NodesRead
                      ) -> tuple[KubeletShutdown | None, bool]:
    """The kubelet shutdown every pool's EC2NodeClass NodeConfig states (the least it leaves
    ordinary pods, when they differ); (None, False) when some pool's class does not say."""
    found: list[tuple[KubeletShutdown, Resource]] = []
    for p in pools:
        ref = dig(p.obj, "spec", "template", "spec", "nodeClassRef", "name")
        cls = classes.get(str(ref))
        if cls is None:
            return None, False
        try:
            config = XN.nodeconfig_kubelet(dig(cls.obj, "spec", "userData"))
            if config is None or dig(config, "shutdownGracePeriod") is None:
                return None, False
            shutdown, _ = XN.kubelet_shutdown(config, "NodeConfig spec.kubelet.config")
        except X.ExtractError as err:
            read.unreadable.append((at(cls, err, ("spec", "userData")), f"spec.userData: {err}"))
            return None, False
        found.append((shutdown, cls))
    if not found:
        return None, False
    shutdown, cls = min(found, key=lambda fc: fc[0].shutdown_grace_period_s - fc[0].shutdown_grace_period_critical_pods_s)
    read.origins[N.KUBELET] = (cls, ("spec", "userData"))
    read.sources.append(cls)
    return shutdown, True


def _off(shutdown: KubeletShutdown) -> KubeletShutdown | None:
    # shutdownGracePeriod 0 turns graceful node shutdown off: the model's "not configured"
    return None if shutdown.shutdown_grace_period_s == 0 else shutdown


def read_nodes(idx: Index) -> NodesRead:
    """The node disruption sources in the input, as one `Nodes` (None: the input holds none)."""
    read = NodesRead()
    data: dict[str, Any] = {}
    unknown: set[str] = set()
    pools = [p for p in idx.all("NodePool") if str(dig(p.obj, "apiVersion") or "").startswith(KARPENTER_GROUP)]
    classes = {c.name: c for c in idx.all("EC2NodeClass")}
    kubelet_docs = [k for k in idx.all("KubeletConfiguration")
                    if str(dig(k.obj, "apiVersion") or "").startswith(KUBELET_API)]
    containers_read = images(idx)
    karpenter = controller(containers_read, "karpenter/controller", "karpenter")
    autoscaler = controller(containers_read, "cluster-autoscaler")
    handler = controller(containers_read, "aws-node-termination-handler")
    if not (pools or kubelet_docs or autoscaler or handler):
        return read

    queue: bool | None = None
    for r, c in karpenter[:1]:
        queue, said = XN.karpenter_interruption_queue(c)
        read.defaults += said
        read.origins[N.QUEUE] = (r, ("spec", "template", "spec", "containers"))
        read.sources.append(r)
    reaction: int | None = None
    undrained: bool | None = None
    built = []
    for p in pools:
        try:
            pool, said = XN.nodepool(p.obj)
            notes = p.meta("annotations")
            if queue is None and QUEUE_ANNOTATION in notes:
                pool = pool.model_copy(update={"interruption_queue": XN.flag_bool(str(notes[QUEUE_ANNOTATION]),
                                                                                  QUEUE_ANNOTATION)})
                read.origins.setdefault(N.QUEUE, (p, ("metadata", "annotations", QUEUE_ANNOTATION)))
            elif queue is not None:
                pool = pool.model_copy(update={"interruption_queue": queue})
            elif "spot" in pool.capacity_types:
                unknown.add(N.QUEUE)
            if REACTION_ANNOTATION in notes:
                value = XN.whole(str(notes[REACTION_ANNOTATION]), REACTION_ANNOTATION, *XN.L.SECONDS)
                reaction = value if reaction is None else max(reaction, value)
                read.origins["nodes.spot_reaction_s"] = (p, ("metadata", "annotations", REACTION_ANNOTATION))
            if UNDRAINED_ANNOTATION in notes:
                says = XN.flag_bool(str(notes[UNDRAINED_ANNOTATION]), UNDRAINED_ANNOTATION)
                if says or N.UNDRAINED not in read.origins:
                    read.origins[N.UNDRAINED] = (p, ("metadata", "annotations", UNDRAINED_ANNOTATION))
                undrained = says or bool(undrained)
        except X.ExtractError as err:
            read.unreadable.append((at(p, err), str(err)))
            continue
        read.defaults += said
        read.sources.append(p)
        read.origins.setdefault("nodes.karpenter.termination_grace_period_s",
                                (p, ("spec", "template", "spec", "terminationGracePeriod")))
        built.append(pool)
    data["karpenter"] = tuple(built)
    if reaction is not None:
        data["spot_reaction_s"] = reaction
    if undrained is not None:
        data["undrained_shutdowns"] = undrained

    for r, c in autoscaler[:1]:
        try:
            ca, said = XN.cluster_autoscaler(c)
        except X.ExtractError as err:
            read.unreadable.append((r, str(err)))
            continue
        data["cluster_autoscaler"], read.defaults = ca, read.defaults + said
        read.origins["nodes.cluster_autoscaler.max_graceful_termination_s"] = (r, ("spec", "template", "spec",
                                                                                   "containers"))
        read.sources.append(r)
    for r, c in handler[:1]:
        try:
            nth, said = XN.termination_handler(c)
        except X.ExtractError as err:
            read.unreadable.append((r, str(err)))
            continue
        read.defaults += said
        read.sources.append(r)
        if nth is not None:
            data["termination_handler"] = nth
            read.origins["nodes.termination_handler.pod_termination_grace_period_s"] = (
                r, ("spec", "template", "spec", "containers"))

    try:
        if kubelet_docs:
            k = kubelet_docs[0]
            shutdown, said = XN.kubelet_shutdown(k.obj, "KubeletConfiguration")
            data["kubelet"] = _off(shutdown)
            read.defaults += said
            read.origins[N.KUBELET] = (k, ("shutdownGracePeriod",))
            read.sources.append(k)
            if len(kubelet_docs) > 1:
                read.notes.append(f"{len(kubelet_docs)} KubeletConfiguration documents: judged the first ({k.where})")
        else:
            shutdown_or_none, stated = _kubelet_of_pools(pools, classes, read)
            if stated and shutdown_or_none is not None:
                data["kubelet"] = _off(shutdown_or_none)
            else:
                unknown.add(N.KUBELET)
    except X.ExtractError as err:  # the KubeletConfiguration document (a NodeConfig's is said above)
        read.unreadable.append((at(kubelet_docs[0], err, tuple(getattr(err, "path", ()))[-1:]), str(err)))
        unknown.add(N.KUBELET)
    nodes = Nodes.model_validate(data)
    nodes._unknown = frozenset(unknown)
    if undrained is None:
        read.defaults.append(f"{N.UNDRAINED} {str(nodes.undrained_shutdowns).lower()} (no {UNDRAINED_ANNOTATION} "
                             "on a NodePool: nodes may shut down with no drain first)")
    read.nodes = nodes
    read.notes.append("node groups' capacity type (ASG spot) is not read from resources: spot outside "
                      "Karpenter is not judged")
    return read
