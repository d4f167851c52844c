"""Plumbing every reader shares: reading paths of any mapping, whole numbers, and `build`.

Inputs are mappings as Kubernetes documents spell them and as Pulumi hands AWS inputs to
policies. Any `Mapping`/`Sequence` works, and numbers may arrive as floats (protobuf
`Struct`): whole floats become ints.

Out-of-range numbers must still reach the rules (`lb-values-in-range` reports them), so
`build` validates a model with each out-of-range number clamped to the bound it broke —
every other constraint and validator still runs — and then puts the real number back with
`model_copy(update=...)`. Anything else invalid raises `ExtractError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError


RANGE_ERRORS = ("greater_than_equal", "less_than_equal", "greater_than", "less_than")


M = TypeVar("M", bound=BaseModel)


class ExtractError(ValueError):
    """A resource the model cannot represent (wrong type, unsupported protocol, ...)."""


def get(obj: Any, *path: str) -> Any:
    """`obj[a][b]...`, or None as soon as a step is missing or not a mapping."""
    for key in path:
        # `dict` first: the manifests' own type answers in C, before the ABC's Python-level
        # check (a sixth of linking 1,000 workloads was `Mapping.__instancecheck__`).
        if not isinstance(obj, (dict, Mapping)):
            return None
        obj = obj.get(key)
    return obj


def items(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple, Sequence)) and not isinstance(value, str):  # (list: as `get`)
        return list(value)
    return []


def number(value: Any, where: str) -> Any:
    """Whole floats (protobuf) become ints; None stays None; anything else must be an int."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ExtractError(f"{where}: expected whole seconds/count, got {value!r}")


def digits(value: Any) -> Any:
    """Digit strings as ints (named ports are not; older pulumi-aws typed some numbers as strings)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def int_or_percent(value: Any, where: str) -> Any:
    return value if isinstance(value, str) else number(value, where)


def num(obj: Any, *path: str) -> Any:
    """The whole number at `path` (None when absent); an error names the path."""
    return number(get(obj, *path), ".".join(path))


def amount(obj: Any, *path: str) -> Any:
    """An int-or-percent field (`maxSurge: 25%`) at `path`."""
    return int_or_percent(get(obj, *path), ".".join(path))


def put(data: dict[str, Any], key: str, value: Any) -> None:
    """Set only what the resource states, so the model's own defaults apply otherwise."""
    if value is not None:
        data[key] = value


def bound(error: Mapping[str, Any]) -> Any:
    ctx = error.get("ctx") or {}
    for key, step in (("ge", 0), ("le", 0), ("gt", 1), ("lt", -1)):
        if key in ctx:
            return ctx[key] + step
    return None


def clamped(err: ValidationError) -> dict[str, Any]:
    """The top-level fields that broke only a numeric bound, each at the bound it broke."""
    out: dict[str, Any] = {}
    for e in err.errors():
        if e["type"] in RANGE_ERRORS and len(e["loc"]) == 1:
            out[str(e["loc"][0])] = bound(e)
    return out


def build(cls: type[M], data: dict[str, Any]) -> M:
    """Validate `data`; out-of-range numbers are kept (see the module doc)."""
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        fixed = clamped(err)
    try:
        model = cls.model_validate({**data, **fixed})
    except ValidationError as err:
        raise ExtractError(f"{cls.__name__}: {describe(err)}") from None
    return model.model_copy(update={k: data[k] for k in fixed})


def describe(err: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(object)'}: {e['msg']}" for e in err.errors())


def port_number(value: Any, ports: Mapping[str, int] | None, where: str) -> Any:
    """A numeric port, or a named container port resolved through `ports`."""
    if isinstance(value, str) and not value.isdigit():
        if ports is None or value not in ports:
            raise ExtractError(f"{where}: named port {value!r} not declared by the container")
        return ports[value]
    return number(digits(value), where)


def port_at(obj: Any, ports: Mapping[str, int] | None, *path: str) -> Any:
    return port_number(get(obj, *path), ports, ".".join(path))


def annotation_number(raw: Any, where: str) -> int:
    """Annotation values are strings; a whole number, sign allowed (the range is a rule's)."""
    text = str(raw).strip()
    if not text.removeprefix("-").isdigit():
        raise ExtractError(f"{where}: expected a whole number, got {raw!r}")
    return int(text)
