"""The audit itself: read, shape-check, adapt, link, judge, locate (see the package's docstring).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Mapping

from lockstep.timing.audit import adapt, kustomize, shape
from lockstep.timing.audit.locate import locate, needs_annotations
from lockstep.timing.audit.reader import read_all
from lockstep.timing.bind import judge, link
from lockstep.timing.bind.judge import Judgement
from lockstep.timing.context import Ctx
from lockstep.timing.findings import Finding
from lockstep.timing.invariants import RULE_IDS


@dataclass(slots=True)  # one per finding: 20,000 on 1,000 workloads, no dict each
class Located:
    finding: Finding
    file: str
    line: int


@dataclass(slots=True)
class Judged:
    """One subject (a workload behind one LB, a lone target group, a heartbeat, a Route 53
    health check) and its findings."""

    key: str
    file: str
    line: int
    via: str
    findings: list[Located]
    notes: list[str] = field(default_factory=list)


@dataclass
class Audit:
    judged: list[Judged]
    notes: list[str]
    files: int
    problems: list[str] = field(default_factory=list)  # unusable input, file:line each: exit 2
    warnings: list[str] = field(default_factory=list)  # links that lead nowhere, file:line each
    linked: link.Linked | None = None  # kept only when asked (`audit --fix` solves on the subjects)

    @property
    def findings(self) -> list[Finding]:
        return [loc.finding for j in self.judged for loc in j.findings]

    @property
    def failed(self) -> bool:
        return any(f.status == "error" for f in self.findings)


def with_annotations(f: Finding) -> Finding:
    return replace(f, needs=needs_annotations(f.needs)) if f.needs else f


YOUNG_WALKED = 100_000  # objects a young collection walks in about 10 ms


def collector_on() -> None:
    """Enable the cyclic collector again after a batch built with it off. Everything built is
    still new to it: it would walk it all (a million objects on 4,000 documents, 0.16 s) at its
    first young collection, when the report allocates. A large batch is handed straight to the
    oldest generation instead (freeze, then unfreeze: two list splices), walked only by a full
    collection, as anything long-lived is. A small one (a test's, a fuzz case's) is left to
    the young collections, which free any cycle in it soonest."""
    if gc.get_count()[0] > YOUNG_WALKED:
        gc.freeze()
        gc.unfreeze()
    gc.enable()


def without_expressions(judgements: Iterable[Judgement]) -> Iterator[Judgement]:
    """The judgements, their terms' expression trees dropped as they pass.

    A term's `expr` (how its value was computed: `timing.expr`) is for `lockstep fix`'s solver,
    which judges the subjects again itself (`audit --fix` keeps the links, and these trees);
    no report reads it, and it is neither compared nor printed. On 1,000 workloads the trees
    are 77,000 nodes, 7 MB of the audit's peak memory. The terms are frozen for everyone who
    shares them; here the audit that judged them is their only holder, so it drops the field
    in place (a copy of each finding would cost more time than judging it)."""
    clear = object.__setattr__
    for j in judgements:
        f = j.finding
        if f.left.expr is not None:
            clear(f.left, "expr", None)
        if f.right.expr is not None:
            clear(f.right, "expr", None)
        yield j


def _drained(items: list[Judgement]) -> Iterator[Judgement]:
    """The list's items in order, each removed from it as it is taken."""
    items.reverse()
    while items:
        yield items.pop()


def grouped(judgements: Iterable[Judgement], linked: link.Linked) -> list[Judged]:
    """The report's subjects in the linker's order, each with its located findings. Consumes
    `judgements` (a list is emptied)."""
    judged: dict[str, Judged] = {}
    for s in linked.subjects:
        notes = list(s.notes)
        unknown = [a.id for a in s.service.accept if a.id not in RULE_IDS]
        if unknown:
            notes.append("lockstep.dev/accept names unknown rule ids: " + ", ".join(unknown))
        judged.setdefault(s.key, Judged(s.key, s.workload.origin.file, s.workload.line, s.via, [], notes))
    for t in linked.lone:
        key = f"target group {t.resource.name}"
        judged[key] = Judged(key, t.resource.origin.file, t.resource.line, "", [],
                             ["no TargetGroupBinding in the input points at it: load-balancer rules only"])
    for hb in linked.heartbeats:
        key = f"{hb.configmap.namespace}/ConfigMap/{hb.configmap.name} (heartbeat)"
        judged[key] = Judged(key, hb.configmap.origin.file, hb.configmap.line, "", [], hb.notes)
    for fo in linked.failovers:
        key = f"Route 53 health check {fo.check.name}"
        judged[key] = Judged(key, fo.check.origin.file, fo.check.line, "", [], [])
    # Consumed as they are placed: a judgement (and a finding that `with_annotations` replaces)
    # is freed at once, not held until the last is placed (the audit's peak memory is here).
    for j in _drained(judgements) if isinstance(judgements, list) else judgements:
        judged[j.group].findings.append(Located(with_annotations(j.finding), *locate(j)))
    return list(judged.values())


def audit(paths: Iterable[str], ctx: Ctx, options: dict[str, int], texts: Mapping[str, str] | None = None,
          keep_links: bool = False) -> Audit:
    """Read, link, judge. Input that cannot be used is named in `problems` (file:line), and
    everything else is still judged. `texts` stands in for files already read (by the name a
    report shows); `keep_links` keeps the linked subjects on the result."""
    # A batch over many small objects that nearly all live to the end: the cyclic collector
    # would only rescan them again and again (a third of the run on 4,000 documents).
    gc.disable()
    try:
        docs, problems = read_all(paths, texts)
        docs, set_aside = kustomize.set_aside(docs)
        problems += set_aside
        usable = []
        for doc in docs:
            found = shape.doc_problems(doc)
            problems += found
            if not found:
                usable.append(doc)
        try:
            resources = adapt.resources(usable)
        except ValueError as err:  # an AWS attributes document of the wrong shape
            problems.append(f"describe-target-group-attributes output: {err}")
            resources = [adapt.kubernetes(d) for d in usable if d.kind]
        linked = link.link(resources, options)
        problems += [f"{r.where}: {r.ref}: {why}" for r, why in linked.unreadable]
        found = judge.judgements(linked, ctx)
        judged = grouped(found if keep_links else without_expressions(found), linked)  # placed as judged
        ignored = sum(adapt.ignored(d) for d in usable)
        notes = linked.notes + ([f"{ignored} documents of other kinds ignored"] if ignored else [])
    finally:
        collector_on()
    warnings = [f"{r.where}: {why}" for r, why in linked.warnings]
    return Audit(judged, notes, len({d.file for d in docs}), problems, warnings, linked if keep_links else None)
