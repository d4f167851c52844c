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
from typing import Any, Callable, Iterable, Mapping

from lockstep.timing import forked
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


# A YAML file this large has its later part parsed in a second process (`Reading`), at a line
# that starts a document: a few hundred KB take ~0.1 s to parse, a fork and sending the
# documents back ~0.02 s. The child takes the larger part: the CLI starts it before it
# imports the rules (~0.2 s), and this process parses the rest after that.
SPLIT_MIN = 256 * 1024
SPLIT_AT = 0.4  # of the text, where the child's part may start (at the next document)
# Line breaks besides "\n" that YAML counts (CR, NEL, LS, PS): a text with any is not split,
# so the second part's line numbers are simply the first part's count of "\n".
OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


def split_point(text: str, at: float | None = None) -> int:
    """Where the second part of a multi-document YAML text starts (the first `---` line past
    the fraction `at` of it, `SPLIT_AT` by default), or 0 when it is not split. A line `---`
    (then a space, a tab or its end) at column 0 starts a document wherever the YAML is
    valid: no scalar or collection holds one (YAML forbids it in content; libyaml refuses a
    quoted or block scalar with one). Input that is not valid YAML is parsed whole again
    (`Reading.result`), so its error is the whole file's. Directives (`%YAML`) bind the next
    document: a text with one is not split."""
    if text.lstrip()[:1] in ("{", "[") or text.startswith("%") or "\n%" in text \
            or any(b in text for b in OTHER_BREAKS):
        return 0
    pos = int(len(text) * (SPLIT_AT if at is None else at))
    while (pos := text.find("\n---", pos)) >= 0:
        after = text[pos + 4:pos + 5]
        if after in ("", " ", "\t", "\n"):
            return pos + 1
        pos += 4
    return 0


def parse_from(text: str, start: int, name: str) -> list[Any]:
    """`parse` of the documents from `start` on, each at its line in the whole text."""
    return parse("\n" * text.count("\n", 0, start) + text[start:], name)


class Reading:
    """Every document of every readable path (`result`), and one line per file that could not
    be read. `texts` (by the name a report shows) stands in for files already read
    (`audit --fix` judges its patched text without writing it).

    With `jobs` > 1 (and `fork`), the later part of the largest YAML file over `SPLIT_MIN`
    is parsed in a forked child from the moment this is made, while this process goes on
    (the CLI imports the rules meanwhile) and then parses the first part. The documents are
    the same as one process reads (tests/audit/test_parallel.py). The child also runs `check`
    (the audit's `shape.doc_problems`) on its part's documents: `shape_problems` holds the
    results, by the `id` of the document, for the audit's own shape step."""

    def __init__(self, paths: Iterable[str], texts: Mapping[str, str] | None = None, jobs: int = 1,
                 check: Callable[[Doc], list[str]] | None = None) -> None:
        paths = list(paths)
        # (name, text, problems): text None when the file could not be read
        self.files: list[tuple[str, str | None, list[str]]] = []
        self.none_found = "no *.yaml, *.yml or *.json files found in " + ", ".join(map(display_name, paths))
        for f in expand(paths):
            name = display_name(f)
            try:
                self.files.append((name, texts[name] if texts is not None and name in texts else read_text(f), []))
            except ConfigError as err:
                self.files.append((name, None, err.lines))
        self.split: tuple[int, int, forked.Pending] | None = None  # (file, where the child's part starts, the child)
        self.shape_problems: dict[int, list[str]] = {}
        sizes = [(len(t), i) for i, (_, t, _) in enumerate(self.files) if t is not None and len(t) >= SPLIT_MIN]
        if jobs > 1 and sizes and forked.available():
            i = max(sizes)[1]
            name, text, _ = self.files[i]
            start = split_point(text)
            if start:
                try:
                    self.split = (i, start, forked.Pending(_parsed, text, start, name, check))
                except forked.ChildFailed:  # no process to spare: read here
                    pass

    def result(self) -> tuple[list[Doc], list[str]]:
        if not self.files:
            return [], [self.none_found]
        docs: list[Doc] = []
        problems: list[str] = []
        for i, (name, text, unreadable) in enumerate(self.files):
            problems += unreadable
            if text is None:
                continue
            try:
                raw, shaped = self._parse(i, name, text)
                found = documents(raw, name)
            except ConfigError as err:
                problems.extend(err.lines)
                continue
            # (the child's part flattens to the file's last documents, one shape result each)
            self.shape_problems.update((id(d), p) for d, p in zip(found[len(found) - len(shaped):], shaped))
            docs += found
        return docs, problems

    def _parse(self, i: int, name: str, text: str) -> tuple[list[Any], list[list[str]]]:
        """The file's documents, and the shape problems of the child's part's (flattened)."""
        if self.split is None or self.split[0] != i:
            return parse(text, name), []
        _, start, child = self.split
        self.split = None
        try:
            first = parse(text[:start], name)
            second = child.result()
        except (ConfigError, forked.ChildFailed):  # the whole file's own error (or a failed child): one reading
            child.cancel()
            return parse(text, name), []
        if second is None:
            return parse(text, name), []
        return first + second[0], second[1]


def _parsed(text: str, start: int, name: str, check: Callable[[Doc], list[str]] | None
            ) -> tuple[list[Any], list[list[str]]] | None:
    """The child's part and `check` of each of its documents (None: it does not parse, or it
    holds a document `documents` refuses: the whole file is read again for the error)."""
    try:
        raw = parse_from(text, start, name)
        return raw, [] if check is None else [check(d) for d in documents(raw, name)]
    except ConfigError:
        return None


def read_all(paths: Iterable[str], texts: Mapping[str, str] | None = None) -> tuple[list[Doc], list[str]]:
    """Every document of every readable path, and one line per file that could not be read
    (`Reading`, in this process)."""
    return Reading(paths, texts).result()


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
