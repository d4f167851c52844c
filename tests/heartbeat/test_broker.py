"""The runtime and the gateway library against a real RabbitMQ on loopback (fixture
`broker`, once per session).

The observer is scripted and the service's clock is the test's (one second per tick, with a
short real pause so the gateway thread can answer); everything from the decision to the
broker's queues and back is real: `Runtime` → `Publisher` → `PikaSink` (publisher confirms,
durable exchanges, persistent messages) → `heartbeat.gateway.Gateway` → acknowledgement on
the service's reply queue. A "witness" queue bound to both exchanges records the order in
which the broker accepted commands and beats.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Iterator

import pytest

from lockstep.heartbeat.gateway import Gateway, GatewayCommand
from lockstep.heartbeat.publish import PikaSink, Publisher
from lockstep.heartbeat.runtime import Runtime
from tests.heartbeat.support import ScriptedObserver, drain, short_config
from lockstep.timing.heartbeat_config import BROKER_URL_ENV, RuntimeConfig

pytestmark = pytest.mark.broker


@pytest.fixture
def channel(broker: Any) -> Iterator[Any]:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(broker.url))
    yield conn.channel()
    try:
        conn.close()
    except pika.exceptions.AMQPError:  # died with a broker restart
        pass


def declare(channel: Any, cfg: RuntimeConfig) -> dict[str, str]:
    """Durable exchanges as the service declares them; `witness` (both exchanges, in arrival
    order) and `clients` (beats)."""
    for ex in (cfg.commands_exchange, cfg.beats_exchange):
        channel.exchange_declare(ex, exchange_type="topic", durable=True)
    names = {q: f"{cfg.commands_exchange}.{q}" for q in ("witness", "clients")}
    for name in names.values():
        channel.queue_declare(name, durable=True)
    channel.queue_bind(names["witness"], cfg.commands_exchange, "#")
    channel.queue_bind(names["witness"], cfg.beats_exchange, "#")
    channel.queue_bind(names["clients"], cfg.beats_exchange, "#")
    return names


class GatewayThread:
    def __init__(self, broker: Any, cfg: RuntimeConfig, delay_s: float = 0.0) -> None:
        self.applied: list[GatewayCommand] = []
        self.delay_s = delay_s
        self.gw = Gateway(broker.url, cfg.commands_exchange, f"{cfg.commands_exchange}.gateway", self._apply,
                          timeout_s=1.0)
        self.thread = threading.Thread(target=self.gw.run, daemon=True)
        self.thread.start()
        assert self.gw.ready.wait(20)

    def _apply(self, cmd: GatewayCommand) -> None:
        time.sleep(self.delay_s)
        self.applied.append(cmd)

    def stop(self) -> None:
        self.gw.stop()
        self.thread.join(10)


def runtime(cfg: RuntimeConfig, broker: Any) -> tuple[Runtime, ScriptedObserver]:
    observer = ScriptedObserver(cfg)
    exchanges = {"commands": cfg.commands_exchange, "beats": cfg.beats_exchange}
    connect = lambda: PikaSink(broker.url, exchanges, timeout_s=cfg.confirm_timeout_s, heartbeat_s=cfg.broker_heartbeat_s)  # noqa: E731
    return Runtime(cfg, observer, Publisher.for_config(cfg, connect), instance="test"), observer


def run(rt: Runtime, start: int, stop: int, pause_s: float = 0.03) -> None:
    for t in range(start, stop):
        rt.tick(float(t))
        time.sleep(pause_s)


def run_until_settled(rt: Runtime, start: int, within_s: float = 40.0) -> int:
    """Tick (1 s of service clock per 0.1 s) until nothing is pending and beats flow again,
    at most `within_s` of real time (the gateway reconnects with its own backoff)."""
    deadline, t = time.monotonic() + within_s, start
    while time.monotonic() < deadline and (rt.publisher.pending or rt.core.silent):
        rt.tick(float(t))
        t += 1
        time.sleep(0.1)
    return t


def kinds(messages: list[tuple[Any, dict[str, Any]]]) -> list[str]:
    return [f"{b['action']} {b['scope']['spec']}" if b["type"] == "command" else
            "beat blocked=" + ",".join(b["blocked"]) for _, b in messages]


def test_a_beat_reports_a_block_only_after_the_gateway_applied_and_acknowledged_it(broker, channel):
    cfg = short_config(loss_s=10, recovery_s=5)
    q = declare(channel, cfg)
    gw = GatewayThread(broker, cfg)
    rt, observer = runtime(cfg, broker)
    try:
        run(rt, 0, 5)
        observer.failing = {"football-feed"}
        run(rt, 5, 25)
        observer.failing = set()
        run(rt, 25, 40)
    finally:
        rt.publisher.close()
        gw.stop()
    seen = kinds(drain(channel, q["witness"]))
    block = seen.index("block football-live")
    first_blocked_beat = seen.index("beat blocked=football-live")
    assert block < first_blocked_beat, seen
    assert [c.action + " " + c.spec for c in gw.applied] == [
        "unblock football-live", "unblock basketball-live", "block football-live", "unblock football-live"]
    assert "block basketball-live" not in seen, "football failing never blocks basketball"
    beats = [b for _, b in drain(channel, q["clients"])]
    ids = {c.spec + c.action: c.id for c in gw.applied}
    for b in beats:
        for scope in b["scopes"]:
            assert scope["applied_id"] in {c.id for c in gw.applied}, "each state comes from an applied command"
    assert any(s["applied_id"] == ids["football-liveblock"] for b in beats for s in b["scopes"])


def test_every_beat_carries_its_timestamp_and_a_message_ttl_and_expires_unread(broker, channel):
    cfg = short_config(beat_ttl_s=1)
    q = declare(channel, cfg)
    gw = GatewayThread(broker, cfg)
    rt, _ = runtime(cfg, broker)
    before = time.time()
    try:
        run(rt, 0, 4)
    finally:
        rt.publisher.close()
    props, body = drain(channel, q["clients"])[0]
    assert 0 < int(props.expiration) <= 1000 and body["ttl_s"] == 1, "what remains of the TTL, in ms"
    assert props.delivery_mode == 2 and props.content_type == "application/json"
    assert props.timestamp >= int(before) and body["sent_at"].endswith("Z")
    assert body["schema_version"] == 1 and body["type"] == "beat"
    # a beat nobody read in time is gone: after an outage, no stale beat reads as health
    again, _ = runtime(cfg, broker)
    try:
        run(again, 0, 4)
    finally:
        again.publisher.close()
        gw.stop()
    time.sleep(1.3)
    assert drain(channel, q["clients"]) == []


def test_without_a_gateway_no_beat_is_sent_and_the_gateway_failure_is_critical(broker, channel):
    cfg = short_config(loss_s=2)
    q = declare(channel, cfg)
    channel.queue_declare(f"{cfg.commands_exchange}.gateway", durable=True)
    channel.queue_bind(f"{cfg.commands_exchange}.gateway", cfg.commands_exchange, "#")  # nobody consumes
    rt, _ = runtime(cfg, broker)
    try:
        run(rt, 0, cfg.ack_timeout_s + 3)
        assert rt.core.silent and "ack_timeout" in (rt.core.critical["gateway"] or "")
        assert drain(channel, q["clients"]) == [], "no beat while the gateway has acknowledged nothing"
        gw = GatewayThread(broker, cfg)  # the gateway comes up and works off its queue
        run(rt, 20, 30)
        gw.stop()
    finally:
        rt.publisher.close()
    assert not rt.core.silent and len(drain(channel, q["clients"])) > 0


def test_a_frozen_broker_fails_within_the_confirm_timeout_and_the_loop_stays_live(broker, channel):
    cfg = short_config()
    declare(channel, cfg)
    gw = GatewayThread(broker, cfg)
    rt, observer = runtime(cfg, broker)
    try:
        run(rt, 0, 3)
        assert rt.beats_sent > 0
        os.killpg(broker.proc.pid, signal.SIGSTOP)
        try:
            worst = 0.0
            for t in range(3, 9):
                started = time.monotonic()
                rt.tick(float(t))
                worst = max(worst, time.monotonic() - started)
                assert rt.live(float(t) + 0.5)
            observer.failing = {"football-feed"}
            sent = rt.beats_sent
            run(rt, 9, 12)
        finally:
            os.killpg(broker.proc.pid, signal.SIGCONT)
        assert rt.core.silent and rt.core.critical["broker"], rt.core.critical  # deadline, then handshake timeouts
        assert rt.beats_sent == sent, "no beat while the broker does not confirm"
        assert worst <= 2 * cfg.confirm_timeout_s + 1, f"a tick took {worst:.1f}s"
        assert rt.core.verdicts["football-live"].healthy is False, "observing and deciding went on"
        run_until_settled(rt, 12)
        assert not rt.core.silent, (rt.core.critical, rt.publisher.pending, gw.gw.ready.is_set())
    finally:
        rt.publisher.close()
        gw.stop()


def test_a_broker_restart_loses_no_block_and_the_gateway_applies_each_command_once(broker, channel):
    cfg = short_config(loss_s=5)
    q = declare(channel, cfg)
    gw = GatewayThread(broker, cfg)
    rt, observer = runtime(cfg, broker)
    try:
        run(rt, 0, 4)
        beats_before = rt.beats_sent
        assert beats_before > 0
        broker.stop()
        observer.failing = {"football-feed"}
        run(rt, 4, 16)  # the block is decided while the broker is down
        assert rt.beats_sent == beats_before, "no beat while the broker is unreachable"
        broker.start()
        run_until_settled(rt, 16)
    finally:
        rt.publisher.close()
        gw.stop()
    assert not rt.publisher.pending and rt.beats_sent > beats_before
    assert [c.action + " " + c.spec for c in gw.applied] == [
        "unblock football-live", "unblock basketball-live", "block football-live"]
    assert rt.publisher.applied["football-live"] == "block"


def test_the_gateway_applies_a_redelivered_command_once_and_acknowledges_it_again(broker, channel):
    import pika

    cfg = short_config()
    gw = GatewayThread(broker, cfg)
    reply = channel.queue_declare("", exclusive=True).method.queue
    body = {"schema_version": 1, "type": "command", "action": "block", "id": "hb/x/e/1",
            "scope": {"spec": "football-live", "affected": {}}, "reason": "test"}
    for _ in range(2):
        channel.basic_publish(cfg.commands_exchange, "block.football-live", json.dumps(body).encode(),
                              pika.BasicProperties(reply_to=reply, correlation_id="hb/x/e/1"))
    deadline = time.monotonic() + 10
    acks: list = []
    while len(acks) < 2 and time.monotonic() < deadline:
        acks += drain(channel, reply)
        time.sleep(0.1)
    gw.stop()
    assert [c.id for c in gw.applied] == ["hb/x/e/1"] and gw.gw.duplicates == 1
    assert [(p.correlation_id, b["type"], b["id"], b["action"]) for p, b in acks] == [
        ("hb/x/e/1", "applied", "hb/x/e/1", "block")] * 2


def test_the_runnable_gateway_example_applies_commands_from_the_real_broker(broker, channel, tmp_path):
    import pika

    cfg = short_config()
    (tmp_path / "hb.json").write_text(cfg.model_dump_json())
    env = {**os.environ, BROKER_URL_ENV: broker.url}
    proc = subprocess.Popen([sys.executable, "-m", "lockstep.heartbeat.examples.gateway_example", "--config",
                             str(tmp_path / "hb.json")], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert "consuming" in proc.stdout.readline()
        reply = channel.queue_declare("", exclusive=True).method.queue
        time.sleep(1)
        body = {"schema_version": 1, "type": "command", "action": "block", "id": "hb/x/e/9",
                "scope": {"spec": "football-live", "affected": {}}, "reason": "test"}
        channel.basic_publish(cfg.commands_exchange, "block.football-live", json.dumps(body).encode(),
                              pika.BasicProperties(reply_to=reply, correlation_id="hb/x/e/9"))
        assert "block football-live (hb/x/e/9); blocked now: ['football-live']" in proc.stdout.readline()
        deadline = time.monotonic() + 10
        acks: list = []
        while not acks and time.monotonic() < deadline:
            acks = drain(channel, reply)
            time.sleep(0.1)
        assert acks and acks[0][1]["id"] == "hb/x/e/9"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    assert proc.returncode == 0


@pytest.mark.parametrize("heartbeat", [7, None])
def test_the_link_runs_on_the_heartbeat_the_stack_sets_for_it(broker, channel, heartbeat):
    """`heartbeat.broker.heartbeat_s` (amqp-heartbeat-under-idle) is what the broker link runs
    on: pika keeps a value it states, and takes the broker's proposal for none (RabbitMQ's 60 s
    unless its config says otherwise)."""
    cfg = short_config().model_copy(update={"broker_heartbeat_s": heartbeat})
    sink = PikaSink(broker.url, {"commands": cfg.commands_exchange, "beats": cfg.beats_exchange},
                    timeout_s=cfg.confirm_timeout_s, heartbeat_s=cfg.broker_heartbeat_s)
    try:
        negotiated = sink.conn._impl.params.heartbeat  # what pika settled on in Connection.Tune
        assert negotiated == (heartbeat if heartbeat is not None else 60)
    finally:
        sink.close()
