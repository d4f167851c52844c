"""Benchmark: the heartbeat chaos run (tests/heartbeat/chaos.py) for about ten minutes
against a private RabbitMQ on loopback: kill -9 and SIGSTOP/SIGCONT of the broker every
3–8 s, scopes failing and recovering, a gateway sometimes slower than its ack timeout.
Targets: 0 lost, 0 undelivered, 0 out of order, 0 beats ahead of the gateway, 0 beats while failing,
0 expired beats read.

    .venv/bin/python bench/bench_heartbeat_chaos.py [--minutes 10] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.heartbeat import broker as broker_mod  # noqa: E402
from tests.heartbeat import chaos  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    server = broker_mod.find_server()
    if server is None:
        print("rabbitmq-server is not installed (scripts/setup-broker)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        b = broker_mod.Broker(server, Path(tmp))
        b.start()
        started = time.monotonic()
        try:
            res = chaos.run(b, duration_s=args.minutes * 60, seed=args.seed)
        finally:
            b.close()
    wall = time.monotonic() - started
    print(f"heartbeat chaos: {wall:.0f} s wall, {res.kills} kills, {res.freezes} freezes, "
          f"{res.slow_acks} slow gateway acks, {res.decided} commands decided, {res.beats_read} beats read")
    for name in ("lost", "undelivered", "out_of_order", "foreign_duplicates", "ahead_of_gateway", "beats_while_failing",
                 "expired_read"):
        print(f"  {name:<20} {getattr(res, name):>6}   (target 0)")
    print(f"  {'duplicates':<20} {res.duplicates:>6}   (same id; allowed: at-least-once)")
    print(f"  {'expired_dropped':<20} {res.expired_dropped:>6}   (delivered late by a frozen broker, "
          "dropped by the client contract)")
    return 0 if res.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
