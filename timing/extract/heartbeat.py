"""The heartbeat's ConfigMap (and its Deployment) → the heartbeat service and its specs."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from lockstep.timing.conventions import APP_ANNOTATIONS, FINISH_ANNOTATION
from lockstep.timing.extract.annotations import annotations_of, seconds_annotation
from lockstep.timing.extract.kube import pod_shutdown, probes, serving_container
from lockstep.timing.extract.values import ExtractError, build, describe, get, num
from lockstep.timing.heartbeat_config import CONFIGMAP_KEY, RuntimeConfig
from lockstep.timing.model import HeartbeatService, HeartbeatSpec, Shutdown

def heartbeat_config(configmap: Mapping[str, Any]) -> RuntimeConfig:
    raw = get(configmap, "data", CONFIGMAP_KEY)
    if raw is None:
        raise ExtractError(f"ConfigMap has no data key {CONFIGMAP_KEY!r}")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise ExtractError(f"{CONFIGMAP_KEY}: not JSON: {err}") from None
    try:
        return RuntimeConfig.model_validate(data)
    except ValidationError as err:
        # one line: each problem's field path and message (pydantic's own text spans lines and links)
        raise ExtractError(f"{CONFIGMAP_KEY}: {describe(err)}") from None


def heartbeat_specs(config: RuntimeConfig) -> tuple[HeartbeatSpec, ...]:
    """The specs; each watches its workload by name. The agreed outage budget is not in the
    ConfigMap: `max_outage_s` is unknown."""
    return tuple(build(HeartbeatSpec, {
        "name": s.name, "service": s.workload.name, "loss_time_s": s.loss_time_s,
        "recovery_time_s": s.recovery_time_s, "max_outage_s": None, "affected": s.affected})
        for s in config.specs)


def heartbeat_service(config: RuntimeConfig, deployment: Mapping[str, Any] | None = None) -> HeartbeatService:
    """The heartbeat service from its ConfigMap and (when present) its Deployment: probes,
    preStop, grace, minReadySeconds and `lockstep.dev/warmup-seconds` (else unknown)."""
    notes = annotations_of(deployment or {})
    pod_spec = get(deployment, "spec", "template", "spec") or {"containers": [{}]}
    container = serving_container(pod_spec, config.port)
    shutdown = (pod_shutdown(pod_spec, seconds_annotation(notes, FINISH_ANNOTATION), config.port)
                if deployment is not None else build(Shutdown, {"drain_s": 0, "finish_s": None,
                                                                "grace_s": config.grace_s}))
    data = {
        "name": config.service, "namespace": config.lease.namespace,
        "image": get(container, "image") or "unknown", "replicas": config.replicas, "port": config.port,
        "observe_mode": config.observe_mode, "observe_interval_s": config.observe_interval_s,
        "resync_period_s": config.resync_period_s, "publish_interval_s": config.publish_interval_s,
        "confirm_timeout_s": config.confirm_timeout_s, "ack_timeout_s": config.ack_timeout_s,
        "client_timeout_s": config.client_timeout_s, "beat_ttl_s": config.beat_ttl_s,
        "lease_duration_s": config.lease.duration_s, "lease_renew_deadline_s": config.lease.renew_deadline_s,
        "lease_retry_period_s": config.lease.retry_period_s,
        "warmup_s": seconds_annotation(notes, APP_ANNOTATIONS["warmup_s"]),
        "probes": probes(container), "shutdown": shutdown,
        "min_ready_s": num(deployment, "spec", "minReadySeconds") or 0,
        # its reply consumer acknowledges automatically; the way to the broker no resource states
        "broker": {"heartbeat_s": config.broker_heartbeat_s, "manual_ack": False},
    }
    return build(HeartbeatService, data)
