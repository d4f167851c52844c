"""The heartbeat runtime config carries the stack's numbers unchanged (distinct values here,
so a swapped field cannot pass)."""

from __future__ import annotations

import pytest

from tests.timing.strategies import DELETE, build
from timing.heartbeat_config import RuntimeConfig, runtime_config


def test_every_heartbeat_number_reaches_the_runtime_config_unchanged() -> None:
    stack = build({
        "heartbeat.name": "hb", "heartbeat.namespace": "hb-ns", "heartbeat.replicas": 3,
        "heartbeat.observe_interval_s": 4, "heartbeat.publish_interval_s": 6, "heartbeat.client_timeout_s": 31,
        "heartbeat.beat_ttl_s": 29, "heartbeat.port": 8081, "heartbeat.lease_duration_s": 16,
        "heartbeat.lease_renew_deadline_s": 11, "heartbeat.lease_retry_period_s": 3,
        "heartbeat.commands_exchange": "cmds", "heartbeat.beats_exchange": "beats", "heartbeat.shutdown.grace_s": 33,
        "services.2.namespace": "courts", "services.1.pdb": DELETE,
    })
    cfg = runtime_config(stack)
    assert cfg.model_dump(mode="json") == {
        "schema_version": 1, "service": "hb", "replicas": 3, "observe_interval_s": 4, "publish_interval_s": 6,
        "client_timeout_s": 31, "beat_ttl_s": 29, "port": 8081, "namespaces": ["courts", "feeds"],
        "lease": {"name": "hb-leader", "namespace": "hb-ns", "duration_s": 16, "renew_deadline_s": 11,
                  "retry_period_s": 3},
        "commands_exchange": "cmds", "beats_exchange": "beats", "grace_s": 33,
        "specs": [
            {"name": "football-live",
             "workload": {"name": "football-feed", "namespace": "feeds", "kind": "Deployment",
                          "pdb_min_available": None, "pdb_max_unavailable": None},
             "loss_time_s": 120, "recovery_time_s": 60,
             "affected": {"sport_ids": [1], "match_statuses": ["live", "about_to_start"],
                          "required_sources": ["betradar"], "extra": {}}},
            {"name": "basketball-live",
             "workload": {"name": "basketball-feed", "namespace": "courts", "kind": "StatefulSet",
                          "pdb_min_available": None, "pdb_max_unavailable": 1},
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
