"""`lockstep audit --fix`: the nearest consistent numbers for audited workloads, written into
the manifests the audit read.

Each workload subject the audit linked is solved on its own (`solve.solve`), with the audit's
own judging step (`bind.judge.subject_findings`) as the judge: no rule is restated, and the
answer is what `lockstep audit` says of it. Each changed model field goes back to the key that
set it (`audit.locate.field_location`, the load balancer's `origins`): a number is replaced in
place (its quoting kept), a key the manifest leaves to a default is added beside its siblings,
a `key=value` attribute list gets its one value changed or appended, a preStop sleep gets its
seconds. What a manifest only describes is never written: a `lockstep.dev/*` annotation states
what the app does (changing the annotation would not change the app), and AWS's description
of a target group is not where the target group is defined. Such fields move only when nothing
else can (`HEAVY`), and the change is listed for a person to make.

The patched text is audited again before anything is shown: every written change must read
back as its number; one that does not is withheld, with the reason.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from lockstep.timing import conventions as C
from lockstep.timing.audit.core import Audit, audit
from lockstep.timing.audit.locate import NEEDS, field_location
from lockstep.timing.audit.reader import expand
from lockstep.timing.bind.judge import subject_findings
from lockstep.timing.bind.lbs import ATTRIBUTES
from lockstep.timing.bind.link import Subject
from lockstep.timing.bind.resource import AWS_KINDS, Resource
from lockstep.timing.context import Ctx
from lockstep.timing.extract.mesh import DESTINATION_IDLE, ISTIO_PROXY_CONFIG
from lockstep.timing.findings import Finding
from lockstep.timing.fix.edits import ANNOTATIONS, Edit, File, Insert, Plan, attribute, drain, insert_key, put, \
    render_inserts
from lockstep.timing.fix.knobs import keep_matches, knobs, with_values
from lockstep.timing.fix.solve import Conflict, solve
from lockstep.timing.inputs import ConfigError, display_name, read_text
from lockstep.timing.lbkinds import KINDS


@dataclass
class FieldChange:
    """One model field of one subject: its numbers, the rules that need it, and the edits that
    write it (none: `by_hand` says what a person must change instead)."""

    subject: str
    field: str
    old: int
    new: int
    rules: tuple[str, ...]
    edits: list[Edit] = field(default_factory=list)
    by_hand: str = ""
    at: tuple[str, int] = ("", 0)  # the file and line the change is written at (or would be)

    @property
    def written(self) -> bool:
        return bool(self.edits) and not self.by_hand


@dataclass
class SubjectFix:
    key: str
    changes: list[FieldChange]
    conflict: list[Conflict]
    unmovable: list[Finding]


@dataclass
class ManifestFix:
    fixes: list[SubjectFix]
    before: Audit
    after: Audit
    texts: dict[str, str]  # by the name a report shows
    patched: dict[str, str]
    paths: dict[str, str] = field(default_factory=dict)  # each file's path, by the name a report shows

    @property
    def ok(self) -> bool:
        """The patched manifests pass the audit, with every change written."""
        return not self.after.failed and not self.after.problems and \
            all(c.written for f in self.fixes for c in f.changes) and not any(f.conflict for f in self.fixes)

    def diff(self) -> str:
        out = []
        for name, old in self.texts.items():
            new = self.patched.get(name, old)
            if new != old:
                out.append("".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                                        f"a/{name.lstrip('/')}", f"b/{name.lstrip('/')}")))
        return "".join(out)

    def region(self, edit: Edit) -> dict[str, int]:
        """The SARIF region an edit replaces: 1-based lines, columns in code points."""
        f = File(edit.file, self.texts[edit.file], parse=False)
        (sl, sc), (el, ec) = f.position(edit.start), f.position(edit.end)
        return {"startLine": sl, "startColumn": sc, "endLine": el, "endColumn": ec}


def _plan(s: Subject, name: str, new: int, files: Mapping[str, File], ctx: Ctx) -> tuple[Plan, Resource | None]:
    if name in NEEDS:
        return f"the app's own behaviour: make it {new}s, then set {NEEDS[name]}", None
    if name.startswith("lb."):
        origin = s.source.origins.get(name) if s.source is not None else None
        if origin is None:
            return "no input states this load-balancer field", None
        res, path = origin
    elif name in s.field_origins:  # an Istio gateway's drain: the pod's preStop wait + its ProxyConfig's
        return (f"make the gateway serve {new}s after it is told to stop: its preStop wait plus ProxyConfig "
                "terminationDrainDuration"), s.field_origins[name][0]
    else:
        where = field_location(s, name)
        if where is None:
            return "no manifest field holds it", None
        res, path = where
    if res.kind in AWS_KINDS:
        return f"{res.kind} {res.name} is AWS's description of it: set it where the target group is defined", res
    f = files.get(res.origin.file)
    doc = f.doc(res) if f is not None else None
    if f is None or doc is None:
        return f"cannot place {res.kind} {res.name} in {res.origin.file or 'the input'}", res
    if name.startswith("lb."):
        if res.kind == "IngressClassParams":
            return "set it in the IngressClassParams' loadBalancerAttributes", res
        kind = KINDS[s.service.lb.kind] if s.service.lb is not None else None
        if path is None and kind is not None and name in kind.annotations:
            path = (*ANNOTATIONS, kind.annotation_prefix + kind.annotations[name][0])
        if path is None or path[:2] != ANNOTATIONS or len(path) != 3:
            return "no annotation sets it", res
        if name in ATTRIBUTES:
            return attribute(f, doc, path, ATTRIBUTES[name], new), res
        return put(f, doc, path, str(new), True), res
    if path[-1:] and isinstance(path[-1], str) and path[-1].startswith(C.ANNOTATION):
        return f"{path[-1]} describes it: change what it describes to {new}, then the annotation", res
    if name == "shutdown.drain_s":
        return drain(f, doc, path, new, ctx), res
    if name.startswith("path["):
        return _hop(res, f, doc, path, new), res
    return put(f, doc, path, str(new), path[:2] == ANNOTATIONS or "annotations" in path), res


def _hop(res: Resource, f: File, doc: Any, path: tuple[Any, ...], new: int) -> Plan:
    """A delivery-path hop's number where the linker read it, spelt as the manifest spells it: a
    string of digits (an ingress-nginx ConfigMap key or annotation) stays digits, a duration
    (`15s`, `1h`: Istio, a `worker-shutdown-timeout`) becomes whole seconds, a number stays a
    number. An Istio DestinationRule with no pool idle timeout gets one, a pod template without a
    Linkerd wait annotation gets it (a string of seconds, as Linkerd reads it). What is set inside
    another setting (ProxyConfig in an annotation's YAML, a controller's preStop and flags
    together) is named for a person to change."""
    node: Any = doc
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else (
            node[key] if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node) else None)
    where = f"{res.ref} {'.'.join(map(str, path))}"
    if path[-1:] == (ISTIO_PROXY_CONFIG,):
        return f"set terminationDrainDuration: {new}s in the {ISTIO_PROXY_CONFIG} annotation of {res.ref}"
    if res.kind == "DestinationRule" and path == DESTINATION_IDLE[:len(path)]:  # the pool idle, stated or not
        return put(f, doc, DESTINATION_IDLE, f"{new}s", True)
    if isinstance(node, Mapping):
        return f"make {where} add up to {new}s (the preStop wait and the flags that delay the stop)"
    if node is None and "annotations" in path:
        return put(f, doc, path, str(new), True)
    if isinstance(node, bool) or node is None:
        return f"{where} is not a number to replace: set it to {new}s by hand"
    if isinstance(node, int):
        return put(f, doc, path, str(new), False)
    return put(f, doc, path, str(new) if str(node).strip().isdigit() else f"{new}s", True)


# ---- the whole fix ---------------------------------------------------------------------------------
def _with_service(s: Subject, svc: Any) -> Subject:
    source = replace(s.source, lb=svc.lb) if s.source is not None else None
    return replace(s, service=svc, source=source)


def _described(s: Subject, names: Iterable[str]) -> tuple[str, ...]:
    """The fields a manifest only describes: an app fact's annotation, a DaemonSet's node count,
    AWS's description of a target group. They move only when nothing else can."""
    out = []
    for name in names:
        if name in NEEDS:
            out.append(name)
        elif name.startswith("lb."):
            origin = s.source.origins.get(name) if s.source is not None else None
            if origin is not None and origin[0].kind in AWS_KINDS:
                out.append(name)
        else:
            where = field_location(s, name)
            if where is not None and where[1] and isinstance(where[1][-1], str) and where[1][-1].startswith(C.ANNOTATION):
                out.append(name)
    return tuple(out)


