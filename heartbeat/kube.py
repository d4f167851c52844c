"""Kubernetes adapter: read the observable workloads with the official client.

Deployments and StatefulSets labelled `is-observable: "true"` in each configured namespace
(RBAC grants get/list/watch on deployments, statefulsets and pods there, nothing more), and
the pods of a workload only where its replica counts cannot tell (`observe.needs_pods`).
Objects are read as raw JSON and parsed by `observe.snapshot_from_k8s`, the same parser the
recorded observations use.

Two observers:
- `WatchObserver` (observe_mode "watch", the default): per namespace and kind, a list, then
  a watch from the list's `resourceVersion` with bookmarks (`allowWatchBookmarks`: the
  server may send BOOKMARK events that only advance the resourceVersion, so a restarted
  watch does not replay or fall out of the history window), restarted from the last
  resourceVersion it saw; a `410 Gone` (that version is no longer in the server's history)
  means a fresh list; and a full relist every `resync_period_s` regardless. Events land in
  a cache; `observe()` reads it, and `changed` wakes the service loop, so a failure is
  acted on as soon as its event arrives. A stream that cannot list or watch is a critical
  failure until it has listed again.
- `KubeObserver` (observe_mode "poll"): one list of everything per `observe_interval_s`.

Any API error (HTTP 5xx, 403, 401, ...), timeout or unparsable answer raises `ObserveError`:
the observer's own API access is a critical component, and the runtime turns the error into
silence.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

from lockstep.heartbeat.observe import Key, Snapshot, needs_pods, pod_from_k8s, snapshot_from_k8s
from lockstep.timing.config import ConfigError
from lockstep.timing.heartbeat_config import OBSERVABLE_LABEL, RuntimeConfig

LABEL_SELECTOR = f"{OBSERVABLE_LABEL[0]}={OBSERVABLE_LABEL[1]}"
API_TIMEOUT_S = 5.0  # connect and read timeout of every list call: a hung API server fails fast
HTTP_GONE = 410
log = logging.getLogger("heartbeat.kube")


class ObserveError(Exception):
    pass


def api_client(kubeconfig: str | None = None) -> Any:
    """In-cluster config when running in a pod (the ServiceAccount token), else kubeconfig.
    A missing or malformed kubeconfig is a ConfigError of one line."""
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        try:
            config.load_kube_config(config_file=kubeconfig)
        except Exception as err:  # the loader raises ConfigException, yaml errors, TypeError, ...
            first = str(err).strip().splitlines()[0] if str(err).strip() else err.__class__.__name__
            raise ConfigError([f"kubernetes: no in-cluster service account and no usable kubeconfig "
                               f"{kubeconfig or '(default)'}: {first[:200]}"]) from None
    return client.ApiClient()


def _raw(call: Any, what: str, **kwargs: Any) -> dict[str, Any]:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    try:
        resp = call(_preload_content=False, **kwargs)
        data = resp.data
    except ApiException as err:
        raise ObserveError(f"{what}: HTTP {err.status} {err.reason}".rstrip()) from None
    except (HTTPError, OSError) as err:
        raise ObserveError(f"{what}: {err.__class__.__name__}: {err}") from None
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        raise ObserveError(f"{what}: answer is not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise ObserveError(f"{what}: answer has no `items` list")
    return doc


def _parse(item: Any, kind: str, where: str) -> Snapshot:
    try:
        return snapshot_from_k8s(item, kind)
    except ValueError as err:
        raise ObserveError(f"{where}: {err}") from None


class _Pods:
    """Lists a workload's pods when its replica counts lag its spec."""

    def __init__(self, client: Any, timeout_s: float) -> None:
        from kubernetes import client as k8s

        self.core = k8s.CoreV1Api(client)
        self.timeout = (timeout_s, timeout_s)

    def add(self, snap: Snapshot) -> Snapshot:
        from dataclasses import replace

        if not needs_pods(snap) or not snap.selector:
            return snap
        selector = ",".join(f"{k}={v}" for k, v in snap.selector)
        doc = _raw(self.core.list_namespaced_pod, f"list pods of {snap.kind} {snap.namespace}/{snap.name}",
                   namespace=snap.namespace, label_selector=selector, _request_timeout=self.timeout)
        return replace(snap, pods=tuple(pod_from_k8s(p) for p in doc["items"] if isinstance(p, dict)))


