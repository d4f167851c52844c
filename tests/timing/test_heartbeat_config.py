"""The heartbeat runtime config carries the stack's numbers unchanged (distinct values here,
so a swapped field cannot pass)."""

from __future__ import annotations

import pytest

from tests.timing.strategies import DELETE, build
from lockstep.timing.heartbeat_config import RuntimeConfig, runtime_config


def test_every_heartbeat_number_reaches_the_runtime_config_unchanged() -> None:
    stack = build({
        "heartbeat.name": "hb", "heartbeat.namespace": "hb-ns", "heartbeat.replicas": 3,
        "heartbeat.observe_interval_s": 4, "heartbeat.publish_interval_s": 6, "heartbeat.client_timeout_s": 31,
        "heartbeat.beat_ttl_s": 29, "heartbeat.port": 8081, "heartbeat.lease_duration_s": 16,
        "heartbeat.lease_renew_deadline_s": 11, "heartbeat.lease_retry_period_s": 3,
        "heartbeat.commands_exchange": "cmds", "heartbeat.beats_exchange": "beats", "heartbeat.shutdown.grace_s": 33,
        "heartbeat.observe_mode": "watch", "heartbeat.resync_period_s": 301, "heartbeat.confirm_timeout_s": 7,
        "heartbeat.ack_timeout_s": 8, "heartbeat.broker.heartbeat_s": 9,
        "services.2.namespace": "courts", "services.1.pdb": DELETE, "services.1.rollout.max_unavailable": "34%",
    })
    cfg = runtime_config(stack)
    assert cfg.model_dump(mode="json") == {
        "schema_version": 1, "service": "hb", "replicas": 3, "observe_interval_s": 4, "publish_interval_s": 6,
        "client_timeout_s": 31, "beat_ttl_s": 29, "port": 8081, "namespaces": ["courts", "feeds"],
        "observe_mode": "watch", "resync_period_s": 301, "confirm_timeout_s": 7, "ack_timeout_s": 8,
        "broker_heartbeat_s": 9,
        "lease": {"name": "hb-leader", "namespace": "hb-ns", "duration_s": 16, "renew_deadline_s": 11,
                  "retry_period_s": 3},
        "commands_exchange": "cmds", "beats_exchange": "beats", "grace_s": 33,
        "specs": [
            {"name": "football-live",
             "workload": {"name": "football-feed", "namespace": "feeds", "kind": "Deployment",
                          "pdb_min_available": None, "pdb_max_unavailable": None,
                          "rollout_max_unavailable": "34%"},
             "loss_time_s": 120, "recovery_time_s": 60,
             "affected": {"sport_ids": [1], "match_statuses": ["live", "about_to_start"],
                          "required_sources": ["betradar"], "extra": {}}},
            {"name": "basketball-live",
             "workload": {"name": "basketball-feed", "namespace": "courts", "kind": "StatefulSet",
                          "pdb_min_available": None, "pdb_max_unavailable": 1, "rollout_max_unavailable": None},
             "loss_time_s": 90, "recovery_time_s": 60,
             "affected": {"sport_ids": [2], "match_statuses": ["live"],
                          "required_sources": ["sportradar", "genius"], "extra": {"league_tier": [1, 2]}}},
        ],
    }
    assert RuntimeConfig.model_validate_json(cfg.model_dump_json()) == cfg


def test_a_min_available_pdb_reaches_the_watched_workload() -> None:
    spec = runtime_config(build()).specs[0]
    assert (spec.workload.pdb_min_available, spec.workload.pdb_max_unavailable) == (1, None)


def test_a_stack_without_a_heartbeat_has_no_runtime_config() -> None:
    with pytest.raises(ValueError, match="^the stack declares no heartbeat service$"):
        runtime_config(build({"heartbeat": DELETE, "heartbeat_specs": []}))


# ---- the runtime config validated as a whole (a hand-written or edited ConfigMap) -------------
import json  # noqa: E402

from hypothesis import example, given, strategies as st  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from lockstep.timing.model import HeartbeatService  # noqa: E402


def _doc(**change: object) -> dict:
    doc = runtime_config(build()).model_dump(mode="json")
    doc.update(change)
    return doc


