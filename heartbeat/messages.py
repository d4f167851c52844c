"""The JSON the heartbeat publishes and the gateway answers (schema version 1). Pure.

Commands (exchange `commands_exchange`, routing key `block.<spec>` / `unblock.<spec>`) tell
the gateway to stop or resume traffic for a scope; each carries a unique `id` and is
published with AMQP `reply_to` (the service's own reply queue) and `correlation_id` = `id`.
The gateway answers each command it has *applied* with an `applied` message (`ack_message`)
to that reply queue. Beats (exchange `beats_exchange`, routing key `beat.<service>`) tell
clients which scopes are healthy and which are blocked — as the gateway acknowledged them,
never ahead of it. A beat carries `sent_at`, `ttl_s` and `expires_at`, and is published
with the AMQP `expiration` set to what remains of its TTL at that moment. The contract is
written out in docs/HEARTBEAT.md.

Command ids are `<service>/<instance>/<epoch>/<n>`: `epoch` is random per process start, so
a restarted container (same pod name, counter back at 1) or another leader never reuses one.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from lockstep.heartbeat.core import ScopeView
from lockstep.heartbeat.decide import Command
from lockstep.timing.heartbeat_config import SCHEMA_VERSION, RuntimeConfig, SpecConfig

COMMANDS = "commands"
BEATS = "beats"


def new_epoch() -> str:
    """A fresh, random prefix for this process's command ids (64 bits)."""
    return secrets.token_hex(8)


@dataclass(frozen=True)
class Message:
    exchange: str  # COMMANDS or BEATS
    routing_key: str
    body: dict[str, Any]
    message_id: str
    timestamp: float  # wall clock, seconds since the epoch
    ttl_s: int | None = None  # beats only
    expires_at: float | None = None  # beats only: wall clock after which it must not be read
    mandatory: bool = False  # commands: an unroutable command is not delivered
    kind: str = field(default="")

    def encode(self) -> bytes:
        return json.dumps(self.body, sort_keys=True, separators=(",", ":")).encode()


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _affected(spec: SpecConfig) -> dict[str, Any]:
    return spec.affected.model_dump(mode="json")


def command_message(cfg: RuntimeConfig, cmd: Command, *, instance: str, seq: int,
                    wall: float, epoch: str) -> Message:
    spec = next(s for s in cfg.specs if s.name == cmd.spec)
    message_id = f"{cfg.service}/{instance}/{epoch}/{seq}"
    body = {
        "schema_version": SCHEMA_VERSION, "type": "command", "action": cmd.action,
        "scope": {"spec": spec.name, "affected": _affected(spec)},
        "reason": cmd.reason, "decided_at": iso(wall), "sent_by": instance, "id": message_id,
    }
    return Message(COMMANDS, f"{cmd.action}.{cmd.spec}", body, message_id, wall,
                   mandatory=True, kind=cmd.action)


def beat_message(cfg: RuntimeConfig, scopes: list[ScopeView], *, instance: str, seq: int,
                 wall: float, epoch: str, applied_ids: dict[str, str] | None = None) -> Message:
    """`scopes` are the states the gateway acknowledged (`Publisher.applied`); each scope
    names the acknowledged command its state comes from (`applied_id`)."""
    ids = applied_ids or {}
    message_id = f"{cfg.service}/{instance}/{epoch}/beat/{seq}"
    body = {
        "schema_version": SCHEMA_VERSION, "type": "beat", "service": cfg.service,
        "sent_by": instance, "seq": seq, "sent_at": iso(wall), "ttl_s": cfg.beat_ttl_s,
        "expires_at": iso(wall + cfg.beat_ttl_s),
        "healthy": [v.spec for v in scopes if not v.blocked],
        "blocked": [v.spec for v in scopes if v.blocked],
        "scopes": [{"spec": v.spec, "state": "blocked" if v.blocked else "healthy",
                    "applied_id": ids.get(v.spec),
                    "affected": _affected(next(s for s in cfg.specs if s.name == v.spec))}
                   for v in scopes],
    }
    return Message(BEATS, f"beat.{cfg.service}", body, message_id, wall, ttl_s=cfg.beat_ttl_s,
                   expires_at=wall + cfg.beat_ttl_s, kind="beat")


def remaining_ttl_ms(m: Message, wall: float) -> int:
    """The AMQP expiration for a beat published at `wall`: what is left of its TTL (0: expired,
    do not publish)."""
    assert m.expires_at is not None
    return max(0, int((m.expires_at - wall) * 1000))


# ---- the gateway's acknowledgement ------------------------------------------------------------
APPLIED = "applied"


def ack_message(command: dict[str, Any], *, gateway: str, wall: float) -> dict[str, Any]:
    """The body a gateway sends back once it has applied `command` (the command's JSON)."""
    return {"schema_version": SCHEMA_VERSION, "type": APPLIED, "id": command["id"],
            "action": command["action"], "spec": command["scope"]["spec"],
            "applied_at": iso(wall), "gateway": gateway}


@dataclass(frozen=True)
class Ack:
    id: str
    action: str
    spec: str


def envelope(raw: bytes, kind: str) -> dict[str, Any]:
    """A message's JSON object of type `kind` at this schema version; ValueError naming the
    field otherwise (the one check of every message the service and the gateway read)."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise ValueError(f"{kind}: not JSON") from None
    if not isinstance(doc, dict) or doc.get("type") != kind:
        raise ValueError(f"type: expected {kind!r}")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"schema_version: expected {SCHEMA_VERSION} (got {doc.get('schema_version')!r})")
    return doc


def parse_ack(raw: bytes) -> Ack:
    """An `applied` message from the reply queue; ValueError naming the field otherwise."""
    doc = envelope(raw, APPLIED)
    fields = {k: doc.get(k) for k in ("id", "action", "spec")}
    for k, v in fields.items():
        if not isinstance(v, str) or not v:
            raise ValueError(f"{k}: expected a non-empty string (got {v!r})")
    if fields["action"] not in ("block", "unblock"):
        raise ValueError(f"action: expected block or unblock (got {fields['action']!r})")
    return Ack(**fields)  # type: ignore[arg-type]


def beat_is_current(body: dict[str, Any], wall: float) -> bool:
    """The client contract: a beat whose `expires_at` has passed is never acted on."""
    try:
        expires = datetime.fromisoformat(str(body["expires_at"]).replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError):
        return False
    return wall < expires
