"""Stack config → model: one line per problem naming the field path and what is allowed
(the material of exit code 2), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from tests.timing.strategies import DELETE, base, edit
from lockstep.timing.config import EXAMPLE, ConfigError, describe_errors, lockstep_values, read_stack_file, stack_from_config
from lockstep.timing.invariants import InvariantErrors
from lockstep.timing.model import Stack


def lines_for(changes: dict) -> list[str]:
    with pytest.raises(ConfigError) as err:
        stack_from_config(edit(base(), changes))
    return err.value.lines


# ---- lockstep_values -------------------------------------------------------------------------
def test_only_lockstep_keys_are_taken_and_their_namespace_stripped() -> None:
    config = {"aws:region": "eu-west-1", "lockstep:margin_s": 5, "lockstep:services": [1],
              "other:lockstep:x": 1, "plain": 2, "lockstep:rabbitmq_url": {"secure": "AAA"},
              "lockstep:not_secret": {"secure": "A", "more": 1}}
    assert lockstep_values(config) == {"margin_s": 5, "services": [1], "not_secret": {"secure": "A", "more": 1}}


def test_only_the_first_colon_separates_the_namespace() -> None:
    assert lockstep_values({"lockstep:a:b": 1, "x:lockstep:c": 2}) == {"a:b": 1}


def test_a_namespace_without_a_key_is_not_a_lockstep_key() -> None:
    assert lockstep_values({"lockstep": 1}) == {}
    assert lockstep_values({"lockstep:": 1}) == {"": 1}


# ---- field errors ------------------------------------------------------------------------------
@pytest.mark.parametrize(("changes", "line"), [
    ({"services.0.lb.health_check.interval_s": 4},
     "lockstep:services.0.lb.health_check.interval_s: Input should be greater than or equal to 5 (got 4)"),
    ({"services.0.lb.health_check.interval_s": 301},
     "lockstep:services.0.lb.health_check.interval_s: Input should be less than or equal to 300 (got 301)"),
    ({"services.0.shutdown.drain_s": -1},
     "lockstep:services.0.shutdown.drain_s: Input should be greater than or equal to 0 (got -1)"),
    ({"services.0.shutdown.drain_s": "5"},
     "lockstep:services.0.shutdown.drain_s: Input should be a valid integer (got '5')"),
    ({"services.1.bogus": 1},
     "lockstep:services.1.bogus: unknown key (see docs/CONFIG.md for the keys this section takes) (got 1)"),
    ({"kubernetes_version": DELETE}, "lockstep:kubernetes_version: Field required"),
    ({"services.0.probes.readiness": {"period_s": 5}},
     "lockstep:services.0.probes.readiness: a probe needs exactly one handler: http_get, tcp_socket, exec or grpc"),
    ({"watchdog.watches": ["nope"]}, "lockstep:(stack): watchdog.watches.0: unknown service 'nope'"),
])
def test_an_invalid_value_is_one_line_naming_the_field_path_and_the_allowed_range(changes, line) -> None:
    assert lines_for(changes) == [line]


def test_every_problem_is_reported_at_once() -> None:
    assert lines_for({"services.0.shutdown.drain_s": -1, "services.2.replicas": -2, "margin_s": "x"}) == [
        "lockstep:margin_s: Input should be a valid integer (got 'x')",
        "lockstep:services.0.shutdown.drain_s: Input should be greater than or equal to 0 (got -1)",
        "lockstep:services.2.replicas: Input should be greater than or equal to 0 (got -2)",
    ]


def test_a_mapping_or_list_input_is_not_echoed() -> None:
    lines = lines_for({"services.0.lb": [1, 2]})
    assert lines == ["lockstep:services.0.lb: Input should be a valid dictionary or instance of LoadBalancer"]


def test_describe_errors_names_a_stack_level_problem_as_the_stack() -> None:
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(edit(base(), {"failover.entry_service": "nope"}))
    assert describe_errors(err.value) == ["lockstep:(stack): failover.entry_service: unknown service 'nope'"]


# ---- invariants on request ------------------------------------------------------------------------
def test_rules_are_judged_only_when_asked() -> None:
    values = edit(base(), {"services.0.shutdown.drain_s": 19})
    assert stack_from_config(values).services[0].shutdown.drain_s == 19
    with pytest.raises(InvariantErrors) as err:
        stack_from_config(values, check_invariants=True)
    assert [f.id for f in err.value.findings] == ["drain-covers-lb-detection"]
    assert str(err.value) == err.value.findings[0].render()
    assert stack_from_config(base(), check_invariants=True).margin_s == 5


# ---- reading a stack file ----------------------------------------------------------------------------
def test_no_path_reads_the_bundled_example() -> None:
    assert EXAMPLE.name == "Pulumi.example.yaml" and EXAMPLE.exists()
    assert read_stack_file(None) == stack_from_config(base())


def test_a_path_is_read_as_a_pulumi_stack_config(tmp_path: Path) -> None:
    f = tmp_path / "Pulumi.dev.yaml"
    f.write_text(EXAMPLE.read_text(encoding="utf-8").replace("lockstep:margin_s: 5", "lockstep:margin_s: 4"),
                 encoding="utf-8")
    assert read_stack_file(f).margin_s == 4
    assert read_stack_file(str(f)).margin_s == 4


@pytest.mark.parametrize(("text", "line"), [
    ("config: [1, 2", "{path}:2: malformed YAML: did not find expected ',' or ']'"),
    ("config:\n  a: b\n c: d\n", "{path}:3: malformed YAML: did not find expected key"),
    ("- 1\n- 2\n", "{path}: not a Pulumi stack config (expected a top-level `config:` mapping)"),
    ("config: 3\n", "{path}: not a Pulumi stack config (expected a top-level `config:` mapping)"),
    ("", "{path}: not a Pulumi stack config (expected a top-level `config:` mapping)"),
    ("config:\n  aws:region: x\n", "{path}: no `lockstep:` keys under `config:`"),
    ("config:\n  lockstep:margin_s: -1\n", "{path}: lockstep:margin_s: Input should be greater than or equal to 0 (got -1)"),
])
def test_an_unreadable_stack_file_is_one_line_naming_the_file(tmp_path: Path, text, line) -> None:
    f = tmp_path / "Pulumi.bad.yaml"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_stack_file(f)
    assert err.value.lines[0] == line.format(path=f)
    if "margin_s" not in text:
        assert len(err.value.lines) == 1


def test_field_errors_of_a_file_are_prefixed_with_the_file(tmp_path: Path) -> None:
    f = tmp_path / "Pulumi.bad.yaml"
    f.write_text("config:\n  lockstep:margin_s: -1\n  lockstep:kubernetes_version: '1.30'\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_stack_file(f)
    assert err.value.lines == [f"{f}: lockstep:margin_s: Input should be greater than or equal to 0 (got -1)",
                               f"{f}: lockstep:services: Field required"]
    assert str(err.value) == "\n".join(err.value.lines)


def test_a_missing_file_a_directory_and_undecodable_bytes_are_input_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as err:
        read_stack_file(missing)
    assert err.value.lines == [f"{missing}: no such file"]
    with pytest.raises(ConfigError) as err:
        read_stack_file(tmp_path)
    assert err.value.lines == [f"{tmp_path}: is a directory"]
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00config")
    with pytest.raises(ConfigError) as err:
        read_stack_file(binary)
    assert err.value.lines == [f"{binary}: not UTF-8 text (byte 0)"]


def test_a_control_character_is_named_with_its_line(tmp_path: Path) -> None:
    f = tmp_path / "bell.yaml"
    f.write_text("config:\n  lockstep:margin_s: \x07\n", encoding="utf-8")  # a reader error: a position, no mark
    with pytest.raises(ConfigError) as err:
        read_stack_file(f)
    assert err.value.lines == [f"{f}:2: malformed YAML: control characters are not allowed (character '\\x07')"]


def test_an_unsafe_tag_is_refused_with_its_line(tmp_path: Path) -> None:
    f = tmp_path / "tag.yaml"
    f.write_text("config: !!python/name:os.system\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_stack_file(f)
    assert err.value.lines == [f"{f}:1: malformed YAML: could not determine a constructor for the tag "
                               "'tag:yaml.org,2002:python/name:os.system'"]


def test_an_empty_optional_section_is_an_absent_one_as_pulumi_yaml_declares_it() -> None:
    from lockstep.timing.config import EXAMPLE, lockstep_values, stack_from_config

    values = lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"])
    values.update(watchdog={}, failover={}, heartbeat={}, heartbeat_specs=[])
    stack = stack_from_config(values)
    assert (stack.watchdog, stack.failover, stack.heartbeat, stack.heartbeat_specs) == (None, None, None, ())


@pytest.mark.parametrize("kind", [["alb"], {"alb": 1}])
def test_an_lb_kind_that_is_not_a_string_is_refused_by_the_field_not_a_type_error(kind) -> None:
    assert lines_for({"services.0.lb.kind": kind}) == ["lockstep:services.0.lb.kind: Input should be 'alb' or 'nlb'"]
