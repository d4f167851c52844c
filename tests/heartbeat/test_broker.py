"""The runtime against a real RabbitMQ on loopback (fixture `broker`, once per session).

The observer is scripted and the clock is the test's; everything from the decision to the
broker's queues is real: `Runtime` → `Publisher` → `PikaSink` (publisher confirms, durable
topic exchanges, persistent messages). A "witness" queue bound to both exchanges records
the order in which the broker accepted commands and beats.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

import pytest

from heartbeat.publish import Publisher, PikaSink
from heartbeat.runtime import Runtime
from tests.heartbeat.support import ScriptedObserver, drain, short_config
from timing.heartbeat_config import RuntimeConfig

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


def declare(channel: Any, cfg: RuntimeConfig, *, gateway: bool = True) -> dict[str, str]:
    """Durable exchanges as the service declares them, and durable queues bound to them:
    `witness` (both exchanges, in arrival order), `gateway` (commands), `clients` (beats)."""
    for ex in (cfg.commands_exchange, cfg.beats_exchange):
        channel.exchange_declare(ex, exchange_type="topic", durable=True)
    names = {q: f"{cfg.commands_exchange}.{q}" for q in ("witness", "gateway", "clients")}
    for name in names.values():
        channel.queue_declare(name, durable=True)
    if gateway:
        bind_commands(channel, cfg, names)
    channel.queue_bind(names["witness"], cfg.beats_exchange, "#")
    channel.queue_bind(names["clients"], cfg.beats_exchange, "#")
    return names


def bind_commands(channel: Any, cfg: RuntimeConfig, names: dict[str, str]) -> None:
    channel.queue_bind(names["witness"], cfg.commands_exchange, "#")
    channel.queue_bind(names["gateway"], cfg.commands_exchange, "#")


def runtime(cfg: RuntimeConfig, broker: Any) -> tuple[Runtime, ScriptedObserver]:
    observer = ScriptedObserver(cfg)
    exchanges = {"commands": cfg.commands_exchange, "beats": cfg.beats_exchange}
    connect = lambda: PikaSink(broker.url, exchanges, timeout_s=cfg.confirm_timeout_s)  # noqa: E731
    return Runtime(cfg, observer, Publisher.for_config(cfg, connect), instance="test"), observer


def run(rt: Runtime, start: int, stop: int) -> None:
    for t in range(start, stop):
        rt.tick(float(t))


def kinds(messages: list[tuple[Any, dict[str, Any]]]) -> list[str]:
    return [f"{b['action']} {b['scope']['spec']}" if b["type"] == "command" else
            "beat blocked=" + ",".join(b["blocked"]) for _, b in messages]


def test_the_block_is_confirmed_before_any_beat_lists_the_scope_blocked(broker, channel):
    cfg = short_config(loss_s=10, recovery_s=5)
    q = declare(channel, cfg)
    rt, observer = runtime(cfg, broker)
    run(rt, 0, 5)
    observer.failing = {"football-feed"}
    run(rt, 5, 25)
    observer.failing = set()
    run(rt, 25, 40)
    rt.publisher.close()

    seen = kinds(drain(channel, q["witness"]))
    block = seen.index("block football-live")
    first_blocked_beat = seen.index("beat blocked=football-live")
    assert block < first_blocked_beat, seen
    assert all(not k.startswith("beat blocked=football") for k in seen[:block]), seen
    unblock = seen.index("unblock football-live", block)
    assert all(k != "beat blocked=football-live" for k in seen[unblock:]), seen
    assert "block basketball-live" not in seen, "football failing never blocks basketball"
    commands = [b["action"] + " " + b["scope"]["spec"] for _, b in drain(channel, q["gateway"])]
    assert commands == ["unblock football-live", "unblock basketball-live",  # state on start
                        "block football-live", "unblock football-live"]


def test_every_beat_carries_its_timestamp_and_a_message_ttl_and_expires_unread(broker, channel):
    cfg = short_config(beat_ttl_s=1)
    q = declare(channel, cfg)
    rt, _ = runtime(cfg, broker)
    before = time.time()
    run(rt, 0, 3)
    rt.publisher.close()
    props, body = drain(channel, q["clients"])[0]
    assert props.expiration == "1000" and body["ttl_s"] == 1
    assert props.delivery_mode == 2 and props.content_type == "application/json"
    assert props.timestamp >= int(before) and body["sent_at"].endswith("Z")
    assert body["schema_version"] == 1 and body["type"] == "beat"
    # a beat nobody read in time is gone: after an outage, no stale beat reads as health
    run_again, _ = runtime(cfg, broker)
    run(run_again, 0, 2)
    run_again.publisher.close()
    time.sleep(1.3)
    assert drain(channel, q["clients"]) == []


def test_an_unconfirmed_block_command_stays_pending_and_no_beat_is_sent(broker, channel):
    cfg = short_config(loss_s=2)
    q = declare(channel, cfg, gateway=False)  # no gateway listening: commands are unroutable
    rt, observer = runtime(cfg, broker)
    observer.failing = {"football-feed"}
    run(rt, 0, 6)
    assert [m.kind for m in rt.publisher.outbox] == ["unblock", "unblock", "block"]
    assert rt.core.silent and "unroutable" in (rt.core.critical["broker"] or "")
    assert drain(channel, q["clients"]) == [], "no beat while commands are unconfirmed"
    bind_commands(channel, cfg, q)  # the gateway comes up
    run(rt, 6, 30)
    rt.publisher.close()
    assert not rt.publisher.outbox
    seen = kinds(drain(channel, q["witness"]))
    assert seen[:3] == ["unblock football-live", "unblock basketball-live", "block football-live"], seen
    assert seen[3:] and all(k == "beat blocked=football-live" for k in seen[3:]), seen


def test_a_broker_restart_loses_no_block_command_and_beats_resume_only_after_it(broker, channel):
    cfg = short_config(loss_s=5)
    q = declare(channel, cfg)
    rt, observer = runtime(cfg, broker)
    run(rt, 0, 4)
    beats_before = rt.beats_sent
    assert beats_before > 0

    broker.stop()
    observer.failing = {"football-feed"}
    run(rt, 4, 16)  # the block is decided while the broker is down
    assert rt.beats_sent == beats_before, "no beat while the broker is unreachable"
    assert [m.kind for m in rt.publisher.outbox] == ["block"] and rt.core.silent
    broker.start()

    run(rt, 16, 40)
    rt.publisher.close()
    assert not rt.publisher.outbox and rt.beats_sent > beats_before
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(broker.url))  # the old channel died with the broker
    try:
        ch = conn.channel()
        gateway = [b["action"] + " " + b["scope"]["spec"] for _, b in drain(ch, q["gateway"])]
        seen = kinds(drain(ch, q["witness"]))
    finally:
        conn.close()
    # persistent messages in durable queues survived the restart; the block arrived once
    assert gateway == ["unblock football-live", "unblock basketball-live", "block football-live"]
    block = seen.index("block football-live")
    assert seen[:block] == ["unblock football-live", "unblock basketball-live"] + ["beat blocked="] * beats_before
    assert seen[block + 1:] and all(k == "beat blocked=football-live" for k in seen[block + 1:]), seen


def test_a_failing_observer_silences_every_beat_until_it_recovers(broker, channel):
    cfg = short_config()
    q = declare(channel, cfg)
    rt, observer = runtime(cfg, broker)
    run(rt, 0, 3)
    before = len(drain(channel, q["clients"]))
    observer.error = "list deployments in feeds: HTTP 403 Forbidden"
    run(rt, 3, 20)
    assert drain(channel, q["clients"]) == [] and rt.core.silent
    assert before > 0
    observer.error = None
    run(rt, 20, 23)
    rt.publisher.close()
    assert len(drain(channel, q["clients"])) > 0
