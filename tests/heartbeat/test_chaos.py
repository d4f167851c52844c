"""Chaos as a test (issue 16): the real broker killed at least three times and frozen at
least twice, over a minute or more (as long as the faults take), while scopes fail and
recover and the gateway is sometimes slower than its ack timeout. The harness and its
figures are in tests/heartbeat/chaos.py."""

from __future__ import annotations

import json

import pytest

from tests.heartbeat import chaos

pytestmark = pytest.mark.broker


@pytest.mark.timeout(240)
def test_under_broker_kills_and_freezes_no_command_is_lost_and_no_beat_lies_or_is_read_stale(broker):
    res = chaos.run(broker, duration_s=60, seed=16, min_kills=3, min_freezes=2)
    print(chaos.summary(res))
    assert res.kills >= 3 and res.freezes >= 2, res.faults
    assert res.slow_acks > 0, "the gateway was slow at least once"
    trace = json.dumps(res.trace, default=str)
    assert res.decided > 0 and res.lost == 0 and res.undelivered == 0, trace
    assert res.out_of_order == 0 and res.foreign_duplicates == 0, trace
    assert res.ahead_of_gateway == 0, "a beat showed a block the gateway had not applied"
    assert res.beats_while_failing == 0, ("a beat was published while the broker or the gateway failed",
                                          res.trace["beats_while_failing"], res.faults)
    assert res.expired_read == 0, "the client read a beat after its expires_at"
    assert res.beats_read > 0
