"""Edits to a manifest's text that keep everything else as it was (`audit --fix`).

A file is read once with ruamel.yaml's round-trip loader, only to learn where each value sits;
an edit is a span of the old text and its replacement. A number is replaced in place, its
quoting kept; a key the manifest leaves out is added beside its siblings (a block mapping: lines
at their indent; a flow mapping: before its brace), nested keys it lacks with it; one value of a
`key=value` attribute list is changed or appended; a preStop sleep gets its seconds. Anything
else is a reason, in words, why no edit is made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from lockstep.timing import conventions as C
from lockstep.timing import limits as L
from lockstep.timing.bind.resource import Resource
from lockstep.timing.context import Ctx
from lockstep.timing.extract.kube import SLEEP
from lockstep.timing.fix.patch import SCALAR, block_end, closing_brace, offsets

ANNOTATIONS = ("metadata", "annotations")


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace `text[start:end]` of one file (an empty span: an insertion)."""

    file: str
    start: int
    end: int
    text: str


# ---- the documents' text ---------------------------------------------------------------------------
class File:
    """One file's text and its documents as ruamel.yaml's round-trip reading places them (the
    same documents, in the same order, as the audit's reader counts them)."""

    def __init__(self, name: str, text: str, parse: bool = True) -> None:
        self.name, self.text = name, text
        self.starts = offsets(text)
        self.lines = text.splitlines()
        self.json = text.lstrip()[:1] in ("{", "[")
        self.docs: list[Any] = []
        if not parse:
            return
        try:
            raw = list(YAML(typ="rt").load_all(text))
        except YAMLError:
            return  # the audit's reader accepted it (JSON it reads apart): no edits here
        for doc in raw:
            self._add(doc)

    def _add(self, item: Any) -> None:
        if isinstance(item, CommentedSeq):
            for child in item:
                self._add(child)
        elif isinstance(item, CommentedMap):
            if item.get("kind") == "List" or (item.get("kind") is None and "items" in item and "TargetGroups" not in item):
                for child in item.get("items") or ():
                    self._add(child)
            else:
                self.docs.append(item)

    def doc(self, res: Resource) -> CommentedMap | None:
        _, _, index = res.origin.id.rpartition("#")
        if not index.isdigit() or int(index) >= len(self.docs):
            return None
        doc = self.docs[int(index)]
        meta = doc.get("metadata")
        same = doc.get("kind") == res.kind and isinstance(meta, Mapping) and meta.get("name") == res.name
        return doc if same else None

    def offset(self, line: int, col: int) -> int:
        return self.starts[line] + col

    def position(self, offset: int) -> tuple[int, int]:
        """(1-based line, 1-based column) of an offset."""
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.starts[lo] + 1


@dataclass
class Insert:
    """Keys to add to one mapping: a nested tree whose leaves are YAML text."""

    file: File
    node: CommentedMap
    tree: dict[str, Any]


Plan = Edit | Insert | str  # a replacement, an insertion, or why neither can be made


def _quote(f: File, key: Any) -> str:
    return f'"{key}"' if f.json else str(key)


_PLAIN_IN_BLOCK = re.compile(r"[^\n]*?(?=\s+#|\s*$)", re.M)


def _token(f: File, line: int, col: int, value: Any = None) -> re.Match[str] | None:
    """The scalar's text at (line, col): quoted as written, or plain. A plain scalar in a block
    mapping runs to the end of its line (commas and all: `a=1,b=2`); in a flow collection it
    stops at the next indicator. Block scalars (`|`, `>`) are not edited."""
    at = f.offset(line, col)
    token = SCALAR.match(f.text, at)
    if token is None or token.group()[:1] in ("|", ">"):
        return None
    if token.group()[:1] not in ("'", '"') and isinstance(value, str):
        whole = _PLAIN_IN_BLOCK.match(f.text, at)
        if whole is not None and whole.group() == value:
            return whole
    return token


def put(f: File, root: CommentedMap, path: tuple[Any, ...], leaf: str, string: bool) -> Plan:
    """Set the scalar at `path` to the text `leaf` (quoted as the file quotes it when `string`),
    adding what the manifest leaves out."""
    node: Any = root
    for i, key in enumerate(path):
        if isinstance(node, CommentedMap):
            if key not in node or node[key] is None and i < len(path) - 1:
                if key in node:
                    return f"{'.'.join(map(str, path[:i + 1]))} is empty: set it by hand"
                return _insertion(f, node, path[i:], f'"{leaf}"' if string else leaf)
            if i == len(path) - 1:
                line, col = node.lc.value(key)
                break
            node = node[key]
        elif isinstance(node, CommentedSeq) and isinstance(key, int) and 0 <= key < len(node):
            if i == len(path) - 1:
                line, col = node.lc.item(key)
                break
            node = node[key]
        else:
            return f"no {'.'.join(map(str, path[:i + 1]))} in the manifest to write to"
    else:
        return "no key to write to"
    token = _token(f, line, col, node[key] if isinstance(node, (CommentedMap, CommentedSeq)) else None)
    if token is None:
        return f"{'.'.join(map(str, path))} is not a plain number to replace"
    quote = token.group()[0] if token.group()[0] in "'\"" else ('"' if string else "")
    return Edit(f.name, token.start(), token.end(), f"{quote}{leaf}{quote}")


