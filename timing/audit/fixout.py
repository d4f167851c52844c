"""What `lockstep audit --fix` prints and writes (the fix itself: `timing.fix.manifests`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from lockstep.timing.inputs import STDIN, write_atomically


def as_data(repair: Any) -> dict[str, Any]:
    return {
        "ok": repair.ok,
        "subjects": [{"subject": fx.key,
                      "changes": [{"field": c.field, "from": c.old, "to": c.new, "rules": list(c.rules),
                                   "file": c.at[0], "line": c.at[1], "written": c.written,
                                   **({"by_hand": c.by_hand} if c.by_hand else {})} for c in fx.changes],
                      "conflict": [c.text for c in fx.conflict],
                      "unmovable": [f.as_dict() for f in fx.unmovable]} for fx in repair.fixes],
        "still_failing": [{"subject": j.key, **x.finding.as_dict(), "file": x.file, "line": x.line}
                          for j in repair.after.judged for x in j.findings if x.finding.status == "error"],
        "problems": repair.after.problems,
        "diff": repair.diff(),
    }


def print_fix(repair: Any, fmt: str, write: bool = False) -> None:
    """The changes per workload, the patch, what still fails, and one verdict line (`write`:
    the patch is about to be applied, so the verdict says written rather than shown)."""
    out = sys.stdout
    if fmt == "json":
        out.write(json.dumps(as_data(repair), ensure_ascii=False, indent=2) + "\n")
        return
    for fx in repair.fixes:
        out.write(f"{fx.key}\n")
        for c in fx.changes:
            where = f"  at {c.at[0]}:{c.at[1]}" if c.at[0] else ""
            rules = ", ".join(c.rules) or "kept consistent"
            tail = f"  by hand: {c.by_hand}" if c.by_hand else where
            out.write(f"  {c.field}: {c.old} → {c.new}  ({rules}){tail}\n")
        if fx.conflict:
            out.write("  no numbers within the fields' ranges satisfy these together:\n")
            for c in fx.conflict:
                out.write(f"    {c.text}\n")
        for f in fx.unmovable:
            out.write(f"  not a number to move: {f.render()}\n")
    out.write(repair.diff())
    for j in repair.after.judged:
        for x in j.findings:
            if x.finding.status == "error":
                out.write(f"still failing: {j.key}: {x.finding.render()}\n")
    written = sum(c.written for fx in repair.fixes for c in fx.changes)
    by_hand = sum(not c.written for fx in repair.fixes for c in fx.changes)
    files = len([n for n, t in repair.patched.items() if t != repair.texts.get(n)])
    done = "written" if write else "in the patch above (not written: --write applies it)"
    parts = [f"{written} change(s) to {files} file(s) {done}"] if written else []
    if by_hand:
        parts.append(f"{by_hand} by hand")
    if not repair.fixes:
        verdict = "nothing to fix"
    elif repair.ok:
        verdict = "; ".join(parts) + "; the patched manifests pass the audit"
    else:
        verdict = "; ".join(parts + ["the patched manifests do not pass the audit yet"])
    out.write(f"lockstep audit --fix: {verdict}\n")


def write_fix(repair: Any, fmt: str) -> None:
    """Each changed file replaced in one step (a crash leaves the old file or the new)."""
    changed = [n for n, t in repair.patched.items() if t != repair.texts.get(n) and n != STDIN]
    for name in changed:
        write_atomically(repair.paths[name], repair.patched[name])
    if fmt == "text" and changed:
        sys.stdout.write(f"lockstep audit --fix: wrote {', '.join(changed)}\n")
