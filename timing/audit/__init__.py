"""`lockstep audit`: the invariants of INVARIANTS.md on manifests and target groups that exist.

reader (files → documents with line numbers) → shape (wrong types are invalid input) →
subjects (documents linked as Kubernetes and the AWS Load Balancer Controller link them;
model pieces from `timing.extract`) → the registry's rules, one subject at a time, each
subject's `lockstep.dev/accept` applied (the heartbeat ConfigMap's stack-scope rules too) →
report (text, JSON) or SARIF. No rule is re-implemented here: this package only finds,
links and reports.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, replace
from typing import Iterable

from timing.audit.graph import Subject, TargetGroup
from timing.audit.heartbeat import Heartbeat, heartbeats
from timing.audit.heartbeat import key as heartbeat_key, where as heartbeat_where
from timing.audit.locate import locate, needs_annotations
from timing.audit.reader import read_all
from timing.audit.subjects import build_graph
from timing.config import ConfigError
from timing.findings import Finding
from timing.invariants import RULE_IDS, Ctx, Scene, walk
from timing.model import LoadBalancer, Service


@dataclass
class Located:
    finding: Finding
    file: str
    line: int


@dataclass
class Judged:
    """One subject (a workload behind one LB, or a lone target group) and its findings."""

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

    @property
    def findings(self) -> list[Finding]:
        return [loc.finding for j in self.judged for loc in j.findings]

    @property
    def failed(self) -> bool:
        return any(f.status == "error" for f in self.findings)


def service_findings(svc: Service, ctx: Ctx) -> list[Finding]:
    """Every lb- and service-scope rule of the registry on one service, its accepts applied.
    Stack-scope rules (watchdog, heartbeat, failover) need a stack no manifest describes."""
    return walk(Scene(services=(svc,)), ctx, scopes=("lb", "service"))


def lb_findings(name: str, lb: LoadBalancer, ctx: Ctx) -> list[Finding]:
    return walk(Scene(), ctx, scopes=("lb",), lone=((name, lb),))


def with_annotations(f: Finding) -> Finding:
    return replace(f, needs=needs_annotations(f.needs)) if f.needs else f


def judge_subject(s: Subject, ctx: Ctx) -> Judged:
    notes = list(s.notes)
    unknown = [a.id for a in s.service.accept if a.id not in RULE_IDS]
    if unknown:
        notes.append("lockstep.dev/accept names unknown rule ids: " + ", ".join(unknown))
    located = []
    for f in service_findings(s.service, ctx):
        # A passing finding points at the workload: locating is for what needs a fix.
        file, line = (s.workload.file, s.workload.line) if f.status == "ok" else locate(f, s)
        located.append(Located(with_annotations(f), file, line))
    return Judged(s.key, s.workload.file, s.workload.line, s.via, located, notes)


def judge_target_group(tg: TargetGroup, ctx: Ctx) -> Judged:
    located = [Located(f, *locate(f, tg)) for f in lb_findings(tg.name, tg.lb, ctx)]
    return Judged(f"target group {tg.name}", tg.doc.file, tg.doc.line, "", located,
                  ["no TargetGroupBinding in the input points at it: load-balancer rules only"])


def judge_heartbeat(hb: Heartbeat, ctx: Ctx) -> Judged:
    """The registry's stack-scope rules on the stack a heartbeat ConfigMap describes."""
    found = walk(hb.scene, ctx, scopes=("stack",))
    file, line = heartbeat_where(hb)
    return Judged(heartbeat_key(hb), file, line, "", [Located(with_annotations(f), file, line) for f in found],
                  hb.notes)


def audit(paths: Iterable[str], ctx: Ctx, options: dict[str, int]) -> Audit:
    """Read, link, judge. Unreadable or invalid input raises `ConfigError` (every problem)."""
    # A batch over many small objects that nearly all live to the end: the cyclic collector
    # would only rescan them again and again (a third of the run on 4,000 documents).
    gc.disable()
    try:
        docs, problems = read_all(paths)
        graph = build_graph(docs, options)
        if problems or graph.problems:
            raise ConfigError(problems + graph.problems)
        beats, beat_problems = heartbeats(graph.index, graph.subjects, ctx)
        if beat_problems:
            raise ConfigError(beat_problems)
        judged = [judge_subject(s, ctx) for s in graph.subjects]
        judged += [judge_target_group(tg, ctx) for tg in graph.target_groups]
        judged += [judge_heartbeat(hb, ctx) for hb in beats]
    finally:
        gc.enable()
    return Audit(judged, graph.notes, len({d.file for d in docs}))
