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


ARGO = SEED.with_name("Pulumi.argo-scale-down.yaml")


def test_the_argo_example_with_a_scale_down_delay_below_the_switch_fails_check_with_that_rule_alone(capsys):
    assert main(["check", str(ARGO)]) == 1
    out = capsys.readouterr().out
    errors = [line.split()[1:3] for line in out.splitlines() if line.startswith("ERROR")]
    assert errors == [["rollout-scale-down-outlasts-switch", "odds-stream:"]]
