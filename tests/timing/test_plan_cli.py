"""`lockstep plan`: the same exit codes as `check`, three output formats."""

from __future__ import annotations

import json

import yaml

from lockstep.timing.cli import main
from lockstep.timing.config import EXAMPLE, read_stack_file
from lockstep.timing.invariants import evaluate


def broken_example(tmp_path, drain_s: int) -> str:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["config"]["lockstep:services"][0]["shutdown"]["drain_s"] = drain_s
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_plan_prints_every_timeline_and_exits_zero_on_the_example(capsys):
    assert main(["plan"]) == 0
    out = capsys.readouterr().out
    assert "api: drain 20s, stop 50s, grace 60s" in out
    assert "api: drain handshake" in out
    assert "failover (dns): region loss to clients served" in out
    # every finding of the example passes: as many ok as the rules judge
    assert out.rstrip().endswith(f"0 error, 0 warning, 0 skipped, 0 accepted, {len(evaluate(read_stack_file(None)))} ok")


def test_plan_mermaid_is_a_fenced_gantt_chart(capsys):
    assert main(["plan", "--format", "mermaid"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["```mermaid", "gantt", "  dateFormat x"]
    assert lines[-1] == "```"


def test_plan_json_carries_derived_times_and_timelines(capsys):
    assert main(["plan", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["derived"]["api"]["lb_detect"] == 15
    assert doc["timelines"][0]["title"] == "api: drain handshake"
    assert doc["errors"] == []


def test_plan_of_a_broken_stack_still_prints_the_plan_and_exits_one(tmp_path, capsys):
    assert main(["plan", broken_example(tmp_path, 5)]) == 1
    out = capsys.readouterr().out
    assert "api: drain handshake" in out
    assert "ERROR drain-covers-lb-detection  api: drain 5s (shutdown.drain_s) < lb_detect 15s" in out


def test_plan_json_lists_the_errors_of_a_broken_stack(tmp_path, capsys):
    assert main(["plan", broken_example(tmp_path, 5), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in doc["errors"]] == ["drain-covers-lb-detection"]


def test_plan_of_a_missing_file_exits_two_with_one_line(tmp_path, capsys):
    assert main(["plan", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"lockstep plan: {tmp_path / 'nope.yaml'}: no such file"]
