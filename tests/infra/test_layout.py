"""Layout rules the infra code relies on."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_timing_never_imports_pulumi():
    root = ROOT / "timing"
    offenders = [str(p) for p in root.rglob("*.py") if "import pulumi" in p.read_text()
                 or "from pulumi" in p.read_text()]
    assert offenders == []


def test_tests_import_the_real_infra_package_not_a_shadow():
    from lockstep.infra import render

    assert Path(render.__file__).resolve().parent == ROOT / "infra"
