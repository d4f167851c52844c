"""The running service: observe → decide → publish, on one loop, with an injected clock.

`Runtime.tick(now)` is one pass; the service loop (`serve`) calls it until SIGTERM, the
tests call it with their own clock. What a tick does, in order:
1. leadership (when an elector is given): a new leader restores the blocked scopes from the
   lease and queues the full state for the gateway before anything else; a deposed leader
   stops publishing and forgets what was in flight (the new leader re-sends the state);
2. observe — every tick in watch mode (a read of the watch cache, so a change is acted on
   as soon as its event arrives), every `observe_interval_s` in poll mode; an API error
   marks the observer failed (silence); new block/unblock decisions are saved to the lease,
   then queued as commands;
3. leader only: deliver pending commands (confirmed by the broker, in order), collect the
   gateway's acknowledgements; the broker link and the gateway are critical components;
   every `publish_interval_s` — and at once when an acknowledgement changed a scope —
   publish a beat stating the scopes as the gateway applied them, only when no critical
   component fails and the gateway has acknowledged a state for every scope.
Every step is bounded (API timeouts, the broker deadline, the lease calls' timeouts), so a
tick always ends: `live()` reports whether the loop itself is turning.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import Any, Callable, Protocol

from lockstep.heartbeat.core import BROKER, GATEWAY, OBSERVER, Core, ScopeView
from lockstep.heartbeat.decide import Command
from lockstep.heartbeat.messages import beat_message, command_message, new_epoch
from lockstep.heartbeat.observe import Key, Snapshot
from lockstep.heartbeat.messages import Message
from lockstep.heartbeat.publish import Publisher
from lockstep.timing.heartbeat_config import RuntimeConfig

log = logging.getLogger("heartbeat.runtime")
LOOP_WAIT_S = 1.0  # the service loop waits at most this long between ticks


class Observer(Protocol):
    def observe(self) -> dict[Key, Snapshot]: ...

    @property
    def max_observe_s(self) -> float:
        """The longest one `observe()` can take (its API timeouts)."""


class Elector(Protocol):
    is_leader: bool
    restored_blocked: frozenset[str]

    max_tick_s: float

    def tick(self) -> bool: ...
    def save_blocked(self, blocked: frozenset[str]) -> bool: ...
    def release(self) -> None: ...


class Runtime:
    def __init__(self, cfg: RuntimeConfig, observer: Observer, publisher: Publisher, *,
                 elector: Elector | None = None, instance: str = "local",
                 wall: Callable[[], float] = time.time, epoch: str | None = None) -> None:
        self.cfg = cfg
        self.observer = observer
        self.publisher = publisher
        self.elector = elector
        self.instance = instance
        self.wall = wall
        self.epoch = epoch or new_epoch()
        self.core = Core(cfg)
        self.leading = elector is None
        self.next_observe = 0.0
        self.next_beat = 0.0
        self.seq = 0
        self.beats_sent = 0
        self.last_tick: float | None = None
        self.queued: list[Message] = []  # every command this instance decided (tests, bench)
        self._beat_state: tuple[tuple[str, str], ...] | None = None
        self._takeover_pending = elector is None  # a lone instance also states its view once

    # -- one pass --------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        started = time.monotonic()
        self.last_tick = now
        self._leadership(now)
        if now >= self.next_observe:
            self.next_observe = now + (self.cfg.observe_interval_s if self.cfg.observe_mode == "poll" else 0)
            self._observe(now)
        if not self.leading:
            return
        if self._takeover_pending and self.core.critical[OBSERVER] is None:
            self._resync(now)
        self._pump(now)
        views = self.applied_views()
        state = None if views is None else tuple((v.spec, str(v.blocked)) for v in views)
        due = now >= self.next_beat or (state is not None and state != self._beat_state)
        if due and views is not None and not self.core.silent:
            msg = beat_message(self.cfg, views, instance=self.instance, seq=self.beats_sent + 1,
                               wall=self.wall(), epoch=self.epoch, applied_ids=self.publisher.applied_ids)
            # the beat's own time on the tick's clock: observing and pumping took some of it
            if self.publisher.beat(msg, now + (time.monotonic() - started)):
                self.beats_sent += 1
                self.next_beat = now + self.cfg.publish_interval_s
                self._beat_state = state
            self._pump_state()

    def _pump(self, now: float) -> None:
        self.publisher.pump(now)
        self._pump_state()

    def _pump_state(self) -> None:
        self.core.set_critical(BROKER, self.publisher.problem)
        self.core.set_critical(GATEWAY, self.publisher.gateway_problem)

    def applied_views(self) -> list[ScopeView] | None:
        """The scopes as the gateway acknowledged them; None while any scope's is unknown."""
        out = []
        for spec in self.cfg.specs:
            action = self.publisher.applied.get(spec.name)
            if action is None:
                return None
            st = self.core.states[spec.name]
            out.append(ScopeView(spec.name, action == "block", st.changed_at, st.reason))
        return out

    def _leadership(self, now: float) -> None:
        if self.elector is None:
            return
        leading = self.elector.tick()
        if leading and not self.leading:
            self.core.adopt_blocked(self.elector.restored_blocked, now)
            self._takeover_pending = True
            self.next_beat = now
        elif self.leading and not leading:
            self.publisher.reset()
        self.leading = leading

    def _resync(self, now: float) -> None:
        """A new leader tells the gateway the whole state first: what the old leader had
        blocked stays blocked, and a scope it blocked and this view holds unblocked is
        unblocked again (commands are idempotent for the gateway)."""
        self._takeover_pending = False
        cmds = [Command("block" if v.blocked else "unblock", v.spec, f"leader {self.instance}: state "
                        "resync on takeover", now) for v in self.core.scopes()]
        self._queue(cmds)

    def _observe(self, now: float) -> None:
        try:
            snaps = self.observer.observe()
        except Exception as err:
            if self.core.critical[OBSERVER] is None:
                log.error("observation failed: global failure, beats stop",
                          extra={"event": "observe_failed", "problem": str(err)[:300]})
            self.core.observe(now, None, str(err))
            return
        if self.core.critical[OBSERVER] not in (None, "no observation yet"):
            log.info("observation recovered", extra={"event": "observe_recovered"})
        commands = self.core.observe(now, snaps)
        for spec, verdict in self.core.verdicts.items():
            log.debug("verdict", extra={"event": "verdict", "spec": spec, "healthy": verdict.healthy,
                                        "reason": verdict.reason})
        if commands and self.leading:
            if self.elector is not None:
                self.elector.save_blocked(self.core.blocked)
            self._queue(commands)

    def _queue(self, commands: list[Command]) -> None:
        msgs = []
        for cmd in commands:
            self.seq += 1
            msgs.append(command_message(self.cfg, cmd, instance=self.instance, seq=self.seq, wall=self.wall(),
                                        epoch=self.epoch))
            log.warning(f"{cmd.action} {cmd.spec}", extra={"event": cmd.action, "spec": cmd.spec,
                                                          "reason": cmd.reason})
        self.queued.extend(msgs)
        del self.queued[:-1000]
        self.publisher.enqueue(msgs)

    # -- health endpoints ------------------------------------------------------------------
    def tick_budget_s(self) -> float:
        """The longest one tick can take: observing (its API timeouts), the lease calls, and
        two broker deadlines (pump, beat), plus the loop's own wait between ticks."""
        observe = float(getattr(self.observer, "max_observe_s", 0.0))
        lease = float(getattr(self.elector, "max_tick_s", 0.0)) if self.elector is not None else 0.0
        return observe + lease + 2 * self.cfg.confirm_timeout_s + LOOP_WAIT_S

    def live(self, now: float) -> bool:
        """The loop is turning: its last tick began within one tick's budget. A failing
        broker, gateway or API server does not make it not live (they are bounded)."""
        return self.last_tick is not None and now - self.last_tick <= self.tick_budget_s()

    def ready(self) -> bool:
        return self.core.critical[OBSERVER] is None

    def status(self) -> dict[str, Any]:
        return {"leader": self.leading, "silent": self.core.silent, "critical": self.core.critical,
                "blocked": sorted(self.core.blocked), "applied": dict(self.publisher.applied),
                "pending_commands": len(self.publisher.outbox),
                "awaiting_ack": len(self.publisher.awaiting), "beats_sent": self.beats_sent}

    # -- shutdown --------------------------------------------------------------------------
    def shutdown(self, deadline: float, clock: Callable[[], float]) -> None:
        """Deliver what is pending while the grace period lasts, then hand the lease over."""
        while self.leading and self.publisher.pending and clock() < deadline:
            self.publisher.pump(clock())
            if not self.publisher.pending:
                break
            time.sleep(min(0.2, max(0.0, deadline - clock())))
        if self.publisher.pending:
            log.error("shutdown with unacknowledged commands (the next leader re-sends the state)",
                      extra={"event": "shutdown_pending", "pending_commands": self.publisher.pending})
        self.publisher.close()
        if self.elector is not None:
            self.elector.release()


