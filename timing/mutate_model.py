"""The numbers of a stack for `lockstep mutate`: every integer of a dumped stack, a copy with
one changed, the range the model accepts for each, and a mutant."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

from pydantic import ValidationError

from lockstep.timing.model import Stack

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Mutant:
    path: Path
    original: int
    value: int
    why: str  # zero | min | max | half | double | x10 | "<rule-id> boundary±k"

    @property
    def where(self) -> str:
        return ".".join(str(p) for p in self.path)


# ---- walking the model -----------------------------------------------------------------------
def numbers(data: Any, path: Path = ()) -> Iterator[tuple[Path, int]]:
    """Every integer in a dumped stack (booleans are not numbers)."""
    if isinstance(data, bool):
        return
    if isinstance(data, int):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from numbers(value, path + (key,))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            yield from numbers(value, path + (i,))


def with_value(data: dict[str, Any], path: Path, value: int) -> dict[str, Any]:
    """A copy of `data` with one number changed; only the containers on the path are copied
    (the rest is shared, and never modified)."""
    if not path:
        return value  # type: ignore[return-value]
    key, rest = path[0], path[1:]
    if isinstance(data, dict):
        out: Any = dict(data)
    else:
        out = list(data)
    out[key] = with_value(out[key], rest, value) if rest else value
    return out


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return Stack.model_json_schema()


def _deref(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _options(node: dict[str, Any]) -> list[dict[str, Any]]:
    node = _deref(node)
    alts = node.get("anyOf") or node.get("oneOf")
    return [o for alt in alts for o in _options(alt)] if alts else [node]


def field_range(path: Path) -> tuple[int, int]:
    """The integer range the model accepts at `path`, from its pydantic constraints."""
    nodes = [_schema()]
    for key in path:
        nxt = []
        for node in (o for n in nodes for o in _options(n)):
            if isinstance(key, int) and node.get("type") == "array":
                items = node.get("items") or {}
                prefix = node.get("prefixItems")
                nxt.append(prefix[key] if prefix and key < len(prefix) else items)
            elif isinstance(key, str) and key in node.get("properties", {}):
                nxt.append(node["properties"][key])
            elif isinstance(key, str) and isinstance(node.get("additionalProperties"), dict):
                nxt.append(node["additionalProperties"])
        nodes = nxt
    lo, hi = None, None
    for node in (o for n in nodes for o in _options(n)):
        if node.get("type") == "integer":
            a = node.get("minimum", node.get("exclusiveMinimum", -(2**31)) + ("exclusiveMinimum" in node))
            b = node.get("maximum", node.get("exclusiveMaximum", 2**31) - ("exclusiveMaximum" in node))
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    return (lo if lo is not None else 0, hi if hi is not None else 2**31 - 1)


def build(data: dict[str, Any]) -> Stack:
    return Stack.model_validate(data)


def _problem(err: ValidationError, prefix: Path = ()) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in prefix + tuple(first["loc"]))
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"
