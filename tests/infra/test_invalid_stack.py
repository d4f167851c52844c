"""A stack that cannot be deployed registers nothing: the model is checked first.

Input errors (shape, references, what a deployment needs) exit 2; error findings exit 1 with
the findings printed — the same codes as `lockstep check`.
"""

from __future__ import annotations

import pytest
import yaml

from lockstep.infra.render import Recorder
from tests.infra.support import example_values
from lockstep.timing.cli import main
from lockstep.timing.config import ConfigError
from lockstep.timing.invariants import InvariantErrors


def write_stack(tmp_path, values):
    path = tmp_path / "Pulumi.broken.yaml"
    path.write_text(yaml.safe_dump({"config": {f"lockstep:{k}": v for k, v in values.items()}}))
    return path


def test_an_input_error_raises_before_any_resource_is_registered():
    values = example_values()
    values["services"][0]["lb"]["health_check"]["interval_s"] = 2  # below the API minimum
    recorder = Recorder()
    with pytest.raises(ConfigError) as err:
        recorder.run(values)
    assert recorder.registered == []
    assert any("services.0.lb.health_check.interval_s" in line for line in err.value.lines)


def test_broken_invariants_raise_every_finding_before_any_resource_is_registered():
    values = example_values()
    values["services"][0]["shutdown"]["drain_s"] = 5  # < lb_detect 15 + margin
    recorder = Recorder()
    with pytest.raises(InvariantErrors) as err:
        recorder.run(values)
    assert recorder.registered == []
    assert "drain-covers-lb-detection" in {f.id for f in err.value.findings}


def test_a_deployable_stack_needs_what_the_model_leaves_open():
    values = example_values()
    del values["services"][0]["lb"]["vpc_id"]
    recorder = Recorder()
    with pytest.raises(ConfigError, match=r"lockstep:services\.0\.lb\.vpc_id: required"):
        recorder.run(values)
    assert recorder.registered == []


def test_render_exits_2_naming_the_field_and_writes_nothing(tmp_path, capsys):
    values = example_values()
    values["services"][0]["replicas"] = "three"
    out = tmp_path / "out"
    assert main(["render", str(write_stack(tmp_path, values)), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "services.0.replicas" in err and "Traceback" not in err
    assert not out.exists()


def test_render_exits_1_printing_the_findings_and_writes_nothing(tmp_path, capsys):
    values = example_values()
    values["services"][0]["shutdown"]["drain_s"] = 5
    out = tmp_path / "out"
    assert main(["render", str(write_stack(tmp_path, values)), "-o", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "ERROR drain-covers-lb-detection  api:" in printed
    assert not out.exists()
