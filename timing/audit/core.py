"""The audit itself: read, shape-check, adapt, link, judge, locate (see the package's docstring).
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, replace
from typing import Iterable, Iterator, Mapping

from lockstep.timing import ending, forked
from lockstep.timing.audit import adapt, kustomize, shape
from lockstep.timing.audit.locate import locate, needs_annotations
from lockstep.timing.audit.reader import Reading
from lockstep.timing.bind import judge, link
from lockstep.timing.bind.judge import Judgement
from lockstep.timing.context import Ctx
from lockstep.timing.findings import Finding
from lockstep.timing.frozen import pickled_by_fields
from lockstep.timing.invariants import RULE_IDS


@pickled_by_fields  # sent from the processes that judge slices of the workloads
@dataclass(slots=True)  # one per finding: 20,000 on 1,000 workloads, no dict each
class Located:
    finding: Finding
    file: str
    line: int


@pickled_by_fields
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
    # Passing findings counted, not kept: an audit made for the text report without `--all`
    # (`audit(keep_passing=False)`), which prints only their number.
    passing: int = 0


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
        """The findings kept (with `keep_passing=False`, all but the passing ones)."""
        return [loc.finding for j in self.judged for loc in j.findings]

    @property
    def passing(self) -> int:
        """The passing findings counted and not kept."""
        return sum(j.passing for j in self.judged)

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


def subject_groups(subjects: list[link.Subject]) -> dict[str, Judged]:
    """The report's subjects in the linker's order, no findings yet (two subjects of one
    workload, one per load balancer, are one entry)."""
    judged: dict[str, Judged] = {}
    for s in subjects:
        notes = list(s.notes)
        unknown = [a.id for a in s.service.accept if a.id not in RULE_IDS]
        if unknown:
            notes.append("lockstep.dev/accept names unknown rule ids: " + ", ".join(unknown))
        judged.setdefault(s.key, Judged(s.key, s.workload.origin.file, s.workload.line, s.via, [], notes))
    return judged


def other_groups(linked: link.Linked, judged: dict[str, Judged]) -> None:
    """The lone target groups, heartbeats and failovers, after the subjects."""
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


def place(judgements: Iterable[Judgement], judged: dict[str, Judged], tgs: dict[str, list[int]] | None = None,
          keep_passing: bool = True, passing_tgs: dict[str, list[int]] | None = None) -> None:
    """Each judgement as a located finding of its group. Consumes `judgements` (a list is
    emptied): a judgement (and a finding that `with_annotations` replaces) is freed at once,
    not held until the last is placed (the audit's peak memory is here). `tgs`: for each
    finding of a subject, the `id` of the target group it judges (0: the workload's own).
    Not `keep_passing`: a passing finding is only counted (`Judged.passing`), neither located
    nor kept; `passing_tgs` then gets the target group of each (as `tgs` does for the kept)."""
    for j in _drained(judgements) if isinstance(judgements, list) else judgements:
        into = tgs
        if keep_passing or j.finding.status != "ok":
            judged[j.group].findings.append(Located(with_annotations(j.finding), *locate(j)))
        else:
            judged[j.group].passing += 1
            into = passing_tgs
        if into is not None:
            into[j.group].append(id(j.owner) if j.subject is not None and j.owner is not j.subject.workload else 0)


def grouped(judgements: Iterable[Judgement], linked: link.Linked, keep_passing: bool = True) -> list[Judged]:
    """The report's subjects in the linker's order, each with its located findings. Consumes
    `judgements` (a list is emptied)."""
    judged = subject_groups(linked.subjects)
    other_groups(linked, judged)
    place(judgements, judged, keep_passing=keep_passing)
    return list(judged.values())


# ---- the workloads in slices, one per core --------------------------------------------------
# Linking and judging a workload reads the shared index and context and writes only what
# `link.USED` names: slices of the workloads are linked and judged in forked children, and
# the parent puts their subjects back in the linker's order. Below this many workloads a
# fork costs more than it saves.
PARALLEL_MIN = 200


@dataclass(slots=True)
class Part:
    """A batch's result: its report entries (each kept finding with the `id` of the target
    group it judged, 0 for a workload's own, and the same for each passing finding counted and
    not kept), and the batch's workloads not judged or unreadable (by position in the plan's
    workloads). A slice's last part also holds what the slice added to the shared context
    (`used`)."""

    judged: list[tuple[Judged, list[int], list[int]]]
    not_judged: list[tuple[int, str]]
    unreadable: list[tuple[int, str]]
    used: dict[str, set] | None = None


# A process links and judges its slice this many workloads at a time (~25 ms), a child sending
# each batch's result as it is made; between two of its own, the parent takes what the
# children sent, loading their results while they still judge, not after they end (then the
# child's pickling and this process's loading were both on the way to the end).
BATCH = 25


def judged_in_batches(p: link.Plan, start: int, stop: int, ctx: Ctx, keep_passing: bool = True) -> Iterator[Part]:
    """Link and judge `p.workloads[start:stop]` as the serial audit does, a `Part` per batch
    of `BATCH` workloads, then one with the context the slice added."""
    out = p.out
    seen_tgs: set[int] = set()  # (the slice's, across its batches, as one process judges them)
    for a in range(start, stop, BATCH):
        batch = p.workloads[a:min(a + BATCH, stop)]
        known_s, known_nj, known_ur = len(out.subjects), len(out.not_judged), len(out.unreadable)
        link.link_workloads(p, batch)
        subjects = out.subjects[known_s:]
        judged = subject_groups(subjects)
        tags: dict[str, list[int]] = {key: [] for key in judged}
        passing_tags: dict[str, list[int]] = {key: [] for key in judged}
        place(without_expressions(judge.subject_judgements(subjects, ctx, seen_tgs)), judged, tags,
              keep_passing, passing_tags)
        position = {id(r): i for i, r in enumerate(batch, a)}
        yield Part([(g, tags[key], passing_tags[key]) for key, g in judged.items()],
                   [(position[id(r)], why) for r, why in out.not_judged[known_nj:]],
                   [(position[id(r)], why) for r, why in out.unreadable[known_ur:]])
    yield Part([], [], [], {k: p.ctx[k] for k in link.USED})


# This process's slice, against a child's: a child also pickles its results, and its judging
# runs slower (the pages it writes are copied from this process's on first write); this
# process loads the results between its batches. Keeping every finding (JSON, SARIF, --all),
# 1.25 (1.0 and 1.15 measured within the machine's noise of it). Keeping the passing ones
# only as counts (the text report), this process has a quarter of the findings to load: at
# 1.25 it then ended its own slice 40-70 ms after the child had sent its last (1,000
# workloads), at 1.0 within 10 ms of it.
OWN_SHARE = {True: 1.25, False: 1.0}  # keep_passing -> share


def slices(count: int, jobs: int, share: float = OWN_SHARE[True]) -> list[tuple[int, int]]:
    """`count` workloads in `jobs` contiguous slices, in order; the first is this process's,
    `share` times a child's."""
    total = share + jobs - 1
    bounds = [0] + [round(count * (share + i) / total) for i in range(jobs)]
    return list(zip(bounds, bounds[1:]))


