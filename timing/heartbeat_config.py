"""The heartbeat service's runtime configuration: one schema for both ends.

`infra`'s HeartbeatService renders `runtime_config(stack)` as JSON into a ConfigMap (key
`CONFIGMAP_KEY`); the `heartbeat` service reads it back with `RuntimeConfig.model_validate_json`.
The broker URL is never here: it comes from a Kubernetes Secret (key `SECRET_KEY`) mounted as
the environment variable `BROKER_URL_ENV`.

Every number has the range and strictness of the stack field it comes from (the model's own
annotation is reused, never retyped): a hand-written file cannot carry `true`, `" 5 "`, `5.0`
or `1e30` where the stack would refuse them. The file is also validated as a whole: the
lease order client-go requires, namespaces that cover every spec's workload, unique specs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from lockstep.timing.model import (HeartbeatBrokerLink, 
    AffectedPattern,
    HeartbeatService,
    HeartbeatSpec,
    IntOrPercent,
    Name,
    Shutdown,
    Stack,
    Strict,
)

SCHEMA_VERSION = 1
CONFIGMAP_KEY = "heartbeat.json"
SECRET_KEY = "amqp-url"
BROKER_URL_ENV = "LOCKSTEP_BROKER_URL"
CONFIG_PATH_ENV = "LOCKSTEP_HEARTBEAT_CONFIG"
CONFIG_MOUNT = "/etc/lockstep/heartbeat.json"
OBSERVABLE_LABEL = ("is-observable", "true")


def unseen_field(hb: HeartbeatService) -> str:
    """The field bounding how long a change of a watched workload can go unseen. Poll mode:
    one observe interval. Watch mode: an event is acted on when it arrives, but a watch that
    stalls without an error is repaired only by the next full relist — the resync period.
    The timing rules and the simulation's observer both judge this bound."""
    return "observe_interval_s" if hb.observe_mode == "poll" else "resync_period_s"


def _as(model: type[Strict], field: str) -> Any:
    """The type and constraints (range, strict) of `model.field`, for a field that carries it."""
    info = model.model_fields[field]  # pragma: no mutate (runs at import)
    if not info.metadata:  # pragma: no mutate (runs at import) an optional field: its constraints are inside the annotation
        return info.annotation  # pragma: no mutate (runs at import)
    return Annotated[(info.annotation, *info.metadata)]  # pragma: no mutate (runs at import)


def _default(model: type[Strict], field: str) -> Any:
    """`model.field`'s default: the one place that value is written."""
    return model.model_fields[field].default  # pragma: no mutate (runs at import)


class WatchedWorkload(Strict):
    name: Name
    namespace: Name
    kind: Literal["Deployment", "StatefulSet"]
    pdb_min_available: IntOrPercent | None = Field(
        default=None, description="the workload's PDB minAvailable, if it has one")
    pdb_max_unavailable: IntOrPercent | None = None
    rollout_max_unavailable: IntOrPercent | None = Field(
        default=None, description="a Deployment's rollingUpdate.maxUnavailable: pods its own rollout "
        "may take away (null: a StatefulSet, or a rollout that takes none away)")


class SpecConfig(Strict):
    name: Name
    workload: WatchedWorkload
    loss_time_s: _as(HeartbeatSpec, "loss_time_s")
    recovery_time_s: _as(HeartbeatSpec, "recovery_time_s")
    affected: AffectedPattern


class LeaseConfig(Strict):
    name: Name
    namespace: Name
    duration_s: _as(HeartbeatService, "lease_duration_s")
    renew_deadline_s: _as(HeartbeatService, "lease_renew_deadline_s")
    retry_period_s: _as(HeartbeatService, "lease_retry_period_s")

    @model_validator(mode="after")
    def _order(self) -> LeaseConfig:
        # The same order HeartbeatService requires (client-go's leader election refuses others).
        if not (self.duration_s > self.renew_deadline_s > self.retry_period_s):
            raise ValueError(f"lease: duration_s {self.duration_s} > renew_deadline_s {self.renew_deadline_s} "
                             f"> retry_period_s {self.retry_period_s} required")
        return self


