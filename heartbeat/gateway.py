"""A library for the gateway side of the heartbeat contract (docs/HEARTBEAT.md).

The user supplies `apply(command)`: stop or resume the traffic of `command.spec`'s scope
(`command.affected` describes it). `Gateway` does the rest:
- consumes the durable queue `queue` bound to the commands exchange (routing keys
  `block.#` and `unblock.#`), one message at a time (prefetch 1), so commands are applied
  in the order the service decided them;
- de-duplicates by command id (delivery is at-least-once: redeliveries after a broker
  restart and re-sends after the service reconnected carry the same id): a command already
  applied is not applied again, but *is* acknowledged again;
- acknowledges each applied command with an `applied` message to the command's `reply_to`
  (`correlation_id` = the id), then acks the AMQP delivery — so a crash before the
  acknowledgement means redelivery, never a lost command;
- survives broker restarts and freezes: every failure closes the connection and
  reconnects with backoff (one log line per outage); `apply` failures leave the command
  unacknowledged and redeliver it.

`BeatListener` is the client contract for beats: it hands a beat to the callback only while
its `expires_at` lies in the future (a beat held up in a frozen broker is dropped).

Run `python -m lockstep.heartbeat.examples.gateway_example --help` for a runnable gateway.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

from lockstep.heartbeat.messages import ack_message, beat_is_current, envelope
from lockstep.heartbeat.publish import Backoff, abort_connection, broker_errors, quiet_pika

log = logging.getLogger("heartbeat.gateway")
SEEN_IDS = 100_000  # command ids remembered for de-duplication (a day of decisions, many times over)


@dataclass(frozen=True)
class GatewayCommand:
    id: str
    action: str  # "block" | "unblock"
    spec: str
    affected: dict[str, Any]
    reason: str
    redelivered: bool


def parse_command(body: bytes) -> GatewayCommand:
    """A command as the service publishes it; ValueError naming the field otherwise."""
    doc = envelope(body, "command")
    scope = doc.get("scope")
    if not isinstance(scope, dict) or not isinstance(scope.get("spec"), str):
        raise ValueError("scope.spec: expected a string")
    if doc.get("action") not in ("block", "unblock"):
        raise ValueError(f"action: expected block or unblock (got {doc.get('action')!r})")
    if not isinstance(doc.get("id"), str) or not doc["id"]:
        raise ValueError("id: expected a non-empty string")
    affected = scope.get("affected") if isinstance(scope.get("affected"), dict) else {}
    return GatewayCommand(doc["id"], doc["action"], scope["spec"], affected, str(doc.get("reason", "")), False)


class Gateway:
    def __init__(self, url: str, commands_exchange: str, queue: str,
                 apply: Callable[[GatewayCommand], None], *, name: str = "gateway",
                 timeout_s: float = 5.0, backoff: Backoff | None = None) -> None:
        self.url = url
        self.commands_exchange = commands_exchange
        self.queue = queue
        self.apply = apply
        self.name = name
        self.timeout_s = timeout_s
        self.backoff = backoff or Backoff()
        self.seen: OrderedDict[str, str] = OrderedDict()  # id → action, oldest first
        self.stop_event = threading.Event()
        self.ready = threading.Event()  # set while consuming
        self.applied = 0
        self.duplicates = 0
        self.outages = 0
        self._conn: Any = None

    # -- one message -------------------------------------------------------------------------
    def handle(self, cmd: GatewayCommand) -> bool:
        """Apply unless already applied; True when it was applied now."""
        if cmd.id in self.seen:
            self.duplicates += 1
            self.seen.move_to_end(cmd.id)
            return False
        self.apply(cmd)
        self.seen[cmd.id] = cmd.action
        while len(self.seen) > SEEN_IDS:
            self.seen.popitem(last=False)
        self.applied += 1
        return True

    def _on_message(self, ch: Any, method: Any, props: Any, body: bytes) -> None:
        import pika

        try:
            cmd = parse_command(body)
        except ValueError as err:
            log.error("command refused", extra={"event": "command_bad", "problem": str(err)})
            ch.basic_reject(method.delivery_tag, requeue=False)
            return
        cmd = GatewayCommand(**{**cmd.__dict__, "redelivered": bool(method.redelivered)})
        self.handle(cmd)  # an exception here leaves the delivery unacked: redelivered
        if props.reply_to:
            ack = ack_message(json.loads(body), gateway=self.name, wall=time.time())
            ch.basic_publish("", props.reply_to, json.dumps(ack).encode(),
                             pika.BasicProperties(content_type="application/json", correlation_id=cmd.id,
                                                  type="applied"))
        ch.basic_ack(method.delivery_tag)

    # -- the loop ----------------------------------------------------------------------------
    def _connect(self) -> Any:
        import pika

        params = pika.URLParameters(self.url)
        params.connection_attempts = 1
        params.socket_timeout = self.timeout_s
        params.stack_timeout = self.timeout_s
        params.blocked_connection_timeout = self.timeout_s
        params.heartbeat = max(2, int(self.timeout_s))  # a frozen broker is noticed within ~2 beats
        conn = pika.BlockingConnection(params)
        ch = conn.channel()
        ch.exchange_declare(self.commands_exchange, exchange_type="topic", durable=True)
        ch.queue_declare(self.queue, durable=True)
        for key in ("block.#", "unblock.#"):
            ch.queue_bind(self.queue, self.commands_exchange, key)
        ch.basic_qos(prefetch_count=1)
        ch.basic_consume(self.queue, self._on_message)
        return conn

    def run(self) -> None:
        """Consume until `stop()`; reconnect after every failure."""
        quiet_pika()
        down_since: float | None = None
        while not self.stop_event.is_set():
            try:
                self._conn = self._connect()
                if down_since is not None:
                    log.info("broker link up", extra={"event": "broker_up",
                                                      "outage_s": round(time.monotonic() - down_since, 1)})
                    down_since = None
                self.backoff.reset()
                self.ready.set()
                while not self.stop_event.is_set():
                    self._conn.process_data_events(time_limit=0.2)
            except broker_errors() as err:
                self.ready.clear()
                if down_since is None:
                    down_since = time.monotonic()
                    self.outages += 1
                    log.warning("broker link down", extra={"event": "broker_down",
                                                           "problem": f"{err.__class__.__name__}: {err}"[:200]})
                self._close(broken=True)
                self.stop_event.wait(self.backoff.next())
        self.ready.clear()
        self._close(broken=False)

    def _close(self, broken: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if broken:  # a graceful close would wait for a broker that may be frozen
            abort_connection(conn)
            return
        try:
            if conn.is_open:
                conn.close()
        except Exception:  # already broken
            pass

    def stop(self) -> None:
        self.stop_event.set()


class BeatListener:
    """Consumes beats from the durable queue `queue` bound to the beats exchange and calls
    `on_beat(body)` only for beats still current (`expires_at` in the future); reconnects
    after every failure. `stale` counts beats dropped as expired."""

    def __init__(self, url: str, beats_exchange: str, queue: str, on_beat: Callable[[dict[str, Any]], None],
                 *, timeout_s: float = 5.0, wall: Callable[[], float] = time.time) -> None:
        self.url, self.beats_exchange, self.queue = url, beats_exchange, queue
        self.on_beat = on_beat
        self.timeout_s = timeout_s
        self.wall = wall
        self.stale = 0
        self.stop_event = threading.Event()
        self.ready = threading.Event()
        self.on_raw: Callable[[dict[str, Any], float], None] | None = None  # every beat received (tests)

    def _on_message(self, ch: Any, method: Any, _props: Any, body: bytes) -> None:
        now = self.wall()
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            doc = None
        ch.basic_ack(method.delivery_tag)
        if not isinstance(doc, dict) or doc.get("type") != "beat":
            return
        if self.on_raw is not None:
            self.on_raw(doc, now)
        if not beat_is_current(doc, now):
            self.stale += 1
            return
        self.on_beat(doc)

    def run(self) -> None:
        import pika

        quiet_pika()
        backoff = Backoff()
        while not self.stop_event.is_set():
            conn = None
            try:
                params = pika.URLParameters(self.url)
                params.connection_attempts = 1
                params.socket_timeout = params.stack_timeout = self.timeout_s
                params.heartbeat = max(2, int(self.timeout_s))
                conn = pika.BlockingConnection(params)
                ch = conn.channel()
                ch.exchange_declare(self.beats_exchange, exchange_type="topic", durable=True)
                ch.queue_declare(self.queue, durable=True)
                ch.queue_bind(self.queue, self.beats_exchange, "beat.#")
                ch.basic_consume(self.queue, self._on_message)
                backoff.reset()
                self.ready.set()
                while not self.stop_event.is_set():
                    conn.process_data_events(time_limit=0.2)
            except broker_errors():
                self.ready.clear()
                if conn is not None:
                    abort_connection(conn)
                    conn = None
                self.stop_event.wait(backoff.next())
            finally:
                if conn is not None:
                    try:
                        if conn.is_open:
                            conn.close()
                    except Exception:
                        pass
        self.ready.clear()

    def stop(self) -> None:
        self.stop_event.set()