def linked_in_parallel(p: link.Plan, ctx: Ctx, jobs: int, keep_passing: bool = True) -> tuple[link.Linked, list[Judged]]:
    """`link.finish` and the report's entries, the workloads linked and judged in `jobs`
    slices (this process takes the first); the same as in one process. `forked.ChildFailed`
    when a child fails (the caller then works in one process)."""
    (start, stop), *rest = slices(len(p.workloads), jobs, OWN_SHARE[keep_passing])
    children: list[forked.Stream] = []
    try:
        for a, b in rest:
            children.append(forked.Stream(judged_in_batches, p, a, b, ctx, keep_passing))
        sent: list[list[Part]] = [[] for _ in children]
        own = []
        for part in judged_in_batches(p, start, stop, ctx, keep_passing):
            own.append(part)
            for child, parts in zip(children, sent):
                parts += child.ready()
        for child, parts in zip(children, sent):
            parts += child.rest()
    finally:
        for child in children:
            child.cancel()
    received = [part for parts in sent for part in parts]  # (in slice order)
    for part in received:  # (this process's own are on the plan already)
        if part.used is not None:
            for key in link.USED:
                p.ctx[key] |= part.used[key]
        p.out.not_judged += [(p.workloads[i], why) for i, why in part.not_judged]
        p.out.unreadable += [(p.workloads[i], why) for i, why in part.unreadable]
    linked = link.finish(p)
    judged: dict[str, Judged] = {}
    seen_tgs: set[int] = set()  # a target group two slices share is judged with the first
    for part in own + received:
        for entry, tgs, passing_tgs in part.judged:
            kept = [loc for loc, tg in zip(entry.findings, tgs) if not tg or tg not in seen_tgs]
            passing = sum(1 for tg in passing_tgs if not tg or tg not in seen_tgs)
            seen_tgs.update(tgs)
            seen_tgs.update(passing_tgs)
            if entry.key in judged:  # the same workload twice in the input, in two batches
                judged[entry.key].findings += kept
                judged[entry.key].passing += passing
            else:
                entry.findings, entry.passing = kept, passing
                judged[entry.key] = entry
    other_groups(linked, judged)
    place(without_expressions(judge.other_judgements(linked, ctx)), judged, keep_passing=keep_passing)
    return linked, list(judged.values())


