"""Text and JSON reports of an audit: grouped by workload, each finding with both sides,
its slack and the fix (or the annotation that would decide it), and where it was written.

On real repositories skipped findings (a rule that lacks a `lockstep.dev/*` fact) outnumber
errors and warnings several times over, so the text report prints each error, warning and
accepted finding in full and folds a workload's skipped rules into one line naming the
annotations that would decide them. `--all` (and JSON and SARIF) keep every finding."""

from __future__ import annotations

import json
from collections import Counter
from typing import Iterator

from lockstep.timing.audit.core import Audit, Judged

STATUSES = ("error", "warning", "skipped", "accepted", "ok")
ORDER = {s: i for i, s in enumerate(STATUSES)}


def summary(audit: Audit) -> str:
    counts = Counter(f.status for f in audit.findings)
    counts["ok"] += audit.passing
    subjects = len(audit.judged)
    return (f"{subjects} subject{'s' * (subjects != 1)} in {audit.files} file{'s' * (audit.files != 1)}: "
            + ", ".join(f"{counts.get(s, 0)} {s}" for s in STATUSES))


def folded_skips(findings: list) -> str:
    """One line for a workload's skipped findings: the facts that would decide them, then
    the rules, each named once in the order the report would list them."""
    needs = list(dict.fromkeys(n for x in findings for n in x.finding.needs))
    rules = list(dict.fromkeys(x.finding.id for x in findings))
    decided = f"set {', '.join(needs)} to decide" if needs else "undecided:"
    return f"  SKIPPED {len(findings)}: {decided} {', '.join(rules)}  (--all: each)"


def text_lines(audit: Audit, show_all: bool = False) -> Iterator[str]:
    """The text report a line at a time (the CLI writes them a few hundred at a time as they
    come: the report of a 4,000-document audit held whole, joined and encoded was three copies
    of 1.6 MB of text).
    `show_all`: every finding in full, passing ones too (which the audit must then have kept)."""
    for j in sorted(audit.judged, key=lambda j: (min([ORDER[x.finding.status] for x in j.findings]
                                                     + [ORDER["ok"]] * bool(j.passing) or [9]), j.key)):
        ranked = sorted(j.findings, key=lambda x: ORDER[x.finding.status])
        shown = [x for x in ranked if show_all or x.finding.status not in ("ok", "skipped")]
        skipped = [x for x in ranked if x.finding.status == "skipped"]
        ok = j.passing + sum(x.finding.status == "ok" for x in j.findings)
        via = f"  via {j.via}" if j.via else ""
        yield f"{j.key}  ({j.file}:{j.line}){via}"
        for x in shown:
            yield f"  {x.finding.render()}"
            yield f"      at {x.file}:{x.line}"
        if not show_all and skipped:
            yield folded_skips(skipped)
        if not show_all and ok:
            yield f"  ({ok} passing)"
        yield from (f"  note: {n}" for n in j.notes)
        yield ""
    yield from (f"WARNING {w}" for w in audit.warnings)
    yield from (f"note: {n}" for n in audit.notes)
    yield f"lockstep audit: {summary(audit)}"


def judged_dict(j: Judged) -> dict[str, object]:
    return {"subject": j.key, "file": j.file, "line": j.line, "via": j.via, "notes": j.notes,
            "findings": [{**x.finding.as_dict(), "file": x.file, "line": x.line} for x in j.findings]}


def as_json(audit: Audit) -> str:
    counts = Counter(f.status for f in audit.findings)
    return json.dumps({"ok": not audit.failed, "summary": {s: counts.get(s, 0) for s in STATUSES},
                       "subjects": [judged_dict(j) for j in audit.judged], "warnings": audit.warnings,
                       "notes": audit.notes},
                      ensure_ascii=False, separators=(",", ":"))
