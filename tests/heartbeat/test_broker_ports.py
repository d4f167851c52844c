"""The test broker's ports: free when picked, and below the range the kernel takes outgoing
connections' local ports from (which could take one while a restarted broker is down)."""

from __future__ import annotations

import socket

from tests.heartbeat.broker import LINUX_EPHEMERAL_LOW, PORTS_FROM, ephemeral_low, free_port


def test_a_brokers_port_is_free_and_below_the_ephemeral_range():
    low = ephemeral_low()
    for _ in range(50):
        port = free_port()
        assert PORTS_FROM <= port < low
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_without_the_kernels_range_the_linux_default_is_assumed(tmp_path):
    assert ephemeral_low(str(tmp_path / "missing")) == LINUX_EPHEMERAL_LOW
    (tmp_path / "range").write_text("40000\t60999\n")
    assert ephemeral_low(str(tmp_path / "range")) == 40000
