"""How the program reads Pulumi stack config into the model (strings in, model out)."""

from __future__ import annotations

import json

import pulumi
import pytest

from lockstep.infra.config import broker_url, read_values
from lockstep.infra.render import config_strings
from tests.infra.support import example_values
from lockstep.timing.config import ConfigError, present, stack_from_config


@pytest.fixture
def config():
    def use(strings: dict[str, str], secret_keys: list[str] | None = None) -> pulumi.Config:
        pulumi.runtime.set_all_config(strings, secret_keys or [])
        return pulumi.Config("lockstep")
    yield use
    pulumi.runtime.set_all_config({}, [])


def test_config_strings_read_back_to_the_same_values(config):
    values = example_values()
    assert read_values(config(config_strings(values, {}))) == values


def test_kubernetes_version_stays_text_not_a_float(config):
    assert read_values(config({"lockstep:kubernetes_version": "1.30"})) == {"kubernetes_version": "1.30"}


def test_pulumi_yaml_empty_defaults_mean_absent_sections(config):
    strings = {"lockstep:watchdog": "{}", "lockstep:heartbeat": "{}", "lockstep:failover": "{}",
               "lockstep:heartbeat_specs": "[]", "lockstep:margin_s": "5"}
    values = read_values(config(strings))
    assert present(values) == {"heartbeat_specs": [], "margin_s": 5}


def test_malformed_structured_value_is_an_input_error_naming_the_key(config):
    with pytest.raises(ConfigError, match="lockstep:services: not valid"):
        read_values(config({"lockstep:services": "[{"}))


def test_broker_url_must_be_set_as_a_secret(config):
    stack = stack_from_config(example_values())
    with pytest.raises(ConfigError, match="lockstep:rabbitmq_url: must be a secret"):
        broker_url(config({"lockstep:rabbitmq_url": "amqp://x"}), stack)
    with pytest.raises(ConfigError, match="lockstep:rabbitmq_url: required"):
        broker_url(config({"lockstep:rabbitmq_url": ""}, ["lockstep:rabbitmq_url"]), stack)


def test_broker_url_comes_from_the_key_the_model_names(config):
    values = example_values()
    values["heartbeat"]["broker_secret_key"] = "amqp_url"
    stack = stack_from_config(values)
    out = broker_url(config({"lockstep:amqp_url": "amqp://x"}, ["lockstep:amqp_url"]), stack)
    assert isinstance(out, pulumi.Output)


def test_config_strings_are_what_the_engine_passes():
    strings = config_strings({"margin_s": 5, "kubernetes_version": "1.30", "services": []}, {"k": "s"})
    assert strings == {"lockstep:margin_s": "5", "lockstep:kubernetes_version": "1.30",
                       "lockstep:services": json.dumps([]), "lockstep:k": "s"}


def test_pulumi_up_stops_with_the_findings_as_a_run_error_not_a_traceback(monkeypatch):
    from lockstep.infra import program

    values = example_values()
    values["services"][0]["shutdown"]["drain_s"] = 5
    monkeypatch.setattr(program, "read_values", lambda config: values)
    with pytest.raises(pulumi.RunError) as err:
        program.main()
    assert "ERROR drain-covers-lb-detection  api:" in str(err.value)
    values["services"][0]["replicas"] = "three"
    with pytest.raises(pulumi.RunError, match="lockstep:services.0.replicas"):
        program.main()
