"""The ordering guarantee of `Publisher`/`Runtime` with an in-memory broker that can refuse,
lose connections and fail to confirm (the same guarantee the real-broker tests check end to
end), plus leadership hand-over in the runtime."""

from __future__ import annotations

from hypothesis import given, strategies as st

from heartbeat.messages import BEATS, Message
from heartbeat.publish import DeliveryError, Publisher
from heartbeat.runtime import Runtime
from tests.heartbeat.support import ScriptedObserver, short_config


class FlakyBroker:
    """Accepts (confirms) a message only while `up`; records confirmed messages in order."""

    def __init__(self) -> None:
        self.up = True
        self.confirmed: list[Message] = []
        self.connects = 0

    def connect(self) -> "FlakyBroker":
        if not self.up:
            raise ConnectionRefusedError("broker down")
        self.connects += 1
        return self

    def send(self, m: Message) -> None:
        if not self.up:
            raise DeliveryError("connection lost before the confirm")
        self.confirmed.append(m)

    def poll(self) -> None:
        if not self.up:
            raise DeliveryError("connection lost")

    def close(self) -> None:
        pass


def blocked_in(m: Message) -> set[str]:
    return set(m.body["blocked"]) if m.exchange == BEATS else set()


@given(outages=st.lists(st.booleans(), min_size=10, max_size=80),
       failing=st.lists(st.booleans(), min_size=10, max_size=80))
def test_no_beat_lists_a_scope_blocked_before_its_block_command_was_confirmed(outages, failing):
    cfg = short_config(loss_s=3, recovery_s=2)
    broker = FlakyBroker()
    observer = ScriptedObserver(cfg)
    rt = Runtime(cfg, observer, Publisher(broker.connect), instance="t")
    for t, (down, fails) in enumerate(zip(outages, failing)):
        broker.up = not down
        observer.failing = {"football-feed"} if fails else set()
        rt.tick(float(t))
    confirmed_blocked: set[str] = set()
    for m in broker.confirmed:
        if m.kind == "block":
            confirmed_blocked.add(m.body["scope"]["spec"])
        elif m.kind == "unblock":
            confirmed_blocked.discard(m.body["scope"]["spec"])
        else:
            assert blocked_in(m) == confirmed_blocked, "a beat states exactly the confirmed commands"
    # nothing lost, nothing reordered: every decided command is confirmed or still pending
    commands = [m.message_id for m in broker.confirmed if m.exchange != BEATS]
    pending = [m.message_id for m in rt.publisher.outbox]
    assert commands + pending == [f"{cfg.service}/t/{i}" for i in range(1, rt.seq + 1)]


def test_while_the_broker_is_down_no_beat_is_sent_and_commands_wait_in_order():
    cfg = short_config(loss_s=2)
    broker = FlakyBroker()
    observer = ScriptedObserver(cfg)
    rt = Runtime(cfg, observer, Publisher(broker.connect), instance="t")
    rt.tick(0.0)
    assert [m.kind for m in broker.confirmed] == ["unblock", "unblock", "beat"]
    broker.up = False
    observer.failing = {"football-feed", "basketball-feed"}
    for t in range(1, 10):
        rt.tick(float(t))
    assert [m.kind for m in rt.publisher.outbox] == ["block", "block"]
    assert [m.body["scope"]["spec"] for m in rt.publisher.outbox] == ["football-live", "basketball-live"]
    assert [m.kind for m in broker.confirmed] == ["unblock", "unblock", "beat"]
    broker.up = True
    for t in range(10, 30):
        rt.tick(float(t))
    kinds = [m.kind for m in broker.confirmed]
    assert kinds[3:5] == ["block", "block"] and set(kinds[5:]) == {"beat"}


def test_the_backoff_grows_while_the_broker_stays_down_and_resets_after_a_connect():
    broker = FlakyBroker()
    broker.up = False
    pub = Publisher(broker.connect)
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
    rt = Runtime(cfg, ScriptedObserver(cfg), Publisher(broker.connect), elector=elector, instance="b")
    for t in range(5):
        rt.tick(float(t))
    assert broker.confirmed == [] and broker.connects == 0
    elector.is_leader = True
    for t in range(5, 8):
        rt.tick(float(t))
    kinds = [(m.kind, m.body.get("scope", {}).get("spec")) for m in broker.confirmed]
    assert kinds[:2] == [("block", "football-live"), ("unblock", "basketball-live")]
    assert all(blocked_in(m) == {"football-live"} for m in broker.confirmed[2:]), \
        "a restored block holds until recovery_time passes under the new leader"


def test_a_deposed_leader_stops_publishing_at_once():
    cfg = short_config()
    broker = FlakyBroker()
    elector = StubElector(True)
    rt = Runtime(cfg, ScriptedObserver(cfg), Publisher(broker.connect), elector=elector, instance="a")
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
    rt = Runtime(cfg, observer, Publisher(broker.connect), elector=elector, instance="a")
    observer.failing = {"football-feed"}
    for t in range(5):
        rt.tick(float(t))
    assert elector.saved == [frozenset({"football-live"})]