def _insertion(f: File, node: CommentedMap, keys: tuple[Any, ...], leaf: str) -> Plan:
    if any(not isinstance(k, str) for k in keys):
        return f"no {keys[0]} in the manifest to add the value to"
    tree: dict[str, Any] = {}
    here = tree
    for k in keys[:-1]:
        here = here.setdefault(k, {})
    here[keys[-1]] = leaf
    return Insert(f, node, tree)


def render_inserts(f: File, inserts: list[Insert]) -> dict[tuple[int, str], Edit]:
    """The added keys as edits, one per mapping and top key (two changes under one missing key
    share it), by (id of the mapping, top key)."""
    merged: dict[tuple[int, str], tuple[CommentedMap, dict[str, Any]]] = {}
    for ins in inserts:
        _merge(merged.setdefault(insert_key(ins), (ins.node, {}))[1], ins.tree)
    out = {}
    for key, (node, tree) in merged.items():
        if node.fa.flow_style() or not node:
            close = closing_brace(f.text, f.offset(node.lc.line, node.lc.col))
            out[key] = Edit(f.name, close, close, (", " if node else "") + _flow(f, tree)[1:-1])
            continue
        first = next(iter(node))
        line, indent = node.lc.key(first)
        end = block_end(f.lines, line, indent)
        at = f.starts[end] if end < len(f.starts) else len(f.text)
        text = _block(f, tree, indent)
        if at == len(f.text) and not f.text.endswith("\n"):
            text = "\n" + text
        out[key] = Edit(f.name, at, at, text)
    return out


def insert_key(ins: Insert) -> tuple[int, str]:
    """Which edit an insertion joins: its mapping's, per top key (an empty `{}` takes one edit)."""
    [top] = ins.tree
    return id(ins.node), top if ins.node else ""


def _merge(into: dict[str, Any], tree: Mapping[str, Any]) -> None:
    for k, v in tree.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = dict(v) if isinstance(v, Mapping) else v


def _flow(f: File, tree: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{_quote(f, k)}: {_flow(f, v) if isinstance(v, Mapping) else v}"
                           for k, v in tree.items()) + "}"


def _block(f: File, tree: Mapping[str, Any], indent: int) -> str:
    out = []
    for k, v in tree.items():
        if isinstance(v, Mapping):
            out.append(f"{' ' * indent}{k}:\n{_block(f, v, indent + 2)}")
        else:
            out.append(f"{' ' * indent}{k}: {v}\n")
    return "".join(out)


# ---- one field's edit --------------------------------------------------------------------------------
def drain(f: File, doc: CommentedMap, path: tuple[Any, ...], new: int, ctx: Ctx) -> Plan:
    """The preStop hook's sleep: the native action's seconds, or the one `sleep N` of its
    command; with no hook, one (the native action where the cluster has it)."""
    node: Any = doc
    for key in path:
        child = node.get(key) if isinstance(node, CommentedMap) else (
            node[key] if isinstance(node, CommentedSeq) and isinstance(key, int) and key < len(node) else None)
        if child is None:
            if not isinstance(node, CommentedMap):
                return "no container to add a preStop hook to"
            break
        node = child
    else:
        if isinstance(node, CommentedMap) and isinstance(node.get("sleep"), CommentedMap):
            return put(f, doc, (*path, "sleep", "seconds"), str(new), False)
        command = node.get("exec", {}).get("command") if isinstance(node, CommentedMap) and \
            isinstance(node.get("exec"), CommentedMap) else None
        if not isinstance(command, CommentedSeq):
            return f"the preStop hook is not a sleep: make it wait {new}s (and set {C.ANNOTATION}{C.DRAIN_ANNOTATION})"
        values = [str(c) for c in command]
        m = SLEEP.search(" ".join(values))  # as `extract.kube.sleep_seconds` reads it
        if m is None:
            return f"the preStop command does not sleep: make it wait {new}s by hand"
        pos = 0
        for i, value in enumerate(values):
            if m.start(1) < pos + len(value):
                break
            pos += len(value) + 1
        token = _token(f, *command.lc.item(i), command[i])
        q = 1 if token is not None and token.group()[:1] in ("'", '"') else 0
        if token is None or token.group()[q:q + len(value)] != value or m.end(2) - pos > len(value):
            return f"the preStop command's sleep is not plain text to edit: make it wait {new}s by hand"
        return Edit(f.name, token.start() + q + m.start(1) - pos, token.start() + q + m.end(2) - pos, str(new))
    if ctx.kubernetes_version >= L.NATIVE_SLEEP_SINCE:
        return put(f, doc, (*path, "sleep", "seconds"), str(new), False)
    return put(f, doc, (*path, "exec", "command"), f'["sleep", "{new}"]', False)


def attribute(f: File, doc: CommentedMap, path: tuple[Any, ...], key: str, new: int) -> Plan:
    """One `key=value` of a comma-separated attribute annotation."""
    node = doc
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, CommentedMap) else None
    if not isinstance(node, CommentedMap) or path[-1] not in node:
        return put(f, doc, path, f"{key}={new}", True)
    token = _token(f, *node.lc.value(path[-1]), node[path[-1]])
    if token is None:
        return f"{path[-1]} is not a plain string to edit"
    m = re.search(rf"(?<![\w.]){re.escape(key)}\s*=\s*(\d+)", token.group())
    if m is not None:
        return Edit(f.name, token.start() + m.start(1), token.start() + m.end(1), str(new))
    quoted = token.group()[0] in "'\""
    at = token.end() - 1 if quoted else token.end()
    empty = token.group() in ('""', "''")
    return Edit(f.name, at, at, f"{'' if empty else ','}{key}={new}")
