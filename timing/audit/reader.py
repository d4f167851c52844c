"""Read manifests and AWS JSON into documents that remember where each field was written.

Files are YAML (many documents each, `kind: List` flattened) or JSON (`kubectl -o json`,
`aws elbv2 describe-target-groups`). YAML goes through PyYAML's C parser with mapping
constructors that record the line of every key, so SARIF can point a pull-request
annotation at the offending field. Anything unreadable becomes a one-line `ConfigError`
naming the file and the reason: the CLI exits 2, never with a traceback.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from timing.config import ConfigError

SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"


class Map(dict):
    """A mapping that knows its line and the line of each key (1-based)."""

    __slots__ = ("line", "lines")

    def __init__(self, *args: Any, line: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line = line
        self.lines: dict[Any, int] = {}


class Seq(list):
    __slots__ = ("line",)

    def __init__(self, *args: Any, line: int = 0) -> None:
        super().__init__(*args)
        self.line = line


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


class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    pass


STR = "tag:yaml.org,2002:str"
MERGE = "tag:yaml.org,2002:merge"


def _value(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    # Plain strings are most of a manifest: skip the generic constructor's bookkeeping for them.
    if node.tag == STR and isinstance(node, yaml.ScalarNode):
        return node.value
    return loader.construct_object(node, deep=True)


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[Map]:
    data = Map(line=node.start_mark.line + 1)
    yield data
    if any(k.tag == MERGE for k, _ in node.value):
        loader.flatten_mapping(node)
    lines = data.lines
    for key_node, value_node in node.value:
        key = _value(loader, key_node)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                "found an unhashable key", key_node.start_mark) from None
        data[key] = _value(loader, value_node)
        lines[key] = key_node.start_mark.line + 1


def _construct_seq(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Iterator[Seq]:
    data = Seq(line=node.start_mark.line + 1)
    yield data
    data.extend(_value(loader, child) for child in node.value)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def _yaml_error(name: str, err: yaml.YAMLError) -> ConfigError:
    mark = getattr(err, "problem_mark", None)
    where = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0] or "malformed YAML"
    return ConfigError([f"{name}{where}: malformed YAML: {problem}"])


def parse(text: str, name: str) -> list[Any]:
    """Every top-level document of one file (JSON or YAML), `None`s dropped."""
    if text.lstrip()[:1] in ("{", "["):
        # JSON is YAML too: the YAML parser gives it line numbers; JSON that PyYAML's
        # YAML 1.1 reading refuses (tabs, some escapes) still goes through `json`.
        try:
            return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
        except (yaml.YAMLError, ValueError, TypeError, OverflowError):
            pass
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as err:
            raise ConfigError([f"{name}:{err.lineno}: malformed JSON: {err.msg}"]) from None
        except RecursionError:
            raise ConfigError([f"{name}: malformed JSON: nested too deeply"]) from None
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except yaml.YAMLError as err:
        raise _yaml_error(name, err) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        # e.g. a timestamp PyYAML cannot represent, or absurd nesting
        raise ConfigError([f"{name}: malformed YAML: {err.__class__.__name__}: {err}"]) from None


def documents(raw: Iterable[Any], name: str) -> list[Doc]:
    """Flatten `kind: List` (kubectl) and check each item is an object."""
    out: list[Doc] = []
    problems: list[str] = []

    def add(item: Any, where: str) -> None:
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
                add(child, f":{getattr(child, 'line', getattr(items, 'line', 1))}")
            return
        out.append(Doc(name, len(out), item))

    for doc in raw:
        if isinstance(doc, list):  # a bare JSON array of objects
            for child in doc:
                add(child, f":{getattr(child, 'line', getattr(doc, 'line', 1))}")
        else:
            add(doc, f":{getattr(doc, 'line', 1)}")
    if problems:
        raise ConfigError(problems)
    return out


def read_text(path: str) -> str:
    if path == STDIN:
        data = sys.stdin.buffer.read()
        name = "<stdin>"
    else:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise ConfigError([f"{path}: no such file or directory"]) from None
        except OSError as err:
            raise ConfigError([f"{path}: cannot read ({err.strerror or err.__class__.__name__})"]) from None
        name = path
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ConfigError([f"{name}: not UTF-8 text (byte {err.start})"]) from None


def expand(paths: Iterable[str]) -> list[str]:
    """Files to read: directories recursively (*.yaml, *.yml, *.json), sorted for stable output."""
    out: list[str] = []
    for p in paths:
        if p == STDIN:
            out.append(p)
            continue
        path = Path(p)
        if path.is_dir():
            # Hidden directories (.git, .github) hold no manifests to audit.
            out.extend(str(f) for f in sorted(path.rglob("*"))
                       if f.is_file() and f.suffix.lower() in SUFFIXES
                       and not any(part.startswith(".") for part in f.relative_to(path).parts))
        else:
            out.append(p)
    return out


def read_all(paths: Iterable[str]) -> tuple[list[Doc], list[str]]:
    """Every document of every readable path, and one line per file that could not be read."""
    docs: list[Doc] = []
    problems: list[str] = []
    files = expand(paths)
    if not files:
        return [], ["no *.yaml, *.yml or *.json files found in " + ", ".join(paths)]
    for f in files:
        name = "<stdin>" if f == STDIN else f
        try:
            docs.extend(documents(parse(read_text(f), name), name))
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
            line = getattr(node, "lines", {}).get(key, line)
            node = node[key]
        elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            line = getattr(node[key], "line", line)
            node = node[key]
        else:
            break
    return line
