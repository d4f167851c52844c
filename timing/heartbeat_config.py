"""The heartbeat service's runtime configuration: one schema for both ends.

`infra`'s HeartbeatService renders `runtime_config(stack)` as JSON into a ConfigMap (key
`CONFIGMAP_KEY`); the `heartbeat` service reads it back with `RuntimeConfig.model_validate_json`.
The broker URL is never here: it comes from a Kubernetes Secret (key `SECRET_KEY`) mounted as
the environment variable `BROKER_URL_ENV`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from timing.model import AffectedPattern, IntOrPercent, Name, Stack, Strict

SCHEMA_VERSION = 1
CONFIGMAP_KEY = "heartbeat.json"
SECRET_KEY = "amqp-url"
BROKER_URL_ENV = "LOCKSTEP_BROKER_URL"
CONFIG_PATH_ENV = "LOCKSTEP_HEARTBEAT_CONFIG"
CONFIG_MOUNT = "/etc/lockstep/heartbeat.json"
OBSERVABLE_LABEL = ("is-observable", "true")


class WatchedWorkload(Strict):
    name: Name
    namespace: Name
    kind: Literal["Deployment", "StatefulSet"]
    pdb_min_available: IntOrPercent | None = Field(
        default=None, description="the workload's PDB minAvailable, if it has one")
    pdb_max_unavailable: IntOrPercent | None = None


class SpecConfig(Strict):
    name: Name
    workload: WatchedWorkload
    loss_time_s: int = Field(ge=1)
    recovery_time_s: int = Field(ge=0)
    affected: AffectedPattern


class LeaseConfig(Strict):
    name: Name
    namespace: Name
    duration_s: int = Field(ge=1)
    renew_deadline_s: int = Field(ge=1)
    retry_period_s: int = Field(ge=1)


class RuntimeConfig(Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    service: Name
    replicas: int = Field(ge=1)
    observe_interval_s: int = Field(ge=1)
    publish_interval_s: int = Field(ge=1)
    client_timeout_s: int = Field(ge=1)
    beat_ttl_s: int = Field(ge=1)
    port: int = Field(ge=1, le=65535)
    namespaces: tuple[Name, ...]
    lease: LeaseConfig
    commands_exchange: str
    beats_exchange: str
    grace_s: int = Field(ge=0)
    specs: tuple[SpecConfig, ...]


def runtime_config(stack: Stack) -> RuntimeConfig:
    """What the heartbeat service needs from the stack, numbers taken as they are."""
    hb = stack.heartbeat
    if hb is None:
        raise ValueError("the stack declares no heartbeat service")
    by_name = {s.name: s for s in stack.services}
    specs = []
    for spec in stack.heartbeat_specs:
        svc = by_name[spec.service]
        workload = WatchedWorkload(
            name=svc.name, namespace=svc.namespace, kind=svc.kind,
            pdb_min_available=svc.pdb.min_available if svc.pdb else None,
            pdb_max_unavailable=svc.pdb.max_unavailable if svc.pdb else None)
        specs.append(SpecConfig(name=spec.name, workload=workload, loss_time_s=spec.loss_time_s,
                                recovery_time_s=spec.recovery_time_s, affected=spec.affected))
    namespaces = tuple(sorted({s.workload.namespace for s in specs}))
    return RuntimeConfig(
        service=hb.name, replicas=hb.replicas, observe_interval_s=hb.observe_interval_s,
        publish_interval_s=hb.publish_interval_s, client_timeout_s=hb.client_timeout_s,
        beat_ttl_s=hb.beat_ttl_s, port=hb.port, namespaces=namespaces,
        lease=LeaseConfig(name=f"{hb.name}-leader", namespace=hb.namespace,
                          duration_s=hb.lease_duration_s, renew_deadline_s=hb.lease_renew_deadline_s,
                          retry_period_s=hb.lease_retry_period_s),
        commands_exchange=hb.commands_exchange, beats_exchange=hb.beats_exchange,
        grace_s=hb.shutdown.grace_s, specs=tuple(specs))