def read_texts(paths: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """Every readable input file's text, and its path, by the name a report shows (an
    unreadable one is left to the audit, which names it)."""
    texts: dict[str, str] = {}
    where: dict[str, str] = {}
    try:
        files = expand(paths)
    except ConfigError:
        return texts, where
    for f in files:
        try:
            texts[display_name(f)] = read_text(f)
            where[display_name(f)] = f
        except ConfigError:
            continue
    return texts, where


def fix_manifests(paths: list[str], ctx: Ctx, options: dict[str, Any], keep: tuple[str, ...] = ()) -> ManifestFix:
    """Solve every audited workload that fails a rule; write what can be written; audit the
    patched text again."""
    texts, where = read_texts(paths)
    before = audit(paths, ctx, options, texts=texts, keep_links=True)
    assert before.linked is not None
    files = {name: File(name, text) for name, text in texts.items()}
    used: set[str] = set()
    fixes: list[SubjectFix] = []
    for s in before.linked.subjects:
        names = knobs(s.service)[1]
        pinned = tuple(n for n in names if any([_matches(p, s, n, used) for p in keep]))

        def judge(svc: Any, s: Subject = s) -> list[Finding]:
            return [j.finding for j in subject_findings(_with_service(s, svc), ctx, set())]

        result = solve(s.service, judge, lambda changes, s=s: with_values(s.service, changes), pinned, "",
                       _described(s, names))
        if not result.changes and not result.conflict and not result.unmovable:
            continue
        changes = []
        for c in result.changes:
            plan, res = _plan(s, c.knob.name, c.new, files, ctx)
            change = FieldChange(s.key, c.knob.name, c.knob.value, c.new, c.rules)
            change.at = res.origin.locate(()) if res is not None else ("", 0)
            changes.append((change, plan))
        fixes.append(SubjectFix(s.key, [c for c, _ in changes], result.conflict, result.unmovable))
        _attach(changes, files)
    unmatched = [p for p in keep if p not in used]
    if unmatched:
        raise ConfigError([f"--keep {p}: names no whole-number field of an audited workload (fields are named like "
                           "shutdown.grace_s or lb.health_check.interval_s, optionally after the workload: "
                           "'shop/Deployment/storefront.shutdown.grace_s'; * and ? match)" for p in unmatched])
    _collisions(fixes)
    patched = _apply(texts, fixes)
    after = audit(paths, ctx, options, texts=patched, keep_links=True)
    if _withhold_unread(fixes, after):
        patched = _apply(texts, fixes)
        after = audit(paths, ctx, options, texts=patched, keep_links=True)
    return ManifestFix(fixes, before, after, texts, patched, where)


def _matches(pattern: str, s: Subject, name: str, used: set[str]) -> bool:
    hit = keep_matches(name, pattern) or keep_matches(f"{s.key}.{name}", pattern)
    if hit:
        used.add(pattern)
    return hit


def _attach(changes: list[tuple[FieldChange, Plan]], files: Mapping[str, File]) -> None:
    """Give each change its edits: replacements as planned, insertions merged per mapping."""
    inserts: dict[str, list[tuple[FieldChange, Insert]]] = {}
    for change, plan in changes:
        if isinstance(plan, str):
            change.by_hand = plan
        elif isinstance(plan, Edit):
            change.edits = [plan]
            change.at = (plan.file, files[plan.file].position(plan.start)[0])
        else:
            inserts.setdefault(plan.file.name, []).append((change, plan))
    for name, group in inserts.items():
        f = files[name]
        edits = render_inserts(f, [p for _, p in group])
        for change, plan in group:
            change.edits = [edits[insert_key(plan)]]
            change.at = (name, f.position(change.edits[0].start)[0])


def _collisions(fixes: list[SubjectFix]) -> None:
    """Two workloads that want different text at one place (a shared Ingress's annotation): neither
    is written; each says so."""
    by_span: dict[tuple[str, int, int], list[tuple[FieldChange, Edit]]] = {}
    for fx in fixes:
        for c in fx.changes:
            for e in c.edits:
                by_span.setdefault((e.file, e.start, e.end), []).append((c, e))
    clash: set[int] = set()
    inserted: dict[tuple[str, int, str], list[tuple[FieldChange, Edit]]] = {}
    for span, group in by_span.items():
        if span[1] == span[2]:  # insertions at one place clash only when they add the same key
            for c, e in group:
                inserted.setdefault((span[0], span[1], e.text.strip().lstrip(", ").split(":")[0]), []).append((c, e))
        elif len({e.text for _, e in group}) > 1 and len({c.subject for c, _ in group}) > 1:
            clash.update(id(c) for c, _ in group)
    for group in inserted.values():
        if len({e.text for _, e in group}) > 1 and len({c.subject for c, _ in group}) > 1:
            clash.update(id(c) for c, _ in group)
    spans = sorted(s for s in by_span if s[1] < s[2])
    for a, b in zip(spans, spans[1:]):
        if a[0] == b[0] and b[1] < a[2]:  # overlapping replacements
            clash.update(id(c) for c, _ in by_span[a] + by_span[b])
    for fx in fixes:
        for c in fx.changes:
            if id(c) in clash:
                others = sorted({o.subject for g in by_span.values() for o, _ in g if o.subject != c.subject and
                                 any(e in c.edits for _, e in g)} | set())
                c.by_hand = ("another workload needs a different value at the same place "
                             f"({', '.join(others) or 'a shared resource'}): set it per workload")


def _apply(texts: Mapping[str, str], fixes: list[SubjectFix]) -> dict[str, str]:
    edits: dict[str, set[Edit]] = {}
    for fx in fixes:
        for c in fx.changes:
            if c.written:
                edits.setdefault(c.edits[0].file, set()).update(c.edits)
    out = dict(texts)
    for name, group in edits.items():
        text = texts[name]
        for e in sorted(group, key=lambda e: (e.start, e.end, e.text), reverse=True):  # one place: by text
            text = text[:e.start] + e.text + text[e.end:]
        out[name] = text
    return out


def _withhold_unread(fixes: list[SubjectFix], after: Audit) -> bool:
    """A written change the patched text does not read back as its number is withheld (a form
    the edit does not know). True when any was."""
    assert after.linked is not None
    now = {s.key: knobs(s.service)[1] for s in after.linked.subjects}
    withheld = False
    for fx in fixes:
        for c in fx.changes:
            if not c.written:
                continue
            knob = now.get(c.subject, {}).get(c.field)
            if knob is None or knob.value != c.new:
                got = "nothing" if knob is None else knob.value
                c.by_hand = f"the edit reads back as {got}, not {c.new}: set it by hand"
                withheld = True
    return withheld
