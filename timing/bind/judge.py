"""Linked resources → findings, each with the resource it belongs to: the one judging step
the audit and the policy pack share (they differ only in how they report).

Service-scope rules run per subject (the workload is the owner). Target-group rules run once
per target group: a target group resource is its own owner and subject; a load balancer the
controller makes from annotations belongs to the workload in front of which it stands. The
heartbeat's and the failover's stack rules run on the scene the linker assembled; a finding
about a watched service belongs to that workload. Only rules that resources decide are judged
(`decided != "config"`): the others need facts no resource states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from lockstep.timing.bind.link import Linked, Subject
from lockstep.timing.bind.resource import Resource
from lockstep.timing.context import Ctx, Scene
from lockstep.timing.findings import Finding
from lockstep.timing.frozen import quick_init
from lockstep.timing.invariants import walk
from lockstep.timing.invariants import nodes as nd
from lockstep.timing.invariants.registry import RESOURCE_RULES

# The stack checks that read only the services and the node disruption sources (`scene.nodes`):
# judged per subject, on a scene of that workload and the sources the linker read.
NODE_CHECKS = (nd.node_budget_covers_drain, nd.node_shutdown_drains_without_endpoints)
NODE_RULES = tuple(r for r in RESOURCE_RULES if any(c.scope == "stack" and c.body in NODE_CHECKS for c in r.checks))


@quick_init
@dataclass(frozen=True, slots=True)
class Judgement:
    finding: Finding
    owner: Resource  # the resource the finding is reported against
    subject: Subject | None  # the workload subject it was judged on (None: a target group, the heartbeat, ...)
    group: str  # what the finding is about, for grouping a report: a subject key, a target group, ...


def subject_findings(s: Subject, ctx: Ctx, seen_tgs: set[int]) -> list[Judgement]:
    scene = Scene(services=(s.service,))
    key = s.key  # one string for every finding of the subject (a property: built anew on each read)
    found = [Judgement(f, s.workload, s, key) for f in walk(scene, ctx, RESOURCE_RULES, scopes=("service",))]
    if s.nodes is not None and s.nodes.nodes is not None:
        on_nodes = Scene(services=(s.service,), nodes=s.nodes.nodes)
        found += [Judgement(f, s.workload, s, key) for f in walk(on_nodes, ctx, NODE_RULES, scopes=("stack",))]
    src = s.source
    if src is None or src.lb.unknown:
        # (a target group the input lacks: the lb-scope rules judge its own values, none of them known)
        return found
    if not src.from_target_group:
        found += [Judgement(f, s.workload, s, key) for f in walk(scene, ctx, RESOURCE_RULES, scopes=("lb",))]
    elif id(src.owner) not in seen_tgs:
        seen_tgs.add(id(src.owner))
        lone = ((src.owner.name, src.lb),)
        found += [Judgement(f, src.owner, s, key) for f in walk(Scene(), ctx, RESOURCE_RULES, scopes=("lb",), lone=lone)]
    return found


def subject_judgements(subjects: list[Subject], ctx: Ctx, seen_tgs: set[int]) -> Iterator[Judgement]:
    """The subjects' judgements in order. A target group two subjects share is judged with the
    first (`seen_tgs`: the target groups already judged, by `id`; this adds to it)."""
    for s in subjects:
        yield from subject_findings(s, ctx, seen_tgs)


def other_judgements(linked: Linked, ctx: Ctx) -> Iterator[Judgement]:
    """The lone target groups', the heartbeats' and the failovers' judgements."""
    for t in linked.lone:
        group = f"target group {t.resource.name}"
        yield from [Judgement(f, t.resource, None, group)
                    for f in walk(Scene(), ctx, RESOURCE_RULES, scopes=("lb",), lone=((t.resource.name, t.lb),))]
    for hb in linked.heartbeats:
        own = hb.configmap  # the heartbeat's own numbers are in its ConfigMap
        group = f"{hb.configmap.namespace}/ConfigMap/{hb.configmap.name} (heartbeat)"
        for f in walk(hb.scene, ctx, RESOURCE_RULES, scopes=("stack",)):
            watched = hb.watched.get(f.service)
            yield Judgement(f, watched.workload if watched else own, watched, group)
    for fo in linked.failovers:
        group = f"Route 53 health check {fo.check.name}"
        for f in walk(fo.scene, ctx, RESOURCE_RULES, scopes=("stack",)):
            yield Judgement(f, fo.check, fo.entry, group)


def judgements(linked: Linked, ctx: Ctx) -> Iterator[Judgement]:
    """`judge`'s judgements one subject at a time, in the same order: a caller that places each
    as it comes (the audit) never holds them all (20,000 on 1,000 workloads)."""
    yield from subject_judgements(linked.subjects, ctx, set())
    yield from other_judgements(linked, ctx)


def judge(linked: Linked, ctx: Ctx) -> list[Judgement]:
    return list(judgements(linked, ctx))
