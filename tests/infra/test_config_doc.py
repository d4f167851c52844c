"""docs/CONFIG.md and Pulumi.yaml document the config keys the model actually takes."""

from __future__ import annotations

from pathlib import Path

import yaml

from lockstep.timing import limits
from lockstep.timing.model import HeartbeatService, Stack
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_config_doc_is_up_to_date_with_the_model():
    assert (ROOT / "docs" / "CONFIG.md").read_text() == load_script("gen-config-doc").render(), \
        "docs/CONFIG.md is stale: run scripts/gen-config-doc"


def test_pulumi_yaml_declares_every_top_level_key_and_the_broker_secret():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    declared = project["config"]
    broker = HeartbeatService.model_fields["broker_secret_key"].default
    assert set(declared) == set(Stack.model_fields) | {broker}
    assert all(entry.get("description") for entry in declared.values())
    assert declared[broker]["secret"] is True
    assert declared["margin_s"]["default"] == limits.MARGIN_DEFAULT


def test_pulumi_yaml_runs_the_infra_program_in_the_project_venv():
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    assert project["name"] == "lockstep" and project["main"] == "infra/"
    assert project["runtime"] == {"name": "python", "options": {"virtualenv": ".venv"}}


def test_only_required_model_keys_are_declared_without_a_default():
    # A key Pulumi.yaml declares without a default is required of every stack.
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    without = {k for k, v in declared.items() if "default" not in v}
    assert without == {k for k, f in Stack.model_fields.items() if f.is_required()}
