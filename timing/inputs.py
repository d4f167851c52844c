"""The input boundary every file-reading command shares: limits, reading, YAML.

The module is long because it is one boundary: the fast event reader and the node reader
must refuse the same inputs with the same lines, and the limits they share sit beside both.

- Reading: only regular files are opened by name. A FIFO, a device or a socket is read only
  as standard input (`-`), where the user asked for it; a path that cannot be opened (missing,
  a symlink loop, a name too long, a path below a regular file) is one line naming the path.
- Limits, each with its own one-line message: `MAX_INPUT_BYTES`, `MAX_DEPTH`,
  `MAX_INT_DIGITS`, `MAX_ALIAS_VALUES`.
- YAML: PyYAML's C parser (libyaml) when PyYAML was built with it, the pure-Python one
  otherwise; both keep every node's line. A duplicate key is refused at the line of the second
  one, as kubectl does for manifests (its YAML decoder stops with "mapping key ... already
  defined at line N"; go-yaml v3 made unique keys unconditional, go-yaml/yaml#751) — PyYAML
  alone keeps the last value. A tag whose value it cannot construct (`!!int abc`, `!!bool
  maybe`, an impossible date) is refused at its line. A key that a merge (`<<`) brings in may
  be overridden by one written in the mapping, as the YAML merge key type defines.

Every failure is a `ConfigError` (exit 2), never a traceback.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from array import array
from typing import Any, Callable, Final, Iterable, Iterator

import yaml
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import (AliasEvent, DocumentEndEvent, MappingEndEvent, MappingStartEvent, ScalarEvent,
                         SequenceEndEvent, SequenceStartEvent)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from lockstep.timing.textio import cut, cut_text

MIB: Final = 2**20
# A 1,000-service stack config is 1.2 MB; `kubectl get` of a few thousand objects as YAML, a
# few tens of MB. Anything larger is read no further.
MAX_INPUT_BYTES: Final = 64 * MIB
# Kubernetes objects nest about 15 levels (a CRD's schema a few dozen); a stack config 6.
MAX_DEPTH: Final = 100
# The largest number any input holds is a 10-digit DNS TTL. Python itself raises ValueError on
# converting a decimal string of more than 4,300 digits (its "integer string conversion length
# limitation", `sys.int_info.default_max_str_digits`), which is what crashed before.
MAX_INT_DIGITS: Final = 100
# Values that aliases may add on top of the ones written out: a "billion laughs" document is
# a few hundred bytes that expand to 10^9 values for every reader after the parser.
MAX_ALIAS_VALUES: Final = 100_000
PATH_CHARS: Final = 200  # a path is echoed whole up to this length
STDIN: Final = "-"
STDIN_NAME: Final = "<stdin>"

LIMITS: Final = {  # for the docs (scripts/gen-config-doc) and the README
    "input size": f"{MAX_INPUT_BYTES // MIB} MiB per file or standard input",
    "nesting depth": f"{MAX_DEPTH} levels of mappings and lists",
    "integer digits": f"{MAX_INT_DIGITS}",
    "values added by YAML aliases": f"{MAX_ALIAS_VALUES:,}",
}


class ConfigError(Exception):
    """Unreadable or invalid input (exit 2). `lines` are one-line messages."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        super().__init__("\n".join(lines))


class MalformedYAML(ConfigError):
    """Text the YAML parser could not parse (as opposed to a value or limit it refused)."""


