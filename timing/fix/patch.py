"""Write new numbers into a stack's YAML file and keep everything else as it was.

The file is read once with ruamel.yaml's round-trip loader, only to learn where each value
sits (line and column); the new text is the old one with those scalars replaced, and keys a
default filled in added beside their siblings (a flow mapping `{...}` gets `, key: value`
before its brace; a block mapping a line at its siblings' indent; a section the file leaves
out, a flow mapping of its keys). Comments, order, quoting and spacing elsewhere are the
file's own. The result is read back and must give exactly the intended values.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Mapping

from ruamel.yaml import YAML

from lockstep.timing.config import NAMESPACE, lockstep_values
from lockstep.timing.fix.knobs import Path
from lockstep.timing.inputs import load_yaml

SCALAR = re.compile(r"""'(?:[^']|'')*'|"(?:[^"\\]|\\.)*"|[^\s,{}\[\]#]+""")


class PatchError(RuntimeError):
    """The patched text does not read back as the intended values (a bug, never a guess)."""


def offsets(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _flow(values: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {_flow(v) if isinstance(v, Mapping) else v}" for k, v in values.items()) + "}"


def closing_brace(text: str, start: int) -> int:
    """The offset of the `}` that closes the flow mapping opening at `start`."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise PatchError("unclosed flow mapping")


def block_end(lines: list[str], first: int, indent: int) -> int:
    """The line after the last one of a block mapping whose keys start at `indent`, from `first`."""
    i = first + 1
    last = first
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped and not stripped.startswith("#"):
            if len(lines[i]) - len(lines[i].lstrip(" ")) < indent or (
                    len(lines[i]) - len(lines[i].lstrip(" ")) == indent and lines[i].lstrip().startswith("- ")):
                break
            last = i
        i += 1
    return last + 1


def patch_text(text: str, changes: list[tuple[Path, int]]) -> str:
    """`text` with each (path under `lockstep:`, number) written in."""
    doc = YAML(typ="rt").load(text)
    config = doc["config"]
    starts = offsets(text)
    lines = text.splitlines()
    edits: list[tuple[int, int, str]] = []  # (offset, length replaced, new text)
    missing: dict[int, tuple[Any, dict[str, Any]]] = {}  # a mapping's keys to add, by id
    for path, value in changes:
        node: Any = config
        keys: list[Any] = [f"{NAMESPACE}:{path[0]}", *path[1:]]
        for i, part in enumerate(keys[:-1]):
            child = node[part] if isinstance(part, int) else node.get(part)
            if child is None:
                tree = missing.setdefault(id(node), (node, {}))[1]
                for k in keys[i:-1]:
                    tree = tree.setdefault(k, {})
                tree[keys[-1]] = value
                break
            node = child
        else:
            last = keys[-1]
            if last in node:
                line, col = node.lc.value(last)
                at = starts[line] + col
                token = SCALAR.match(text, at)
                if token is None:
                    raise PatchError(f"no scalar at line {line + 1}")
                edits.append((at, token.end() - at, str(value)))
            else:
                missing.setdefault(id(node), (node, {}))[1][last] = value
    for node, keys in missing.values():
        if node.fa.flow_style():
            close = closing_brace(text, starts[node.lc.line] + node.lc.col)
            edits.append((close, 0, ", " + _flow(keys)[1:-1]))
        else:
            first = next(iter(node))
            line, indent = node.lc.key(first)
            end = block_end(lines, line, indent)
            added = "".join(f"{' ' * indent}{k}: {_flow(v) if isinstance(v, Mapping) else v}\n" for k, v in keys.items())
            offset = starts[end] if end < len(starts) else len(text)
            if offset == len(text) and not text.endswith("\n"):
                added = "\n" + added
            edits.append((offset, 0, added))
    out = text
    for at, length, new in sorted(edits, key=lambda e: e[0], reverse=True):
        out = out[:at] + new + out[at + length:]
    return out


def verify(text: str, name: str, expected: Mapping[str, Any]) -> None:
    """The patched file must read back as exactly the intended `lockstep:` values."""
    [doc] = load_yaml(text, name, single=True)
    got = lockstep_values(doc["config"])
    if _plain(got) != _plain(expected):
        raise PatchError(f"{name}: the patched file does not read back as the fixed values")


def _plain(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def diff(old: str, new: str, name: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))
