"""`lockstep simulate` and `lockstep mutate`: exit codes 0, 1 and 2, text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lockstep.timing.cli import main


def write_stack(path: Path, *services: dict, **top: object) -> str:
    config = {"lockstep:margin_s": 5, "lockstep:kubernetes_version": "1.30",
              "lockstep:services": list(services), **{f"lockstep:{k}": v for k, v in top.items()}}
    path.write_text(yaml.safe_dump({"config": config}), encoding="utf-8")
    return str(path)


@pytest.fixture
def feed_stack(tmp_path, kit) -> str:
    return write_stack(tmp_path / "Pulumi.feed.yaml", kit.feed_service())


@pytest.fixture
def short_drain_stack(tmp_path, kit) -> str:
    return write_stack(tmp_path / "Pulumi.short.yaml", kit.web_service(shutdown={"drain_s": 5}))


def test_simulate_exits_0_when_nothing_is_lost(feed_stack, capsys):
    assert main(["simulate", feed_stack, "--phases", "2"]) == 0
    out = capsys.readouterr().out
    assert "result: no request lost" in out and "feed" in out


def test_simulate_exits_1_and_shows_a_witness_when_the_drain_is_too_short(short_drain_stack, capsys):
    assert main(["simulate", short_drain_stack, "--phases", "2"]) == 1
    out = capsys.readouterr().out
    assert "HARMFUL" in out and "witness: web rollout" in out and "first loss: 502" in out


def test_simulate_json_counts_502s_apart_from_deliberate_503s(short_drain_stack, capsys):
    assert main(["simulate", short_drain_stack, "--phases", "2", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    rollout = next(s for s in doc["scenarios"] if s["scenario"] == "rollout")
    assert rollout["refused_502"] > 0 and doc["ok"] is False
    assert set(rollout) >= {"deliberate_503", "cut", "no_target_503", "keepalive_502", "false_blocks"}


def test_simulate_exits_2_naming_the_missing_file(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_simulate_exits_2_on_a_bad_phase_count(feed_stack, capsys):
    assert main(["simulate", feed_stack, "--phases", "0"]) == 2
    assert "--phases" in capsys.readouterr().err


def test_simulate_exits_2_naming_an_invalid_field(tmp_path, kit, capsys):
    bad = write_stack(tmp_path / "Pulumi.bad.yaml", kit.feed_service(shutdown={"grace_s": -1}))
    assert main(["simulate", bad]) == 2
    first = capsys.readouterr().err.splitlines()[0]
    assert "services.0.shutdown.grace_s" in first and "(got -1)" in first


def test_mutate_exits_0_when_every_harmful_mutant_is_caught(feed_stack, capsys):
    assert main(["mutate", feed_stack, "--only", "services.0.shutdown", "--phases", "1"]) == 0
    out = capsys.readouterr().out
    assert "result: every harmful mutation is caught by a rule" in out
    assert "finish-covers-requests" in out


def test_mutate_exits_1_on_a_harmful_mutant_no_rule_catches(tmp_path, kit, capsys):
    # A service that accepts drain-covers-lb-detection leaves a short drain to no rule:
    # the simulation still loses requests, so the mutation is reported uncaught.
    accepting = kit.web_service(accept=[{"id": "drain-covers-lb-detection", "reason": "legacy drain"}])
    path = write_stack(tmp_path / "Pulumi.accepting.yaml", accepting)
    assert main(["mutate", path, "--only", "services.0.shutdown.drain_s", "--phases", "1"]) == 1
    out = capsys.readouterr().out
    assert "UNCAUGHT BUT HARMFUL" in out and "services.0.shutdown.drain_s 20 → 0" in out


def test_mutate_runs_the_node_scenarios_asked_for(capsys):
    # a spot handler that reacts too late to the two-minute notice: the drain does not fit what
    # is left of it, the simulation loses requests, and node-budget-covers-drain says so
    assert main(["mutate", "--only", "nodes.spot_reaction_s", "--scenario", "spot-interruption",
                 "--phases", "1", "--jobs", "1", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["scenarios"] == ["spot-interruption"] and doc["ok"] is True
    late = next(m for m in doc["mutants_detail"] if m["value"] == 86400)  # the range's end
    assert any("api spot-interruption: requests lost" in h for h in late["harm"])
    assert "node-budget-covers-drain" in late["rules"]


def test_scenario_all_is_every_scenario_once_and_none_is_the_default():
    import argparse

    from lockstep.timing.cmd_simulate import chosen_scenarios
    from lockstep.timing.scenario_names import DEFAULT_SCENARIOS
    from lockstep.timing.simulate import SCENARIOS

    assert chosen_scenarios(argparse.Namespace(scenario=["quiet", "all"])) == tuple(SCENARIOS)
    assert chosen_scenarios(argparse.Namespace(scenario=None)) == DEFAULT_SCENARIOS
    assert chosen_scenarios(argparse.Namespace(scenario=["etp-local", "crash", "etp-local"])) == ("etp-local", "crash")


def test_mutate_json_reports_each_mutant_with_its_rules(feed_stack, capsys):
    assert main(["mutate", feed_stack, "--only", "services.0.shutdown.grace_s", "--phases", "1",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["numbers"] == 1
    zero = next(m for m in doc["mutants_detail"] if m["value"] == 0)
    assert "drain-fits-grace" in zero["rules"] and zero["category"] == "caught"


def test_mutate_exits_2_when_no_field_matches_the_prefix(feed_stack, capsys):
    assert main(["mutate", feed_stack, "--only", "services.9"]) == 2
    assert "--only" in capsys.readouterr().err


def test_mutate_exits_2_on_an_unreadable_stack(tmp_path, capsys):
    broken = tmp_path / "Pulumi.broken.yaml"
    broken.write_text("config: [", encoding="utf-8")
    assert main(["mutate", str(broken)]) == 2


def test_simulate_runs_the_node_scenarios_asked_for(feed_stack, capsys):
    assert main(["simulate", feed_stack, "--phases", "1", "--scenario", "node-drain", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {s["scenario"] for s in report["scenarios"]} == {"node-drain"}


def test_simulate_names_an_unknown_scenario_in_one_line_and_exits_2(feed_stack, capsys):
    assert main(["simulate", feed_stack, "--scenario", "reboot"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--scenario: 'reboot' is not one of" in err[0] and "node-drain" in err[0]


def test_simulate_text_keeps_its_columns_for_the_long_scenario_names(capsys):
    assert main(["simulate", "--scenario", "spot-interruption", "--scenario", "rollout", "--phases", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    header, rows = lines[1], [ln for ln in lines[2:] if ln.split(" ", 1)[0] in
                              {"api", "football-feed", "basketball-feed", "odds-stream"}]
    end = header.index("requests") + len("requests")  # the counts are right-aligned under it
    assert rows and all(r[end - 1].isdigit() and r[end] == " " for r in rows)
    assert {r.split()[1] for r in rows} == {"spot-interruption", "rollout"}
