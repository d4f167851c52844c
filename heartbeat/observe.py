"""Is a watched workload healthy? Pure judgement of Kubernetes status snapshots (seed 000).

The naive check `available == total` breaks in three ordinary situations, each of which
must not be taken for a failure:
- a Deployment's rolling update adds a surge pod, so `status.replicas` exceeds the spec:
  compare available replicas with the *expected* count (`spec.replicas`), never the total;
- a StatefulSet updates in place, one pod at a time: while a rollout is in progress one pod
  of the ordinal being replaced may be missing, as long as the rollout keeps progressing
  (`updatedReplicas`/`readyReplicas` of the update revision move);
- a rescale (HPA, KEDA) changes `spec.replicas` before pods exist: the last count the
  workload actually reached is remembered (`Memory`) and judged against until the new
  count is reached.
A workload with a PodDisruptionBudget is healthy while at least the PDB minimum is
available. Where the replica counts cannot tell (the controller has not yet observed the
latest spec: `observedGeneration < generation`), the pods themselves are counted.

Imports nothing but `timing` and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from lockstep.timing.derived import scaled
from lockstep.timing.heartbeat_config import WatchedWorkload

Key = tuple[str, str, str]  # (kind, namespace, name)


def key_of(w: WatchedWorkload) -> Key:
    return (w.kind, w.namespace, w.name)


@dataclass(frozen=True)
class Pod:
    name: str
    ready: bool
    terminating: bool
    revision: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """What the Kubernetes API said about one workload at one moment."""

    kind: str
    namespace: str
    name: str
    generation: int
    observed_generation: int
    expected: int  # spec.replicas
    total: int  # status.replicas (includes a rolling update's surge pods)
    ready: int
    available: int
    updated: int
    current_revision: str | None = None  # StatefulSet only
    update_revision: str | None = None
    selector: tuple[tuple[str, str], ...] = ()
    pods: tuple[Pod, ...] | None = None

    @property
    def key(self) -> Key:
        return (self.kind, self.namespace, self.name)


def _int(obj: Mapping[str, Any], field: str, where: str, default: int | None = 0) -> int:
    value = obj.get(field, default)
    if value is None:
        value = default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{where}.{field}: expected a non-negative integer (got {value!r})")
    return value


def _mapping(obj: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    value = obj.get(field)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{field}: expected an object (got {type(value).__name__})")
    return value


def snapshot_from_k8s(obj: Any, kind: str | None = None) -> Snapshot:
    """A Deployment or StatefulSet as the Kubernetes API serves it (JSON, camelCase).
    Anything else — wrong kinds, fields of the wrong type — is a ValueError naming the field."""
    if not isinstance(obj, Mapping):
        raise ValueError(f"expected a Deployment or StatefulSet object (got {type(obj).__name__})")
    kind = obj.get("kind") or kind
    if kind not in ("Deployment", "StatefulSet"):
        raise ValueError(f"kind: expected Deployment or StatefulSet (got {kind!r})")
    meta = _mapping(obj, "metadata")
    spec = _mapping(obj, "spec")
    status = _mapping(obj, "status")
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise ValueError("metadata.name/metadata.namespace: missing")
    where = f"{kind} {namespace}/{name}"
    ready = _int(status, "readyReplicas", f"{where} status")
    # StatefulSets report availableReplicas only since Kubernetes 1.22: fall back to ready.
    available = _int(status, "availableReplicas", f"{where} status",
                     default=ready if kind == "StatefulSet" else 0)
    labels = _mapping(_mapping(spec, "selector"), "matchLabels")
    return Snapshot(
        kind=kind, namespace=namespace, name=name,
        generation=_int(meta, "generation", f"{where} metadata"),
        observed_generation=_int(status, "observedGeneration", f"{where} status"),
        expected=_int(spec, "replicas", f"{where} spec", default=1),  # the API's default
        total=_int(status, "replicas", f"{where} status"),
        ready=ready, available=available,
        updated=_int(status, "updatedReplicas", f"{where} status"),
        current_revision=status.get("currentRevision"),
        update_revision=status.get("updateRevision"),
        selector=tuple(sorted((str(k), str(v)) for k, v in labels.items())),
    )


def pod_from_k8s(obj: Any) -> Pod:
    if not isinstance(obj, Mapping):
        raise ValueError(f"pod: expected an object (got {type(obj).__name__})")
    meta = _mapping(obj, "metadata")
    conditions = _mapping(obj, "status").get("conditions") or []
    if not isinstance(conditions, list):
        raise ValueError("status.conditions: expected a list")
    ready = any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True"
                for c in conditions)
    labels = _mapping(meta, "labels")
    return Pod(name=str(meta.get("name", "?")), ready=ready,
               terminating=meta.get("deletionTimestamp") is not None,
               revision=labels.get("controller-revision-hash") or labels.get("pod-template-hash"))


def needs_pods(s: Snapshot) -> bool:
    """The replica counts describe an older spec: count the pods instead."""
    return s.observed_generation < s.generation


# ---- judgement ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Memory:
    """What the observer remembers about a workload between observations."""

    settled_expected: int  # the last spec.replicas the workload actually reached
    step_started: float | None = None  # StatefulSet rollout: when the current step began
    step_progress: tuple[int, int] = (-1, -1)  # (updated, ready) at that moment


@dataclass(frozen=True)
class Verdict:
    healthy: bool
    reason: str
    available: int = 0
    required: int = 0
    since: float | None = None  # an unhealthy condition known to have begun earlier


def pdb_minimum(w: WatchedWorkload, expected: int) -> int:
    """Pods that must stay available: the PDB minimum (percentages round up, as Kubernetes
    does for both fields), else every expected pod. Never below one while pods are expected:
    a workload with nothing available serves nothing, whatever its PDB allows."""
    if w.pdb_min_available is not None:
        need = scaled(w.pdb_min_available, expected, round_up=True)
    elif w.pdb_max_unavailable is not None:
        need = expected - scaled(w.pdb_max_unavailable, expected, round_up=True)
    else:
        need = expected
    if expected == 0:
        return 0
    return min(expected, max(1, need))


def rollout_minimum(w: WatchedWorkload, expected: int) -> int | None:
    """Pods a Deployment's own rolling update keeps available: expected minus its
    maxUnavailable (a percentage rounds down, as the Deployment API documents), never below
    one while pods are expected. None when the rollout takes nothing away."""
    if w.rollout_max_unavailable is None:
        return None
    down = scaled(w.rollout_max_unavailable, expected, round_up=False)
    if down == 0:
        return None
    return min(expected, max(1, expected - down)) if expected else 0


def dep_rolling(s: Snapshot) -> bool:
    """A Deployment's rolling update is in progress: not every expected pod is updated."""
    return s.kind == "Deployment" and s.updated < s.expected


