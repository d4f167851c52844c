"""Read manifests and AWS JSON into documents that remember where each field was written.

Files are YAML (many documents each, `kind: List` flattened) or JSON (`kubectl -o json`,
`aws elbv2 describe-target-groups`). YAML goes through PyYAML's C parser with mapping
constructors that record the line of every key, so SARIF can point a pull-request
annotation at the offending field. Anything unreadable becomes a one-line `ConfigError`
naming the file and the reason: the CLI exits 2, never with a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from lockstep.timing.inputs import (STDIN, ConfigError, MalformedYAML, Map, Seq, display_name, load_json, load_yaml,
                           read_text)

__all__ = ["Doc", "Map", "Seq", "documents", "expand", "line_of", "parse", "read_all", "read_paths",
           "read_text"]

SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True, slots=True)
class Doc:
    """One Kubernetes object or AWS JSON document, and where it was read."""

    file: str
    index: int  # position in the file (documents and List items counted together)
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        kind = self.obj.get("kind")
        return kind if isinstance(kind, str) else ""

    @property
    def line(self) -> int:
        return getattr(self.obj, "line", 0) or 1

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def parse(text: str, name: str) -> list[Any]:
    """Every top-level document of one file (JSON or YAML), `None`s dropped."""
    if text.lstrip()[:1] in ("{", "["):
        # JSON is YAML too: the YAML parser gives it line numbers; JSON that PyYAML's
        # YAML 1.1 reading refuses (tabs, some escapes) still goes through `json`, but a
        # limit or a duplicate key the YAML reading found is final.
        try:
            return [d for d in load_yaml(text, name, lines=True) if d is not None]
        except MalformedYAML:
            pass
        return [load_json(text, name)]
    return [d for d in load_yaml(text, name, lines=True) if d is not None]


def documents(raw: Iterable[Any], name: str) -> list[Doc]:
    """Flatten `kind: List` (kubectl) and check each item is an object."""
    out: list[Doc] = []
    problems: list[str] = []
    for doc in raw:
        if isinstance(doc, list):  # a bare JSON array of objects
            for child in doc:
                _add(child, f":{getattr(child, 'line', getattr(doc, 'line', 1))}", name, out, problems)
        else:
            _add(doc, f":{getattr(doc, 'line', 1)}", name, out, problems)
    if problems:
        raise ConfigError(problems)
    return out


def _add(item: Any, where: str, name: str, out: list[Doc], problems: list[str]) -> None:
    """One document (a List's items each), or the problem with it. (A function of its own, not
    a closure: a closure that calls itself is a reference cycle, which kept every document
    read alive until the cyclic collector ran.)"""
    if not isinstance(item, dict):
        problems.append(f"{name}{where}: expected a mapping (a Kubernetes object or AWS JSON), "
                        f"got {type(item).__name__}")
        return
    if item.get("kind") == "List" or (item.get("kind") is None and "items" in item
                                      and "TargetGroups" not in item):
        items = item.get("items")
        if items is None:
            return
        if not isinstance(items, list):
            problems.append(f"{name}:{getattr(item, 'line', 1)}: `items` of a List must be a list")
            return
        for child in items:
            _add(child, f":{getattr(child, 'line', getattr(items, 'line', 1))}", name, out, problems)
        return
    out.append(Doc(name, len(out), item))


def expand(paths: Iterable[str]) -> list[str]:
    """Files to read: directories recursively (*.yaml, *.yml, *.json), sorted for stable output."""
    out: list[str] = []
    for p in paths:
        if p == STDIN:
            out.append(p)
            continue
        path = Path(p)
        try:
            is_dir = path.is_dir()
        except OSError:  # e.g. a name too long: reading it says so in one line
            is_dir = False
        if is_dir:
            # Hidden directories (.git, .github) hold no manifests to audit. FIFOs and devices
            # in a directory are not files (`is_file`), so they are never opened.
            try:
                out.extend(str(f) for f in sorted(path.rglob("*"))
                           if f.suffix.lower() in SUFFIXES and f.is_file()
                           and not any(part.startswith(".") for part in f.relative_to(path).parts))
            except OSError as err:
                raise ConfigError([f"{display_name(p)}: cannot list the directory "
                                   f"({(err.strerror or err.__class__.__name__).lower()})"]) from None
        else:
            out.append(p)
    return out


def read_all(paths: Iterable[str], texts: Mapping[str, str] | None = None) -> tuple[list[Doc], list[str]]:
    """Every document of every readable path, and one line per file that could not be read.
    `texts` (by the name a report shows) stands in for files already read (`audit --fix`
    judges its patched text without writing it)."""
    docs: list[Doc] = []
    problems: list[str] = []
    files = expand(paths)
    if not files:
        return [], ["no *.yaml, *.yml or *.json files found in " + ", ".join(map(display_name, paths))]
    for f in files:
        name = display_name(f)
        try:
            text = texts[name] if texts is not None and name in texts else read_text(f)
            docs.extend(documents(parse(text, name), name))
        except ConfigError as err:
            problems.extend(err.lines)
    return docs, problems


def read_paths(paths: Iterable[str]) -> list[Doc]:
    """Every document of every path; all unreadable files reported at once (`ConfigError`)."""
    docs, problems = read_all(paths)
    if problems:
        raise ConfigError(problems)
    return docs


def line_of(obj: Any, path: Iterable[Any]) -> int:
    """The line of the deepest key of `path` that exists in `obj` (0 when none is known)."""
    line = getattr(obj, "line", 0)
    node = obj
    for key in path:
        if isinstance(node, dict) and key in node:
            if isinstance(node, Map):
                line = node.key_line(key, line)
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            line = getattr(node[key], "line", line)
            node = node[key]
        else:
            break
    return line
