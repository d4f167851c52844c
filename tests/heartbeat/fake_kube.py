"""A stand-in Kubernetes API server (stdlib, loopback, in a thread) speaking the list JSON of
deployments, statefulsets and pods, and get/create/replace of coordination.k8s.io/v1 Leases
with resourceVersion conflicts. Routes can be switched to errors or made to hang."""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from tests.heartbeat import k8s

LIST = re.compile(r"^/(?:apis/apps/v1|api/v1)/namespaces/([^/]+)/(deployments|statefulsets|pods)$")
LEASE = re.compile(r"^/apis/coordination\.k8s\.io/v1/namespaces/([^/]+)/leases(?:/([^/]+))?$")
KINDS = {"deployments": "DeploymentList", "statefulsets": "StatefulSetList", "pods": "PodList"}


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (namespace, resource) → items
        self.failures: dict[str, tuple[int, str]] = {}  # resource → (status, reason)
        self.hang_s = 0.0
        self.leases: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[str] = []
        self._version = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def client(self) -> Any:
        from kubernetes import client

        conf = client.Configuration(host=self.url)
        return client.ApiClient(conf)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, doc: dict[str, Any]) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _status(self, code: int, reason: str) -> None:
                self._send(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                  "message": reason, "reason": reason, "code": code})

            def _body(self) -> dict[str, Any]:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n) or b"{}")

            def do_GET(self) -> None:  # noqa: N802
                url = urlparse(self.path)
                fake.requests.append(f"GET {url.path}?{unquote(url.query)}")
                if m := LIST.match(url.path):
                    ns, resource = m.groups()
                    if fake.hang_s:
                        time.sleep(fake.hang_s)
                    if resource in fake.failures:
                        self._status(*fake.failures[resource])
                        return
                    items = fake.objects.get((ns, resource), [])
                    selector = parse_qs(url.query).get("labelSelector", [""])[0]
                    wanted = dict(p.split("=", 1) for p in selector.split(",") if p)
                    items = [i for i in items if wanted.items() <= (i["metadata"].get("labels") or {}).items()]
                    self._send(200, k8s.listing(KINDS[resource], items))
                elif m := LEASE.match(url.path):
                    lease = fake.leases.get(m.groups())
                    if lease is None:
                        self._status(404, "NotFound")
                    else:
                        self._send(200, lease)
                else:
                    self._status(404, "NotFound")

            def do_POST(self) -> None:  # noqa: N802
                m = LEASE.match(urlparse(self.path).path)
                if not m:
                    self._status(404, "NotFound")
                    return
                body = self._body()
                key = (m.group(1), body["metadata"]["name"])
                with fake._lock:
                    if key in fake.leases:
                        self._status(409, "AlreadyExists")
                        return
                    body["metadata"]["resourceVersion"] = fake._next_version()
                    fake.leases[key] = body
                self._send(201, body)

            def do_PUT(self) -> None:  # noqa: N802
                m = LEASE.match(urlparse(self.path).path)
                if not m or m.group(2) is None:
                    self._status(404, "NotFound")
                    return
                body = self._body()
                with fake._lock:
                    current = fake.leases.get(m.groups())
                    if current is None:
                        self._status(404, "NotFound")
                        return
                    if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
                        self._status(409, "Conflict")
                        return
                    body["metadata"]["resourceVersion"] = fake._next_version()
                    fake.leases[m.groups()] = body
                self._send(200, body)

        return Handler