# ---- logging -------------------------------------------------------------------------------
_STD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
               "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        out.update({k: v for k, v in vars(record).items() if k not in _STD})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def setup_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler.formatter.converter = time.gmtime  # type: ignore[union-attr]
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


# ---- the service ---------------------------------------------------------------------------
def serve(cfg: RuntimeConfig, broker_url: str, *, kubeconfig: str | None = None) -> int:
    from lockstep.heartbeat import http, kube
    from lockstep.heartbeat.leader import LeaderElector
    from lockstep.heartbeat.publish import PikaSink, quiet_pika

    from lockstep.timing.config import ConfigError

    setup_logging(os.environ.get("LOCKSTEP_LOG_LEVEL", "INFO"))
    quiet_pika()
    identity = os.environ.get("POD_NAME") or socket.gethostname()
    client = kube.api_client(kubeconfig)  # ConfigError (one line) when no usable config
    from kubernetes import client as k8s

    exchanges = {"commands": cfg.commands_exchange, "beats": cfg.beats_exchange}
    publisher = Publisher.for_config(cfg, lambda: PikaSink(broker_url, exchanges, timeout_s=cfg.confirm_timeout_s,
                                                                heartbeat_s=cfg.broker_heartbeat_s))
    elector = LeaderElector(k8s.CoordinationV1Api(client), cfg.lease, identity)
    observer: Any = (kube.WatchObserver(client, cfg) if cfg.observe_mode == "watch"
                     else kube.KubeObserver(client, cfg))
    runtime = Runtime(cfg, observer, publisher, elector=elector, instance=identity)
    try:
        server = http.start(cfg.port, runtime)
    except OSError as err:
        raise ConfigError([f"port: cannot serve the health endpoints on {cfg.port} "
                           f"({err.strerror or err.__class__.__name__}; is it already taken?)"]) from None

    stop = threading.Event()
    wake = getattr(observer, "changed", None) or threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: (stop.set(), wake.set()))
    signal.signal(signal.SIGINT, lambda *_: (stop.set(), wake.set()))
    observer_start = getattr(observer, "start", None)
    if observer_start is not None:
        observer_start()
    log.info("heartbeat started", extra={"event": "start", "identity": identity, "specs": [s.name for s in cfg.specs],
                                         "namespaces": list(cfg.namespaces), "observe_mode": cfg.observe_mode,
                                         "epoch": runtime.epoch})
    try:
        while not stop.is_set():
            runtime.tick(time.monotonic())
            # A watch event wakes the loop at once; otherwise it turns at least every LOOP_WAIT_S.
            wake.wait(min(LOOP_WAIT_S, cfg.lease.retry_period_s / 2))
            wake.clear()
    finally:
        # Leave a margin of the grace period for the process to exit after this.
        deadline = time.monotonic() + max(0.0, cfg.grace_s - 5)
        runtime.shutdown(deadline, time.monotonic)
        stop_observer = getattr(observer, "stop", None)
        if stop_observer is not None:
            stop_observer()
        server.shutdown()
        log.info("heartbeat stopped", extra={"event": "stop"})
    return 0
