"""Process plumbing: `timing.forked` (a function in a forked child), what it sends back
(`pickled_by_fields`, the reader's `Map`/`Seq`), and the command's exit (`cli.entry`)."""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lockstep.timing import forked
from lockstep.timing.findings import Finding, Term
from lockstep.timing.inputs import Map, Seq

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def test_forking_is_refused_while_other_threads_run():
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not forked.available()
    finally:
        stop.set()
        thread.join()


def test_a_child_returns_its_value():
    assert forked.Pending(lambda a, b: {"sum": a + b, "pid": os.getpid()}, 2, 3).result()["sum"] == 5
    child = forked.Pending(os.getpid)
    assert child.result() != os.getpid()


def test_a_child_that_raises_is_a_failure_with_its_words():
    def boom():
        raise ValueError("no such thing")

    with pytest.raises(forked.ChildFailed, match="ValueError: no such thing"):
        forked.Pending(boom).result()


def test_a_child_that_dies_is_a_failure():
    with pytest.raises(forked.ChildFailed, match="without a result"):
        forked.Pending(os._exit, 3).result()


def test_cancel_ends_a_child_that_is_still_working():
    import time

    child = forked.Pending(time.sleep, 60)
    started = time.monotonic()
    child.cancel()
    assert time.monotonic() - started < 5
    child.cancel()  # (again: nothing left to end)


def test_a_large_result_is_whole():
    value = list(range(300_000))  # far more than a pipe holds at once
    assert forked.Pending(lambda: value).result() == value


def _items_then(n: int, then=None, pause: float = 0.0):
    """`n` items, each a list the size of its position; then `then()` (a raise, a death)."""
    import time

    for i in range(n):
        yield list(range(i))
        time.sleep(pause)
    if then is not None:
        then()


def test_a_stream_gives_every_item_in_order_and_ready_never_waits():
    import time

    child = forked.Stream(_items_then, 40, None, 0.05)  # two seconds in all
    started = time.monotonic()
    got = child.ready()
    assert time.monotonic() - started < 0.5  # (took what had come, did not wait for the rest)
    while len(got) < 3 and time.monotonic() - started < 10:  # items sent while the parent was busy
        time.sleep(0.05)
        got += child.ready()
    assert 3 <= len(got) < 40, "items are taken as they come, before the child ends"
    got += child.rest()
    assert got == [list(range(i)) for i in range(40)]
    assert child.ready() == [] and child.rest() == []  # (all taken; the child is reaped)


def test_a_stream_larger_than_the_pipe_arrives_whole():
    child = forked.Stream(_items_then, 1200)  # ~700,000 numbers, several times any pipe
    got = child.ready()
    got += child.rest()
    assert got == [list(range(i)) for i in range(1200)]


def test_a_stream_that_raises_midway_is_a_failure_with_its_words():
    def boom():
        raise KeyError("no such workload")

    child = forked.Stream(_items_then, 3, boom)
    with pytest.raises(forked.ChildFailed, match="KeyError: 'no such workload'"):
        child.rest()
    child.cancel()  # (nothing left to end)


def test_a_stream_whose_child_dies_midway_is_a_failure():
    child = forked.Stream(_items_then, 3, lambda: os._exit(0))
    with pytest.raises(forked.ChildFailed, match="without a result"):
        child.rest()


def test_cancel_ends_a_stream_still_sending():
    import time

    child = forked.Stream(_items_then, 10**6, None, 0.01)
    time.sleep(0.1)
    started = time.monotonic()
    got = child.ready()
    child.cancel()
    assert time.monotonic() - started < 5
    got += child.rest()  # (what was read before the end, no error)
    assert got == [list(range(i)) for i in range(len(got))]


def test_a_result_taken_twice_is_a_failure_not_a_second_value():
    child = forked.Pending(lambda: 7)
    assert child.result() == 7
    with pytest.raises(forked.ChildFailed, match="taken already"):
        child.result()