def _refused(doc: dict) -> str:
    with pytest.raises(ValidationError) as err:
        RuntimeConfig.model_validate_json(json.dumps(doc))
    return str(err.value)


@pytest.mark.parametrize("value", [True, " 5 ", "5", 5.0, 1e30, 10**30, 0, -1])
def test_integers_are_strict_and_in_the_stack_fields_range(value: object) -> None:
    for field in ("beat_ttl_s", "publish_interval_s", "ack_timeout_s", "confirm_timeout_s", "resync_period_s"):
        assert field in _refused(_doc(**{field: value}))


def test_each_number_has_the_range_of_the_stack_field_it_comes_from() -> None:
    for field in ("beat_ttl_s", "observe_interval_s", "ack_timeout_s", "confirm_timeout_s", "port"):
        hi = next(m.le for m in HeartbeatService.model_fields[field].metadata if hasattr(m, "le"))
        RuntimeConfig.model_validate_json(json.dumps(_doc(**{field: hi})))
        assert field in _refused(_doc(**{field: hi + 1}))


@given(duration=st.integers(1, 40), renew=st.integers(1, 40), retry=st.integers(1, 40))
@example(duration=15, renew=10, retry=2)   # the example stack: accepted
@example(duration=10, renew=10, retry=2)   # equal: refused
@example(duration=15, renew=2, retry=2)
def test_the_lease_is_accepted_exactly_when_duration_exceeds_renew_exceeds_retry(duration, renew, retry) -> None:
    doc = _doc()
    doc["lease"].update(duration_s=duration, renew_deadline_s=renew, retry_period_s=retry)
    if duration > renew > retry:
        RuntimeConfig.model_validate_json(json.dumps(doc))
    else:
        assert "duration_s" in _refused(doc) and "renew_deadline_s" in _refused(doc)


def test_namespaces_must_cover_every_specs_workload() -> None:
    assert "too_short" in _refused(_doc(namespaces=[])) or "at least 1" in _refused(_doc(namespaces=[]))
    msg = _refused(_doc(namespaces=["other"]))
    assert "specs.0.workload.namespace" in msg and "'feeds'" in msg


def test_the_same_spec_twice_is_refused() -> None:
    doc = _doc()
    doc["specs"] = [doc["specs"][0], doc["specs"][0]]
    assert "specs.1.name" in _refused(doc) and "appears twice" in _refused(doc)


def test_a_deployments_rollout_max_unavailable_reaches_the_watched_workload() -> None:
    cfg = runtime_config(build({"services.1.rollout.max_unavailable": 1}))
    kinds = {s.workload.kind: s.workload.rollout_max_unavailable for s in cfg.specs}
    assert kinds == {"Deployment": 1, "StatefulSet": None}


@pytest.mark.parametrize(("mode", "field"), [("poll", "observe_interval_s"), ("watch", "resync_period_s")])
def test_the_simulated_observer_samples_at_the_bound_the_mode_leaves_unseen(mode, field) -> None:
    from lockstep.timing.heartbeat_config import unseen_field
    from lockstep.timing.sim.spec import service_spec

    stack = build({"heartbeat.observe_mode": mode, "heartbeat.observe_interval_s": 7,
                   "heartbeat.resync_period_s": 11})
    assert unseen_field(stack.heartbeat) == field
    football = next(s for s in stack.services if s.name == "football-feed")
    assert service_spec(stack, football).heartbeat[0].observe == {"observe_interval_s": 7, "resync_period_s": 11}[field]


def test_a_configmap_written_before_the_watch_and_ack_keys_means_the_models_defaults() -> None:
    doc = runtime_config(build({})).model_dump(mode="json")
    for key in ("observe_mode", "resync_period_s", "confirm_timeout_s", "ack_timeout_s"):
        del doc[key]
    cfg = RuntimeConfig.model_validate(doc)
    from lockstep.timing.model import HeartbeatService

    for key in ("observe_mode", "resync_period_s", "confirm_timeout_s", "ack_timeout_s"):
        assert getattr(cfg, key) == HeartbeatService.model_fields[key].default, key
