"""Kubernetes workloads, probes, preStop hooks, rollout, PDB and HPA → model pieces.

Absent fields get the value the platform itself uses: Kubernetes' defaults
(`limits.K8S_DEFAULTS`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lockstep.timing import limits as L
from lockstep.timing.conventions import DRAIN_ANNOTATION, FINISH_ANNOTATION, NODES_ANNOTATION
from lockstep.timing.extract.argo import argo_rollout_pace, argo_strategy
from lockstep.timing.extract.annotations import (accepts, annotations_of, app_facts, grpc_facts, pools,
                                               seconds_annotation, whole_annotation)
from lockstep.timing.extract.values import ExtractError, amount, build, get, items, num, port_at, put
from lockstep.timing.model import Exec, Grpc, Hpa, HttpGet, LoadBalancer, Pdb, Probe, Probes, ReadinessGate, Rollout, Service, Shutdown, TcpSocket
from lockstep.timing.workloads import WORKLOAD_KINDS

SLEEP = re.compile(r"(?:^|[\s/;&|(])sleep\s+(\d+)([smh]?)(?![\w.])")


UNIT = {"": 1, "s": 1, "m": 60, "h": 3600}


def handler(spec: Mapping[str, Any], ports: Mapping[str, int] | None) -> dict[str, Any]:
    if get(spec, "httpGet") is not None:
        data = {"path": get(spec, "httpGet", "path") or "/", "port": port_at(spec, ports, "httpGet", "port")}
        put(data, "scheme", get(spec, "httpGet", "scheme"))
        return {"http_get": build(HttpGet, data)}
    if get(spec, "tcpSocket") is not None:
        return {"tcp_socket": build(TcpSocket, {"port": port_at(spec, ports, "tcpSocket", "port")})}
    if get(spec, "grpc") is not None:
        return {"grpc": build(Grpc, {"port": num(spec, "grpc", "port")})}
    if get(spec, "exec") is not None:
        return {"exec": build(Exec, {"command": tuple(items(get(spec, "exec", "command")))})}
    return {}


PROBE_FIELDS = {"initialDelaySeconds": "initial_delay_s", "periodSeconds": "period_s",
                "timeoutSeconds": "timeout_s", "successThreshold": "success_threshold",
                "failureThreshold": "failure_threshold"}


def probe(spec: Mapping[str, Any] | None, ports: Mapping[str, int] | None = None) -> Probe | None:
    """A Kubernetes probe; absent numbers take Kubernetes' defaults (the model's)."""
    if spec is None:
        return None
    data = handler(spec, ports)
    for key, name in PROBE_FIELDS.items():
        put(data, name, num(spec, key))
    return build(Probe, data)


def container_ports(container: Mapping[str, Any]) -> dict[str, int]:
    """Named container ports; a name that is not a string is an input error, never a crash."""
    named = {}
    for p in items(get(container, "ports")):
        name = get(p, "name")
        if name and not isinstance(name, str):
            raise ExtractError(f"ports.name: expected a string, got {name!r}")
        if name:
            named[name] = num(p, "containerPort")
    return named


def probes(container: Mapping[str, Any]) -> Probes:
    ports = container_ports(container)
    return build(Probes, {"startup": probe(get(container, "startupProbe"), ports),
                          "readiness": probe(get(container, "readinessProbe"), ports),
                          "liveness": probe(get(container, "livenessProbe"), ports)})


def sleep_seconds(command: Sequence[Any]) -> int | None:
    """`sleep N` (also `/bin/sleep N`, `sh -c "sleep 20 && ..."`, `sleep 1m`) → N seconds."""
    match = SLEEP.search(" ".join(str(c) for c in command))
    if match is None:
        return None
    return int(match.group(1)) * UNIT[match.group(2)]


def prestop(container: Mapping[str, Any], stated_drain: int | None = None) -> tuple[str, int | None]:
    """(action, drain seconds). The native `sleep` action or an `exec` that sleeps; an `exec`
    that runs something else (an ingress controller's `/wait-shutdown`, `nodetool drain`) takes
    as long as that command does: unknown ("command", None) unless the workload states it
    (`lockstep.dev/drain-seconds`, passed as `stated_drain`). An `httpGet` hook or none drain
    for 0 s as far as anyone can tell from the manifest ("none", 0)."""
    hook = get(container, "lifecycle", "preStop")
    if get(hook, "sleep") is not None:
        return "sleep", num(hook, "sleep", "seconds")
    if get(hook, "exec") is not None:
        slept = sleep_seconds(items(get(hook, "exec", "command")))
        return ("exec", slept) if slept is not None else ("command", stated_drain)
    return "none", 0


def serving_container(pod_spec: Mapping[str, Any], port: int | None = None) -> Mapping[str, Any]:
    """The container that declares `port` (the LB's target port); without one, the first
    container declaring any port; else the first container."""
    containers = items(get(pod_spec, "containers"))
    if not containers:
        raise ExtractError("pod spec has no containers")
    declared = [c for c in containers if items(get(c, "ports"))]
    for c in declared:
        if port in [num(p, "containerPort") for p in items(get(c, "ports"))]:
            return c
    return (declared or containers)[0]


def pod_shutdown(pod_spec: Mapping[str, Any], finish_s: int | None,
                 port: int | None = None, stated_drain: int | None = None) -> Shutdown:
    """preStop drain of the serving container, grace (default 30), finish from the caller
    (annotation `lockstep.dev/finish-seconds`; None = unknown), and the drain a preStop
    command takes when the workload states it (`lockstep.dev/drain-seconds`)."""
    action, drain = prestop(serving_container(pod_spec, port), stated_drain)
    grace = num(pod_spec, "terminationGracePeriodSeconds")
    data = {"drain_s": drain, "finish_s": finish_s, "prestop": action,
            "grace_s": L.K8S_DEFAULTS["grace_s"] if grace is None else grace}
    return build(Shutdown, data)


def rollout(obj: Mapping[str, Any]) -> Rollout:
    """Deployment strategy (Recreate = every pod down at once) and its deadlines; a
    StatefulSet keeps the defaults for what it lacks (the rules replace its pods one by one)."""
    spec = get(obj, "spec")
    data: dict[str, Any] = {}
    if get(obj, "kind") == "Rollout":
        return argo_rollout_pace(spec)
    kind = WORKLOAD_KINDS.get(str(get(obj, "kind")))
    if kind is not None and kind.count_may_be_unknown:
        return daemonset_rollout(spec)
    if get(spec, "strategy", "type") == "Recreate":
        data.update(max_surge=0, max_unavailable="100%")
    put(data, "max_surge", amount(spec, "strategy", "rollingUpdate", "maxSurge"))
    put(data, "max_unavailable", amount(spec, "strategy", "rollingUpdate", "maxUnavailable"))
    put(data, "min_ready_s", num(spec, "minReadySeconds"))
    put(data, "progress_deadline_s", num(spec, "progressDeadlineSeconds"))
    return build(Rollout, data)


def daemonset_rollout(spec: Mapping[str, Any] | None) -> Rollout:
    """A DaemonSet's `updateStrategy` (RollingUpdate or OnDelete) and `minReadySeconds`; what
    it leaves unstated takes the DaemonSet's own defaults, which the model fills in (a
    DaemonSet has no progress deadline)."""
    data: dict[str, Any] = {}
    put(data, "update_strategy", get(spec, "updateStrategy", "type"))
    put(data, "max_surge", amount(spec, "updateStrategy", "rollingUpdate", "maxSurge"))
    put(data, "max_unavailable", amount(spec, "updateStrategy", "rollingUpdate", "maxUnavailable"))
    put(data, "min_ready_s", num(spec, "minReadySeconds"))
    return build(Rollout, data)


def node_count(notes: Mapping[str, Any] | None) -> int | None:
    """`lockstep.dev/nodes`: the nodes a DaemonSet runs on; None (unknown) without it."""
    return whole_annotation(notes, NODES_ANNOTATION, "a whole number of nodes")


def pdb(obj: Mapping[str, Any]) -> Pdb:
    """policy/v1 PodDisruptionBudget; the selector keeps `matchLabels` (see `selects` for
    the full selector)."""
    spec = get(obj, "spec")
    labels = get(spec, "selector", "matchLabels")
    data = {"min_available": amount(spec, "minAvailable"), "max_unavailable": amount(spec, "maxUnavailable"),
            "selector": None if labels is None else {str(k): str(v) for k, v in labels.items()}}
    return build(Pdb, data)


def hpa(obj: Mapping[str, Any]) -> Hpa:
    """autoscaling/v2 HorizontalPodAutoscaler (minReplicas defaults to 1)."""
    spec = get(obj, "spec")
    data = {"min_replicas": num(spec, "minReplicas") or 1, "max_replicas": num(spec, "maxReplicas")}
    for metric in items(get(spec, "metrics")):
        if get(metric, "resource", "name") == "cpu":
            put(data, "target_cpu_percent", num(metric, "resource", "target", "averageUtilization"))
    return build(Hpa, data)


def hpa_target(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the workload an HPA scales."""
    ref = get(obj, "spec", "scaleTargetRef")
    return str(get(ref, "kind")), str(get(ref, "name"))


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, Any]) -> bool:
    """Kubernetes LabelSelector semantics: `matchLabels` and `matchExpressions` (In, NotIn,
    Exists, DoesNotExist) all hold. An empty selector selects everything; None nothing."""
    if selector is None:
        return False
    wanted = get(selector, "matchLabels") or {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    return all(expression_holds(e, labels) for e in items(get(selector, "matchExpressions")))


def expression_holds(expr: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    key, op = get(expr, "key"), get(expr, "operator")
    values = items(get(expr, "values"))
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ExtractError(f"matchExpressions: unknown operator {op!r}")


def replica_count(obj: Mapping[str, Any], owned_by_hpa: bool) -> int | None:
    """`spec.replicas`; absent means 1, or "owned by the HPA" when one scales the workload."""
    value = num(obj, "spec", "replicas")
    if value is None and not owned_by_hpa:
        return 1
    return value


def workload(obj: Mapping[str, Any], *, lb: LoadBalancer | None = None, pdb: Pdb | None = None,
             hpa: Hpa | None = None, readiness_gate: ReadinessGate | None = None,
             annotations: Mapping[str, Any] | None = None, port_hint: int | None = None,
             path: tuple[Mapping[str, Any], ...] = ()) -> Service:
    """A Deployment/StatefulSet/DaemonSet/Argo Rollout manifest → Service (a DaemonSet's pod
    count is its `lockstep.dev/nodes` annotation, else unknown). The serving container is the
    one that declares the LB's target port (IP targets), else the first declaring a port
    (`serving_container`); its first declared port is the container port. A container that
    declares none serves the port its probes ask, else `port_hint` (the selecting Service's
    targetPort): containerPort is informational, the pod listens all the same. `path`: the
    hops the linker found in front of the app (its mesh proxy: `timing.bind.mesh`)."""
    notes = annotations_of(obj) if annotations is None else annotations
    kind = WORKLOAD_KINDS.get(str(get(obj, "kind")))  # None: an Argo Rollout (rolls as a Deployment)
    pod_spec = get(obj, "spec", "template", "spec")
    target = lb.port if lb is not None and lb.target_type == "ip" else None
    container = serving_container(pod_spec, target)
    data = {
        "name": get(obj, "metadata", "name"), "kind": get(obj, "kind"),
        "image": get(container, "image"),
        "container_port": serving_port(container, target, probe_port(container) or port_hint),
        "replicas": (node_count(notes) if kind is not None and kind.count_may_be_unknown
                     else replica_count(obj, hpa is not None)),
        "labels": dict(get(obj, "spec", "template", "metadata", "labels") or {}), "name_label": False,
        "app": app_facts(notes), "probes": probes(container),
        "shutdown": pod_shutdown(pod_spec, seconds_annotation(notes, FINISH_ANNOTATION), target,
                                 seconds_annotation(notes, DRAIN_ANNOTATION)),
        "rollout": rollout(obj), "pdb": pdb, "hpa": hpa, "lb": lb, "argo": argo_strategy(obj),
        "readiness_gate": readiness_gate, "accept": accepts(notes), "path": path,
        "grpc": grpc_facts(notes), "pools": pools(notes),
    }
    put(data, "namespace", get(obj, "metadata", "namespace"))
    if get(obj, "kind") == "Rollout":
        data["kind"] = "Deployment"  # its ReplicaSets roll as a Deployment's; `argo` says it is a Rollout
    return build(Service, data)


def probe_port(container: Mapping[str, Any]) -> int | None:
    """The port the container's probes ask (readiness first), when one names a number."""
    for name in ("readinessProbe", "livenessProbe", "startupProbe"):
        for handler_key in ("httpGet", "tcpSocket", "grpc"):
            port = get(container, name, handler_key, "port")
            if isinstance(port, int) and not isinstance(port, bool):
                return port
    return None


def serving_port(container: Mapping[str, Any], target: int | None, fallback: int | None = None) -> Any:
    declared = [num(p, "containerPort") for p in items(get(container, "ports"))]
    if target in declared or (target is not None and not declared):
        return target
    if declared:
        return declared[0]
    if fallback is not None:
        return fallback
    raise ExtractError(f"container {get(container, 'name')!r} declares no port, and no probe or Service names one")