def _list_calls(client: Any) -> dict[str, Any]:
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(client)
    return {"Deployment": apps.list_namespaced_deployment, "StatefulSet": apps.list_namespaced_stateful_set}


class KubeObserver:
    """Poll mode: list every namespace's workloads on each `observe()`."""

    def __init__(self, client: Any, cfg: RuntimeConfig, timeout_s: float = API_TIMEOUT_S) -> None:
        self.calls = _list_calls(client)
        self.pods = _Pods(client, timeout_s)
        self.cfg = cfg
        # (connect, read): a hung API server must not stall the observation loop.
        self.timeout = (timeout_s, timeout_s)
        kinds = len(self.calls) * len(cfg.namespaces)
        self.max_observe_s = 2 * timeout_s * (kinds + len(cfg.specs))

    def observe(self) -> dict[Key, Snapshot]:
        found: dict[Key, Snapshot] = {}
        for ns in self.cfg.namespaces:
            for kind, call in self.calls.items():
                what = f"list {kind.lower()}s in {ns}"
                doc = _raw(call, what, namespace=ns, label_selector=LABEL_SELECTOR, _request_timeout=self.timeout)
                for item in doc["items"]:
                    snap = self.pods.add(_parse(item, kind, what))
                    found[snap.key] = snap
        return found


class _Gone(Exception):
    """The watch's resourceVersion left the server's history: list again."""


