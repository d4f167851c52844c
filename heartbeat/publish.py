"""Publishing to RabbitMQ: commands first, acknowledged by the gateway, and beats that state
only what the gateway has applied.

The guarantee lives in `Publisher`, independent of the transport:
- Commands go into an in-memory `outbox` in decision order. The head leaves it only after
  the broker confirmed it (publisher confirms; commands are `mandatory`, so a command no
  queue receives is *not* delivered and stays at the head). It then waits in `awaiting`
  for the gateway's `applied` acknowledgement (`messages.parse_ack`, correlated by id).
- `applied` holds, per scope, the last action the gateway acknowledged. A beat states
  exactly that (seed 000: block the traffic first, then tell the client), and is sent only
  when every scope's applied state is known, the link is up and no command has waited for
  its acknowledgement longer than `ack_timeout_s` — a gateway that does not answer is a
  critical failure (`gateway_problem`), so clients get silence, never a beat that lies.
- Every broker operation has a deadline (`PikaSink`, `confirm_timeout_s`): a broker that
  does not confirm is a failure like a lost connection, and the service loop never stalls.
- Any failure drops the connection and retries with exponential backoff. While the link is
  down nothing is published; pending commands stay in order and go first after reconnect;
  commands still waiting for an acknowledgement are sent again (their acknowledgement was
  addressed to the reply queue that died with the connection). Delivery is at-least-once:
  the gateway de-duplicates by id and acknowledges a duplicate again without re-applying.
- A beat's AMQP expiration is what remains of its TTL when it is published; an expired
  beat is not published at all.
- One log line per broker outage (when it starts) and one when it ends; pika's own logging
  (ERROR lines with tracebacks on every outage) is silenced by `quiet_pika`.

`PikaSink` is the pika transport (imported lazily); tests and the dry run supply others.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol

from lockstep.heartbeat.messages import BEATS, COMMANDS, Message, parse_ack, remaining_ttl_ms

log = logging.getLogger("heartbeat.publish")


class DeliveryError(Exception):
    """The broker did not confirm a message (connection lost, nack, unroutable, timeout)."""


class Sink(Protocol):
    def send(self, message: Message) -> None:
        """Return only once the broker confirmed the message; raise DeliveryError otherwise.
        A command is published with the sink's reply queue as `reply_to`."""

    def poll(self) -> list[bytes]:
        """Service the connection; return the acknowledgements received since the last poll.
        Raise DeliveryError if the connection is lost."""

    def close(self) -> None: ...


def quiet_pika() -> None:
    """pika logs every lost connection as ERROR with a traceback; the publisher logs one line
    per outage instead."""
    logging.getLogger("pika").setLevel(logging.CRITICAL)


def broker_errors() -> tuple[type[BaseException], ...]:
    """What a lost or unreachable broker raises. pika's connection workflow errors (a
    handshake that outlives `stack_timeout`, a refused socket) are not `AMQPError`s."""
    import pika
    from pika.adapters.utils.connection_workflow import AMQPConnectorException

    return (pika.exceptions.AMQPError, AMQPConnectorException, OSError)


def abort_connection(conn: Any) -> None:
    """Shut a pika connection's socket without the graceful close, which waits for an answer
    a frozen broker never sends."""
    impl = getattr(conn, "_impl", None)
    sock = getattr(getattr(impl, "_transport", None), "_sock", None)  # pika's transport socket
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


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


@dataclass
class Waiting:
    message: Message
    since: float  # the pump that sent it began (the acknowledgement clock starts no later than the send)


