"""The audit in several processes gives the report one process gives: the workloads judged in
slices (forked children), and a large file's later documents parsed in a child.

`PARALLEL_MIN`, `BATCH` and `SPLIT_MIN` are lowered here so that every input, however small,
is judged in slices of several batches and read in parts; the reports are compared whole
(JSON: every finding, its location, the notes and warnings, and the input problems)."""

from __future__ import annotations

import json
import re
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.timing import forked
from lockstep.timing.audit import core, reader, shape
from lockstep.timing.audit.report import as_json, text_lines
from lockstep.timing.invariants import Ctx

CORPUS = Path(__file__).parent / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "input").is_dir())
CTX = Ctx(5, (1, 30))


class Forks:
    """The children forked since the last `taken()`."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = forked.Stream.__init__  # (a `Pending` is a stream of one)

        def counted(stream, *args):
            self.count += 1
            real(stream, *args)

        monkeypatch.setattr(forked.Stream, "__init__", counted)

    def taken(self) -> int:
        count, self.count = self.count, 0
        return count


@pytest.fixture(autouse=True)
def forks(monkeypatch) -> Forks:
    monkeypatch.setattr(core, "PARALLEL_MIN", 1)
    monkeypatch.setattr(core, "BATCH", 1)  # a batch a workload: every boundary there can be
    monkeypatch.setattr(reader, "SPLIT_MIN", 1)
    # (A thread an earlier test left in this worker would turn the audit's forks off: these
    # children only compute and write to a pipe, which no idle thread can block.)
    monkeypatch.setattr(forked, "available", lambda: True)
    return Forks(monkeypatch)


def report(paths: list[str], jobs: int, texts: dict[str, str] | None = None, options=None) -> dict:
    result = core.audit(paths, CTX, options or {}, texts=texts, jobs=jobs)
    return {**json.loads(as_json(result)), "problems": result.problems, "files": result.files}


def assert_counted_alike(paths: list[str], jobs: int, texts: dict[str, str] | None = None, options=None) -> None:
    """The text report (without --all, and the input problems) of an audit that counts the
    passing findings, as the CLI's text report asks for, is the one every finding kept gives,
    in one process and in `jobs`; and the counted audit kept no passing finding."""
    kept = core.audit(paths, CTX, options or {}, texts=texts, jobs=1)
    whole = [*text_lines(kept), *kept.problems]
    for n in (1, jobs):
        result = core.audit(paths, CTX, options or {}, texts=texts, jobs=n, keep_passing=False)
        assert not [f for f in result.findings if f.status == "ok"]
        assert [*text_lines(result), *result.problems] == whole, f"jobs={n}"


def corpus_docs() -> list[str]:
    """Every YAML document of the corpus, as text (one `---` part each)."""
    docs = []
    for path in sorted(CORPUS.glob("*/input/**/*.y*ml")):
        docs += [d for d in re.split(r"(?m)^---[ \t]*$", path.read_text()) if d.strip()]
    return docs


@pytest.mark.parametrize("case", CASES)
def test_each_corpus_case_is_judged_alike_in_slices(case, forks):
    paths = [str(CORPUS / case / "input")]
    serial = report(paths, 1)
    assert serial["subjects"] or serial["problems"]
    assert forks.taken() == 0
    for jobs in (2, 3):
        assert report(paths, jobs) == serial, f"{case}: jobs={jobs}"
    assert_counted_alike(paths, 3)
    workloads = [k for k in (s["subject"] for s in serial["subjects"]) if k.count("/") == 2 and "(" not in k]
    if len(workloads) > 1 and not any("(heartbeat)" in k or "Route 53" in k for k in (s["subject"] for s in serial["subjects"])):
        assert forks.taken() >= 2  # a child judged a slice in each run


def test_a_target_group_two_slices_share_is_judged_once_with_the_first(forks):
    """Two workloads bound to one target group (a TargetGroupBinding each): its rules are
    judged once, on the first workload, as one process does, whichever slice each is in."""
    case = CORPUS / "tgb-described" / "input"
    first = (case / "internal-api.yaml").read_text()
    second = first.split("---", 1)[1]  # the binding, the Service, the Deployment (no Namespace)
    second = second.replace("name: reports-api", "name: reports-api-b").replace("{app: reports-api}", "{app: reports-api-b}")
    assert "targetgroup/reports-api/" in second  # the same target group's ARN
    texts = {"a.yaml": first, "b.yaml": second}
    paths = ["a.yaml", "b.yaml", str(case / "target-groups.json"), str(case / "reports-api-attributes.json")]
    serial = report(paths, 1, texts)
    subjects = {s["subject"]: s for s in serial["subjects"]}
    assert {"internal/Deployment/reports-api", "internal/Deployment/reports-api-b"} <= set(subjects)
    lb_rules = {f["id"] for f in subjects["internal/Deployment/reports-api"]["findings"]} - \
        {f["id"] for f in subjects["internal/Deployment/reports-api-b"]["findings"]}
    assert lb_rules, "the target group's own rules are judged with the first workload only"
    forks.taken()
    assert report(paths, 2, texts) == serial
    assert forks.taken() == 1  # the second workload, in a child
    # Counted, the target group's passing findings are counted once, with the first workload.
    assert_counted_alike(paths, 2, texts)
    passing = {j.key: j.passing for j in core.audit(paths, CTX, {}, texts=texts, jobs=2, keep_passing=False).judged}
    kept = {s["subject"]: sum(f["status"] == "ok" for f in s["findings"]) for s in serial["subjects"]}
    assert passing == kept


def test_a_workload_twice_in_two_slices_is_one_subject_as_in_one_process(forks):
    text = (CORPUS / "tgb-described" / "input" / "internal-api.yaml").read_text()
    texts = {"a.yaml": text, "b.yaml": text}
    serial = report(["a.yaml", "b.yaml"], 1, texts)
    assert [s["subject"] for s in serial["subjects"]].count("internal/Deployment/reports-api") == 1
    forks.taken()
    assert report(["a.yaml", "b.yaml"], 2, texts) == serial
    assert forks.taken() >= 1
    assert_counted_alike(["a.yaml", "b.yaml"], 2, texts)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), jobs=st.integers(2, 4))
def test_any_mix_of_the_corpus_is_judged_alike_in_slices(data, jobs, forks):
    """Documents of every corpus case, any subset in any order, in one file: the workloads of
    one slice use Services, PDBs, target groups and namespaces another slice's use too."""
    docs = corpus_docs()
    chosen = data.draw(st.lists(st.sampled_from(docs), min_size=1, max_size=80))
    texts = {"mix.yaml": "\n---\n".join(chosen)}
    options = {"assume_lbc_services": data.draw(st.booleans())}
    core.BATCH = data.draw(st.integers(1, 6), label="batch")  # (the fixture's monkeypatch restores it)
    serial = report(["mix.yaml"], 1, texts, options)
    forks.taken()
    assert report(["mix.yaml"], jobs, texts, options) == serial
    assert_counted_alike(["mix.yaml"], jobs, texts, options)
    assert forks.taken() or len(serial["subjects"]) < 2 or "heartbeat" in texts["mix.yaml"] \
        or "HealthCheck" in texts["mix.yaml"]


