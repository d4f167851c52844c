"""Kubernetes API objects as the API serves them (JSON, camelCase), for the heartbeat tests."""

from __future__ import annotations

from typing import Any

OBSERVABLE = {"is-observable": "true"}


def workload(kind: str, name: str, namespace: str = "feeds", *, expected: int, generation: int = 1,
             observed: int | None = None, total: int | None = None, ready: int | None = None,
             available: int | None = None, updated: int | None = None,
             current_revision: str = "rev-a", update_revision: str | None = None,
             labels: dict[str, str] | None = None) -> dict[str, Any]:
    ready = expected if ready is None else ready
    status: dict[str, Any] = {
        "observedGeneration": generation if observed is None else observed,
        "replicas": expected if total is None else total,
        "readyReplicas": ready,
        "availableReplicas": ready if available is None else available,
        "updatedReplicas": expected if updated is None else updated,
    }
    if kind == "StatefulSet":
        status["currentRevision"] = current_revision
        status["updateRevision"] = update_revision or current_revision
    return {
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "generation": generation,
                     "labels": {**OBSERVABLE, "app": name, **(labels or {})}},
        "spec": {"replicas": expected, "selector": {"matchLabels": {"app": name}}},
        "status": status,
    }


def pod(name: str, app: str, namespace: str = "feeds", *, ready: bool = True,
        terminating: bool = False, revision: str = "rev-a") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace,
                            "labels": {"app": app, "controller-revision-hash": revision}}
    if terminating:
        meta["deletionTimestamp"] = "2026-11-28T19:00:00Z"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def listing(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1" if kind != "PodList" else "v1", "kind": kind,
            "metadata": {"resourceVersion": "1"}, "items": items}
