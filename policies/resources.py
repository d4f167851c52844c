"""The policy pack's input, adapted to the linker's neutral resource (`timing.bind`).

Which resources belong together is not decided here: `timing.bind.link` decides it for the
pack and for `lockstep audit` alike. This module only turns what the engine hands a policy
(`PolicyResource`s: type token, props behind pulumi-policy's unknown-checking proxy, URN,
dependencies) into `Resource`s: the kind from the type token, the props as plain data with
`UNKNOWN` where a preview cannot know a value yet, the URN as origin, the dependency URNs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from lockstep.timing.bind.resource import UNKNOWN, WORKLOADS, Origin, Resource, pulumi_kind


@dataclass(frozen=True)
class Res:
    """A resource as policies see it: type, properties, URN, name and the URNs it depends on."""

    type: str
    props: Mapping[str, Any]
    urn: str
    name: str = ""
    deps: tuple[str, ...] = ()


@dataclass
class Unreadable:
    """Resources the pack could not read, with the reason (reported, never guessed)."""

    problems: list[tuple[str, str]] = field(default_factory=list)


def from_policy_resources(resources: Sequence[Any]) -> list[Res]:
    """`pulumi_policy.PolicyResource`s (anything with the same attributes) → `Res`."""
    return [Res(r.resource_type, r.props, r.urn, r.name,
                tuple(d.urn for d in (r.dependencies or []))) for r in resources]


def plain(value: Any) -> Any:
    """Props as plain dicts and lists, whole numbers as ints (the engine sends protobuf
    `Struct`s: every number a float); a value a preview cannot know yet is `UNKNOWN`."""
    if isinstance(value, Mapping):
        out = {}
        for key in value:
            try:
                out[key] = plain(value[key])
            except UnknownValueError:
                out[key] = UNKNOWN
        return out
    if isinstance(value, Sequence) and not isinstance(value, str):
        out_list = []
        for i in range(len(value)):
            try:
                out_list.append(plain(value[i]))
            except UnknownValueError:
                out_list.append(UNKNOWN)
        return out_list
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def to_resource(res: Res) -> Resource | None:
    """The neutral resource, or None for a type the linker does not read."""
    kind = pulumi_kind(res.type)
    if kind is None:
        return None
    try:
        obj = plain(res.props)
    except UnknownValueError:
        obj = {}
    if res.type.startswith("kubernetes:"):
        obj.setdefault("kind", kind)  # Kubernetes inputs carry it; a hand-built resource may not
    else:
        obj.setdefault("name", res.name)
    return Resource(kind, obj, Origin(res.urn), frozenset(res.deps))


def resources_of(resources: Sequence[Res]) -> list[Resource]:
    return [r for r in (to_resource(x) for x in resources) if r is not None]


def is_workload(res: Res) -> bool:
    return pulumi_kind(res.type) in WORKLOADS
