"""The ordering guarantee of `Publisher`/`Runtime` with an in-memory broker that can refuse,
lose connections and fail to confirm (the same guarantee the real-broker tests check end to
end), plus leadership hand-over in the runtime."""

from __future__ import annotations

import logging

from hypothesis import example, given, strategies as st

import json
import time

from lockstep.heartbeat.messages import BEATS, Message, ack_message, beat_message
from lockstep.heartbeat.publish import DeliveryError, Publisher
from lockstep.heartbeat.runtime import Runtime
from tests.heartbeat.support import ScriptedObserver, publisher, short_config


class FlakyBroker:
    """Accepts (confirms) a message only while `up`; records confirmed messages in order.
    Plays the gateway too: a confirmed command is acknowledged at the next poll while
    `gateway_up` (acknowledgements held while it is down arrive when it is back)."""

    def __init__(self) -> None:
        self.up = True
        self.gateway_up = True
        self.confirmed: list[Message] = []
        self.applied: list[Message] = []
        self.connects = 0
        self._to_ack: list[Message] = []
        self._lost: list[Message] = []
        self.log: list[tuple[str, Message]] = []

    def connect(self) -> "FlakyBroker":
        if not self.up:
            raise ConnectionRefusedError("broker down")
        self.connects += 1
        # The reply queue died with the old connection: the gateway still applies what it
        # holds, but those acknowledgements are lost.
        self._lost += self._to_ack
        self._to_ack = []
        return self

    def send(self, m: Message) -> None:
        if not self.up:
            raise DeliveryError("connection lost before the confirm")
        self.confirmed.append(m)
        self.log.append(("sent", m))
        if m.exchange != BEATS:
            self._to_ack.append(m)

    def poll(self) -> list[bytes]:
        if not self.up:
            raise DeliveryError("connection lost")
        if not self.gateway_up:
            return []
        for m in self._lost:
            self._apply(m)
        self._lost = []
        out = []
        for m in self._to_ack:
            self._apply(m)
            out.append(json.dumps(ack_message(m.body, gateway="t", wall=0.0)).encode())
        self._to_ack = []
        return out

    def _apply(self, m: Message) -> None:
        if m.message_id not in {a.message_id for a in self.applied}:  # de-duplicated by id
            self.applied.append(m)
            self.log.append(("applied", m))

    def close(self) -> None:
        pass


def blocked_in(m: Message) -> set[str]:
    return set(m.body["blocked"]) if m.exchange == BEATS else set()


def applied_before(broker: "FlakyBroker", upto: Message) -> dict[str, list[str]]:
    """Per scope, the actions the gateway applied before `upto` was confirmed, in order."""
    state: dict[str, list[str]] = {}
    for kind, m in broker.log:
        if m is upto:
            return state
        if kind == "applied":
            state.setdefault(m.body["scope"]["spec"], []).append(m.body["action"])
    raise AssertionError("not confirmed")


@given(outages=st.lists(st.booleans(), min_size=10, max_size=80),
       failing=st.lists(st.booleans(), min_size=10, max_size=80),
       gateway=st.lists(st.booleans(), min_size=10, max_size=80))
def test_a_beat_states_exactly_what_the_gateway_had_applied_and_no_command_is_lost(outages, failing, gateway):
    cfg = short_config(loss_s=3, recovery_s=2)
    broker = FlakyBroker()
    observer = ScriptedObserver(cfg)
    rt = Runtime(cfg, observer, publisher(cfg, broker.connect), instance="t")
    for t, (down, fails, gw) in enumerate(zip(outages, failing, gateway)):
        broker.up, broker.gateway_up = not down, gw
        observer.failing = {"football-feed"} if fails else set()
        rt.tick(float(t))
    for m in broker.confirmed:
        if m.exchange == BEATS:
            applied = applied_before(broker, m)
            assert set(applied) == {s.name for s in cfg.specs}, "no beat before every scope was acknowledged"
            # Each claim was true at the gateway at some moment before the beat: a block (an
            # unblock) told only once applied. A newer command applied whose acknowledgement
            # has not arrived yet (lost with a connection, re-sent) leaves the beat a little
            # behind the gateway, never ahead of it.
            for spec in m.body["blocked"]:
                assert "block" in applied[spec], "told blocked only once the gateway applied the block"
            for spec in m.body["healthy"]:
                assert "unblock" in applied[spec], "told healthy only once the gateway applied an unblock"
    # nothing lost, nothing reordered: the first confirmation of each command follows the
    # decision order; what is not confirmed yet is still pending, in order
    decided = [m.message_id for m in rt.queued]
    first: list[str] = []
    for m in broker.confirmed:
        if m.exchange != BEATS and m.message_id not in first:
            first.append(m.message_id)
    pending = [m.message_id for m in rt.publisher.outbox if m.message_id not in first]
    assert first + pending == decided


