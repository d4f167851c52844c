"""The shipped seed-003 stack reproduces the field report's failures, named by id."""

from __future__ import annotations

from pathlib import Path

from lockstep.timing.cli import main

SEED = Path(__file__).resolve().parents[2] / "examples" / "Pulumi.seed003.yaml"


def test_seed_003_numbers_fail_check_with_the_drain_and_watchdog_rules(capsys):
    assert main(["check", str(SEED)]) == 1
    out = capsys.readouterr().out
    ids = sorted({line.split()[1] for line in out.splitlines() if line.startswith("ERROR")})
    assert ids == ["drain-covers-lb-detection", "recovery-within-budget",
                   "watchdog-tolerates-planned-drain"]
