"""A private RabbitMQ node on loopback for the tests: Debian's `rabbitmq-server` run as the
current user with its own data dir, node name, ports (AMQP, distribution, epmd), config
file and a fresh Erlang cookie in its own HOME. Started once per session; `restart()` keeps
the data dir, so durable exchanges, queues and persistent messages survive it."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

NODENAME = "lockstep-test@localhost"


def find_server() -> str | None:
    """The real start script. Debian's /usr/sbin wrapper switches to the `rabbitmq` user
    and its system data dir when run as root, so it is not used."""
    for candidate in ["/usr/lib/rabbitmq/bin/rabbitmq-server",
                      *sorted(glob.glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server"))]:
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("rabbitmq-server")
    if found and not found.startswith("/usr/sbin/"):
        return found
    return None


# Below the kernel's ephemeral range (by default from `LINUX_EPHEMERAL_LOW`): a port the kernel
# hands out for `bind(0)` comes from that range, and so does the local port of every outgoing
# connection, which may take it between the pick and the broker's own bind, or while a broker
# stopped by a test is down. A broker restarted by the chaos test once found its Erlang
# distribution port, 51001, in use by something that was not Erlang.
PORTS_FROM = 20000
LINUX_EPHEMERAL_LOW = 32768  # the low end of net.ipv4.ip_local_port_range by default (up to 60999)


def ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return LINUX_EPHEMERAL_LOW


def free_port() -> int:
    """A TCP port free on loopback now, outside the range outgoing connections take theirs from."""
    rng = secrets.SystemRandom()
    top = ephemeral_low()
    for _ in range(100):
        port = rng.randrange(PORTS_FROM, top) if top > PORTS_FROM + 100 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free loopback port in {PORTS_FROM}-{top - 1}")


class Broker:
    def __init__(self, server: str, base: Path) -> None:
        self.server = server
        self.base = base
        self.amqp_port, self.dist_port, self.epmd_port = free_port(), free_port(), free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        home = base / "home"
        home.mkdir(parents=True)
        cookie = home / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(20))
        cookie.chmod(0o400)
        (base / "rabbitmq.conf").write_text(
            f"listeners.tcp.default = 127.0.0.1:{self.amqp_port}\n"
            "loopback_users.guest = true\n"
            "log.console = false\nlog.file.level = info\n"
            "disk_free_limit.absolute = 1MB\n")  # a full CI disk must not put the broker in alarm
        (base / "enabled_plugins").write_text("[].\n")
        (base / "rabbitmq-env.conf").write_text("")  # not the system's
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
            "HOME": str(home),
            "RABBITMQ_NODENAME": NODENAME,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.amqp_port),
            "RABBITMQ_DIST_PORT": str(self.dist_port),
            "ERL_EPMD_PORT": str(self.epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_CONF_ENV_FILE": str(base / "rabbitmq-env.conf"),
        }

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.amqp_port}/%2F"

    def start(self, timeout_s: float = 60.0) -> float:
        import pika

        started = time.monotonic()
        out = open(self.base / "server.out", "ab")
        self.proc = subprocess.Popen([self.server], env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        params = pika.URLParameters(self.url)
        params.connection_attempts = 1
        params.socket_timeout = 2
        while time.monotonic() - started < timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"rabbitmq-server exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                pika.BlockingConnection(params).close()
                return time.monotonic() - started
            except pika.exceptions.AMQPError:
                time.sleep(0.2)
        raise RuntimeError(f"rabbitmq-server did not accept connections within {timeout_s}s:\n{self.log_tail()}")

    def stop(self, timeout_s: float = 30.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # the start script traps it and stops the node
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the session this fixture created
            self.proc.wait(5)
        self.proc = None

    def restart(self) -> float:
        self.stop()
        return self.start()

    def close(self) -> None:
        self.stop()
        epmd = shutil.which("epmd", path=f"/usr/lib/erlang/bin:{self.env['PATH']}")
        if epmd:  # the epmd our node started on its own port; nothing else uses that port
            subprocess.run([epmd, "-kill"], env=self.env, capture_output=True, timeout=10)

    def log_tail(self, lines: int = 30) -> str:
        logs = sorted((self.base / "log").glob("*.log")) + [self.base / "server.out"]
        text = "".join(p.read_text(errors="replace") for p in logs if p.exists())
        return "\n".join(text.splitlines()[-lines:])
