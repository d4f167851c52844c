"""The numbers `lockstep fix` may move: every whole-number field of a stack with a range.

A field is a `Knob`: where it sits in the config (`path`, under the `lockstep:` namespace),
its name as `--keep` takes it, its number and the range the model gives it. What no one can
set is not a knob (`FACTS`): what the application does, what its clients and the business
agreed, and how long the cloud takes to propagate a change. A relation over such a field
keeps it at its number.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Annotated, Any, Mapping, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo


# What changing a field costs, by the section that holds it: a load balancer is often shared and
# owned by a platform team, and more pods cost money every hour; everything else (the service's
# own probes, drain, grace, the heartbeat's timers) is the service owner's to change.
# Facts, by attribute name: the stack's own safety margin (a fix never spends it), the app's warm-up, longest request, catch-up and agreed recovery
# budget (`app.*` but keep-alive, a server setting), the agreed outage budget and RTO, the
# clients' reconnect time, and the propagation delays of the LB and kube-proxy.
FACTS = frozenset({"margin_s", "warmup_s", "max_request_s", "catch_up_s", "max_recovery_s", "max_outage_s", "rto_s",
                   "client_reconnect_s", "deregistration_propagation_s", "registration_propagation_s",
                   "endpoint_propagation_s"})
WEIGHTS: dict[str, int] = {"lb": 2, "health_check": 2, "replicas": 4, "min_replicas": 4}
DEFAULT_WEIGHT = 1

Path = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Knob:
    """A whole-number field the fixer may move: where it is in the config, its name as
    `--keep` takes it, its number and its range."""

    path: Path  # under the `lockstep:` namespace, list items by index
    name: str  # dotted, list items by their `name` ("services.api.shutdown.drain_s")
    value: int
    lo: int
    hi: int

    @property
    def weight(self) -> int:
        for part in reversed(self.path):
            if isinstance(part, str) and part in WEIGHTS:
                return WEIGHTS[part]
        return DEFAULT_WEIGHT


def _bounds(tp: Any, meta: list[Any]) -> tuple[int | None, int | None]:
    lo = hi = None
    for m in meta:
        inner = m.metadata if isinstance(m, FieldInfo) else [m]
        for c in inner:
            lo = getattr(c, "ge", lo)
            hi = getattr(c, "le", hi)
    if lo is not None and hi is not None:
        return lo, hi
    if get_origin(tp) is Annotated:
        base, *more = get_args(tp)
        return _bounds(base, more)
    if get_origin(tp) is Union or type(tp).__name__ == "UnionType":
        for arg in get_args(tp):
            got = _bounds(arg, [])
            if got[0] is not None and got[1] is not None:
                return got
    return None, None


def field_range(cls: type[BaseModel], name: str) -> tuple[int, int] | None:
    """The model's range for a whole-number field (None when it declares none)."""
    info = cls.model_fields[name]
    lo, hi = _bounds(info.annotation, list(info.metadata))
    return None if lo is None or hi is None else (lo, hi)


def keep_matches(name: str, pattern: str) -> bool:
    """Whether a `--keep` argument names the field: the name itself (`path[0].drain_s`, whose
    brackets fnmatch would read as a character class), or a pattern (`services.*.lb.*`)."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def knobs(stack: BaseModel) -> tuple[dict[tuple[int, str], Knob], dict[str, Knob]]:
    """Every whole-number field of a model (a stack, or one service) with a range: by (id of its object, attribute) —
    how an expression's leaf finds it — and by name."""
    by_leaf: dict[tuple[int, str], Knob] = {}

    def walk(obj: BaseModel, path: Path, name: str) -> None:
        for attr in type(obj).model_fields:
            value = getattr(obj, attr)
            here, shown = path + (attr,), f"{name}.{attr}" if name else attr
            if isinstance(value, BaseModel):
                walk(value, here, shown)
            elif isinstance(value, tuple):
                for i, item in enumerate(value):
                    if isinstance(item, BaseModel):
                        label = getattr(item, "name", None)
                        walk(item, here + (i,), f"{shown}.{label}" if isinstance(label, str) else f"{shown}[{i}]")
            elif isinstance(value, int) and not isinstance(value, bool) and attr not in FACTS:
                r = field_range(type(obj), attr)
                if r is not None:
                    by_leaf[(id(obj), attr)] = Knob(here, shown, value, *r)

    walk(stack, (), "")
    return by_leaf, {k.name: k for k in by_leaf.values()}


def with_values(model: M, changes: list[tuple[Path, int]]) -> M:
    """A copy of a model with some fields (by `Knob.path`) set: the objects on each path are
    copied, everything else shared. No validation runs: the numbers are inside their ranges."""
    by_head: dict[str | int, list[tuple[Path, int]]] = {}
    for path, value in changes:
        by_head.setdefault(path[0], []).append((path[1:], value))
    update: dict[str, Any] = {}
    for head, rest in by_head.items():
        assert isinstance(head, str)
        update[head] = _with(getattr(model, head), rest)
    return model.model_copy(update=update)


def _with(value: Any, changes: list[tuple[Path, int]]) -> Any:
    if any(not path for path, _ in changes):
        return changes[-1][1]
    if isinstance(value, tuple):
        items = list(value)
        for i in {p[0] for p, _ in changes}:
            assert isinstance(i, int)
            items[i] = with_values(items[i], [(p[1:], v) for p, v in changes if p[0] == i])
        return tuple(items)
    return with_values(value, changes)


def set_path(values: Mapping[str, Any], path: Path, value: int) -> dict[str, Any]:
    """A copy of the `lockstep:` values with one number set (creating the mappings a default
    filled in: a section the file leaves out)."""
    out: dict[str, Any] = _copy(values)
    node: Any = out
    for part in path[:-1]:
        nxt = node[part] if isinstance(part, int) else node.get(part)
        if nxt is None:
            nxt = {}
            node[part] = nxt
        node = nxt
    node[path[-1]] = value
    return out


def _copy(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_copy(x) for x in v]
    return v


