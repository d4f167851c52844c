"""SARIF 2.1.0 for code-scanning annotations on pull requests.

One run; the driver lists every rule of the registry. Failed findings are results at their
severity; skipped ones are notes naming the annotation that would decide them; accepted
ones keep their level with an in-source suppression carrying the reason (the
`lockstep.dev/accept` annotation), so they are visible but do not count as open. Passing
findings are not results. Locations point at the manifest field behind the finding.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from lockstep.timing.audit.core import Audit, Located
from lockstep.timing.audit.locate import fields_of
from lockstep.timing.invariants import RULE_IDS, RULES

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def level(x: Located) -> str:
    f = x.finding
    return "note" if f.status == "skipped" else f.severity


def artifact(file: str) -> dict[str, str]:
    """Repository-relative paths (code scanning needs them) against SRCROOT, the working directory."""
    if file == "<stdin>":
        return {"uri": "stdin"}
    path = Path(file).resolve()
    try:
        return {"uri": path.relative_to(Path.cwd().resolve()).as_posix(), "uriBaseId": "SRCROOT"}
    except ValueError:
        return {"uri": path.as_uri()}


def rule_entry(rule_id: str) -> dict[str, object]:
    severities = {r.severity for r in RULES if r.id == rule_id}
    default = "error" if any("error" in s for s in severities) else "warning"
    words = rule_id.replace("-", " ")
    return {"id": rule_id, "name": "".join(w.capitalize() for w in rule_id.split("-")),
            "shortDescription": {"text": words[:1].upper() + words[1:]},
            "help": {"text": f"docs/INVARIANTS.md, rule `{rule_id}`"},
            "defaultConfiguration": {"level": default}}


def result(x: Located, subject: str, via: str, index: dict[str, int]) -> dict[str, object]:
    f = x.finding
    out: dict[str, object] = {
        "ruleId": f.id, "ruleIndex": index[f.id], "level": level(x),
        "message": {"text": f"{subject}: {f.render()}"},
        "locations": [{"physicalLocation": {"artifactLocation": artifact(x.file),
                                            "region": {"startLine": max(1, x.line)}}}],
        # Stable across changed numbers: the rule, the subject and the fields, not their values.
        "partialFingerprints": {"lockstep/v1": hashlib.sha256("|".join(
            [f.id, subject, via, *f.left.fields, *f.right.fields]
        ).encode()).hexdigest()[:32]},
        "properties": {"status": f.status, "slack_s": f.slack_s, "subject": subject,
                       "needs": list(f.needs)},
    }
    if f.status == "accepted":
        out["suppressions"] = [{"kind": "inSource", "justification": f.reason}]
    return out


def fixes(x: Located, subject: str, repair: Any) -> list[dict[str, object]]:
    """The edits of `audit --fix` that the finding's rule needs, as one SARIF fix."""
    if repair is None or x.finding.status not in ("error", "warning"):
        return []
    mine = [c for fx in repair.fixes if fx.key == subject for c in fx.changes if c.written and x.finding.id in c.rules]
    if not mine:
        return []
    by_file: dict[str, list[Any]] = {}
    for c in mine:
        for e in c.edits:
            if e not in by_file.setdefault(e.file, []):
                by_file[e.file].append(e)
    words = ", ".join(f"{c.field} {c.old} → {c.new}" for c in mine)
    return [{"description": {"text": f"{words} (part of `lockstep audit --fix` for {subject})"},
             "artifactChanges": [{"artifactLocation": artifact(file),
                                  "replacements": [{"deletedRegion": repair.region(e), "insertedContent": {"text": e.text}}
                                                   for e in sorted(edits, key=lambda e: e.start)]}
                                 for file, edits in by_file.items()]}]


def as_sarif(audit: Audit, version: str = "0.1.0", repair: Any = None) -> str:
    """`repair` (`audit --fix`): each error and warning carries the edits its rule needs."""
    index = {rid: i for i, rid in enumerate(RULE_IDS)}
    results = []
    for j in audit.judged:
        for x in j.findings:
            if x.finding.status != "ok":
                out = result(x, j.key, j.via, index)
                found = fixes(x, j.key, repair)
                if found:
                    out["fixes"] = found
                results.append(out)
    run = {"tool": {"driver": {"name": "lockstep", "version": version,
                               "rules": [rule_entry(r) for r in RULE_IDS]}},
           "columnKind": "unicodeCodePoints",
           "originalUriBaseIds": {"SRCROOT": {"uri": Path.cwd().resolve().as_uri() + "/"}},
           "results": results,
           "properties": {"notes": audit.notes, "warnings": audit.warnings}}
    # Compact: a cluster's audit has thousands of results, and json's C encoder needs no indent.
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, ensure_ascii=False,
                      separators=(",", ":"))

