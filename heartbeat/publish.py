"""Publishing to RabbitMQ: block/unblock commands first, beats only after them.

The ordering guarantee lives in `Publisher`, independent of the transport:
- Commands go into an in-memory outbox in decision order. The head is removed only after
  the broker confirmed it (publisher confirms; commands are `mandatory`, so a command no
  queue receives is *not* delivered and stays at the head).
- A beat is published only when the link is up and the outbox is empty. The beat's
  contents are the decided scope states, which equal the confirmed ones exactly when the
  outbox is empty: a beat never lists a scope blocked before the broker confirmed the block
  command (seed 000: block the traffic first, then tell the client).
- Any failure drops the connection and retries with exponential backoff. While the link is
  down nothing is published, so no beat is sent (silence = global failure for the client),
  and pending commands stay in the outbox, delivered first after reconnect.
Delivery is at-least-once: a command whose confirm was lost with the connection is sent
again; commands carry an `id` for the gateway to de-duplicate.

`PikaSink` is the pika transport (imported lazily); tests and the dry run supply others.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from heartbeat.messages import BEATS, COMMANDS, Message

log = logging.getLogger("heartbeat.publish")


class DeliveryError(Exception):
    """The broker did not confirm a message (connection lost, nack, unroutable)."""


class Sink(Protocol):
    def send(self, message: Message) -> None:
        """Return only once the broker confirmed the message; raise DeliveryError otherwise."""

    def poll(self) -> None:
        """Service the connection (AMQP heartbeats); raise DeliveryError if it is lost."""

    def close(self) -> None: ...


@dataclass
class Backoff:
    initial_s: float = 0.5
    factor: float = 2.0
    cap_s: float = 10.0
    _next: float = 0.0

    def next(self) -> float:
        delay = self._next or self.initial_s
        self._next = min(self.cap_s, delay * self.factor)
        return delay

    def reset(self) -> None:
        self._next = 0.0


class Publisher:
    def __init__(self, connect: Callable[[], Sink], backoff: Backoff | None = None) -> None:
        self._connect = connect
        self.backoff = backoff or Backoff()
        self.sink: Sink | None = None
        self.outbox: deque[Message] = deque()
        self.retry_at = 0.0
        self.problem: str | None = "not connected yet"
        self.confirmed: list[Message] = []  # the last few confirmed messages (for tests/logs)

    def enqueue(self, messages: Iterable[Message]) -> None:
        for m in messages:
            if m.exchange != COMMANDS:
                raise ValueError("only commands are queued; beats are sent fresh or not at all")
            self.outbox.append(m)

    def _fail(self, now: float, err: BaseException) -> str:
        if self.sink is not None:
            try:
                self.sink.close()
            except Exception:  # already broken; closing is best effort
                pass
        self.sink = None
        delay = self.backoff.next()
        self.retry_at = now + delay
        self.problem = f"{err.__class__.__name__}: {err}".rstrip(": ")
        log.warning("broker link down", extra={"event": "broker_down", "problem": self.problem,
                                                "retry_in_s": delay, "pending_commands": len(self.outbox)})
        return self.problem

    def pump(self, now: float) -> str | None:
        """Connect if due, then deliver pending commands in order. None when the link is up
        and every command is confirmed; otherwise what is wrong."""
        if self.sink is None:
            if now < self.retry_at:
                return self.problem
            try:
                self.sink = self._connect()
            except Exception as err:
                return self._fail(now, err)
            self.backoff.reset()
            self.problem = None
            log.info("broker link up", extra={"event": "broker_up", "pending_commands": len(self.outbox)})
        try:
            self.sink.poll()
            while self.outbox:
                head = self.outbox[0]
                self.sink.send(head)
                self.outbox.popleft()
                self._confirmed(head)
        except Exception as err:
            return self._fail(now, err)
        return None

    def beat(self, message: Message, now: float) -> bool:
        """Publish a beat if and only if every command before it is confirmed."""
        if message.exchange != BEATS:
            raise ValueError("beat() publishes beats")
        if self.pump(now) is not None:
            return False
        try:
            assert self.sink is not None
            self.sink.send(message)
        except Exception as err:
            self._fail(now, err)
            return False
        self._confirmed(message)
        return True

    def _confirmed(self, m: Message) -> None:
        self.confirmed.append(m)
        del self.confirmed[:-50]
        log.info("published", extra={"event": "published", "kind": m.kind, "routing_key": m.routing_key,
                                     "message_id": m.message_id})

    def close(self) -> None:
        if self.sink is not None:
            try:
                self.sink.close()
            finally:
                self.sink = None


class PikaSink:
    """One blocking pika connection with publisher confirms on durable topic exchanges."""

    def __init__(self, url: str, exchanges: dict[str, str], *, timeout_s: float = 5.0) -> None:
        import pika

        params = pika.URLParameters(url)
        params.connection_attempts = 1
        params.socket_timeout = timeout_s
        params.stack_timeout = timeout_s * 2
        params.blocked_connection_timeout = timeout_s  # a broker in a resource alarm fails fast
        params.heartbeat = 30
        self._pika = pika
        self.exchanges = exchanges
        self.conn = pika.BlockingConnection(params)
        try:
            self.channel = self.conn.channel()
            self.channel.confirm_delivery()
            for name in exchanges.values():
                self.channel.exchange_declare(name, exchange_type="topic", durable=True)
        except Exception:
            self.close()
            raise

    def send(self, message: Message) -> None:
        pika = self._pika
        props = pika.BasicProperties(
            content_type="application/json", delivery_mode=pika.DeliveryMode.Persistent,
            message_id=message.message_id, timestamp=int(message.timestamp), type=message.kind,
            headers={"schema_version": message.body.get("schema_version")},
            expiration=str(message.ttl_s * 1000) if message.ttl_s is not None else None)
        try:
            self.channel.basic_publish(self.exchanges[message.exchange], message.routing_key,
                                       message.encode(), props, mandatory=message.mandatory)
        except pika.exceptions.UnroutableError:
            raise DeliveryError(f"{message.routing_key} unroutable: no queue bound to "
                                f"{self.exchanges[message.exchange]} (is the gateway listening?)") from None
        except pika.exceptions.NackError:
            raise DeliveryError(f"{message.routing_key} nacked by the broker") from None
        except pika.exceptions.AMQPError as err:
            raise DeliveryError(f"{err.__class__.__name__}: {err}") from None

    def poll(self) -> None:
        try:
            self.conn.process_data_events(0)
        except self._pika.exceptions.AMQPError as err:
            raise DeliveryError(f"{err.__class__.__name__}: {err}") from None

    def close(self) -> None:
        try:
            if self.conn.is_open:
                self.conn.close()
        except Exception:  # a dead connection may fail to close; nothing to keep
            pass
