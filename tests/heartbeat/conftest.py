"""Fixtures for the heartbeat tests: a real RabbitMQ on loopback (once per session)."""

from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.heartbeat import broker as broker_mod
from tests.heartbeat.broker import Broker


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    server = broker_mod.find_server()
    if server is None:
        reason = ("rabbitmq-server is not installed (run scripts/setup-broker as root, or "
                  "apt-get install rabbitmq-server): the real-broker heartbeat tests need it")
        if os.environ.get("LOCKSTEP_REQUIRE_BROKER") == "1":
            pytest.fail(reason + " — LOCKSTEP_REQUIRE_BROKER=1 makes this a failure", pytrace=False)
        pytest.skip(reason)
    b = Broker(server, tmp_path_factory.mktemp("rabbitmq"))
    try:
        b.startup_s = b.start()
        yield b
    finally:
        b.close()
