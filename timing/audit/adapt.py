"""Documents → the linker's neutral resources (`timing.bind.Resource`), with file and line.

Kubernetes objects keep their shape. AWS target groups become what Pulumi's
`aws:lb/targetGroup` inputs say, from either source the audit reads:
- `aws elbv2 describe-target-groups` output (with `describe-target-group-attributes` output
  beside it: `TargetGroupArn` + `Attributes`, or `Attributes` alone when one group is
  described), each key remembered so a finding points at the JSON line that set it;
- `lockstep render`'s `aws/*.json` (`[{type, name, urn, dependsOn, inputs}]`), where the
  values the cloud would assign are the render's stand-ins (`timing.conventions`).
"""

from __future__ import annotations

from typing import Any, Callable

from lockstep.timing import extract as X
from lockstep.timing.audit.reader import Doc, line_of
from lockstep.timing.extract import traffic as T
from lockstep.timing.bind.resource import TARGET_GROUP, Origin, Resource, dig, pulumi_kind
from lockstep.timing.conventions import rendered_arn, rendered_id

# describe-target-groups key → the neutral (Pulumi input) path it becomes.
DESCRIBED = {("HealthCheckIntervalSeconds",): ("healthCheck", "interval"),
             ("HealthCheckTimeoutSeconds",): ("healthCheck", "timeout"),
             ("HealthyThresholdCount",): ("healthCheck", "healthyThreshold"),
             ("UnhealthyThresholdCount",): ("healthCheck", "unhealthyThreshold"),
             ("HealthCheckProtocol",): ("healthCheck", "protocol"), ("HealthCheckPath",): ("healthCheck", "path"),
             ("HealthCheckPort",): ("healthCheck", "port"), ("Matcher", "HttpCode"): ("healthCheck", "matcher"),
             ("Protocol",): ("protocol",), ("TargetType",): ("targetType",), ("Port",): ("port",),
             ("VpcId",): ("vpcId",), ("TargetGroupArn",): ("arn",), ("TargetGroupName",): ("name",),
             ("LoadBalancerArns",): ("loadBalancerArns",)}
ATTRIBUTES = {"deregistration_delay.timeout_seconds": ("deregistrationDelay",),
              "slow_start.duration_seconds": ("slowStart",)}


def doc_locator(doc: Doc) -> Callable[[tuple[Any, ...]], tuple[str, int]]:
    return lambda path: (doc.file, line_of(doc.obj, path) or doc.line)


def kubernetes(doc: Doc) -> Resource:
    return Resource(doc.kind, doc.obj, Origin(f"{doc.file}#{doc.index}", doc.file, doc_locator(doc)))


def put(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        obj = obj.setdefault(key, {})
    obj[path[-1]] = value


def described(doc: Doc, i: int, tg: dict[str, Any], attributes: tuple[Doc, dict[str, str]] | None) -> Resource:
    """One entry of `describe-target-groups`, its attributes (when described) merged in."""
    obj: dict[str, Any] = {}
    where: dict[tuple[Any, ...], tuple[Doc, tuple[Any, ...]]] = {}
    for src, dst in DESCRIBED.items():
        value = dig(tg, *src)
        if value is not None:
            put(obj, dst, value)
            where[dst] = (doc, ("TargetGroups", i, *src))
    if attributes is not None:
        adoc, attrs = attributes
        keys = [dig(a, "Key") for a in X.items(adoc.obj.get("Attributes"))]
        for key, dst in ATTRIBUTES.items():
            if key in attrs:
                put(obj, dst, X.attribute_number(attrs, key, f"{adoc.where}: Attributes"))
            where[dst] = (adoc, ("Attributes", keys.index(key)) if key in keys else ("Attributes",))
        # NLB connection attributes: the Pulumi inputs that hold them (`timing.extract.traffic`)
        obj.update(T.props_from_attributes(attrs, f"{adoc.where}: Attributes"))
        for attr in T.CONNECTION_ATTRIBUTES:
            where[attr.path] = (adoc, ("Attributes", keys.index(attr.key)) if attr.key in keys else ("Attributes",))

    def locate(path: tuple[Any, ...]) -> tuple[str, int]:
        for n in range(len(path), 0, -1):
            if path[:n] in where:
                d, p = where[path[:n]]
                return d.file, line_of(d.obj, p) or d.line
        return doc.file, line_of(doc.obj, ("TargetGroups", i)) or doc.line

    return Resource(TARGET_GROUP, obj, Origin(f"{doc.file}#{doc.index}.{i}", doc.file, locate))


def is_rendered(obj: dict[str, Any]) -> bool:
    return isinstance(obj.get("type"), str) and isinstance(obj.get("inputs"), dict)


def rendered(doc: Doc) -> Resource | None:
    """One resource of `lockstep render`'s AWS JSON; None for kinds the linker does not read."""
    entry = doc.obj
    kind = pulumi_kind(entry["type"])
    if kind is None:
        return None
    name = str(entry.get("name"))
    obj = {**entry["inputs"], "name": name}
    # What the render's mock runtime assigned (the bindings and records carry the same).
    obj.setdefault("arn", rendered_arn(name))
    obj.setdefault("id", rendered_id(name))
    deps = frozenset(str(d) for d in X.items(entry.get("dependsOn")))

    def locate(path: tuple[Any, ...]) -> tuple[str, int]:
        return doc.file, line_of(doc.obj, ("inputs", *path)) or doc.line

    return Resource(kind, obj, Origin(str(entry.get("urn") or f"{doc.file}#{doc.index}"), doc.file, locate), deps)


RENDER_INDEX = {"urn", "type", "name", "file"}  # an entry of `lockstep render`'s index.json


def ignored(doc: Doc) -> bool:
    """Neither a Kubernetes object nor AWS JSON the audit reads (nor the render's index)."""
    obj = doc.obj
    return not doc.kind and not isinstance(obj.get("TargetGroups"), list) and "Attributes" not in obj \
        and not is_rendered(obj) and set(obj) != RENDER_INDEX


def resources(docs: list[Doc]) -> list[Resource]:
    """Every document as neutral resources; AWS JSON documents each give their target groups."""
    out: list[Resource] = []
    attributes = {d.obj["TargetGroupArn"]: (d, X.attribute_map(d.obj["Attributes"])) for d in docs
                  if not d.kind and "Attributes" in d.obj and isinstance(d.obj.get("TargetGroupArn"), str)}
    loose = [(d, X.attribute_map(d.obj["Attributes"])) for d in docs
             if not d.kind and "Attributes" in d.obj and not isinstance(d.obj.get("TargetGroupArn"), str)]
    groups = [(d, i, tg) for d in docs if not d.kind and isinstance(d.obj.get("TargetGroups"), list)
              for i, tg in enumerate(d.obj["TargetGroups"])]
    for doc in docs:
        if doc.kind:
            out.append(kubernetes(doc))
    for doc, i, tg in groups:
        attrs = attributes.get(tg.get("TargetGroupArn"))
        if attrs is None and len(loose) == 1 and len(groups) == 1:
            attrs = loose[0]  # `describe-target-group-attributes` output of the one described group
        out.append(described(doc, i, tg, attrs))
    out += [r for doc in docs if not doc.kind and is_rendered(doc.obj) and (r := rendered(doc)) is not None]
    return out