# ---- what the children send -----------------------------------------------------------------
texts = st.text(max_size=8)
terms = st.builds(Term, texts, st.one_of(st.integers(), texts), texts, st.tuples(texts), texts, st.tuples(texts))
findings = st.builds(Finding, texts, st.sampled_from(["error", "warning"]), st.sampled_from(["ok", "error", "skipped"]),
                     texts, terms, st.sampled_from([">", ">=", "<"]), terms, st.integers(), st.integers(), texts,
                     st.tuples(texts), texts, texts)


@given(findings)
def test_a_finding_pickled_by_its_fields_is_the_same_finding(finding):
    back = pickle.loads(pickle.dumps(finding, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == finding and type(back) is Finding
    assert all(getattr(back, f.name) == getattr(finding, f.name) for f in dataclasses.fields(Finding))


def test_a_class_with_a_field_outside_init_is_refused():
    from lockstep.timing.frozen import pickled_by_fields

    @dataclasses.dataclass
    class Odd:
        a: int
        b: int = dataclasses.field(init=False, default=0)

    with pytest.raises(TypeError, match="positional"):
        pickled_by_fields(Odd)


@st.composite
def documents(draw, depth=0):
    if depth > 2 or draw(st.booleans()):
        return draw(st.one_of(st.integers(), texts, st.none()))
    if draw(st.booleans()):
        items = draw(st.lists(documents(depth + 1), max_size=3))
        return Seq(items, line=draw(st.integers(1, 99)))
    keys = draw(st.lists(texts, max_size=3, unique=True))
    lines = draw(st.one_of(st.none(), st.just(array("L", range(1, len(keys) + 1)))))
    return Map({k: draw(documents(depth + 1)) for k in keys}, line=draw(st.integers(1, 99)), key_lines=lines)


def shape(doc):
    """Every value with its type and lines."""
    if isinstance(doc, Map):
        return ("map", doc.line, doc.key_lines, [(k, shape(v)) for k, v in doc.items()])
    if isinstance(doc, Seq):
        return ("seq", doc.line, [shape(v) for v in doc])
    return doc


@given(documents())
def test_a_read_document_pickled_keeps_every_line(doc):
    back = pickle.loads(pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL))
    assert shape(back) == shape(doc)


# ---- the command's exit ---------------------------------------------------------------------
ENTRY = "import sys; sys.argv = ['lockstep', *sys.argv[1:]]; {before}; from lockstep.timing.cli import entry; entry()"


def run_entry(before: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", ENTRY.format(before=before), *argv], capture_output=True, text=True)


def test_the_command_exits_with_its_code_and_its_output_whole():
    done = run_entry("pass", "--version")
    assert done.returncode == 0 and done.stdout.startswith("lockstep ")
    done = run_entry("pass", "check", "--margin", "x")
    assert done.returncode == 2 and done.stdout == ""


def test_an_exit_handler_still_runs():
    """With a handler registered, the interpreter's own exit runs it (no early end)."""
    done = run_entry("import atexit; atexit.register(lambda: print('handler ran'))", "--version")
    assert done.returncode == 0 and done.stdout.rstrip().endswith("handler ran")


def test_no_process_to_spare_is_a_failure_the_caller_can_take(monkeypatch):
    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    with pytest.raises(forked.ChildFailed, match="cannot start a worker process"):
        forked.Pending(print)


def test_objects_are_kept_for_the_end_only_when_the_process_ends_at_once(monkeypatch):
    from lockstep.timing import ending

    monkeypatch.setattr(ending, "_kept", None)
    ending.keep([1, 2, 3])
    assert ending.kept() == 0  # (main called in-process: freed as usual)
    ending.begin()
    ending.keep([1, 2, 3], {"a": 1})
    assert ending.kept() == 2


def test_an_audit_through_the_command_ends_with_its_report_and_code():
    corpus = os.path.join(os.path.dirname(__file__), "audit", "corpus", "tgb-described", "input")
    done = run_entry("pass", "audit", corpus, "--format", "json")
    assert done.returncode == 1 and done.stderr == ""
    assert json.loads(done.stdout)["summary"]["error"] > 0