def _available(s: Snapshot) -> tuple[int, str]:
    if needs_pods(s) and s.pods is not None:
        n = sum(1 for p in s.pods if p.ready and not p.terminating)
        return n, f"{n} ready pods (status describes generation {s.observed_generation} < {s.generation})"
    if s.kind == "StatefulSet":
        n = min(s.ready, s.available)
        return n, f"{n} ready"
    return s.available, f"{s.available} available"


def sts_rolling(s: Snapshot) -> bool:
    return s.kind == "StatefulSet" and (
        (s.update_revision is not None and s.update_revision != s.current_revision)
        or s.updated < s.expected)


def judge(w: WatchedWorkload, s: Snapshot | None, memory: Memory | None, now: float,
          stall_s: int) -> tuple[Verdict, Memory | None]:
    """Judge one observation. `stall_s`: how long one StatefulSet rollout step may keep a
    pod missing before the rollout counts as stuck (the spec's loss time: the budget one
    pod replacement gets under `heartbeat-rides-out-pod-replacement`)."""
    if s is None:
        return Verdict(False, f"{w.kind} {w.namespace}/{w.name} not found with label is-observable=true"), memory
    # First sight: a status that lags the spec still shows the count the workload had
    # before (a rescale caught in flight); otherwise nothing better than the spec is known.
    mem = memory or Memory(settled_expected=min(s.expected, s.total) if needs_pods(s) else s.expected)
    available, shown = _available(s)
    # Rescale memory: judge against the count the workload last reached until it reaches
    # the new one.
    reached = available >= s.expected and not needs_pods(s)
    # Raised only once the new count is reached; a scale-down takes effect at once.
    new_mem = replace(mem, settled_expected=s.expected if reached else min(mem.settled_expected, s.expected))
    base = min(s.expected, new_mem.settled_expected)
    rescaling = s.expected != new_mem.settled_expected
    required = pdb_minimum(w, base)
    note = f"rescale {mem.settled_expected}→{s.expected} in progress, " if rescaling else ""
    rollout_floor = rollout_minimum(w, base) if dep_rolling(s) else None
    if rollout_floor is not None and rollout_floor < required:
        # The rollout may take maxUnavailable pods away by design; a PDB does not stop it.
        required = rollout_floor
        note += f"rollout {s.updated}/{s.expected} updated (maxUnavailable {w.rollout_max_unavailable}), "

    if sts_rolling(s) and not rescaling:
        progress = (s.updated, s.ready)
        if new_mem.step_started is None or progress != new_mem.step_progress:
            new_mem = replace(new_mem, step_started=now, step_progress=progress)
        # One ordinal at a time is replaced: one pod may be missing while the step lasts.
        tolerated = max(1, min(required, base - 1)) if base else 0
        step_age = now - (new_mem.step_started or now)
        if available >= required:
            return Verdict(True, f"{shown} ≥ {required} required", available, required), new_mem
        if available >= tolerated and step_age < stall_s:
            return Verdict(True, f"rollout step {s.updated}/{s.expected} updated: {shown}, one pod "
                           f"in replacement for {step_age:.0f}s", available, tolerated), new_mem
        if available >= tolerated:  # the missing pod has been missing since the step began
            return Verdict(False, f"rollout stuck {step_age:.0f}s at {s.updated}/{s.expected} updated: "
                           f"{shown} < {required} required", available, required,
                           since=new_mem.step_started), new_mem
        return Verdict(False, f"rollout step {s.updated}/{s.expected} updated: {shown} < {tolerated} "
                       "(more than the pod in replacement is missing)", available, tolerated), new_mem
    new_mem = replace(new_mem, step_started=None, step_progress=(-1, -1))
    if available >= required:
        return Verdict(True, f"{note}{shown} ≥ {required} required", available, required), new_mem
    return Verdict(False, f"{note}{shown} < {required} required", available, required), new_mem