class Publisher:
    @classmethod
    def for_config(cls, cfg: Any, connect: Callable[[], Sink], **kw: Any) -> Publisher:
        return cls(connect, ack_timeout_s=cfg.ack_timeout_s, confirm_timeout_s=cfg.confirm_timeout_s, **kw)

    def __init__(self, connect: Callable[[], Sink], *, ack_timeout_s: float, confirm_timeout_s: float,
                 backoff: Backoff | None = None, wall: Callable[[], float] = time.time) -> None:
        self._connect = connect
        self.ack_timeout_s = ack_timeout_s
        self.confirm_timeout_s = confirm_timeout_s
        self.backoff = backoff or Backoff()
        self.wall = wall
        self.sink: Sink | None = None
        self.outbox: deque[Message] = deque()
        self.awaiting: list[Waiting] = []
        self.applied: dict[str, str] = {}  # spec → the last action the gateway acknowledged
        self.applied_ids: dict[str, str] = {}  # spec → that command's id
        self.acks: list[tuple[float, Message]] = []  # the last few acknowledged commands (logs, dry run)
        self.retry_at = 0.0
        self.problem: str | None = "not connected yet"
        self.gateway_problem: str | None = None
        self.down_since: float | None = None
        self.confirmed: list[Message] = []  # the last few confirmed messages (for tests/logs)

    # -- commands ----------------------------------------------------------------------------
    def enqueue(self, messages: Iterable[Message]) -> None:
        for m in messages:
            if m.exchange != COMMANDS:
                raise ValueError("only commands are queued; beats are sent fresh or not at all")
            self.outbox.append(m)

    def reset(self) -> None:
        """A deposed leader forgets everything in flight; the next leader re-sends the state."""
        self.outbox.clear()
        self.awaiting.clear()
        self.applied.clear()
        self.applied_ids.clear()
        self.gateway_problem = None
        self.close()

    @property
    def pending(self) -> int:
        return len(self.outbox) + len(self.awaiting)

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
        if self.down_since is None:
            self.down_since = now
            log.warning("broker link down: no beats until it is back", extra={
                "event": "broker_down", "problem": self.problem, "pending_commands": self.pending})
        else:
            log.debug("broker still down", extra={"event": "broker_retry", "problem": self.problem,
                                                   "retry_in_s": delay})
        return self.problem

    def pump(self, now: float) -> str | None:
        """Connect if due, collect acknowledgements, deliver pending commands in order, and
        judge the gateway. None when the link is up and every command is confirmed by the
        broker; otherwise what is wrong with the broker link."""
        if self.sink is None:
            if now < self.retry_at:
                self._judge_gateway(now)
                return self.problem
            try:
                self.sink = self._connect()
            except Exception as err:
                self._judge_gateway(now)
                return self._fail(now, err)
            self.backoff.reset()
            self.problem = None
            if self.down_since is not None:
                log.info("broker link up", extra={"event": "broker_up", "outage_s": round(now - self.down_since, 1),
                                                  "pending_commands": self.pending})
                self.down_since = None
            # Acknowledgements go to this connection's reply queue: ask again for those that
            # were addressed to the previous one (the gateway re-acknowledges duplicates).
            for w in reversed(self.awaiting):
                self.outbox.appendleft(w.message)
            self.awaiting.clear()
        try:
            for raw in self.sink.poll():
                self._on_ack(raw, now)
            started = time.monotonic()
            # One pump spends at most one broker deadline on sending (the rest waits for the
            # next tick), so the loop stays live however many commands are pending.
            while self.outbox and time.monotonic() - started < self.confirm_timeout_s:
                head = self.outbox[0]
                self.sink.send(head)
                self.outbox.popleft()
                self.awaiting.append(Waiting(head, now))
                self._confirmed(head)
        except Exception as err:
            self._judge_gateway(now)
            return self._fail(now, err)
        self._judge_gateway(now)
        return None

    def _on_ack(self, raw: bytes, now: float) -> None:
        try:
            ack = parse_ack(raw)
        except ValueError as err:
            log.warning("unreadable acknowledgement ignored", extra={"event": "ack_bad", "problem": str(err)})
            return
        queued = [w.message for w in self.awaiting] + list(self.outbox)  # in decision order
        idx = next((i for i, m in enumerate(queued) if m.message_id == ack.id), None)
        if idx is None:
            return  # a duplicate acknowledgement, or one for a command already superseded
        msg = queued[idx]
        spec = msg.body["scope"]["spec"]
        # The gateway applies one queue in order: what came before for this scope is applied
        # too (also a command waiting to be sent again: it need not be).
        done = {m.message_id for i, m in enumerate(queued) if i <= idx and m.body["scope"]["spec"] == spec}
        self.awaiting = [w for w in self.awaiting if w.message.message_id not in done]
        self.outbox = deque(m for m in self.outbox if m.message_id not in done)
        self.applied[spec] = msg.body["action"]
        self.applied_ids[spec] = msg.message_id
        self.acks.append((now, msg))
        del self.acks[:-50]
        log.info("applied by the gateway", extra={"event": "applied", "spec": spec, "action": msg.body["action"],
                                                  "message_id": msg.message_id})

    def _judge_gateway(self, now: float) -> None:
        late = next((w for w in self.awaiting if now - w.since >= self.ack_timeout_s), None)
        if late is None:
            if self.gateway_problem is not None:
                log.info("gateway acknowledges again", extra={"event": "gateway_up"})
            self.gateway_problem = None
            return
        problem = (f"no acknowledgement of {late.message.kind} {late.message.body['scope']['spec']} "
                   f"({late.message.message_id}) within ack_timeout {self.ack_timeout_s:g}s")
        if self.gateway_problem is None:
            log.error("gateway does not acknowledge: global failure, beats stop",
                      extra={"event": "gateway_down", "problem": problem})
        self.gateway_problem = problem

    # -- beats -------------------------------------------------------------------------------
    def beat(self, message: Message, now: float) -> bool:
        """Publish a beat if the link is up (as the last `pump` found it), no acknowledgement
        is overdue and the beat has not expired; its contents must come from `applied`."""
        if message.exchange != BEATS:
            raise ValueError("beat() publishes beats")
        # Judged again at the beat's own time: the pump that judged it last may have spent up to
        # a broker deadline sending, and an acknowledgement may have come due meanwhile.
        self._judge_gateway(now)
        if self.sink is None or self.problem is not None or self.gateway_problem is not None:
            return False
        if remaining_ttl_ms(message, self.wall()) <= 0:
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
        log.debug("published", extra={"event": "published", "kind": m.kind, "routing_key": m.routing_key,
                                      "message_id": m.message_id})

    def close(self) -> None:
        if self.sink is not None:
            try:
                self.sink.close()
            finally:
                self.sink = None