# ---- the reader's parts ---------------------------------------------------------------------
def read(text: str, jobs: int) -> tuple[list, list[str]]:
    docs, problems = reader.Reading(["f.yaml"], {"f.yaml": text}, jobs).result()
    return [(d.index, d.line, d.obj, lines_of(d.obj)) for d in docs], problems


def lines_of(obj) -> list:
    """Every line the reader recorded in `obj`, depth first."""
    out = [getattr(obj, "line", None)]
    if isinstance(obj, dict):
        out.append(list(obj.lines.values()) if isinstance(obj, reader.Map) else None)
        out += [lines_of(v) for v in obj.values()]
    elif isinstance(obj, list):
        out += [lines_of(v) for v in obj]
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_file_read_in_two_parts_is_the_file_read_whole(data, forks, monkeypatch):
    """The same documents, values and line of every key and item, wherever the split."""
    chosen = data.draw(st.lists(st.sampled_from(corpus_docs()), min_size=2, max_size=30))
    sep = data.draw(st.sampled_from(["\n---\n", "\n--- \n", "\n---\t# next\n", "\n...\n---\n"]))
    text = sep.join(chosen) + data.draw(st.sampled_from(["", "\n", "\n---\n"]))
    whole = read(text, 1)
    monkeypatch.setattr(reader, "SPLIT_AT", data.draw(st.floats(0, 1)))
    start = reader.split_point(text)
    if start and not whole[1]:  # (the corpus has malformed documents too)
        first = reader.parse(text[:start], "f.yaml")
        assert first + reader.parse_from(text, start, "f.yaml") == reader.parse(text, "f.yaml")
    forks.taken()
    assert read(text, 2) == whole
    assert forks.taken() == (1 if start else 0)
    # The child's shape checks are the documents' own, for each document of its part.
    reading = reader.Reading(["f.yaml"], {"f.yaml": text}, 2, shape.doc_problems)
    docs, problems = reading.result()
    assert all(reading.shape_problems[id(d)] == shape.doc_problems(d) for d in docs if id(d) in reading.shape_problems)
    if start and not problems:
        assert len(reading.shape_problems) == len(reader.documents(reader.parse_from(text, start, "f.yaml"), "f.yaml"))


