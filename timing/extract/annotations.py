"""The `lockstep.dev/*` facts read back from a workload's annotations (what infra writes:
`timing.conventions.fact_annotations`). Without them the facts stay unknown (None): rules
then report `skipped`, never a guess."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockstep.timing.conventions import ACCEPT_ANNOTATION, ANNOTATION, APP_ANNOTATIONS
from lockstep.timing.extract.values import ExtractError, build, get
from lockstep.timing.model import Accept, AppFacts

def whole_annotation(annotations: Mapping[str, Any] | None, name: str, expected: str) -> int | None:
    """A `lockstep.dev/<name>` annotation holding a whole number; None without it."""
    raw = get(annotations, ANNOTATION + name)
    if raw is None:
        return None
    text = str(raw).strip()
    if not text.isdigit():
        raise ExtractError(f"{ANNOTATION}{name}: expected {expected}, got {raw!r}")
    return int(text)


def seconds_annotation(annotations: Mapping[str, Any] | None, name: str) -> int | None:
    return whole_annotation(annotations, name, "whole seconds")


def app_facts(annotations: Mapping[str, Any] | None) -> AppFacts:
    values = {f: seconds_annotation(annotations, a) for f, a in APP_ANNOTATIONS.items()}
    return build(AppFacts, values)


def accepts(annotations: Mapping[str, Any] | None) -> tuple[Accept, ...]:
    """`lockstep.dev/accept: id,id` → accepted rules (the annotation is the stated reason)."""
    raw = get(annotations, ANNOTATION + ACCEPT_ANNOTATION) or ""
    ids = [i.strip() for i in str(raw).split(",") if i.strip()]
    return tuple(build(Accept, {"id": i, "reason": f"{ANNOTATION}accept annotation"}) for i in ids)


def annotations_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Workload annotations, the pod template's under the workload's own."""
    return {**(get(obj, "spec", "template", "metadata", "annotations") or {}),
            **(get(obj, "metadata", "annotations") or {})}