def test_while_the_broker_is_down_no_beat_is_sent_and_commands_wait_in_order():
    cfg = short_config(loss_s=2)
    broker = FlakyBroker()
    observer = ScriptedObserver(cfg)
    rt = Runtime(cfg, observer, publisher(cfg, broker.connect), instance="t")
    rt.tick(0.0)
    rt.tick(1.0)
    assert [m.kind for m in broker.confirmed] == ["unblock", "unblock", "beat"]
    broker.up = False
    observer.failing = {"football-feed", "basketball-feed"}
    for t in range(2, 10):
        rt.tick(float(t))
    assert [m.kind for m in rt.publisher.outbox] == ["block", "block"]
    assert [m.body["scope"]["spec"] for m in rt.publisher.outbox] == ["football-live", "basketball-live"]
    assert [m.kind for m in broker.confirmed] == ["unblock", "unblock", "beat"]
    broker.up = True
    for t in range(10, 30):
        rt.tick(float(t))
    kinds = [m.kind for m in broker.confirmed]
    assert kinds[3:5] == ["block", "block"] and set(kinds[5:]) == {"beat"}
    assert broker.confirmed[-1].body["blocked"] == ["football-live", "basketball-live"]


def _awaiting_a_silent_gateway(cfg) -> tuple[Runtime, FlakyBroker, int]:
    """A runtime whose gateway stopped acknowledging, ticked once a second until a block
    command waits for its acknowledgement; the next tick's time."""
    broker = FlakyBroker()
    observer = ScriptedObserver(cfg)
    rt = Runtime(cfg, observer, publisher(cfg, broker.connect), instance="t")
    for t in range(3):
        rt.tick(float(t))
    broker.gateway_up = False
    observer.failing = {"football-feed"}
    t = 3
    while not rt.publisher.awaiting:
        rt.tick(float(t))
        t += 1
    return rt, broker, t


def test_a_gateway_that_does_not_acknowledge_within_the_timeout_silences_every_beat():
    cfg = short_config(loss_s=2)
    rt, broker, t = _awaiting_a_silent_gateway(cfg)
    sent_at = t - 1
    beats_while_waiting = []
    while t < sent_at + cfg.ack_timeout_s + 3:
        before = rt.beats_sent
        rt.tick(float(t))
        if rt.beats_sent > before:
            beats_while_waiting.append((t, broker.confirmed[-1].body["blocked"]))
        t += 1
    assert beats_while_waiting, "a slow gateway within its timeout does not stop the beats"
    assert all(b == [] and at < sent_at + cfg.ack_timeout_s for at, b in beats_while_waiting), \
        "they keep stating the applied state; after the timeout there are none"
    assert rt.core.silent and "ack_timeout" in (rt.core.critical["gateway"] or "")
    broker.gateway_up = True
    rt.tick(float(t))
    rt.tick(float(t + 1))
    assert not rt.core.silent and broker.confirmed[-1].body["blocked"] == ["football-live"]


def test_commands_awaiting_an_acknowledgement_are_sent_again_after_a_reconnect():
    cfg = short_config(loss_s=2)
    broker = FlakyBroker()
    broker.gateway_up = False
    rt = Runtime(cfg, ScriptedObserver(cfg), publisher(cfg, broker.connect), instance="t")
    rt.tick(0.0)
    assert [w.message.kind for w in rt.publisher.awaiting] == ["unblock", "unblock"]
    broker.up = False
    rt.tick(1.0)
    broker.up = True
    broker.gateway_up = True
    for t in range(2, 6):
        rt.tick(float(t))
    ids = [m.message_id for m in broker.confirmed if m.exchange != BEATS]
    assert ids == ids[:2] * 2, "the same ids again (the gateway de-duplicates)"
    assert rt.publisher.applied == {"football-live": "unblock", "basketball-live": "unblock"}


