"""A runnable gateway built on `heartbeat.gateway`: keeps the set of blocked scopes in
memory and prints every change (a real gateway would update its routing instead).

    LOCKSTEP_BROKER_URL=amqp://... python -m lockstep.heartbeat.examples.gateway_example \\
        --config heartbeat.json [--queue NAME]

Stops on SIGTERM/SIGINT. Exit 2 on a bad config or a missing broker URL.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from lockstep.heartbeat.cli import load_config
from lockstep.heartbeat.gateway import Gateway, GatewayCommand
from lockstep.timing.config import ConfigError
from lockstep.timing.heartbeat_config import BROKER_URL_ENV


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gateway_example", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="the heartbeat's runtime config JSON")
    parser.add_argument("--queue", default=None, help="durable command queue (default: <commands_exchange>.gateway)")
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.config)
    except ConfigError as err:
        for line in err.lines:
            print(f"gateway_example: {line}", file=sys.stderr)
        return 2
    url = os.environ.get(BROKER_URL_ENV, "").strip()
    if not url:
        print(f"gateway_example: {BROKER_URL_ENV}: not set (the AMQP URL)", file=sys.stderr)
        return 2
    blocked: set[str] = set()
    lock = threading.Lock()

    def apply(cmd: GatewayCommand) -> None:
        with lock:
            (blocked.add if cmd.action == "block" else blocked.discard)(cmd.spec)
            print(f"{cmd.action} {cmd.spec} ({cmd.id}); blocked now: {sorted(blocked)}", flush=True)

    gw = Gateway(url, cfg.commands_exchange, args.queue or f"{cfg.commands_exchange}.gateway", apply)
    signal.signal(signal.SIGTERM, lambda *_: gw.stop())
    signal.signal(signal.SIGINT, lambda *_: gw.stop())
    print(f"gateway consuming {gw.queue}", flush=True)
    gw.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
