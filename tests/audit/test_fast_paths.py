"""The audit's shortcuts answer what the long way answers, on every document of the corpus.

Each shortcut exists for speed or memory on large inputs (bench/bench_audit.py); none may
change a verdict, a line or a message, so each is held here against the plain computation it
replaces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from lockstep.timing.audit import adapt
from lockstep.timing.audit.reader import Doc, read_all
from lockstep.timing.inputs import Map, Seq

CORPUS = Path(__file__).parent / "corpus"


def corpus_docs() -> list[Doc]:
    docs, _ = read_all([str(CORPUS)])
    return docs


DOCS = corpus_docs()


def maps(node: Any) -> Iterator[Map]:
    if isinstance(node, Map):
        yield node
        for value in node.values():
            yield from maps(value)
    elif isinstance(node, Seq):
        for item in node:
            yield from maps(item)


def test_the_corpus_is_read_with_lines() -> None:
    assert len(DOCS) > 100
    assert all(isinstance(d.obj, Map) for d in DOCS)


def test_a_key_line_is_the_line_the_key_dict_gives() -> None:
    checked = 0
    for doc in DOCS:
        for m in maps(doc.obj):
            lines = m.lines
            for key in [*m, "no-such-key"]:
                assert m.key_line(key, -7) == lines.get(key, -7)
                checked += 1
    assert checked > 1000


@pytest.mark.parametrize("doc", [d for d in DOCS if d.kind][:400], ids=lambda d: f"{d.file.split('corpus/')[-1]}#{d.index}")
def test_a_resource_reads_its_name_namespace_and_place_as_its_object_says(doc: Doc) -> None:
    r = adapt.kubernetes(doc)
    meta = doc.obj.get("metadata") if isinstance(doc.obj.get("metadata"), dict) else {}
    assert r.name == str(meta.get("name") or doc.obj.get("name") or "")
    assert r.namespace == str(meta.get("namespace") or "default")
    assert r.home == r.origin.locate(()) == (doc.file, doc.line)
    assert r.line == (r.origin.line() or 1)
    assert r.name is r.name and r.home is r.home  # worked out once


def lines_of(node: Any) -> Any:
    """Every value of a read document with the lines it carries: mappings and lists by their
    own line, each key by its line."""
    if isinstance(node, Map):
        return ("map", node.line, [(k, node.lines[k], lines_of(v)) for k, v in node.items()])
    if isinstance(node, Seq):
        return ("seq", node.line, [lines_of(v) for v in node])
    return (type(node).__name__, node)


TRICKY = [
    "a: 1\nb: 2\nc: {x: 1, y: [1, 2]}\n",
    "a:\n  b: 1\n\n  c: 2\n# comment\n  d:\n    - e: 1\n      f: 2\n    - {g: 3, h: 4}\n",
    "k: |\n  text\n  more\nl: 2\nm: >\n  folded\n",
    "{a: 1,\n b: 2,\n\n c: 3}\n",
    "- a: 1\n  b: 2\n- c: 3\n---\nx: 1\n\ny: 2\n",
    "a: 'multi\n  line'\nb: 1\n",
    "? a\n: 1\n? b\n: 2\n",
    "a: 1\n---\n---\nb: {}\n",
    "a: '1'\nb: \"2\"\nc: 3\nd: yes\ne: 'yes'\nf: ~\ng: ''\nh: ! 12\ni: 1.5\nj: 0x1F\nk: 012\nl: 2026-12-06\n",
    "- 1\n- '1'\n- null\n- \"null\"\n- true\n- True\n- .inf\n- '.inf'\n- !!str 5\n- 00\n",
]


@pytest.mark.parametrize("text", TRICKY + sorted({str(p) for p in CORPUS.rglob("*.yaml")}))
def test_the_fast_reader_gives_the_values_and_lines_of_the_composing_one(text: str) -> None:
    import yaml

    from lockstep.timing.inputs import LineLoader, _documents, _fast_documents, _Unusual

    if not text.endswith("\n"):  # a corpus file's path
        text = Path(text).read_text(encoding="utf-8")
    try:
        fast = _fast_documents(text, LineLoader)
    except _Unusual:
        return  # (anchors, aliases, merges: only the composing reader reads them)
    except yaml.YAMLError as err:
        with pytest.raises(type(err)):
            list(_documents(text, LineLoader))
        return
    slow = list(_documents(text, LineLoader))
    assert [lines_of(d) for d in fast] == [lines_of(d) for d in slow]


# ---- shape checks: the one-walk test of "nothing wrong" against the worded checks ----------
def shaped_docs() -> list[Doc]:
    from lockstep.timing.audit import shape

    return [d for d in DOCS if d.kind in shape.SHAPES]


def check_paths(doc: Doc) -> list[list[Any]]:
    """Every field path a check of the document's kind names, with each list of mappings on
    the way stepped into (every container, port, rule and path of the document)."""
    from lockstep.timing.audit import shape

    def expand(node: Any, keys: list[str], at: list[Any]) -> Iterator[list[Any]]:
        if not keys:
            yield at
            return
        yield at + [keys[0]] if len(keys) == 1 else at
        if isinstance(node, dict) and isinstance(node.get(keys[0]), (dict, list)):
            child = node[keys[0]]
            if isinstance(child, list):
                for i, item in enumerate(child):
                    yield from expand(item, keys[1:], at + [keys[0], i])
            else:
                yield from expand(child, keys[1:], at + [keys[0]])

    paths = [p for p, _, _ in shape.METADATA + shape.SHAPES[doc.kind]]
    paths += [f"spec.template.spec.containers.{p}" for p, _, _ in shape.CONTAINER + shape.PROBE_CHECKS]
    paths += [f"spec.ports.{p}" for p, _, _ in shape.SERVICE_PORT]
    paths += [f"spec.rules.http.paths.{p}" for p in ("backend", *[f"backend.{b}" for b, _, _ in shape.BACKEND])]
    paths += ["spec.rules.http", "spec.rules.http.paths"]
    out = {tuple(p) for path in paths for p in expand(doc.obj, path.split("."), []) if p}
    return [list(p) for p in sorted(out, key=str)]


def with_value(obj: Any, path: list[Any], value: Any) -> Any:
    import copy

    out = copy.deepcopy(obj)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


WRONG = ["text", 7, True, None, [1], {"k": 1}, [{"k": 1}], {"k": ["x"]}, 1.5]


def test_nothing_wrong_is_what_the_worded_checks_find_on_every_corpus_document() -> None:
    from lockstep.timing.audit import shape

    docs = shaped_docs()
    assert len(docs) > 100
    for doc in docs:
        assert shape.fine(doc.obj, doc.kind) == (shape.worded_problems(doc) == []), doc.where


@pytest.mark.parametrize("kind", ["Deployment", "Service", "Ingress", "PodDisruptionBudget", "Rollout", "DaemonSet",
                                  "StatefulSet", "HorizontalPodAutoscaler", "TargetGroupBinding"])
def test_any_field_of_a_wrong_type_is_found_by_both(kind: str) -> None:
    from lockstep.timing.audit import shape

    docs = [d for d in shaped_docs() if d.kind == kind][:3]
    assert docs, kind
    checked = 0
    for doc in docs:
        for path in check_paths(doc):
            for wrong in WRONG:
                obj = with_value(doc.obj, path, wrong)
                bad = Doc(doc.file, doc.index, obj)
                assert shape.fine(obj, kind) == (shape.worded_problems(bad) == []), (doc.where, path, wrong)
                assert shape.doc_problems(bad) == shape.worded_problems(bad)
                checked += 1
    assert checked > 100


# ---- the audit drops the terms' expression trees (for `lockstep fix` only) ------------------
def test_the_audit_drops_expression_trees_and_nothing_else() -> None:
    from lockstep.timing.audit.core import audit
    from lockstep.timing.invariants import Ctx, parse_version

    ctx = Ctx(5, parse_version("1.30"))
    lean = audit([str(CORPUS)], ctx, {})
    kept = audit([str(CORPUS)], ctx, {}, keep_links=True)
    assert len(lean.findings) > 500
    assert lean.findings == kept.findings  # (a term's expression is not compared)
    assert [f.as_dict() for f in lean.findings] == [f.as_dict() for f in kept.findings]
    assert [(j.key, [(x.file, x.line) for x in j.findings]) for j in lean.judged] == \
        [(j.key, [(x.file, x.line) for x in j.findings]) for j in kept.judged]
    assert all(t.expr is None for f in lean.findings for t in (f.left, f.right))
    assert any(t.expr is not None for f in kept.findings for t in (f.left, f.right))  # audit --fix keeps them


# ---- nothing the audit builds waits for the cyclic collector --------------------------------
def test_an_audit_leaves_no_reference_cycle_behind() -> None:
    """Everything an audit builds is freed by reference counting once the result is dropped:
    the audit hands a large batch to the collector's oldest generation, so a cycle in it would
    stay until a full collection (a closure that called itself kept every document alive)."""
    import gc

    from lockstep.timing.audit.core import audit
    from lockstep.timing.invariants import Ctx, parse_version

    gc.collect()
    gc.garbage.clear()
    gc.set_debug(gc.DEBUG_SAVEALL)  # whatever any collection finds unreachable is kept to look at
    try:
        result = audit([str(CORPUS)], Ctx(5, parse_version("1.30")), {})
        assert result.judged
        del result
        gc.collect()
        ours = [o for o in gc.garbage if type(o).__module__.startswith("lockstep") or isinstance(o, (Map, Seq))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == []
