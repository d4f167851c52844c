"""Where a finding's field was written: a file and line for SARIF and the text report.

Findings name model fields (`shutdown.drain_s`, `lb.health_check.interval_s`); this module
maps each back to the manifest key that set it (the preStop hook, the annotation, the PDB's
`minAvailable`), or to the nearest enclosing key when the manifest leaves it to a default.
"""

from __future__ import annotations

import re
from typing import Any

from timing import conventions as C
from timing import extract as X
from timing.audit.graph import Subject, TargetGroup, dig
from timing.audit.links import TG_KEYS
from timing.audit.reader import Doc, line_of
from timing.findings import Finding

FIELD = re.compile(r"\b(?:(?:app|shutdown|lb|probes|rollout|pdb|hpa)(?:\.[a-z_]+)+|readiness_gate|replicas)\b")
NEEDS = {f"app.{f}": C.ANNOTATION + a for f, a in C.APP_ANNOTATIONS.items()}
NEEDS["shutdown.finish_s"] = C.ANNOTATION + C.FINISH_ANNOTATION
PROBES = {"startup": "startupProbe", "readiness": "readinessProbe", "liveness": "livenessProbe"}
PROBE_KEYS = {v: k for k, v in X.PROBE_FIELDS.items()}
ROLLOUT = {"max_surge": ("spec", "strategy", "rollingUpdate", "maxSurge"),
           "max_unavailable": ("spec", "strategy", "rollingUpdate", "maxUnavailable"),
           "min_ready_s": ("spec", "minReadySeconds"), "progress_deadline_s": ("spec", "progressDeadlineSeconds")}
POD = ("spec", "template", "spec")


def needs_annotations(needs: tuple[str, ...]) -> tuple[str, ...]:
    """Unknown model fields → the workload annotation that would decide them."""
    return tuple(NEEDS.get(n, n) for n in needs)


def container_index(doc: Doc, subject: Subject) -> int:
    lb = subject.service.lb
    target = lb.port if lb is not None and lb.target_type == "ip" else None
    containers = X.items(dig(doc.obj, *POD, "containers"))
    try:
        chosen = X.serving_container(dig(doc.obj, *POD), target)
    except X.ExtractError:
        return 0
    return next((i for i, c in enumerate(containers) if c is chosen), 0)


def annotation_path(doc: Doc, key: str) -> tuple[Any, ...]:
    if key in (dig(doc.obj, "spec", "template", "metadata", "annotations") or {}) and \
            key not in (dig(doc.obj, "metadata", "annotations") or {}):
        return ("spec", "template", "metadata", "annotations", key)
    return ("metadata", "annotations", key)


def field_location(subject: Subject, field: str) -> tuple[Doc, tuple[Any, ...]] | None:
    wl = subject.workload
    head, _, rest = field.partition(".")
    if field in NEEDS:
        return wl, annotation_path(wl, NEEDS[field])
    if head == "lb":
        origin = subject.origins.get(field)
        if origin is None:
            return None
        return origin.doc, origin.path or ("metadata", "annotations")
    if head == "shutdown":
        if rest == "grace_s":
            return wl, (*POD, "terminationGracePeriodSeconds")
        return wl, (*POD, "containers", container_index(wl, subject), "lifecycle", "preStop")
    if head == "probes":
        probe, _, key = rest.partition(".")
        return wl, (*POD, "containers", container_index(wl, subject), PROBES.get(probe, probe),
                    PROBE_KEYS.get(key, key))
    if head == "rollout":
        return wl, ROLLOUT.get(rest, ("spec",))
    if head == "replicas":
        return wl, ("spec", "replicas")
    if head == "pdb" and "pdb" in subject.docs:
        key = {"min_available": "minAvailable", "max_unavailable": "maxUnavailable"}.get(rest, "selector")
        return subject.docs["pdb"], ("spec", key)
    if head == "hpa" and "hpa" in subject.docs:
        return subject.docs["hpa"], ("spec", "minReplicas")
    if head == "readiness_gate":
        if "namespace" in subject.docs:
            return subject.docs["namespace"], ("metadata", "labels")
        return wl, (*POD, "readinessGates")
    return None


def locate(finding: Finding, subject: Subject | TargetGroup) -> tuple[str, int]:
    """(file, 1-based line) of the field a finding is most about."""
    if isinstance(subject, TargetGroup):
        fields = FIELD.findall(finding.left.source) + FIELD.findall(finding.right.source)
        key = next((TG_KEYS[f] for f in fields if f in TG_KEYS), None)
        path = ("TargetGroups", subject.index) + ((key,) if key else ())
        return subject.doc.file, line_of(subject.doc.obj, path) or 1
    fields = list(finding.needs) if finding.status == "skipped" else []
    fields += FIELD.findall(finding.left.source) + FIELD.findall(finding.right.source)
    for field in fields:
        where = field_location(subject, field)
        if where is not None:
            doc, path = where
            return doc.file, line_of(doc.obj, path) or doc.line
    return subject.workload.file, subject.workload.line