def audit(paths: Iterable[str], ctx: Ctx, options: dict[str, int], texts: Mapping[str, str] | None = None,
          keep_links: bool = False, jobs: int | None = None, reading: Reading | None = None,
          keep_passing: bool = True) -> Audit:
    """Read, link, judge. Input that cannot be used is named in `problems` (file:line), and
    everything else is still judged. `texts` stands in for files already read (by the name a
    report shows); `keep_links` keeps the linked subjects on the result. `jobs`: processes
    that read a large file and link and judge the workloads (default: one per core; one per
    `PARALLEL_MIN` workloads at most); the report is the same for any number. `reading`: the
    `paths` already being read (the CLI starts it before it imports the rules). Not
    `keep_passing`: each subject's passing findings are counted (`Judged.passing`), not kept,
    as the text report without `--all` prints them (on 1,000 workloads, 14,669 of 20,500
    findings; sending them from the processes that judge them was ~0.1 s of the audit)."""
    # A batch over many small objects that nearly all live to the end: the cyclic collector
    # would only rescan them again and again (a third of the run on 4,000 documents).
    gc.disable()
    try:
        jobs = forked.default_jobs() if jobs is None else jobs
        reading = reading or Reading(paths, texts, jobs, shape.doc_problems)
        docs, problems = reading.result()
        docs, set_aside = kustomize.set_aside(docs)
        problems += set_aside
        usable = []
        known = reading.shape_problems  # (checked where they were read)
        for doc in docs:
            found = known.get(id(doc))
            if found is None:
                found = shape.doc_problems(doc)
            problems += found
            if not found:
                usable.append(doc)
        try:
            resources = adapt.resources(usable)
        except ValueError as err:  # an AWS attributes document of the wrong shape
            problems.append(f"describe-target-group-attributes output: {err}")
            resources = [adapt.kubernetes(d) for d in usable if d.kind]
        plan = link.plan(resources, options)
        linked = None
        jobs = min(jobs, len(plan.workloads) // PARALLEL_MIN)
        if jobs > 1 and not keep_links and not plan.links_subjects and forked.available():
            try:
                linked, judged = linked_in_parallel(plan, ctx, jobs, keep_passing)
            except forked.ChildFailed:  # done again here: the same report, or the same error
                plan = link.plan(resources, options)
        if linked is None:
            link.link_workloads(plan, plan.workloads)
            linked = link.finish(plan)
            found = judge.judgements(linked, ctx)
            judged = grouped(found if keep_links else without_expressions(found), linked, keep_passing)  # placed as judged
        problems += [f"{r.where}: {r.ref}: {why}" for r, why in linked.unreadable]
        ignored = sum(adapt.ignored(d) for d in usable)
        notes = linked.notes + ([f"{ignored} documents of other kinds ignored"] if ignored else [])
    finally:
        collector_on()
    warnings = [f"{r.where}: {why}" for r, why in linked.warnings]
    ending.keep(docs, plan)  # (its links too: freed with the process when it ends at once)
    return Audit(judged, notes, len({d.file for d in docs}), problems, warnings, linked if keep_links else None)