def test_command_ids_never_repeat_across_restarts_of_the_same_pod():
    cfg = short_config()
    ids = []
    for _restart in range(3):
        broker = FlakyBroker()
        rt = Runtime(cfg, ScriptedObserver(cfg), publisher(cfg, broker.connect), instance="heartbeat-0")
        rt.tick(0.0)
        ids += [m.message_id for m in rt.queued]
    assert len(ids) == 6 and len(set(ids)) == 6
    assert all(i.startswith(f"{cfg.service}/heartbeat-0/") for i in ids)


@given(age=st.floats(0, 60), ttl=st.integers(1, 40))
@example(age=0, ttl=30)
@example(age=30, ttl=30)   # exactly expired: not published
def test_a_beats_broker_expiration_is_what_remains_of_its_ttl(age, ttl):
    from lockstep.heartbeat.messages import remaining_ttl_ms

    cfg = short_config(beat_ttl_s=ttl)
    rt = Runtime(cfg, ScriptedObserver(cfg), publisher(cfg, FlakyBroker().connect), wall=lambda: 1000.0)
    msg = beat_message(cfg, [], instance="t", seq=1, wall=1000.0, epoch="e")
    left = remaining_ttl_ms(msg, 1000.0 + age)
    assert abs(left - max(0, (ttl - age) * 1000)) <= 1  # whole milliseconds, rounded down
    assert rt.publisher.ack_timeout_s == cfg.ack_timeout_s


def test_an_expired_beat_is_not_published():
    cfg = short_config(beat_ttl_s=5)
    broker = FlakyBroker()
    clock = {"wall": 1000.0}
    pub = publisher(cfg, broker.connect, wall=lambda: clock["wall"])
    pub.pump(0.0)
    msg = beat_message(cfg, [], instance="t", seq=1, wall=1000.0, epoch="e")
    clock["wall"] = 1005.0
    assert not pub.beat(msg, 1.0) and broker.confirmed == []
    clock["wall"] = 1004.9
    assert pub.beat(msg, 1.0) and broker.confirmed == [msg]


def test_a_broker_outage_logs_one_line_however_many_retries_fail(caplog):
    cfg = short_config()
    broker = FlakyBroker()
    pub = publisher(cfg, broker.connect)
    broker.up = False
    with caplog.at_level(logging.INFO, logger="heartbeat.publish"):
        for tenth in range(0, 600):
            pub.pump(tenth / 10)
        broker.up = True
        pub.pump(1000.0)
    events = [r.event for r in caplog.records if r.levelno >= logging.INFO]
    assert events == ["broker_down", "broker_up"]


def test_the_backoff_grows_while_the_broker_stays_down_and_resets_after_a_connect():
    broker = FlakyBroker()
    broker.up = False
    pub = publisher(short_config(), broker.connect)
    attempts = []
    for tenth in range(0, 300):
        now = tenth / 10
        before = pub.retry_at
        pub.pump(now)
        if pub.retry_at != before:
            attempts.append(now)
    gaps = [round(b - a, 1) for a, b in zip(attempts, attempts[1:])]
    assert gaps[:5] == [0.5, 1.0, 2.0, 4.0, 8.0] and max(gaps) <= pub.backoff.cap_s
    broker.up = True
    assert pub.pump(100.0) is None and pub.backoff.next() == pub.backoff.initial_s


class StubElector:
    def __init__(self, leading: bool, restored: frozenset[str] = frozenset()) -> None:
        self.is_leader = leading
        self.restored_blocked = restored
        self.saved: list[frozenset[str]] = []

    def tick(self) -> bool:
        return self.is_leader

    def save_blocked(self, blocked: frozenset[str]) -> bool:
        self.saved.append(blocked)
        return True

    def release(self) -> None:
        self.is_leader = False