class WatchObserver:
    """Watch mode: a list + watch stream per (namespace, kind) in a daemon thread, into a cache."""

    def __init__(self, client: Any, cfg: RuntimeConfig, timeout_s: float = API_TIMEOUT_S,
                 retry_s: float = 1.0) -> None:
        self.client = client
        self.cfg = cfg
        self.calls = _list_calls(client)
        self.pods = _Pods(client, timeout_s)
        self.timeout_s = timeout_s
        self.retry_s = retry_s
        self.max_observe_s = 2 * timeout_s * len(cfg.specs)  # only pod lists are synchronous
        self.changed = threading.Event()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._cache: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self._problem: dict[tuple[str, str], str | None] = {}
        self._watches: list[Any] = []
        self._threads: list[threading.Thread] = []
        self.lists = 0  # every list (first, after 410 Gone, after an error, resync)
        self.gone = 0
        self.events = 0
        self.bookmarks = 0
        for ns in cfg.namespaces:
            for kind in self.calls:
                self._problem[(ns, kind)] = "not listed yet"

    # -- the service side ------------------------------------------------------------------
    def start(self) -> None:
        for ns, kind in self._problem:
            t = threading.Thread(target=self._run, args=(ns, kind), name=f"watch-{kind}-{ns}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            watches = list(self._watches)
        for w in watches:
            w.stop()
        for t in self._threads:
            t.join(self.timeout_s)

    def observe(self) -> dict[Key, Snapshot]:
        with self._lock:
            problems = [f"{kind.lower()}s in {ns}: {p}" for (ns, kind), p in self._problem.items() if p]
            items = [(kind, ns, obj) for (ns, kind), objs in self._cache.items() for obj in objs.values()]
        if problems:
            raise ObserveError("watch: " + "; ".join(problems))
        found: dict[Key, Snapshot] = {}
        for kind, ns, obj in items:
            snap = self.pods.add(_parse(obj, kind, f"watch {kind.lower()}s in {ns}"))
            found[snap.key] = snap
        return found

    # -- one stream ------------------------------------------------------------------------
    def _set(self, key: tuple[str, str], problem: str | None) -> None:
        with self._lock:
            before = self._problem.get(key)
            self._problem[key] = problem
        if problem and before is None:
            log.warning("watch failed: global failure until it lists again",
                        extra={"event": "watch_failed", "stream": f"{key[1]}/{key[0]}", "problem": problem})
        elif before and problem is None and before != "not listed yet":
            log.info("watch recovered", extra={"event": "watch_recovered", "stream": f"{key[1]}/{key[0]}"})
        self.changed.set()

    def _run(self, ns: str, kind: str) -> None:
        key = (ns, kind)
        while not self._stop.is_set():
            try:
                rv = self._list(ns, kind)
                resync_at = time.monotonic() + self.cfg.resync_period_s
                while not self._stop.is_set() and time.monotonic() < resync_at:
                    rv = self._watch(ns, kind, rv, resync_at - time.monotonic())
            except _Gone:
                self.gone += 1
                continue  # list again at once
            except Exception as err:  # API trouble: silence until a list succeeds again
                self._set(key, str(err)[:300] or err.__class__.__name__)
                self._stop.wait(self.retry_s)

    def _list(self, ns: str, kind: str) -> str:
        what = f"list {kind.lower()}s in {ns}"
        doc = _raw(self.calls[kind], what, namespace=ns, label_selector=LABEL_SELECTOR,
                   _request_timeout=(self.timeout_s, self.timeout_s))
        objs = {}
        for item in doc["items"]:
            snap = _parse(item, kind, what)  # refuse a malformed object at once
            objs[snap.name] = item
        rv = (doc.get("metadata") or {}).get("resourceVersion")
        if not isinstance(rv, str) or not rv:
            raise ObserveError(f"{what}: answer has no metadata.resourceVersion")
        with self._lock:
            self._cache[(ns, kind)] = objs
            self.lists += 1
        self._set((ns, kind), None)
        return rv

    def _watch(self, ns: str, kind: str, rv: str, left_s: float) -> str:
        """Watch from `rv` until the server ends the watch (at most `left_s`); the last
        resourceVersion seen (an event's or a bookmark's)."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        call = self.calls[kind]

        def raw_list(**kw: Any) -> Any:
            # Without a docstring naming a return type, the client's Watch hands each event's
            # object over as parsed JSON instead of building a model from it (which fails on
            # fields a model does not expect, and which `_parse` does not need).
            return call(**kw)

        w = watch.Watch()
        with self._lock:
            self._watches.append(w)
        seconds = max(1, int(left_s))
        try:
            # read timeout: the watch's own length plus the API timeout, so a silent server
            # is detected by the end of the window.
            for event in w.stream(raw_list, namespace=ns, label_selector=LABEL_SELECTOR,
                                  resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=seconds,
                                  _request_timeout=(self.timeout_s, seconds + self.timeout_s)):
                if self._stop.is_set():
                    break
                rv = self._apply(ns, kind, event) or rv
        except ApiException as err:
            if err.status == HTTP_GONE:
                raise _Gone() from None
            raise ObserveError(f"watch {kind.lower()}s in {ns}: HTTP {err.status} {err.reason}".rstrip()) from None
        finally:
            with self._lock:
                self._watches.remove(w)
        return rv

    def _apply(self, ns: str, kind: str, event: dict[str, Any]) -> str | None:
        etype, obj = event.get("type"), event.get("raw_object", event.get("object"))
        if not isinstance(obj, dict):
            raise ObserveError(f"watch {kind.lower()}s in {ns}: event without an object")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        rv = meta.get("resourceVersion")
        if etype == "BOOKMARK":
            self.bookmarks += 1
            return rv if isinstance(rv, str) else None
        name = meta.get("name")
        if etype in ("ADDED", "MODIFIED"):
            _parse(obj, kind, f"watch {kind.lower()}s in {ns}")
            with self._lock:
                self._cache.setdefault((ns, kind), {})[str(name)] = obj
        elif etype == "DELETED":
            with self._lock:
                self._cache.setdefault((ns, kind), {}).pop(str(name), None)
        else:
            raise ObserveError(f"watch {kind.lower()}s in {ns}: unexpected event type {etype!r}")
        self.events += 1
        self.changed.set()
        return rv if isinstance(rv, str) else None
