"""`/hc/live` and `/hc/ready` on stdlib http.server, served from a daemon thread.

live: the main loop ticked recently (a hung loop gets the pod restarted).
ready: the last observation of the Kubernetes API succeeded. Followers are ready too: they
observe, and must be ready for a rollout of the heartbeat itself to proceed.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol


class Health(Protocol):
    def live(self, now: float) -> bool: ...
    def ready(self) -> bool: ...
    def status(self) -> dict[str, Any]: ...


def _handler(health: Health) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path == "/hc/live":
                ok = health.live(time.monotonic())
            elif self.path == "/hc/ready":
                ok = health.ready()
            else:
                self.send_error(404)
                return
            body = json.dumps({"ok": ok, **health.status()}, default=str).encode()
            self.send_response(200 if ok else 503)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # probes every few seconds: no access log
            pass

    return Handler


def start(port: int, health: Health, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), _handler(health))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="hc-http", daemon=True).start()
    return server
