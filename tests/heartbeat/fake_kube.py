"""A stand-in Kubernetes API server (stdlib, loopback, in a thread) speaking the list JSON of
deployments, statefulsets and pods, and get/create/replace of coordination.k8s.io/v1 Leases
with resourceVersion conflicts. Routes can be switched to errors or made to hang.

Watches (`?watch=true`) as the API server serves them: one JSON event per line (ADDED,
MODIFIED, DELETED) for every change after the request's `resourceVersion`, BOOKMARK events
(only `metadata.resourceVersion`) every `bookmark_every_s` when `allowWatchBookmarks=true`,
the stream ending after `timeoutSeconds`; a `resourceVersion` older than the retained
history (`compact()`) gets an ERROR event carrying a 410 Expired Status. `put`/`delete`
change objects and record their events; `drop_watches()` ends every open stream."""

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
        self.bookmark_every_s = 0.0  # 0: no bookmarks
        self._events: list[tuple[int, str, str, str, dict[str, Any]]] = []  # (rv, ns, resource, type, obj)
        self._oldest = 0  # watches from a resourceVersion below this get 410
        self._changed = threading.Condition(self._lock)
        self._generation = 0  # bumped by drop_watches()
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

    # -- watched objects ----------------------------------------------------------------
    def put(self, namespace: str, resource: str, obj: dict[str, Any]) -> str:
        """Add or replace an object by name; its event is MODIFIED or ADDED. The new version."""
        with self._changed:
            items = self.objects.setdefault((namespace, resource), [])
            name = obj["metadata"]["name"]
            old = [i for i, o in enumerate(items) if o["metadata"]["name"] == name]
            rv = int(self._next_version())
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(rv)}}
            if old:
                items[old[0]] = obj
            else:
                items.append(obj)
            self._events.append((rv, namespace, resource, "MODIFIED" if old else "ADDED", obj))
            self._changed.notify_all()
            return str(rv)

    def delete(self, namespace: str, resource: str, name: str) -> None:
        with self._changed:
            items = self.objects.get((namespace, resource), [])
            gone = [o for o in items if o["metadata"]["name"] == name]
            items[:] = [o for o in items if o["metadata"]["name"] != name]
            rv = int(self._next_version())
            for obj in gone:
                self._events.append((rv, namespace, resource, "DELETED", obj))
            self._changed.notify_all()

    def compact(self) -> None:
        """Forget the history: a watch from any version seen so far gets 410 Gone."""
        with self._changed:
            self._oldest = int(self._next_version())
            self._events.clear()

    def drop_watches(self) -> None:
        with self._changed:
            self._generation += 1
            self._changed.notify_all()

    @property
    def version(self) -> str:
        return str(self._version)

    def _next_version(self) -> str:
        self._version += 1
        return str(self._version)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # a watch streams its events in chunks, as the API server does
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, doc: dict[str, Any]) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")  # no keep-alive: a closed server refuses at once
                self.close_connection = True
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
                    query = parse_qs(url.query)
                    selector = query.get("labelSelector", [""])[0]
                    wanted = dict(p.split("=", 1) for p in selector.split(",") if p)

                    def selected(obj: dict[str, Any]) -> bool:
                        return wanted.items() <= (obj["metadata"].get("labels") or {}).items()

                    if query.get("watch", [""])[0].lower() == "true":
                        self._watch(ns, resource, query, selected)
                        return
                    with fake._lock:
                        items = [i for i in fake.objects.get((ns, resource), []) if selected(i)]
                        doc = k8s.listing(KINDS[resource], items)
                        doc["metadata"]["resourceVersion"] = fake.version
                    self._send(200, doc)
                elif m := LEASE.match(url.path):
                    lease = fake.leases.get(m.groups())
                    if lease is None:
                        self._status(404, "NotFound")
                    else:
                        self._send(200, lease)
                else:
                    self._status(404, "NotFound")

            def _line(self, event: dict[str, Any]) -> None:
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _watch(self, ns: str, resource: str, query: dict[str, list[str]], selected: Any) -> None:
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    self._events(ns, resource, query, selected)
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _events(self, ns: str, resource: str, query: dict[str, list[str]], selected: Any) -> None:
                since = int(query.get("resourceVersion", ["0"])[0] or 0)
                deadline = time.monotonic() + float(query.get("timeoutSeconds", ["60"])[0])
                bookmarks = query.get("allowWatchBookmarks", [""])[0].lower() == "true" and fake.bookmark_every_s
                kind = KINDS[resource][:-len("List")]
                with fake._changed:
                    generation = fake._generation
                    if since < fake._oldest:
                        self._line({"type": "ERROR", "object": {
                            "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
                            "reason": "Expired", "message": f"too old resource version: {since}"}})
                        return
                next_bookmark = time.monotonic() + (bookmarks or 0)
                while time.monotonic() < deadline:
                    with fake._changed:
                        if fake._generation != generation:
                            return
                        news = [e for e in fake._events if e[0] > since and e[1] == ns and e[2] == resource]
                        current = int(fake.version)  # with the news: nothing between them is skipped
                        if not news and not (bookmarks and time.monotonic() >= next_bookmark):
                            fake._changed.wait(0.05)
                            continue
                    for rv, _, _, etype, obj in news:
                        since = rv
                        if selected(obj):
                            self._line({"type": etype, "object": obj})
                    if bookmarks and time.monotonic() >= next_bookmark:
                        since = max(since, current)
                        self._line({"type": "BOOKMARK", "object": {
                            "kind": kind, "apiVersion": "apps/v1", "metadata": {"resourceVersion": str(since)}}})
                        next_bookmark = time.monotonic() + bookmarks

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
