"""Shared helpers: a runtime config from the example stack with short times, a scripted
observer, and a drain of a RabbitMQ queue."""

from __future__ import annotations

import json
import uuid
from typing import Any

from lockstep.heartbeat.kube import ObserveError
from lockstep.heartbeat.publish import Publisher
from lockstep.heartbeat.observe import Key, Snapshot, snapshot_from_k8s
from tests.heartbeat import k8s
from lockstep.timing.config import read_stack_file
from lockstep.timing.heartbeat_config import RuntimeConfig, runtime_config


def short_config(*, loss_s: int = 10, recovery_s: int = 5, beat_ttl_s: int = 30,
                exchanges: str | None = None) -> RuntimeConfig:
    """The example stack's specs with short loss/recovery times, 1 s intervals and (for the
    broker tests) exchanges of their own."""
    doc = runtime_config(read_stack_file(None)).model_dump(mode="json")
    doc.update(observe_interval_s=1, publish_interval_s=1, beat_ttl_s=beat_ttl_s)
    for spec in doc["specs"]:
        spec["loss_time_s"], spec["recovery_time_s"] = loss_s, recovery_s
    suffix = exchanges or uuid.uuid4().hex[:8]
    doc["commands_exchange"] = f"test.{suffix}.commands"
    doc["beats_exchange"] = f"test.{suffix}.beats"
    return RuntimeConfig.model_validate(doc)


def publisher(cfg: RuntimeConfig, connect: Any, **kw: Any) -> Publisher:
    return Publisher.for_config(cfg, connect, **kw)


class ScriptedObserver:
    """Answers with the example workloads; `failing` names the ones with no ready pod,
    `error` makes every observation fail."""

    def __init__(self, cfg: RuntimeConfig) -> None:
        self.cfg = cfg
        self.failing: set[str] = set()
        self.error: str | None = None

    def observe(self) -> dict[Key, Snapshot]:
        if self.error:
            raise ObserveError(self.error)
        out = {}
        for spec in self.cfg.specs:
            w = spec.workload
            ready = 0 if w.name in self.failing else 3
            snap = snapshot_from_k8s(k8s.workload(w.kind, w.name, w.namespace, expected=3, ready=ready))
            out[snap.key] = snap
        return out


def drain(channel: Any, queue: str) -> list[tuple[Any, dict[str, Any]]]:
    """Every message in the queue, in order, as (properties, decoded body)."""
    out = []
    while True:
        method, props, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        out.append((props, json.loads(body)))
