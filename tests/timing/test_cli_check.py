"""`lockstep check`: exit 0 consistent, 1 error findings (named by id), 2 unreadable or
invalid input as one stderr line naming the field, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.timing.strategies import base, edit
from lockstep.timing.cli import main
from lockstep.timing.config import EXAMPLE

LOCKSTEP = Path(sys.executable).with_name("lockstep")


def stack_file(tmp_path: Path, changes: dict) -> Path:
    """The example stack file with `changes` to its `lockstep:` values."""
    values = edit(base(), changes)
    doc = {"config": {"aws:region": "eu-west-1", **{f"lockstep:{k}": v for k, v in values.items()}}}
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args], capture_output=True, text=True, timeout=60, check=False)


def test_the_example_stack_checks_clean(capsys) -> None:
    assert main(["check"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("lockstep check Pulumi.example.yaml: 0 error, 0 warning, 0 skipped, ")
    assert "ERROR" not in out


def test_seed_003_numbers_exit_1_naming_the_broken_rule(tmp_path: Path, capsys) -> None:
    path = stack_file(tmp_path, {"services.0.lb.removal": ["health_check"], "services.0.shutdown.drain_s": 5,
                                 "services.0.lb.health_check.interval_s": 30,
                                 "services.0.lb.health_check.timeout_s": 5})
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert ("ERROR drain-covers-lb-detection  api: drain 5s (shutdown.drain_s) < lb_detect 60s (health_check: "
            "lb.health_check.interval_s 30 × lb.health_check.unhealthy_threshold 2) + margin 5s  slack -60s → "
            "raise the drain to ≥65s or detect faster") in out.splitlines()
    # the example drains every node first: no kubelet node shutdown is judged
    assert not any(line.startswith("ERROR node-shutdown-drains-without-endpoints") for line in out.splitlines())
    assert out.splitlines()[-1].startswith(f"lockstep check {path}: 2 error")


def test_errors_print_before_warnings_and_all_prints_passing_findings(tmp_path: Path, capsys) -> None:
    path = stack_file(tmp_path, {"services.0.shutdown.drain_s": 19, "failover.failback_checks": 1})
    assert main(["check", str(path), "--all"]) == 1
    lines = capsys.readouterr().out.splitlines()
    statuses = [line.split()[0] for line in lines[:-1]]
    assert statuses[:2] == ["ERROR", "WARNING"] and set(statuses[2:]) == {"OK"}


def test_warnings_alone_exit_0(tmp_path: Path, capsys) -> None:
    path = stack_file(tmp_path, {"failover.failback_checks": 1})
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("WARNING failback-is-deliberate")


def test_json_output_parses_and_names_every_finding(tmp_path: Path, capsys) -> None:
    path = stack_file(tmp_path, {"services.0.shutdown.drain_s": 19})
    assert main(["check", str(path), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["stack"] == str(path) and doc["ok"] is False
    broken = [f for f in doc["findings"] if f["status"] == "error"]
    assert [(f["id"], f["subject"], f["slack_s"]) for f in broken] == [("drain-covers-lb-detection", "api", -1)]
    assert broken[0]["message"].startswith("ERROR drain-covers-lb-detection  api: drain 19s")


@pytest.mark.parametrize(("setup", "expected"), [
    ("missing", "lockstep check: {path}: no such file"),
    ("malformed", "lockstep check: {path}:2: malformed YAML: did not find expected ',' or ']'"),
    ("unknown_key", "lockstep check: {path}: lockstep:services.0.shutdown.drain: unknown key (see docs/CONFIG.md "
                    "for the keys this section takes) (got 20)"),
    ("out_of_range", "lockstep check: {path}: lockstep:services.0.lb.health_check.interval_s: Input should be "
                     "greater than or equal to 5 (got 4)"),
])
def test_unreadable_or_invalid_input_exits_2_with_one_line_naming_the_field(tmp_path: Path, capsys, setup,
                                                                             expected) -> None:
    if setup == "missing":
        path = tmp_path / "Pulumi.nope.yaml"
    elif setup == "malformed":
        path = tmp_path / "Pulumi.bad.yaml"
        path.write_text("config: [1, 2", encoding="utf-8")
    elif setup == "unknown_key":
        path = stack_file(tmp_path, {"services.0.shutdown.drain": 20})
    else:
        path = stack_file(tmp_path, {"services.0.lb.health_check.interval_s": 4})
    assert main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [expected.format(path=path)]
    assert captured.out == ""


def test_an_invalid_stack_exits_2_without_a_traceback_from_the_real_entry_point(tmp_path: Path) -> None:
    path = stack_file(tmp_path, {"services.0.lb.health_check.interval_s": 4})
    proc = run(str(LOCKSTEP), "check", str(path))
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"lockstep check: {path}: lockstep:services.0.lb.health_check.interval_s: Input should be greater than or "
        "equal to 5 (got 4)"]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_an_unknown_option_value_exits_2_with_one_line_pointing_at_help(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--format", "xml"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "lockstep check: error: argument --format: invalid choice: 'xml' (choose from 'text', 'json') "
        "(see lockstep check --help)"]


def test_help_lists_the_check_command(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert "check" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "STACK_CONFIG" in out and "--format" in out and "exit codes: 0 ok" in out


def test_python_dash_m_timing_check_runs_the_same_command() -> None:
    proc = run(sys.executable, "-m", "lockstep", "check", str(EXAMPLE))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith(f"lockstep check {EXAMPLE}: 0 error")


def test_the_lockstep_script_is_installed_and_checks_the_example() -> None:
    proc = run(str(LOCKSTEP), "check")
    assert proc.returncode == 0, proc.stderr
    assert "0 error" in proc.stdout