class PikaSink:
    """One blocking pika connection with publisher confirms on durable topic exchanges and an
    exclusive, server-named reply queue for the gateway's acknowledgements.

    Every operation runs under a deadline of `timeout_s`: pika's blocking publish waits for
    its confirm without one, so a frozen broker (TCP up, no answers) would stall the caller.
    When the deadline passes, the connection's socket is shut down from a timer thread,
    which makes the blocked call fail at once; the operation raises DeliveryError.
    """

    def __init__(self, url: str, exchanges: dict[str, str], *, timeout_s: float, heartbeat_s: int | None) -> None:
        import pika

        quiet_pika()
        params = pika.URLParameters(url)
        params.connection_attempts = 1
        params.socket_timeout = timeout_s
        params.stack_timeout = timeout_s  # the whole TCP + AMQP handshake
        params.blocked_connection_timeout = timeout_s  # a broker in a resource alarm fails fast
        params.heartbeat = heartbeat_s  # the stack's `heartbeat.broker.heartbeat_s` (None: the broker's proposal)
        self._pika = pika
        self.timeout_s = timeout_s
        self.exchanges = exchanges
        self._replies: list[bytes] = []
        self.conn: Any = None
        self.broken = False
        try:
            self.conn = pika.BlockingConnection(params)
        except broker_errors() as err:
            raise DeliveryError(f"connect: {err.__class__.__name__}: {err}".rstrip(": ")) from None
        try:
            with self._deadline("setup"):
                self.channel = self.conn.channel()
                self.channel.confirm_delivery()
                for name in exchanges.values():
                    self.channel.exchange_declare(name, exchange_type="topic", durable=True)
                q = self.channel.queue_declare("", exclusive=True, auto_delete=True)
                self.reply_to: str = q.method.queue
                self.channel.basic_consume(self.reply_to, self._on_reply, auto_ack=True)
        except Exception:
            self.close()
            raise

    def _on_reply(self, _ch: Any, _method: Any, _props: Any, body: bytes) -> None:
        self._replies.append(body)

    def _abort(self, fired: threading.Event) -> None:
        fired.set()
        abort_connection(self.conn)

    @contextlib.contextmanager
    def _timed(self, fired: threading.Event) -> Iterator[None]:
        timer = threading.Timer(self.timeout_s, self._abort, (fired,))
        timer.daemon = True
        timer.start()
        try:
            yield
        except BaseException:
            self.broken = True
            raise
        finally:
            timer.cancel()
            if fired.is_set():
                self.broken = True

    @contextlib.contextmanager
    def _deadline(self, what: str) -> Iterator[None]:
        fired = threading.Event()
        pika = self._pika
        try:
            with self._timed(fired):
                yield
        except pika.exceptions.UnroutableError:
            raise DeliveryError(f"{what}: unroutable: no queue bound (is the gateway listening?)") from None
        except pika.exceptions.NackError:
            raise DeliveryError(f"{what}: nacked by the broker") from None
        except (pika.exceptions.AMQPError, OSError, ValueError) as err:
            if fired.is_set():
                raise DeliveryError(f"{what}: no answer from the broker within {self.timeout_s:g}s") from None
            raise DeliveryError(f"{what}: {err.__class__.__name__}: {err}".rstrip(": ")) from None
        if fired.is_set():
            raise DeliveryError(f"{what}: no answer from the broker within {self.timeout_s:g}s")

    def send(self, message: Message) -> None:
        pika = self._pika
        is_beat = message.exchange == BEATS
        expiration = None
        if is_beat:
            left = remaining_ttl_ms(message, time.time())
            if left <= 0:
                raise DeliveryError(f"{message.message_id}: expired before it could be published")
            expiration = str(left)
        props = pika.BasicProperties(
            content_type="application/json", delivery_mode=pika.DeliveryMode.Persistent,
            message_id=message.message_id, timestamp=int(message.timestamp), type=message.kind,
            headers={"schema_version": message.body.get("schema_version")},
            reply_to=None if is_beat else self.reply_to,
            correlation_id=None if is_beat else message.message_id,
            expiration=expiration)
        with self._deadline(f"publish {message.kind} {message.routing_key}"):
            self.channel.basic_publish(self.exchanges[message.exchange], message.routing_key,
                                       message.encode(), props, mandatory=message.mandatory)

    def poll(self) -> list[bytes]:
        with self._deadline("poll"):
            self.conn.process_data_events(0)
        out, self._replies = self._replies, []
        return out

    def close(self) -> None:
        """Close gracefully when the link works; after a failure only shut the socket (a
        graceful close waits for the broker's answer, which a frozen broker never sends)."""
        if self.conn is None:
            return
        if self.broken:
            self._abort(threading.Event())
            return
        with contextlib.suppress(Exception):
            with self._deadline("close"):
                if self.conn.is_open:
                    self.conn.close()