@pytest.mark.parametrize("text", [
    "a: 1\n---\nb: [1,\n---\n]\n",  # a flow collection across a document marker
    "a: 1\n---\nb: \"x\n---\ny\"\n",  # a quoted scalar across one
    "a: 1\n---\nb: 2\n---\nb: 2\nb: 3\n",  # a duplicate key in the later part
    "a: 1\nc: [\n---\nb: 2\n",  # an error in the first part
    "a: 1\n---\nb: *nowhere\n",  # an alias with no anchor
])
def test_malformed_input_read_in_parts_is_the_whole_file_error(text, monkeypatch, forks):
    monkeypatch.setattr(reader, "SPLIT_AT", 0.0)
    assert reader.split_point(text)
    whole = read(text, 1)
    assert whole[1], "the whole file is refused"
    forks.taken()
    assert read(text, 2) == whole
    assert forks.taken() == 1


@pytest.mark.parametrize("text", [
    '{"kind": "List", "items": []}\n---\n',  # JSON
    "%YAML 1.1\n---\na: 1\n---\nb: 2\n",  # a directive
    "a: 1\r\n---\r\nb: 2\r\n",  # CR line breaks: lines counted otherwise
    "a: 1\n----\nb: 2\n",  # not a marker
])
def test_a_text_the_reader_does_not_split(text):
    assert reader.split_point(text, 0.0) == 0


def test_a_marker_with_content_on_its_line_is_a_split_point():
    text = "a: 1\n--- {b: 2}\n---\nc: 3\n"
    assert text[reader.split_point(text, 0.0):].startswith("--- {b: 2}")
    assert read(text, 2) == read(text, 1)


CONSUMER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: billing-consumer, namespace: internal}
spec:
  replicas: 2
  selector: {matchLabels: {app: billing-consumer}}
  template:
    metadata: {labels: {app: billing-consumer}}
    spec:
      containers:
        - name: worker
          image: ghcr.io/example/billing-consumer:1.0.0
"""


def test_a_workload_a_child_does_not_judge_is_noted_as_one_process_notes_it(forks):
    """A queue consumer (no port anywhere) in the child's slice: the note that it is not
    judged comes back, in the linker's order."""
    text = (CORPUS / "tgb-described" / "input" / "internal-api.yaml").read_text() + "\n---\n" + CONSUMER
    serial = report(["a.yaml"], 1, {"a.yaml": text})
    assert any("billing-consumer" in n and "not judged" in n for n in serial["notes"])
    forks.taken()
    assert report(["a.yaml"], 2, {"a.yaml": text}) == serial
    assert forks.taken() >= 1


def test_the_cli_reports_the_same_for_any_jobs(run_audit):
    case = str(CORPUS / "tgb-described" / "input")
    one = run_audit(case, "--format", "sarif", "--jobs", "1")
    assert one.code == 1 and run_audit(case, "--format", "sarif", "--jobs", "3") == one


@pytest.mark.parametrize("value", ["0", "-1", "two", "1000"])
def test_jobs_out_of_range_is_one_line_and_exit_two(run_audit, capsys, value):
    with pytest.raises(SystemExit) as exit_:
        run_audit(str(CORPUS / "tgb-described" / "input"), "--jobs", value)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--jobs: expected a number of processes 1–999" in err and "Traceback" not in err


def test_without_a_process_to_spare_the_audit_is_done_in_one(monkeypatch, forks):
    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")

    case = [str(CORPUS / "tgb-described" / "input")]
    serial = report(case, 1)
    monkeypatch.setattr(os, "fork", no_fork)
    assert report(case, 3) == serial
