"""The `lockstep.dev/*` facts read back from a workload's annotations (what infra writes:
`timing.conventions.fact_annotations`). Without them the facts stay unknown (None): rules
then report `skipped`, never a guess."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockstep.timing.conventions import (ACCEPT_ANNOTATION, ANNOTATION, APP_ANNOTATIONS, GRPC_ANNOTATIONS,
                                         POOL_ANNOTATION, POOL_KEYS)
from lockstep.timing.extract.values import ExtractError, build, get
from lockstep.timing.model import Accept, AppFacts, ConnectionPool, GrpcServing

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


def grpc_facts(annotations: Mapping[str, Any] | None) -> GrpcServing | None:
    """The app's gRPC clients from `lockstep.dev/grpc-*` (None: no such annotation, no gRPC judged);
    one left out is the field's default (the server's permit: gRPC's 5 min) or unknown."""
    values = {f: seconds_annotation(annotations, a) for f, a in GRPC_ANNOTATIONS.items()}
    if all(v is None for v in values.values()):
        return None
    # whole seconds cannot fail the model (an out-of-range one is kept, `extract.values.build`)
    return build(GrpcServing, {f: v for f, v in values.items() if v is not None})


def pools(annotations: Mapping[str, Any] | None) -> tuple[ConnectionPool, ...]:
    """`lockstep.dev/pool.<name>: max-lifetime-seconds=1740,keepalive-seconds=120,...` → the app's
    connection pools, in the annotations' order; a key left out is unknown."""
    out = []
    by_key = {key: f for f, key in POOL_KEYS.items()}
    for name, raw in (annotations or {}).items():
        if not str(name).startswith(ANNOTATION + POOL_ANNOTATION):
            continue
        where = str(name)
        values: dict[str, Any] = {"name": where[len(ANNOTATION + POOL_ANNOTATION):]}
        for pair in (p.strip() for p in str(raw).split(",") if p.strip()):
            key, *rest = pair.split("=")
            if key.strip() not in by_key or len(rest) != 1 or not rest[0].strip().isdigit():
                raise ExtractError(f"{where}: expected key=whole seconds pairs of {', '.join(POOL_KEYS.values())}, "
                                   f"got {pair!r}")
            values[by_key[key.strip()]] = int(rest[0].strip())
        out.append(_built(ConnectionPool, values, POOL_ANNOTATION + values["name"]))
    return tuple(out)


def _built(cls: type, values: dict[str, Any], annotation: str) -> Any:
    try:
        return build(cls, values)
    except ExtractError as err:  # name the annotation, not the model class
        raise ExtractError(f"{ANNOTATION}{annotation}: {str(err).removeprefix(cls.__name__ + ': ')}") from None


def accepts(annotations: Mapping[str, Any] | None) -> tuple[Accept, ...]:
    """`lockstep.dev/accept: id,id` → accepted rules (the annotation is the stated reason)."""
    raw = get(annotations, ANNOTATION + ACCEPT_ANNOTATION) or ""
    ids = [i.strip() for i in str(raw).split(",") if i.strip()]
    return tuple(build(Accept, {"id": i, "reason": f"{ANNOTATION}accept annotation"}) for i in ids)


def annotations_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Workload annotations, the pod template's under the workload's own."""
    return {**(get(obj, "spec", "template", "metadata", "annotations") or {}),
            **(get(obj, "metadata", "annotations") or {})}
