"""The policy pack's input, adapted to the linker's neutral resource (`timing.bind`).

Which resources belong together is not decided here: `timing.bind.link` decides it for the
pack and for `lockstep audit` alike. This module only turns what the engine hands a policy
(`PolicyResource`s: type token, props behind pulumi-policy's unknown-checking proxy, URN,
dependencies) into `Resource`s: the kind from the type token, the props as plain data with
`UNKNOWN` where a preview cannot know a value yet, the URN as origin, the dependency URNs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import proxy as _proxy
from pulumi_policy.proxy import UnknownValueError

from lockstep.timing.bind.resource import UNKNOWN, WORKLOADS, Origin, Resource, pulumi_kind

# pulumi-policy's proxy classes, whose `["__target"]` is the container they guard, and the
# sentinels they raise `UnknownValueError` for (`UNKNOWN_*_VALUE`). Should a version lack either,
# the proxies take the generic path (slower, the same values).
_UNKNOWN_SENTINELS = frozenset(v for k, v in vars(_proxy).items() if k.startswith("UNKNOWN_") and k.endswith("_VALUE"))
_DICT_PROXY: Any = getattr(_proxy, "_DictProxy", None) if _UNKNOWN_SENTINELS else None
_LIST_PROXY: Any = getattr(_proxy, "_ListProxy", None) if _UNKNOWN_SENTINELS else None


@dataclass(frozen=True)
class Res:
    """A resource as policies see it: type, properties, URN, name and the URNs it depends on."""

    type: str
    props: Mapping[str, Any]
    urn: str
    name: str = ""
    deps: tuple[str, ...] = ()


def from_policy_resources(resources: Sequence[Any]) -> list[Res]:
    """`pulumi_policy.PolicyResource`s (anything with the same attributes) → `Res`."""
    return [Res(r.resource_type, r.props, r.urn, r.name,
                tuple(d.urn for d in (r.dependencies or []))) for r in resources]


def plain(value: Any) -> Any:
    """Props as plain dicts and lists, whole numbers as ints (the engine sends protobuf
    `Struct`s: every number a float); a value a preview cannot know yet is `UNKNOWN`.

    The engine calls every stack policy with the stack's resources behind pulumi-policy's
    unknown-checking proxies, and each call converts them all again (~40 policies): plain
    containers and the proxies take a direct path (a proxy's items read from its container,
    a string compared with the unknown sentinels the proxy checks), anything else the generic
    one, item by item through the mapping or sequence."""
    kind = type(value)
    if kind is float:
        return int(value) if value.is_integer() else value
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {key: plain(item) for key, item in value.items()}
    if kind is list:
        return [plain(item) for item in value]
    if kind is _DICT_PROXY:
        return {key: UNKNOWN if item.__class__ is str and item in _UNKNOWN_SENTINELS else plain(item)
                for key, item in value["__target"].items()}
    if kind is _LIST_PROXY:
        return [UNKNOWN if item.__class__ is str and item in _UNKNOWN_SENTINELS else plain(item)
                for item in value["__target"]]
    if isinstance(value, Mapping):
        return {key: _item(value, key) for key in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_item(value, i) for i in range(len(value))]
    return value


def _item(container: Any, key: Any) -> Any:
    try:
        return plain(container[key])
    except UnknownValueError:
        return UNKNOWN


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