def test_a_follower_publishes_nothing_and_a_new_leader_first_resends_the_recorded_state():
    cfg = short_config(loss_s=2, recovery_s=30)
    broker = FlakyBroker()
    elector = StubElector(False, frozenset({"football-live"}))
    rt = Runtime(cfg, ScriptedObserver(cfg), publisher(cfg, broker.connect), elector=elector, instance="b")
    for t in range(5):
        rt.tick(float(t))
    assert broker.confirmed == [] and broker.connects == 0
    elector.is_leader = True
    for t in range(5, 9):
        rt.tick(float(t))
    kinds = [(m.kind, m.body.get("scope", {}).get("spec")) for m in broker.confirmed]
    assert kinds[:2] == [("block", "football-live"), ("unblock", "basketball-live")]
    assert all(blocked_in(m) == {"football-live"} for m in broker.confirmed[2:]), \
        "a restored block holds until recovery_time passes under the new leader"


def test_a_deposed_leader_stops_publishing_at_once():
    cfg = short_config()
    broker = FlakyBroker()
    elector = StubElector(True)
    rt = Runtime(cfg, ScriptedObserver(cfg), publisher(cfg, broker.connect), elector=elector, instance="a")
    rt.tick(0.0)
    sent = len(broker.confirmed)
    elector.is_leader = False
    for t in range(1, 10):
        rt.tick(float(t))
    assert len(broker.confirmed) == sent and not rt.publisher.outbox


def test_block_decisions_are_recorded_on_the_lease_before_the_command_is_queued():
    cfg = short_config(loss_s=2)
    elector = StubElector(True)
    observer = ScriptedObserver(cfg)
    broker = FlakyBroker()
    rt = Runtime(cfg, observer, publisher(cfg, broker.connect), elector=elector, instance="a")
    observer.failing = {"football-feed"}
    for t in range(5):
        rt.tick(float(t))
    assert elector.saved == [frozenset({"football-live"})]


def test_an_acknowledgement_that_comes_due_after_the_pump_stops_the_next_beat():
    # The pump judged the gateway at its start; a beat built after a long pump is judged at its
    # own time, so a command unacknowledged for ack_timeout by then silences it.
    from lockstep.heartbeat.decide import Command
    from lockstep.heartbeat.messages import command_message

    cfg = short_config()
    broker = FlakyBroker()
    broker.gateway_up = False
    pub = publisher(cfg, broker.connect, wall=lambda: 1000.0)
    pub.pump(0.0)
    spec = cfg.specs[0].name
    pub.enqueue([command_message(cfg, Command("block", spec, "test", 0.0), instance="t", seq=1, wall=1000.0,
                                 epoch="e")])
    pub.pump(0.0)  # sent at 0: due by ack_timeout
    assert pub.awaiting and pub.gateway_problem is None
    beat = beat_message(cfg, [], instance="t", seq=1, wall=1000.0, epoch="e")
    assert pub.beat(beat, cfg.ack_timeout_s - 0.01)  # still inside the timeout
    assert not pub.beat(beat, cfg.ack_timeout_s) and "ack_timeout" in (pub.gateway_problem or "")
    assert [m for m in broker.confirmed if m.exchange == BEATS] == [beat]


def test_a_tick_whose_pump_blocks_judges_its_beat_at_the_time_it_is_sent():
    # The runtime gives the beat the tick's time plus what observing and pumping took: a pump
    # that blocks past the acknowledgement's deadline does not let the beat after it through.
    cfg = short_config(loss_s=2)
    rt, broker, _ = _awaiting_a_silent_gateway(cfg)
    since = rt.publisher.awaiting[0].since
    poll = broker.poll

    def blocking_poll() -> list[bytes]:
        time.sleep(0.3)
        return poll()

    broker.poll = blocking_poll  # type: ignore[method-assign]
    before = rt.beats_sent
    rt.next_beat = 0.0  # a beat is due on this tick
    rt.tick(since + cfg.ack_timeout_s - 0.2)  # not yet late when the tick starts; late once it has pumped
    assert rt.beats_sent == before and "ack_timeout" in (rt.publisher.gateway_problem or "")
