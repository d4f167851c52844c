"""Bad inputs made from the good ones the repository ships, for the fuzz tests and `bench/fuzz`.

Every generator takes a `random.Random`, so the tests (hypothesis, through `st.randoms()`) and
the long campaign (`tests/fuzz/campaign.py`, seeded) draw from the same definitions. Seeds:
the bundled example stack, `examples/`, and every input of the audit corpus. Mutations:
structural (one value of the parsed document replaced, deleted or renamed, then written back
as YAML) and byte-level (bytes flipped, cut, repeated, or a YAML token spliced in).
"""

from __future__ import annotations

import copy
import datetime
import functools
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
STACKS = {p.name: p.read_bytes() for p in [ROOT / "Pulumi.example.yaml", *sorted((ROOT / "examples").glob("*.yaml"))]}
MANIFESTS = {str(p.relative_to(ROOT / "tests" / "audit" / "corpus")): p.read_bytes()
             for p in sorted((ROOT / "tests" / "audit" / "corpus").glob("*/input/**/*")) if p.is_file()}

# Values of the wrong type or size for any field (structural mutations).
WRONG: list[Any] = [
    -1, 0, 1, 2**31, -(2**63), 10**30, 0.5, -0.0, float("inf"), float("nan"), True, False, None,
    "", "x", "5", "50%", "1m", "ip", "alb", "HTTP", "-5", "0x1F", "1e3", "~", "null", "yes",
    "x" * 300, "é✓→", [], {}, [1, "a"], {"a": 1}, {"secure": "AAA"}, [[[[]]]],
    datetime.date(2001, 1, 1), datetime.datetime(2001, 1, 1, 12, 0), b"\x00\xff",
]
# Text spliced into a document (byte-level mutations): the cases among YAML's sharp edges.
TOKENS: list[bytes] = [
    b"!!int abc", b"!!bool maybe", b"!!timestamp foo", b"2001-13-45", b"!!seq ", b"!!map ", b"!!set ",
    b"!!omap ", b"!!binary ", b"!!float ", b"!!null ", b"!!str ", b"!python/name:os.system ",
    b"9" * 4301, b"[" * 500, b"{" * 120, b"&a ", b"*a", b"<<: *a\n", b"<<: [*a, *b]\n", b"? ",
    b": ", b"- ", b"\t", b"\x00", b"\x07", b"\xff\xfe", b"\xef\xbb\xbf", b"---\n", b"...\n",
    b"%YAML 1.1\n", b"%TAG ! tag:x,2001:\n", b"'", b'"', b"#", b"|\n", b">-\n", b"\n  - x\n",
    b"1:30:00", b".inf", b".nan", b"0o17", b"0b101", b"+12_345", b"~", b"=", b"\\ud800",
    b'"\\ud83d\\ude00"', b"\r\n", b"\xe2\x80\xa8", b"lockstep:margin_s: 6\n", b"kind: [List]\n",
]


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]
    stdin: bytes
    what: str  # how the case was made, to reproduce a failure by hand

    @property
    def command(self) -> str:
        return self.argv[0]


def paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path of a nested document, the root included."""
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(paths(v, (*prefix, i)))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@functools.cache
def _parsed(text: bytes) -> tuple[list[Any], list[list[tuple[Any, ...]]]]:
    """A seed's documents and their key paths, read once (a fuzz case must be cheap to make)."""
    docs = [d for d in yaml.load_all(text, Loader=LOADER) if d is not None]
    return docs, [paths(d) for d in docs]


def structural(rnd: random.Random, text: bytes) -> tuple[bytes, str]:
    """One value of one document replaced by a wrong one, deleted, or its key renamed."""
    seed_docs, seed_paths = _parsed(text)
    if not seed_docs:
        return text, "unchanged (no documents)"
    docs = list(seed_docs)
    i = rnd.randrange(len(docs))
    doc = copy.deepcopy(docs[i])
    path = rnd.choice(seed_paths[i])
    op = rnd.choice(("replace", "replace", "replace", "delete", "rename", "deepen"))
    if not path:
        doc, what = rnd.choice(WRONG), f"document {i} replaced"
    else:
        parent, key = _parent(doc, path), path[-1]
        if op == "delete":
            del parent[key]
            what = f"deleted {path}"
        elif op == "rename" and isinstance(parent, dict):
            parent[f"{key}x" if isinstance(key, str) else str(key)] = parent.pop(key)
            what = f"renamed {path}"
        elif op == "deepen":
            value: Any = parent[key]
            for _ in range(rnd.choice((2, 30, 97, 98, 99, 150))):
                value = [value]
            parent[key] = value
            what = f"nested {path}"
        else:
            parent[key] = rnd.choice(WRONG)
            what = f"{path} = {parent[key]!r:.40}"
    docs[i] = doc
    return (yaml.dump_all(docs, Dumper=DUMPER, sort_keys=False, allow_unicode=True).encode(),
            f"structural: {what}")


