"""The JSON the heartbeat publishes (schema version 1). Pure.

Commands (exchange `commands_exchange`, routing key `block.<spec>` / `unblock.<spec>`) tell
the gateway to stop or resume traffic for a scope. Beats (exchange `beats_exchange`,
routing key `beat.<service>`) tell clients which scopes are healthy and which are blocked.
Every message carries its timestamp; a beat also carries its TTL, and is published with
the AMQP `expiration` set to the same TTL, so a beat queued during an outage expires
instead of reading as fresh health after reconnect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from heartbeat.core import ScopeView
from heartbeat.decide import Command
from timing.heartbeat_config import SCHEMA_VERSION, RuntimeConfig, SpecConfig

COMMANDS = "commands"
BEATS = "beats"


@dataclass(frozen=True)
class Message:
    exchange: str  # COMMANDS or BEATS
    routing_key: str
    body: dict[str, Any]
    message_id: str
    timestamp: float  # wall clock, seconds since the epoch
    ttl_s: int | None = None  # beats only
    mandatory: bool = False  # commands: an unroutable command is not delivered
    kind: str = field(default="")

    def encode(self) -> bytes:
        return json.dumps(self.body, sort_keys=True, separators=(",", ":")).encode()


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _affected(spec: SpecConfig) -> dict[str, Any]:
    return spec.affected.model_dump(mode="json")


def command_message(cfg: RuntimeConfig, cmd: Command, *, instance: str, seq: int,
                    wall: float) -> Message:
    spec = next(s for s in cfg.specs if s.name == cmd.spec)
    message_id = f"{cfg.service}/{instance}/{seq}"
    body = {
        "schema_version": SCHEMA_VERSION, "type": "command", "action": cmd.action,
        "scope": {"spec": spec.name, "affected": _affected(spec)},
        "reason": cmd.reason, "decided_at": iso(wall), "sent_by": instance, "id": message_id,
    }
    return Message(COMMANDS, f"{cmd.action}.{cmd.spec}", body, message_id, wall,
                   mandatory=True, kind=cmd.action)


def beat_message(cfg: RuntimeConfig, scopes: list[ScopeView], *, instance: str, seq: int,
                 wall: float) -> Message:
    message_id = f"{cfg.service}/{instance}/beat/{seq}"
    body = {
        "schema_version": SCHEMA_VERSION, "type": "beat", "service": cfg.service,
        "sent_by": instance, "seq": seq, "sent_at": iso(wall), "ttl_s": cfg.beat_ttl_s,
        "expires_at": iso(wall + cfg.beat_ttl_s),
        "healthy": [v.spec for v in scopes if not v.blocked],
        "blocked": [v.spec for v in scopes if v.blocked],
        "scopes": [{"spec": v.spec, "state": "blocked" if v.blocked else "healthy",
                    "affected": _affected(next(s for s in cfg.specs if s.name == v.spec))}
                   for v in scopes],
    }
    return Message(BEATS, f"beat.{cfg.service}", body, message_id, wall, ttl_s=cfg.beat_ttl_s,
                   kind="beat")