class RuntimeConfig(Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    service: Name
    replicas: _as(HeartbeatService, "replicas")
    # A ConfigMap written before these keys existed means the model's named defaults.
    observe_mode: Literal["watch", "poll"] = _default(HeartbeatService, "observe_mode")
    observe_interval_s: _as(HeartbeatService, "observe_interval_s")
    resync_period_s: _as(HeartbeatService, "resync_period_s") = _default(HeartbeatService, "resync_period_s")
    publish_interval_s: _as(HeartbeatService, "publish_interval_s")
    client_timeout_s: _as(HeartbeatService, "client_timeout_s")
    beat_ttl_s: _as(HeartbeatService, "beat_ttl_s")
    confirm_timeout_s: _as(HeartbeatService, "confirm_timeout_s") = _default(HeartbeatService, "confirm_timeout_s")
    ack_timeout_s: _as(HeartbeatService, "ack_timeout_s") = _default(HeartbeatService, "ack_timeout_s")
    # the AMQP heartbeat the service asks for (pika keeps it; null: the broker's proposal)
    broker_heartbeat_s: _as(HeartbeatBrokerLink, "heartbeat_s") = _default(HeartbeatBrokerLink, "heartbeat_s")
    port: _as(HeartbeatService, "port")
    namespaces: tuple[Name, ...] = Field(min_length=1)
    lease: LeaseConfig
    commands_exchange: str = Field(min_length=1)
    beats_exchange: str = Field(min_length=1)
    grace_s: _as(Shutdown, "grace_s")
    specs: tuple[SpecConfig, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _whole(self) -> RuntimeConfig:
        problems = []
        seen: set[str] = set()
        for i, spec in enumerate(self.specs):
            if spec.name in seen:
                problems.append(f"specs.{i}.name: {spec.name!r} appears twice (one spec per scope)")
            seen.add(spec.name)
            if spec.workload.namespace not in self.namespaces:
                problems.append(f"specs.{i}.workload.namespace: {spec.workload.namespace!r} is not in "
                                f"namespaces {list(self.namespaces)} (the service would never see it, "
                                "so the scope would block)")
        if self.commands_exchange == self.beats_exchange:
            problems.append("commands_exchange and beats_exchange must differ")
        if problems:
            raise ValueError("; ".join(problems))
        return self


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
            pdb_max_unavailable=svc.pdb.max_unavailable if svc.pdb else None,
            rollout_max_unavailable=svc.rollout.max_unavailable if svc.kind == "Deployment" else None)
        specs.append(SpecConfig(name=spec.name, workload=workload, loss_time_s=spec.loss_time_s,
                                recovery_time_s=spec.recovery_time_s, affected=spec.affected))
    namespaces = tuple(sorted({s.workload.namespace for s in specs}))
    return RuntimeConfig(
        service=hb.name, replicas=hb.replicas, observe_mode=hb.observe_mode,
        observe_interval_s=hb.observe_interval_s, resync_period_s=hb.resync_period_s,
        publish_interval_s=hb.publish_interval_s, client_timeout_s=hb.client_timeout_s,
        beat_ttl_s=hb.beat_ttl_s, confirm_timeout_s=hb.confirm_timeout_s, ack_timeout_s=hb.ack_timeout_s,
        broker_heartbeat_s=hb.broker.heartbeat_s, port=hb.port, namespaces=namespaces,
        lease=LeaseConfig(name=f"{hb.name}-leader", namespace=hb.namespace,
                          duration_s=hb.lease_duration_s, renew_deadline_s=hb.lease_renew_deadline_s,
                          retry_period_s=hb.lease_retry_period_s),
        commands_exchange=hb.commands_exchange, beats_exchange=hb.beats_exchange,
        grace_s=hb.shutdown.grace_s, specs=tuple(specs))