def byte_level(rnd: random.Random, text: bytes) -> tuple[bytes, str]:
    """One to three byte-level edits: a flip, a cut, a repeated line, or a token spliced in."""
    data = bytearray(text)
    done = []
    for _ in range(rnd.choice((1, 1, 2, 3))):
        at = rnd.randrange(len(data) + 1)
        op = rnd.choice(("token", "token", "token", "flip", "cut", "repeat-line", "truncate"))
        if op == "token":
            token = rnd.choice(TOKENS)
            data[at:at + rnd.choice((0, 0, 1, 5))] = token
            done.append(f"token {token[:20]!r} at {at}")
        elif op == "flip" and data:
            at = min(at, len(data) - 1)
            data[at] = rnd.randrange(256)
            done.append(f"byte {at} = {data[at]}")
        elif op == "cut":
            end = at + rnd.randrange(1, 40)
            del data[at:end]
            done.append(f"cut {at}..{end}")
        elif op == "repeat-line":
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            line = bytes(data[start:(len(data) if end < 0 else end + 1)])
            data[start:start] = line if line.endswith(b"\n") else line + b"\n"
            done.append(f"repeated the line at {start}")  # a duplicate key, mostly
        else:
            del data[at:]
            done.append(f"truncated at {at}")
    return bytes(data), "bytes: " + "; ".join(done)


def stack_case(rnd: random.Random) -> Case:
    name = rnd.choice(sorted(STACKS))
    mutate = structural if rnd.random() < 0.5 else byte_level
    data, what = mutate(rnd, STACKS[name])
    command = rnd.choice(("check", "check", "check", "plan"))
    extra = rnd.choice(((), ("--format", "json"), ("--all",))) if command == "check" else ()
    return Case((command, *extra, "-"), data, f"{name} {what}")


def manifest_case(rnd: random.Random) -> Case:
    name = rnd.choice(sorted(MANIFESTS))
    mutate = structural if rnd.random() < 0.5 else byte_level
    try:
        data, what = mutate(rnd, MANIFESTS[name])
    except yaml.YAMLError:  # a corpus file that is malformed on purpose: bytes only
        data, what = byte_level(rnd, MANIFESTS[name])
    fmt = rnd.choice(("text", "json", "sarif"))
    extra = rnd.choice(((), ("--allow-empty",), ("--kubernetes-version", "1.30"), ("--margin", "0")))
    return Case(("audit", "--format", fmt, *extra, "-"), data, f"{name} {what}")


OPTIONS = {
    "check": [("--format", ["text", "json", "xml", ""]), ("--all", None)],
    "plan": [("--format", ["text", "json", "mermaid", "x"])],
    "audit": [("--format", ["text", "sarif", "csv"]), ("--margin", ["0", "86400", "86401", "-1", "x", "9" * 5000]),
              ("--deregistration-propagation", ["0", "15", "1e3", "٣"]),
              ("--kubernetes-version", ["1.30", "1.9", "2.0", "1.300", "x" * 500]), ("--allow-empty", None),
              ("--all", None)],
    "simulate": [("--phases", ["0", "-1", "1001", str(10**20), "x", "9" * 5000]),
                 ("--rate", ["0", "-1", "nan", "inf", "10001", "1e400", "x"]), ("--seed", ["x", "1.5"])],
    "mutate": [("--phases", ["0", "1001", str(10**20), "x"]), ("--rate", ["0", "nan", "inf", "x"]),
               ("--only", ["", "nope", "x" * 5000])],
}


def argument_case(rnd: random.Random) -> Case:
    """Options with values out of bounds or of the wrong type. `simulate` and `mutate` always get
    at least one bad bound, so no case runs a (valid, slow) simulation."""
    command = rnd.choice(sorted(OPTIONS))
    argv: list[str] = [command]
    options = OPTIONS[command]
    for option, values in rnd.sample(options, rnd.randint(1, len(options))):
        argv += [option] if values is None else [option, rnd.choice(values)]
    if command in ("simulate", "mutate"):  # the last --phases wins: always out of bounds
        argv += ["--phases", rnd.choice(["0", "1001", str(10**20)])]
    stdin = b""
    if command == "audit":
        argv.append("-")
        stdin = MANIFESTS[rnd.choice(sorted(MANIFESTS))]
    return Case(tuple(argv), stdin, "arguments")


def any_case(rnd: random.Random) -> Case:
    pick = rnd.random()
    if pick < 0.45:
        return stack_case(rnd)
    if pick < 0.9:
        return manifest_case(rnd)
    return argument_case(rnd)
