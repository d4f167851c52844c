"""Kubernetes adapter: read the observable workloads with the official client.

Lists Deployments and StatefulSets labelled `is-observable: "true"` in each configured
namespace (RBAC grants get/list/watch on deployments, statefulsets and pods there, nothing
more), and the pods of a workload only where its replica counts cannot tell
(`observe.needs_pods`). Responses are read as raw JSON (`_preload_content=False`) and
parsed by `observe.snapshot_from_k8s`, the same parser the recorded observations use.

Any API error (HTTP 5xx, 403, 401, ...), timeout or unparsable answer raises
`ObserveError`: the observer's own API access is a critical component, and the runtime
turns the error into silence.
"""

from __future__ import annotations

import json
from typing import Any

from heartbeat.observe import Key, Snapshot, needs_pods, pod_from_k8s, snapshot_from_k8s
from timing.heartbeat_config import OBSERVABLE_LABEL, RuntimeConfig

LABEL_SELECTOR = f"{OBSERVABLE_LABEL[0]}={OBSERVABLE_LABEL[1]}"


class ObserveError(Exception):
    pass


def api_client(kubeconfig: str | None = None) -> Any:
    """In-cluster config when running in a pod (the ServiceAccount token), else kubeconfig."""
    from kubernetes import client, config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config(config_file=kubeconfig)
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
    except ValueError:
        raise ObserveError(f"{what}: answer is not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise ObserveError(f"{what}: answer has no `items` list")
    return doc


class KubeObserver:
    def __init__(self, client: Any, cfg: RuntimeConfig, timeout_s: float = 5.0) -> None:
        from kubernetes import client as k8s

        self.apps = k8s.AppsV1Api(client)
        self.core = k8s.CoreV1Api(client)
        self.cfg = cfg
        # (connect, read): a hung API server must not stall the observation loop.
        self.timeout = (timeout_s, timeout_s)

    def observe(self) -> dict[Key, Snapshot]:
        found: dict[Key, Snapshot] = {}
        for ns in self.cfg.namespaces:
            for kind, call in (("Deployment", self.apps.list_namespaced_deployment),
                               ("StatefulSet", self.apps.list_namespaced_stateful_set)):
                doc = _raw(call, f"list {kind.lower()}s in {ns}", namespace=ns,
                           label_selector=LABEL_SELECTOR, _request_timeout=self.timeout)
                for item in doc["items"]:
                    try:
                        snap = snapshot_from_k8s(item, kind)
                    except ValueError as err:
                        raise ObserveError(f"list {kind.lower()}s in {ns}: {err}") from None
                    if needs_pods(snap):
                        snap = self._with_pods(snap)
                    found[snap.key] = snap
        return found

    def _with_pods(self, snap: Snapshot) -> Snapshot:
        from dataclasses import replace

        if not snap.selector:
            return snap
        selector = ",".join(f"{k}={v}" for k, v in snap.selector)
        doc = _raw(self.core.list_namespaced_pod, f"list pods of {snap.kind} {snap.namespace}/{snap.name}",
                   namespace=snap.namespace, label_selector=selector, _request_timeout=self.timeout)
        return replace(snap, pods=tuple(pod_from_k8s(p) for p in doc["items"]))
