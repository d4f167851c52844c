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


def as_sarif(audit: Audit, version: str = "0.1.0") -> str:
    index = {rid: i for i, rid in enumerate(RULE_IDS)}
    results = [result(x, j.key, j.via, index) for j in audit.judged for x in j.findings if x.finding.status != "ok"]
    run = {"tool": {"driver": {"name": "lockstep", "version": version,
                               "rules": [rule_entry(r) for r in RULE_IDS]}},
           "originalUriBaseIds": {"SRCROOT": {"uri": Path.cwd().resolve().as_uri() + "/"}},
           "results": results,
           "properties": {"notes": audit.notes, "warnings": audit.warnings}}
    # Compact: a cluster's audit has thousands of results, and json's C encoder needs no indent.
    return json.dumps({"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}, ensure_ascii=False,
                      separators=(",", ":"))

