"""Structural checks: unique names and references that resolve (input errors, exit 2)."""

from __future__ import annotations

import pytest

from tests.timing.strategies import DELETE, base, build
from lockstep.timing.references import reference_errors


def problems(update: dict) -> list[str]:
    # model_copy skips validation, so the structure can be judged on its own
    return reference_errors(build().model_copy(update=update))


def test_a_consistent_stack_has_no_reference_problem() -> None:
    assert reference_errors(build()) == []


def test_duplicate_service_names_are_named_once_each_sorted() -> None:
    s = build().services
    assert problems({"services": (s[2], s[0], s[2], s[0], s[1])}) == [
        "services: duplicate name(s) api, basketball-feed"]


def test_duplicate_heartbeat_spec_names_are_named() -> None:
    specs = build().heartbeat_specs
    assert problems({"heartbeat_specs": (specs[1], specs[1], specs[0], specs[0])}) == [
        "heartbeat_specs: duplicate name basketball-live", "heartbeat_specs: duplicate name football-live"]


def test_a_spec_watching_an_unknown_service_lists_the_known_ones() -> None:
    specs = build().heartbeat_specs
    bad = specs[1].model_copy(update={"service": "hockey-feed"})
    assert problems({"heartbeat_specs": (specs[0], bad)}) == [
        "heartbeat_specs.1.service: unknown service 'hockey-feed' (known: api, basketball-feed, checkout, football-feed, odds-stream, web)"]


def test_specs_need_a_heartbeat_service() -> None:
    assert problems({"heartbeat": None}) == [
        "heartbeat: heartbeat_specs are set but no heartbeat service is declared"]
    assert problems({"heartbeat": None, "heartbeat_specs": ()}) == []


def test_a_watchdog_watching_an_unknown_service_is_named_by_index() -> None:
    wd = build().watchdog.model_copy(update={"watches": ("api", "nope", "zzz")})
    assert problems({"watchdog": wd}) == ["watchdog.watches.1: unknown service 'nope'",
                                          "watchdog.watches.2: unknown service 'zzz'"]
    assert problems({"watchdog": None}) == []


def test_a_failover_entry_must_be_a_service() -> None:
    fo = build().failover.model_copy(update={"entry_service": "shop"})
    assert problems({"failover": fo}) == ["failover.entry_service: unknown service 'shop'"]
    assert problems({"failover": None}) == []


def test_a_readiness_gate_needs_an_lb() -> None:
    s = build().services
    gated = s[1].model_copy(update={"readiness_gate": s[0].readiness_gate})
    assert problems({"services": (s[0], gated, s[2])}) == [
        "services.1.readiness_gate: needs an lb (the gate reports target health)"]


def test_an_hpa_on_a_statefulset_is_allowed() -> None:
    assert reference_errors(build({"services.2.hpa": {"min_replicas": 3, "max_replicas": 5},
                                   "services.2.replicas": None})) == []


def test_every_reference_problem_is_reported_at_once_through_the_validator() -> None:
    from pydantic import ValidationError

    from lockstep.timing.model import Stack
    from tests.timing.strategies import edit

    values = edit(base(), {"watchdog.watches": ["nope"], "failover.entry_service": "shop",
                           "heartbeat": DELETE})
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(values)
    assert err.value.errors()[0]["msg"] == (
        "Value error, heartbeat: heartbeat_specs are set but no heartbeat service is declared; "
        "watchdog.watches.0: unknown service 'nope'; failover.entry_service: unknown service 'shop'")