def display_name(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    return STDIN_NAME if text == STDIN else cut_text(text, PATH_CHARS)


# ---- reading -------------------------------------------------------------------------------
REASONS: Final = {  # errno → the words of the one-line message
    "ENOENT": "no such file",
    "ENOTDIR": "a part of the path is a file, not a directory",
    "ELOOP": "too many levels of symbolic links (a symlink loop?)",
    "ENAMETOOLONG": "file name too long",
    "EACCES": "permission denied",
    "EISDIR": "is a directory",
    "ENXIO": "not a file that can be read (a socket?)",
}
KINDS: Final = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _reason(err: OSError) -> str:
    import errno

    name = errno.errorcode.get(err.errno or 0, "")
    return REASONS.get(name) or f"cannot read ({(err.strerror or err.__class__.__name__).lower()})"


def _too_big(name: str) -> ConfigError:
    return ConfigError([f"{name}: larger than the {MAX_INPUT_BYTES // MIB} MiB input limit"])


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file, or of standard input for `-`, at most `MAX_INPUT_BYTES`."""
    name = display_name(path)
    if os.fspath(path) == STDIN:
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise ConfigError([f"{name}: standard input is not open"])
        try:
            data = stream.read(MAX_INPUT_BYTES + 1)
        except OSError as err:
            raise ConfigError([f"{name}: {_reason(err)}"]) from None
    else:
        try:
            # Non-blocking: opening a FIFO without a writer must not hang before fstat says so.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as err:
            raise ConfigError([f"{name}: {_reason(err)}"]) from None
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ConfigError([f"{name}: is a directory"])
            if not stat.S_ISREG(info.st_mode):
                kind = next((k for test, k in KINDS if test(info.st_mode)), "not a regular file")
                raise ConfigError([f"{name}: {kind}, not a regular file (to read it, pass - and "
                                   "redirect it to standard input)"])
            if info.st_size > MAX_INPUT_BYTES:
                raise _too_big(name)
            chunks, size = [], 0
            while size <= MAX_INPUT_BYTES:  # a file still growing is read no further either
                chunk = os.read(fd, min(MIB, MAX_INPUT_BYTES + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks)
        except OSError as err:
            raise ConfigError([f"{name}: {_reason(err)}"]) from None
        finally:
            os.close(fd)
    if len(data) > MAX_INPUT_BYTES:
        raise _too_big(name)
    return data


def read_text(path: str | os.PathLike[str]) -> str:
    """`read_bytes` decoded as UTF-8 (a byte-order mark is dropped)."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ConfigError([f"{display_name(path)}: not UTF-8 text (byte {err.start})"]) from None


# ---- YAML ----------------------------------------------------------------------------------
BASE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: ~10x faster
STR: Final = "tag:yaml.org,2002:str"
INT: Final = "tag:yaml.org,2002:int"
MAP: Final = "tag:yaml.org,2002:map"
SEQ: Final = "tag:yaml.org,2002:seq"
MERGE: Final = "tag:yaml.org,2002:merge"
YAML_ERRORS: Final = (ValueError, TypeError, KeyError, AttributeError, OverflowError, IndexError)


class Refused(ConstructorError):
    """A value or a limit this module refuses, in its own words: never retried as JSON."""


class Map(dict):
    """A mapping that knows its line and the line of each key (1-based).

    The key lines are kept in the mapping's key order as one array (`key_lines`), not as a
    dict per mapping: those dicts were 12 of the 29 MB that 4,000 documents take once read.
    Most mappings write one key per line from their own first line on (labels, selectors,
    a probe, a port: 31,000 of 43,000 in 4,000 manifests): those keep no array at all
    (`key_lines` None: the i-th key is on `line + i`). `lines` is the key → line dict, built
    when asked (only a finding's location asks)."""

    __slots__ = ("line", "key_lines")

    def __init__(self, *args: Any, line: int = 0, key_lines: array | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.line = line
        self.key_lines = key_lines  # the line of each key, in the order the keys were written

    def _key_lines(self) -> Iterable[int]:
        return range(self.line, self.line + len(self)) if self.key_lines is None else self.key_lines

    @property
    def lines(self) -> dict[Any, int]:
        return dict(zip(self, self._key_lines()))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its line, its key lines and its items (`_map`): a dict subclass with slots
        is otherwise pickled with a dict of its slots, set again one by one on loading (the
        audit sends the documents it reads in a second process: 0.06 → 0.04 s for 2,000)."""
        return _map, (self.line, self.key_lines), None, None, iter(self.items())

    def key_line(self, key: Any, default: int) -> int:
        """`self.lines.get(key, default)` without building the dict (locating a finding asks
        this once per key of its path: 18,000 dicts on 4,000 documents)."""
        for k, line in zip(self, self._key_lines()):
            if k == key:
                return line
        return default


class Seq(list):
    __slots__ = ("line",)

    def __init__(self, *args: Any, line: int = 0) -> None:
        super().__init__(*args)
        self.line = line

    def __reduce__(self) -> tuple[Any, ...]:
        return _seq, (self.line,), None, iter(self)


def _map(line: int, key_lines: array | None) -> Map:
    """An empty `Map` (pickle then adds its items)."""
    m = Map.__new__(Map)
    m.line, m.key_lines = line, key_lines
    return m


def _seq(line: int) -> Seq:
    s = Seq.__new__(Seq)
    s.line = line
    return s


RESOLVED: dict[tuple[str, Any], str] = {}
PLAIN_TAGS: dict[str, str] = {}  # the same for plain scalars, by their text (the event reader's)
RESOLVED_CHARS, RESOLVED_MAX = 64, 50_000  # a bounded cache of short scalars' implicit tags


def _tag(node: Node) -> str:
    return node.tag.replace("tag:yaml.org,2002:", "!!")


def _kind(node: Node) -> str:
    return {MappingNode: "mapping", SequenceNode: "list"}.get(type(node), "scalar")


class PlainLoader(BASE):  # type: ignore[misc,valid-type]
    """Plain dicts and lists (the stack config)."""

    keep_lines = False

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        # The implicit tag of a scalar depends only on its text and style (no path resolvers
        # are registered): most scalars repeat (keys, kinds, small numbers), and the regex walk
        # per scalar was a third of reading a 1,000-service stack.
        if kind is not ScalarNode or len(value) > RESOLVED_CHARS:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = RESOLVED.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(RESOLVED) < RESOLVED_MAX:
                RESOLVED[key] = tag
        return tag

    def value(self, node: Node) -> Any:
        # Plain strings, small numbers, mappings and lists are nearly all of a document: they
        # skip the generic constructor's bookkeeping (the same values, the same checks).
        tag = node.tag
        if isinstance(node, ScalarNode):
            if tag == STR:
                return node.value
            if (tag == INT and node.value.isascii() and node.value.isdigit()
                    and (node.value[0] != "0" or node.value == "0")):
                return _construct_int(self, node)  # decimal: YAML 1.1 reads 0-led digits as octal
        elif tag == MAP and isinstance(node, MappingNode):
            data = self.new_map(node)
            _fill_map(self, node, data)
            return data
        elif tag == SEQ and isinstance(node, SequenceNode):
            data = self.new_seq(node)
            _fill_seq(self, node, data)
            return data
        try:
            return self.construct_object(node, deep=True)
        except yaml.YAMLError:
            raise
        except YAML_ERRORS:
            raise _bad_value(node) from None

    def new_map(self, node: Node) -> dict[Any, Any]:
        return Map(line=node.start_mark.line + 1) if self.keep_lines else {}

    def new_seq(self, node: Node) -> list[Any]:
        return Seq(line=node.start_mark.line + 1) if self.keep_lines else []

    def enter(self, node: Node, want: type[Node]) -> None:
        if not isinstance(node, want):
            raise Refused(None, None, f"{_tag(node)} on a {_kind(node)}: expected a "
                                   f"{'mapping' if want is MappingNode else 'list'}", node.start_mark)
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Refused(None, None, f"nested deeper than the limit of {MAX_DEPTH} levels",
                             node.start_mark)


class LineLoader(PlainLoader):
    """`Map`s and `Seq`s that remember their lines (the audit's findings point at them)."""

    keep_lines = True


def _bad_value(node: Node) -> Refused:
    shown = cut(node.value) if isinstance(node, ScalarNode) else f"a {_kind(node)}"
    return Refused(None, None, f"cannot read {shown} as {_tag(node)}", node.start_mark)


def _construct_map(loader: PlainLoader, node: Node) -> Iterator[dict[Any, Any]]:
    data = loader.new_map(node)
    yield data
    _fill_map(loader, node, data)


def _construct_seq(loader: PlainLoader, node: Node) -> Iterator[list[Any]]:
    data = loader.new_seq(node)
    yield data
    _fill_seq(loader, node, data)


def _fill_map(loader: PlainLoader, node: Node, data: dict[Any, Any]) -> None:
    loader.enter(node, MappingNode)
    pairs = node.value
    merged: list[tuple[Node, Node]] = []
    if any(k.tag == MERGE for k, _ in pairs):
        own = sum(1 for k, _ in pairs if k.tag != MERGE)
        loader.flatten_mapping(node)  # merged pairs first: a key written here overrides them
        merged, pairs = node.value[:len(node.value) - own], node.value[len(node.value) - own:]
    lines: dict[Any, int] = {}
    first: dict[Any, int] = {}
    for n, (key_node, value_node) in enumerate((*merged, *pairs)):
        key = loader.value(key_node)
        try:
            hash(key)
        except TypeError:
            raise ConstructorError("while constructing a mapping", node.start_mark,
                                   "found an unhashable key", key_node.start_mark) from None
        key_line = key_node.start_mark.line + 1
        if n >= len(merged):
            if key in first:
                raise Refused(None, None, f"duplicate key {cut(key)} (first at line {first[key]})",
                              key_node.start_mark)
            first[key] = key_line
        data[key] = loader.value(value_node)
        if loader.keep_lines:
            lines[key] = key_line  # a key written after a merge keeps its place, takes its line
    if loader.keep_lines:
        data.key_lines = array("L", (lines[k] for k in data))  # type: ignore[attr-defined]
    loader.depth -= 1


def _fill_seq(loader: PlainLoader, node: Node, data: list[Any]) -> None:
    loader.enter(node, SequenceNode)
    data.extend(loader.value(child) for child in node.value)
    loader.depth -= 1


def _construct_int(loader: PlainLoader, node: Node) -> int:
    if isinstance(node, ScalarNode) and len(node.value) > MAX_INT_DIGITS:
        raise Refused(None, None, f"an integer of {len(node.value)} digits: more than the limit "
                         f"of {MAX_INT_DIGITS}", node.start_mark)
    return SafeConstructor.construct_yaml_int(loader, node)


for _cls in (PlainLoader, LineLoader):
    _cls.add_constructor(MAP, _construct_map)
    _cls.add_constructor(SEQ, _construct_seq)
    _cls.add_constructor(INT, _construct_int)


def _alias_values(root: Node) -> int:
    """How many values aliases add to the document (0 without aliases): each node counted
    once per path that reaches it, minus the nodes written out."""
    total: dict[int, int] = {}
    distinct: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            try:
                total[key] = 1 + sum(total[id(c)] for c in _children(node))
            except KeyError:  # a child still open is an ancestor: the alias loops
                raise Refused(None, None, "an alias refers to a mapping or list that contains it",
                              node.start_mark) from None
            continue
        if key in total or key in distinct:
            continue
        distinct.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in distinct)
    return total[id(root)] - len(distinct)


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return node.value
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _yaml_line(name: str, text: str, err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None)
    if mark is not None:
        where = f"{name}:{mark.line + 1}"
    elif isinstance(getattr(err, "position", None), int):  # a reader error: a bad character
        where = f"{name}:{text.count(chr(10), 0, err.position) + 1}"  # type: ignore[attr-defined]
    else:
        where = name
    problem = getattr(err, "problem", None) or getattr(err, "reason", None)
    if isinstance(err, Refused):
        return f"{where}: {problem}"
    if isinstance(err, yaml.reader.ReaderError):
        return f"{where}: malformed YAML: {err.reason} (character {cut(chr(err.character))})"
    return f"{where}: malformed YAML" + (f": {problem}" if problem else "")


def _documents(text: str, loader_class: type[PlainLoader]) -> Iterator[Any]:
    loader = loader_class(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            # An alias needs an anchor (`&`) and a `*`: text without both has no alias to walk.
            if "&" in text and "*" in text and _alias_values(node) > MAX_ALIAS_VALUES:
                raise Refused(None, None, f"aliases expand to more than the limit of "
                                 f"{MAX_ALIAS_VALUES:,} values", node.start_mark)
            try:
                yield loader.construct_document(node)
            except yaml.YAMLError:
                raise
            except YAML_ERRORS:
                raise _bad_value(node) from None
    finally:
        loader.dispose()


class _Unusual(Exception):
    """An anchor, an alias, a merge key or a tagged collection: read by the composing loader."""


def _fast_documents(text: str, loader_class: type[PlainLoader]) -> list[Any]:
    """The documents of plain YAML (no anchors, aliases, merge keys or tagged collections —
    nearly every stack config and manifest) built straight from libyaml's events, without
    composing a node tree first: the same values and checks as `_documents`, at half the cost.
    Raises `_Unusual` for anything else.

    One loop, no call per value: plain strings and decimal integers (nine in ten scalars) are
    built in place; every other scalar goes through the loader's own `value`. (A function
    call per event and a node per integer were half of reading a 1,000-service stack.)"""
    loader = loader_class(text)
    resolve, value, keep_lines = loader.resolve, loader.value, loader_class.keep_lines
    get_event = loader.get_event
    new_map, new_seq = dict.__new__, list.__new__
    # Keys and short values repeat in every document (`metadata`, `name`, `app`, `Prefix`):
    # one shared object each instead of one per occurrence.
    strings: dict[str, str] = {}
    docs: list[Any] = []
    # One frame per open collection: [data, pending key, the line of each key, the last key's
    # line, is a mapping, its keys are not one a line from its own line on]; `frame` is the
    # innermost (None at the top of a document).
    stack: list[list[Any]] = []
    frame: list[Any] | None = None
    top: list[Any] = []
    try:
        while True:
            ev = get_event()  # None after the stream's end
            if ev is None:
                break
            cls = type(ev)
            if cls is ScalarEvent:
                if ev.anchor is not None:
                    raise _Unusual
                item = ev.value
                tag = ev.tag
                if tag is None or tag == "!":
                    implicit = ev.implicit
                    if not implicit[0]:
                        tag = STR  # quoted: what `resolve` gives a scalar no implicit resolver reads
                    else:  # plain: its tag depends on its text alone (no path resolvers)
                        tag = PLAIN_TAGS.get(item)
                        if tag is None:
                            tag = resolve(ScalarNode, item, implicit)
                            if len(item) <= RESOLVED_CHARS and len(PLAIN_TAGS) < RESOLVED_MAX:
                                PLAIN_TAGS[item] = tag
                if tag == STR:
                    if len(item) <= RESOLVED_CHARS:  # one object per distinct short string
                        item = strings.setdefault(item, item)
                else:
                    if tag == MERGE:
                        raise _Unusual
                    if (tag == INT and item.isascii() and item.isdigit() and len(item) <= MAX_INT_DIGITS
                            and (item[0] != "0" or item == "0")):  # decimal: 0-led digits are octal
                        item = int(item)
                    else:
                        item = value(ScalarNode(tag, item, ev.start_mark, ev.end_mark, ev.style))
            elif cls is MappingStartEvent or cls is SequenceStartEvent:
                mapping = cls is MappingStartEvent
                tag = ev.tag
                if ev.anchor is not None or (tag is not None and tag != "!"
                                             and tag != (MAP if mapping else SEQ)):
                    raise _Unusual
                if len(stack) >= MAX_DEPTH:
                    raise Refused(None, None, f"nested deeper than the limit of {MAX_DEPTH} levels",
                                  ev.start_mark)
                if keep_lines:  # what `new_map` and `new_seq` make, without a node to read the line from
                    # (`Map(line=n)` without the call of its `__init__`: 0.48 us against 0.12)
                    item = new_map(Map) if mapping else new_seq(Seq)
                    item.line = ev.start_mark.line + 1
                    if mapping:
                        item.key_lines = None
                else:
                    item = {} if mapping else []
            elif cls is MappingEndEvent or cls is SequenceEndEvent:
                if keep_lines and frame[5]:  # keys not one a line from the mapping's own line on
                    frame[0].key_lines = array("L", frame[2].values())
                stack.pop()
                frame = stack[-1] if stack else None
                continue
            elif cls is AliasEvent:
                raise _Unusual
            else:
                if cls is DocumentEndEvent:
                    docs.extend(top)
                    top.clear()
                continue
            # `item`: a value, or a collection just opened (its frame is pushed below).
            if frame is None:
                top.append(item)
            elif not frame[4]:
                frame[0].append(item)
            elif frame[1] is _NO_KEY:
                if isinstance(item, (dict, list)):
                    raise _Unusual  # a collection as a key: refused, with its words, by the slow path
                line = ev.start_mark.line + 1
                first = frame[2]
                if item in first:
                    raise Refused(None, None, f"duplicate key {cut(item)} (first at line {first[item]})",
                                  ev.start_mark)
                first[item] = line  # (each key is new: a duplicate is refused)
                if line != frame[3] + 1:
                    frame[5] = True
                frame[1], frame[3] = item, line
            else:
                frame[0][frame[1]] = item
                frame[1] = _NO_KEY
            if cls is not ScalarEvent:
                # The previous key's line starts one above the collection's own.
                frame = [item, _NO_KEY, {}, ev.start_mark.line, cls is MappingStartEvent, False]
                stack.append(frame)
    finally:
        loader.dispose()
    return docs


_NO_KEY: Final = object()


def load_yaml(text: str, name: str, *, lines: bool = False, single: bool = False) -> list[Any]:
    """Every document of `text` (`None`s kept), or a `ConfigError` naming `name` and the line."""
    loader_class = LineLoader if lines else PlainLoader
    try:
        try:
            docs = _fast_documents(text, loader_class)
        except _Unusual:
            docs = list(_documents(text, loader_class))
    except Refused as err:
        raise ConfigError([_yaml_line(name, text, err)]) from None
    except yaml.YAMLError as err:
        raise MalformedYAML([_yaml_line(name, text, err)]) from None
    except RecursionError:  # only the pure-Python parser recurses while composing
        raise ConfigError([f"{name}: nested deeper than the limit of {MAX_DEPTH} levels"]) from None
    if single and len(docs) > 1:
        raise ConfigError([f"{name}: more than one YAML document (a stack config is one)"])
    return docs


# ---- JSON that YAML 1.1 refuses (tabs, some escapes) ---------------------------------------
def _pairs(name: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def build(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ConfigError([f"{name}: malformed JSON: duplicate key {cut(key)}"])
            out[key] = value
        return out
    return build


def _json_int(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if len(text) > MAX_INT_DIGITS:
            raise ConfigError([f"{name}: an integer of {len(text)} digits: more than the limit of "
                               f"{MAX_INT_DIGITS}"])
        return int(text)
    return parse


def _depth(obj: Any) -> int:
    deepest, stack = 0, [(obj, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, depth + 1)
            stack.extend((c, depth + 1) for c in (node.values() if isinstance(node, dict) else node))
    return deepest


def load_json(text: str, name: str) -> Any:
    try:
        doc = json.loads(text, object_pairs_hook=_pairs(name), parse_int=_json_int(name))
    except json.JSONDecodeError as err:
        raise ConfigError([f"{name}:{err.lineno}: malformed JSON: {err.msg}"]) from None
    except RecursionError:
        raise ConfigError([f"{name}: nested deeper than the limit of {MAX_DEPTH} levels"]) from None
    if _depth(doc) > MAX_DEPTH:
        raise ConfigError([f"{name}: nested deeper than the limit of {MAX_DEPTH} levels"])
    return doc


def write_atomically(path: "os.PathLike[str] | str", text: str) -> None:
    """Replace a file in one step, keeping its mode: a crash leaves the old file or the new, never half."""
    import tempfile

    path = os.fspath(path)
    folder, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=folder or ".", prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
