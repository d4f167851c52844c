"""The running service: observe → decide → publish, on one loop, with an injected clock.

`Runtime.tick(now)` is one pass; the service loop (`serve`) calls it until SIGTERM, the
tests call it with their own clock. What a tick does, in order:
1. leadership (when an elector is given): a new leader restores the blocked scopes from the
   lease and queues the full state for the gateway before anything else; a deposed leader
   stops publishing and drops its outbox (the new leader re-sends the state);
2. every `observe_interval`: observe; an API error marks the observer failed (silence);
   new block/unblock decisions are saved to the lease, then queued as commands;
3. leader only: deliver pending commands (confirmed, in order), record the broker link's
   state as a critical component; every `publish_interval` publish a beat — only when no
   critical component fails and every command before it is confirmed.
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

from heartbeat.core import BROKER, OBSERVER, Core
from heartbeat.decide import Command
from heartbeat.messages import beat_message, command_message
from heartbeat.observe import Key, Snapshot
from heartbeat.publish import Publisher
from timing.heartbeat_config import RuntimeConfig

log = logging.getLogger("heartbeat.runtime")


class Observer(Protocol):
    def observe(self) -> dict[Key, Snapshot]: ...


class Elector(Protocol):
    is_leader: bool
    restored_blocked: frozenset[str]

    def tick(self) -> bool: ...
    def save_blocked(self, blocked: frozenset[str]) -> bool: ...
    def release(self) -> None: ...


class Runtime:
    def __init__(self, cfg: RuntimeConfig, observer: Observer, publisher: Publisher, *,
                 elector: Elector | None = None, instance: str = "local",
                 wall: Callable[[], float] = time.time) -> None:
        self.cfg = cfg
        self.observer = observer
        self.publisher = publisher
        self.elector = elector
        self.instance = instance
        self.wall = wall
        self.core = Core(cfg)
        self.leading = elector is None
        self.next_observe = 0.0
        self.next_beat = 0.0
        self.seq = 0
        self.beats_sent = 0
        self.last_tick: float | None = None
        self._takeover_pending = elector is None  # a lone instance also states its view once

    # -- one pass --------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        self.last_tick = now
        self._leadership(now)
        if now >= self.next_observe:
            self.next_observe = now + self.cfg.observe_interval_s
            self._observe(now)
        if not self.leading:
            return
        if self._takeover_pending and self.core.critical[OBSERVER] is None:
            self._resync(now)
        self.core.set_critical(BROKER, self.publisher.pump(now))
        if now >= self.next_beat and not self.core.silent:
            msg = beat_message(self.cfg, self.core.scopes(), instance=self.instance,
                               seq=self.beats_sent + 1, wall=self.wall())
            if self.publisher.beat(msg, now):
                self.beats_sent += 1
                self.next_beat = now + self.cfg.publish_interval_s
            self.core.set_critical(BROKER, self.publisher.problem if self.publisher.sink is None else None)

    def _leadership(self, now: float) -> None:
        if self.elector is None:
            return
        leading = self.elector.tick()
        if leading and not self.leading:
            self.core.adopt_blocked(self.elector.restored_blocked, now)
            self._takeover_pending = True
            self.next_beat = now
        elif self.leading and not leading:
            self.publisher.outbox.clear()
            self.publisher.close()
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
            msgs.append(command_message(self.cfg, cmd, instance=self.instance, seq=self.seq, wall=self.wall()))
            log.warning(f"{cmd.action} {cmd.spec}", extra={"event": cmd.action, "spec": cmd.spec,
                                                          "reason": cmd.reason})
        self.publisher.enqueue(msgs)

    # -- health endpoints ------------------------------------------------------------------
    def live(self, now: float) -> bool:
        return self.last_tick is not None and now - self.last_tick < 3 * self.cfg.observe_interval_s + 10

    def ready(self) -> bool:
        return self.core.critical[OBSERVER] is None

    def status(self) -> dict[str, Any]:
        return {"leader": self.leading, "silent": self.core.silent, "critical": self.core.critical,
                "blocked": sorted(self.core.blocked), "pending_commands": len(self.publisher.outbox),
                "beats_sent": self.beats_sent}

    # -- shutdown --------------------------------------------------------------------------
    def shutdown(self, deadline: float, clock: Callable[[], float]) -> None:
        """Deliver what is pending while the grace period lasts, then hand the lease over."""
        while self.leading and self.publisher.outbox and clock() < deadline:
            if self.publisher.pump(clock()) is None:
                break
            time.sleep(min(0.2, max(0.0, deadline - clock())))
        if self.publisher.outbox:
            log.error("shutdown with undelivered commands (the next leader re-sends the state)",
                      extra={"event": "shutdown_pending", "pending_commands": len(self.publisher.outbox)})
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
    from heartbeat import http, kube
    from heartbeat.leader import LeaderElector
    from heartbeat.publish import PikaSink

    from kubernetes.config import ConfigException

    from timing.config import ConfigError

    setup_logging(os.environ.get("LOCKSTEP_LOG_LEVEL", "INFO"))
    identity = os.environ.get("POD_NAME") or socket.gethostname()
    try:
        client = kube.api_client(kubeconfig)
    except (ConfigException, OSError) as err:
        raise ConfigError([f"kubernetes: no in-cluster service account and no usable kubeconfig "
                           f"({str(err).splitlines()[0] if str(err) else err.__class__.__name__})"]) from None
    from kubernetes import client as k8s

    exchanges = {"commands": cfg.commands_exchange, "beats": cfg.beats_exchange}
    publisher = Publisher(lambda: PikaSink(broker_url, exchanges))
    elector = LeaderElector(k8s.CoordinationV1Api(client), cfg.lease, identity)
    runtime = Runtime(cfg, kube.KubeObserver(client, cfg), publisher, elector=elector, instance=identity)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = http.start(cfg.port, runtime)
    log.info("heartbeat started", extra={"event": "start", "identity": identity, "specs": [s.name for s in cfg.specs],
                                         "namespaces": list(cfg.namespaces)})
    try:
        while not stop.is_set():
            runtime.tick(time.monotonic())
            stop.wait(min(1.0, cfg.lease.retry_period_s / 2))
    finally:
        # Leave a margin of the grace period for the process to exit after this.
        deadline = time.monotonic() + max(0.0, cfg.grace_s - 5)
        runtime.shutdown(deadline, time.monotonic)
        server.shutdown()
        log.info("heartbeat stopped", extra={"event": "stop"})
    return 0
