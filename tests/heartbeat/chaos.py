"""Chaos against the real broker: the service (real `Runtime`, `Publisher`, `PikaSink`), a
gateway (`heartbeat.gateway.Gateway`) that is sometimes slower than the ack timeout, and a
client (`BeatListener`), all on loopback, while the broker is killed (`kill -9`) and frozen
(`SIGSTOP`/`SIGCONT`) and scopes go unhealthy and recover. Used by test_chaos.py (about a
minute) and bench/bench_heartbeat_chaos.py (about ten).

Figures (`Result`): every decided command reached the gateway once the faults end and the
scopes recover (`lost`: confirmed by the broker, never received; `undelivered`: still
queued in the service at the end of the settle; both 0; at least once, first arrivals in decision order per scope, duplicates only with the same id); no beat read by the
client showed a scope blocked before the gateway had applied that block; no beat was
published while the broker or the gateway was failing (a beat's time is when the service
decided to publish it; a failure counts from the time the service needs to notice it, two
broker deadlines or the ack timeout, until the broker is started again or continued); no beat
read after its `expires_at`.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lockstep.heartbeat.gateway import BeatListener, Gateway, GatewayCommand
from lockstep.heartbeat.publish import PikaSink, Publisher
from lockstep.heartbeat.runtime import Runtime
from tests.heartbeat.broker import Broker
from tests.heartbeat.support import ScriptedObserver, short_config


@dataclass
class Result:
    decided: int = 0
    lost: int = 0
    out_of_order: int = 0
    foreign_duplicates: int = 0
    duplicates: int = 0
    ahead_of_gateway: int = 0
    beats_while_failing: int = 0
    expired_read: int = 0
    expired_dropped: int = 0
    beats_read: int = 0
    kills: int = 0
    freezes: int = 0
    slow_acks: int = 0
    faults: list[tuple[str, float, float]] = field(default_factory=list)
    undelivered: int = 0  # decided, still in the publisher's outbox or unacknowledged at the end
    trace: dict[str, Any] = field(default_factory=dict)  # what a failure report prints

    def ok(self) -> bool:
        return not (self.lost or self.undelivered or self.out_of_order or self.foreign_duplicates or self.ahead_of_gateway
                    or self.beats_while_failing or self.expired_read)


def _kill(broker: Broker, sig: int) -> None:
    assert broker.proc is not None
    os.killpg(broker.proc.pid, sig)  # the session the fixture started: the script and its node


def run(broker: Broker, duration_s: float, *, seed: int = 0, settle_s: float = 60.0, min_kills: int = 0,
        min_freezes: int = 0) -> Result:
    """Faults for `duration_s`, and on until at least `min_kills` kills and `min_freezes`
    freezes have happened (a loaded machine restarts the broker slower: the fault count, not
    the clock, is what a test asks for). Kills and freezes alternate; when each comes, how long
    it lasts and which scopes fail are drawn from `seed`."""
    logging.getLogger("heartbeat").setLevel(logging.CRITICAL)
    rng = random.Random(seed)  # the main loop's draws (scopes, fault timing)
    gateway_rng = random.Random(seed + 1)  # the gateway thread's delays: its own stream
    cfg = short_config(loss_s=2, recovery_s=2, beat_ttl_s=4).model_copy(
        update={"ack_timeout_s": 2, "confirm_timeout_s": 1})
    exchanges = {"commands": cfg.commands_exchange, "beats": cfg.beats_exchange}
    lock = threading.Lock()
    applied: list[tuple[float, str, str, str]] = []  # (wall, id, spec, action), first application
    received: list[tuple[str, str, str]] = []  # every delivery: (id, spec, action)
    slow: list[tuple[float, float]] = []  # gateway late: (received + ack timeout, acked)
    res = Result()

    def apply(cmd: GatewayCommand) -> None:
        start = time.time()
        delay = gateway_rng.choice([0, 0, 0, 0.3, cfg.ack_timeout_s + 1.5])
        time.sleep(delay)
        with lock:
            applied.append((time.time(), cmd.id, cmd.spec, cmd.action))
            if delay > cfg.ack_timeout_s:
                slow.append((start + cfg.ack_timeout_s, time.time()))
                res.slow_acks += 1

    gw = Gateway(broker.url, cfg.commands_exchange, f"{cfg.commands_exchange}.gateway", apply, timeout_s=1.0)
    orig_handle = gw.handle

    def handle(cmd: GatewayCommand) -> bool:
        with lock:
            received.append((cmd.id, cmd.spec, cmd.action))
        return orig_handle(cmd)

    gw.handle = handle  # type: ignore[method-assign]
    beats: list[tuple[float, dict[str, Any]]] = []
    raw: list[tuple[float, dict[str, Any]]] = []
    client = BeatListener(broker.url, cfg.beats_exchange, f"{cfg.beats_exchange}.client",
                          lambda b: beats.append((time.time(), b)), timeout_s=1.0)
    client.on_raw = lambda b, now: raw.append((now, b))
    observer = ScriptedObserver(cfg)
    publisher = Publisher.for_config(cfg, lambda: PikaSink(broker.url, exchanges, timeout_s=cfg.confirm_timeout_s, heartbeat_s=cfg.broker_heartbeat_s))
    rt = Runtime(cfg, observer, publisher, instance="chaos")
    confirmed_at: dict[str, list[float]] = {}
    orig_confirmed = publisher._confirmed

    def on_confirmed(m: Any) -> None:
        confirmed_at.setdefault(m.message_id, []).append(time.time())
        orig_confirmed(m)

    publisher._confirmed = on_confirmed  # type: ignore[method-assign]
    # A beat's time is when the service decided to publish it (the publisher judges the link and
    # the gateway there), not when its tick returned: on a loaded machine the thread can wait
    # for a core between the broker's confirm and the end of the tick.
    orig_beat = publisher.beat
    sent_at: list[float] = []

    def beat(message: Any, now: float) -> bool:
        decided_at = time.time()
        ok = orig_beat(message, now)
        if ok:
            sent_at.append(decided_at)
        return ok

    publisher.beat = beat  # type: ignore[method-assign]
    threads = [threading.Thread(target=x.run, daemon=True) for x in (gw, client)]
    for t in threads:
        t.start()
    gw.ready.wait(30)
    client.ready.wait(30)

    stop = threading.Event()

    def service() -> None:
        while not stop.is_set():
            rt.tick(time.monotonic())
            stop.wait(0.1)

    svc = threading.Thread(target=service, daemon=True)
    svc.start()
    start = time.monotonic()
    next_flip = start
    next_fault = start + 3
    try:
        while (time.monotonic() - start < duration_s or res.kills < min_kills or res.freezes < min_freezes):
            now = time.monotonic()
            if now >= next_flip:  # scopes go unhealthy and recover
                observer.failing = {w for w in ("football-feed", "basketball-feed") if rng.random() < 0.5}
                next_flip = now + rng.uniform(1, 6)
            if now >= next_fault:
                if len(res.faults) % 2 == 0:  # kills and freezes alternate, a kill first
                    t0 = time.time()
                    _kill(broker, signal.SIGKILL)
                    broker.proc.wait(10)
                    broker.proc = None
                    time.sleep(rng.uniform(0, 2))
                    # the fault ends when the new broker starts: it may take connections (and
                    # the service publish) before start() has seen it do so
                    t1 = time.time()
                    broker.start()
                    res.faults.append(("kill", t0, t1))
                    res.kills += 1
                else:
                    t0 = time.time()
                    _kill(broker, signal.SIGSTOP)
                    time.sleep(rng.uniform(2, 6))
                    t1 = time.time()  # the broker answers as soon as it is continued
                    _kill(broker, signal.SIGCONT)
                    res.faults.append(("freeze", t0, t1))
                    res.freezes += 1
                next_fault = time.monotonic() + rng.uniform(3, 8)
            time.sleep(0.05)
        observer.failing = set()

        def settled() -> bool:
            # Every scope has recovered and unblocked (the last commands are decided a
            # recovery time after the faults end), the broker confirmed and the gateway
            # acknowledged everything, and the gateway received every command decided. The
            # settle waits for what the figures count: stopping while an unblock is still
            # being decided or queued behind a slow apply would count it as lost.
            with lock:
                got = {r[0] for r in received}
            return (not rt.core.blocked and publisher.pending == 0 and gw.ready.is_set()
                    and all(m.message_id in got for m in list(rt.queued)))

        deadline = time.monotonic() + settle_s  # no more faults: let everything be delivered
        while time.monotonic() < deadline and not settled():
            time.sleep(0.2)
        # Beats resume once the service has seen the broker and the gateway healthy again:
        # wait (up to 20 s) until one sent after the settle has reached the client, so a
        # loaded machine's late first beat is not read as none (beats that never resume are).
        settled_at, read_before = time.time(), len(beats)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(t > settled_at for t, _ in beats[read_before:]):
            time.sleep(0.2)
    finally:
        stop.set()
        svc.join(10)
        publisher.close()
        gw.stop()
        client.stop()
        for t in threads:
            t.join(10)

    # -- the figures ---------------------------------------------------------------------------
    decided = [(m.message_id, m.body["scope"]["spec"], m.body["action"]) for m in rt.queued]
    res.decided = len(decided)
    first: list[tuple[str, str, str]] = []
    seen: dict[str, tuple[str, str]] = {}
    for cid, spec, action in received:
        if cid in seen:
            res.duplicates += 1
            if seen[cid] != (spec, action):
                res.foreign_duplicates += 1
            continue
        seen[cid] = (spec, action)
        first.append((cid, spec, action))
    pending_ids = {w.message.message_id for w in publisher.awaiting} | {m.message_id for m in publisher.outbox}
    res.undelivered = sum(1 for d in decided if d[0] not in seen and d[0] in pending_ids)
    res.lost = sum(1 for d in decided if d[0] not in seen and d[0] not in pending_ids)
    res.trace = {"not_received": [(d, confirmed_at.get(d[0])) for d in decided if d[0] not in seen],
                 "pending": sorted(pending_ids), "acked": [(t, m.message_id) for t, m in publisher.acks],
                 "decided": decided, "faults": res.faults}
    order = {d[0]: i for i, d in enumerate(decided)}
    for spec in {d[1] for d in decided}:
        idx = [order[c] for c, s, _ in first if s == spec and c in order]
        res.out_of_order += sum(1 for a, b in zip(idx, idx[1:]) if b < a)
    res.foreign_duplicates += sum(1 for c, _, _ in first if c not in order)

    applied_at = {cid: t for t, cid, _, _ in applied}
    for read_at, body in raw:
        sent = _ts(body["sent_at"])
        for scope in body["scopes"]:
            # the state a beat states comes from a command the gateway had applied before
            # the beat was built: a block told only once applied (an unblock too)
            cid = scope["applied_id"]
            if cid not in applied_at or applied_at[cid] > sent:
                res.ahead_of_gateway += 1
    res.beats_read = len(beats)
    res.expired_read = sum(1 for read_at, b in beats if read_at >= _ts(b["expires_at"]))
    res.expired_dropped = client.stale
    windows = [(t0 + cfg.confirm_timeout_s * 2 + 0.5, t1) for _, t0, t1 in res.faults]
    windows += [(a + 0.5, b) for a, b in slow]  # the service checks each tick (0.1 s)
    inside = [(s, a, b) for s in sent_at for a, b in windows if a < s < b]
    res.beats_while_failing = len(inside)
    res.trace["beats_while_failing"] = inside  # (decided, window start, window end)
    return res


def _ts(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def summary(res: Result) -> str:
    return json.dumps({k: v for k, v in res.__dict__.items() if k not in ("faults", "trace")}, sort_keys=True)
