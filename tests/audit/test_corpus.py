"""Every bundle of tests/audit/corpus gets the verdict its expected.yaml states.

A bundle is a directory `input/` of manifests and AWS JSON, and `expected.yaml`: the exit
code, findings that must be present (subject, rule id, status, and optionally the
annotations a skipped rule needs), statuses that must not appear, note and stderr fragments.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lockstep.timing.invariants import RULES

CORPUS = Path(__file__).parent / "corpus"
BUNDLES = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.yaml").exists())
# Every rule resources decide (the registry's declarations).
DECIDABLE = {r.id for r in RULES if r.decided != "config"}


def run_bundle(name: str, run_audit):
    bundle = CORPUS / name
    expected = yaml.safe_load((bundle / "expected.yaml").read_text())
    args = ["--format", "json", *expected.get("args", [])]
    if "stdin" in expected:
        run = run_audit(*args, "-", stdin=(bundle / expected["stdin"]).read_bytes())
    else:
        run = run_audit(*args, str(bundle / "input"))
    return expected, run


@pytest.mark.parametrize("name", BUNDLES)
def test_bundle_gets_its_expected_verdict(name, run_audit):
    expected, run = run_bundle(name, run_audit)
    assert run.code == expected["exit"], run.err or run.out
    for fragment in expected.get("stderr", []):
        assert fragment in run.err
    assert "Traceback" not in run.err
    if expected["exit"] == 2 and "findings" not in expected:
        return
    found = run.findings()
    for want in expected.get("findings", []):
        matches = [f for f in found if f["subject"] == want["subject"] and f["id"] == want["id"]]
        assert any(f["status"] == want["status"] for f in matches), (want, [f["message"] for f in matches])
        if "needs" in want:
            assert any(f["needs"] == want["needs"] for f in matches), [f["needs"] for f in matches]
    banned = set(expected.get("none", []))
    assert not [f["message"] for f in found if f["status"] in banned]
    notes = " | ".join(run.notes())
    for fragment in expected.get("notes", []):
        assert fragment in notes
    warnings = " | ".join(run.report["warnings"])
    for fragment in expected.get("warnings", []):
        assert fragment in warnings


def test_the_corpus_breaks_every_rule_manifests_can_decide(run_audit):
    broken = set()
    for name in BUNDLES:
        _, run = run_bundle(name, run_audit)
        if run.code != 2:
            broken |= {f["id"] for f in run.findings() if f["status"] in ("error", "warning", "accepted")}
    assert DECIDABLE <= broken, sorted(DECIDABLE - broken)
