"""Where a finding's field was written: a file and line for SARIF and the text report.

Findings name model fields (`shutdown.drain_s`, `lb.health_check.interval_s`); this module
maps each back to the key of the resource that set it (the preStop hook, the annotation, the
PDB's `minAvailable`, a target group's JSON key), or to the nearest enclosing key when the
input leaves it to a default.
"""

from __future__ import annotations

from typing import Any

from lockstep.timing import conventions as C
from lockstep.timing import extract as X
from lockstep.timing.bind.judge import Judgement
from lockstep.timing.bind.lbs import TG_KEYS, UNSTATED, unstated_needs
from lockstep.timing.bind.link import Subject
from lockstep.timing.bind.nodes import DECIDED_BY as NODE_SOURCES
from lockstep.timing.bind.resource import Resource, dig
from lockstep.timing.findings import Finding
from lockstep.timing.heartbeat_config import CONFIGMAP_KEY
from lockstep.timing.workloads import WORKLOAD_KINDS

NEEDS = {f"app.{f}": C.ANNOTATION + a for f, a in C.APP_ANNOTATIONS.items()}
NEEDS["shutdown.finish_s"] = C.ANNOTATION + C.FINISH_ANNOTATION
# Only unknown when a preStop command is not a sleep: a known drain is located at the preStop hook.
DECIDED_BY = {**NEEDS, "shutdown.drain_s": C.ANNOTATION + C.DRAIN_ANNOTATION,
              # only unknown for a DaemonSet (its node count)
              "replicas": C.ANNOTATION + C.NODES_ANNOTATION,
              # the node disruption sources the input leaves unstated (timing.bind.nodes)
              **NODE_SOURCES}
PROBES = {"startup": "startupProbe", "readiness": "readinessProbe", "liveness": "livenessProbe"}
PROBE_KEYS = {v: k for k, v in X.PROBE_FIELDS.items()}
ROLLOUT = {"max_surge": ("spec", "strategy", "rollingUpdate", "maxSurge"),
           "max_unavailable": ("spec", "strategy", "rollingUpdate", "maxUnavailable"),
           "min_ready_s": ("spec", "minReadySeconds"), "progress_deadline_s": ("spec", "progressDeadlineSeconds")}
POD = ("spec", "template", "spec")


def needs_annotations(needs: tuple[str, ...]) -> tuple[str, ...]:
    """Unknown model fields → the workload annotation that would decide them, or the key of
    the target group's JSON (a load-balancer field is unknown only when that JSON is missing)."""
    return tuple(DECIDED_BY.get(n, unstated_needs(n) if n in UNSTATED else n) for n in needs)


def container_index(subject: Subject) -> int:
    lb = subject.service.lb
    target = lb.port if lb is not None and lb.target_type == "ip" else None
    containers = X.items(dig(subject.workload.obj, *POD, "containers"))
    try:
        chosen = X.serving_container(dig(subject.workload.obj, *POD), target)
    except X.ExtractError:
        return 0
    return next((i for i, c in enumerate(containers) if c is chosen), 0)


def annotation_path(wl: Resource, key: str) -> tuple[Any, ...]:
    if key in (dig(wl.obj, "spec", "template", "metadata", "annotations") or {}) and \
            key not in (dig(wl.obj, "metadata", "annotations") or {}):
        return ("spec", "template", "metadata", "annotations", key)
    return ("metadata", "annotations", key)


def field_location(subject: Subject, field: str) -> tuple[Resource, tuple[Any, ...]] | None:
    wl = subject.workload
    head, _, rest = field.partition(".")
    if field in NEEDS:
        return wl, annotation_path(wl, NEEDS[field])
    if head == "lb":
        origin = subject.source.origins.get(field) if subject.source is not None else None
        if origin is None:
            return None
        return origin[0], origin[1] or ("metadata", "annotations")
    if head.startswith("path["):
        return subject.path_origins.get(field)
    if field in subject.field_origins:  # set by another resource than the pod spec (an Istio gateway's drain)
        return subject.field_origins[field]
    if head == "shutdown":
        if rest == "grace_s":
            return wl, (*POD, "terminationGracePeriodSeconds")
        return wl, (*POD, "containers", container_index(subject), "lifecycle", "preStop")
    if head == "probes":
        probe, _, key = rest.partition(".")
        return wl, (*POD, "containers", container_index(subject), PROBES.get(probe, probe), PROBE_KEYS.get(key, key))
    kind = WORKLOAD_KINDS[subject.service.kind]
    if head == "rollout":
        path = ROLLOUT.get(rest, ("spec",))
        return wl, ("spec", kind.strategy_key, *path[2:]) if path[1:2] == ("strategy",) else path
    if head == "replicas":
        if kind.count_may_be_unknown:  # a DaemonSet's node count: its annotation
            return wl, annotation_path(wl, C.ANNOTATION + C.NODES_ANNOTATION)
        return wl, ("spec", "replicas")
    if head == "pdb" and subject.pdb is not None:
        key = {"min_available": "minAvailable", "max_unavailable": "maxUnavailable"}.get(rest, "selector")
        return subject.pdb, ("spec", key)
    if head == "hpa" and subject.hpa is not None:
        return subject.hpa, ("spec", "minReplicas")
    if head == "nodes":
        return subject.nodes.origins.get(field) if subject.nodes is not None else None
    if head == "argo" and subject.service.argo is not None:
        key = {"scale_down_delay_s": "scaleDownDelaySeconds", "abort_scale_down_delay_s": "abortScaleDownDelaySeconds"}
        return wl, ("spec", "strategy", subject.service.argo.strategy, *([key[rest]] if rest in key else []))
    if head == "readiness_gate":
        if subject.namespace is not None:
            return subject.namespace, ("metadata", "labels")
        return wl, (*POD, "readinessGates")
    return None


def fields_of(finding: Finding) -> list[str]:
    """The model fields a finding is about, most telling first: what would decide a skipped
    one, then each side's fields (carried by its terms as data)."""
    fields = list(finding.needs) if finding.status == "skipped" else []
    return fields + list(finding.left.fields) + list(finding.right.fields)


def locate(j: Judgement) -> tuple[str, int]:
    """(file, 1-based line) of the field a finding is most about; a passing finding, and one
    no field locates, points at the resource it belongs to."""
    if j.finding.status != "ok":
        if j.owner.kind == "TargetGroup":
            for field in fields_of(j.finding):
                if field in TG_KEYS:
                    file, line = j.owner.origin.locate(TG_KEYS[field])
                    return file, line or j.owner.line
        elif j.subject is not None and j.owner is j.subject.workload:
            for field in fields_of(j.finding):
                where = field_location(j.subject, field)
                if where is not None:
                    file, line = where[0].origin.locate(where[1])
                    return file, line or where[0].line
    if j.owner.kind == "ConfigMap":
        file, line = j.owner.origin.locate(("data", CONFIGMAP_KEY))
        return file, line or j.owner.line
    file, line = j.owner.home
    return file, line or 1  # (as `Resource.line`)
