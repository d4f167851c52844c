"""Fuzzing every input surface but the heartbeat's, in-process through the CLI's `main`.

Claims: whatever bytes reach `check`, `plan` or `audit` on standard input, and whatever option
values reach any command, the result is exit 0, 1 or 2, never an exception; exit 2 is exactly
one line. The cases start from the valid inputs the repository ships (`tests/fuzz/mutations.py`)
and the issue's cases are pinned as `@example`s. The libyaml-event reading and the
node-composing reading of `timing.inputs` agree on every mutated document.
"""

from __future__ import annotations

import random

from hypothesis import example, given, settings, strategies as st

from tests.fuzz import mutations as m
from tests.fuzz.support import assert_clean, cli, with_margin
from lockstep.timing.inputs import ConfigError, LineLoader, PlainLoader, _documents, load_yaml

# A multiple of the profile's count per test (HYPOTHESIS_PROFILE=ci: 150): ~2,300 cases in all,
# fewer of the stack configs, which cost the most (every rule is judged on a valid one).
FUZZ = settings(max_examples=2 * settings().max_examples)
FUZZ_CHEAP = settings(max_examples=4 * settings().max_examples)
DEPLOYMENT = b"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: web}\n"
ISSUE_STACKS = [with_margin(v).encode() for v in (
    "!!int abc", "!!bool maybe", "!!timestamp foo", "2001-13-45", "9" * 4301, "[" * 500 + "]" * 500,
    "2001-01-01", "5\n  lockstep:margin_s: 6")] + [
    m.STACKS["Pulumi.example.yaml"].replace(b"        kind: alb\n", b"        kind: [alb]\n", 1)]
ISSUE_MANIFESTS = [b"", DEPLOYMENT + b"spec: !!seq {replicas: 2}\n", DEPLOYMENT + b"spec:\n  paused: !!bool maybe\n",
                   DEPLOYMENT + b"kind: StatefulSet\n", b"services:\n  web: {image: x}\n"]


def run_case(case: m.Case) -> None:
    run = cli(list(case.argv), case.stdin)
    assert_clean(run, case.command)


def pinned(*cases: m.Case):
    def wrap(test):
        for case in reversed(cases):
            test = example(case)(test)
        return test
    return wrap


@FUZZ
@given(st.randoms(use_true_random=False).map(m.stack_case))
@pinned(*(m.Case(("check", "-"), data, "issue 17") for data in ISSUE_STACKS),
        *(m.Case(("plan", "-"), data, "issue 17") for data in ISSUE_STACKS[:3]))
def test_a_mutated_stack_config_exits_0_1_or_2_never_raising(case):
    run_case(case)


@FUZZ_CHEAP
@given(st.randoms(use_true_random=False).map(m.manifest_case))
@pinned(*(m.Case(("audit", "-"), data, "issue 17") for data in ISSUE_MANIFESTS))
def test_mutated_manifests_and_target_group_json_exit_0_1_or_2_never_raising(case):
    run_case(case)


@FUZZ_CHEAP
@given(st.randoms(use_true_random=False).map(m.argument_case))
@pinned(m.Case(("simulate", "--phases", str(10**20)), b"", "issue 17"),
        m.Case(("audit", "--margin", "9" * 5000, "-"), b"", "a huge option value"))
def test_out_of_bounds_options_exit_2_with_one_line(case):
    run = cli(list(case.argv), case.stdin)
    assert_clean(run, case.command)
    if case.command in ("simulate", "mutate"):
        assert run.code == 2, run


@settings(max_examples=settings().max_examples)
@given(st.binary(max_size=400))
@example(b"\xff\xfe\x00config")
@example(b"config: !!python/name:os.system\n")
def test_arbitrary_bytes_as_a_stack_config_exit_2_with_one_line(data):
    run = cli(["check", "-"], data)
    assert run.code == 2, run  # no arbitrary bytes are a valid stack
    assert_clean(run, "check")


def _both_readings(text: str, lines: bool):
    loader = LineLoader if lines else PlainLoader
    try:
        fast = ("ok", load_yaml(text, "f", lines=lines))
    except ConfigError:
        fast = ("error", None)
    try:
        slow = ("ok", list(_documents(text, loader)))
    except Exception:  # noqa: BLE001 - any failure of the composing reading counts as "refused"
        slow = ("error", None)
    return fast, slow


def _line_marks(obj):
    if isinstance(obj, dict):
        return (getattr(obj, "line", None), dict(getattr(obj, "lines", {})),
                [_line_marks(v) for v in obj.values()])
    if isinstance(obj, list):
        return (getattr(obj, "line", None), [_line_marks(v) for v in obj])
    return None


@FUZZ_CHEAP
@given(st.randoms(use_true_random=False), st.booleans())
def test_reading_from_events_gives_the_values_and_lines_the_composing_reader_gives(rnd, structural):
    name = rnd.choice(sorted({**m.STACKS, **m.MANIFESTS}))
    text = {**m.STACKS, **m.MANIFESTS}[name]
    try:
        data, _ = (m.structural if structural else m.byte_level)(rnd, text)
    except Exception:  # noqa: BLE001 - a seed that is malformed on purpose: bytes only
        data, _ = m.byte_level(rnd, text)
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return
    fast, slow = _both_readings(decoded, lines=True)
    assert fast[0] == slow[0], (fast, slow)
    if fast[0] == "ok":
        assert fast[1] == slow[1]
        assert _line_marks(fast[1]) == _line_marks(slow[1])


def test_the_long_campaign_counts_failures_it_is_given():
    from tests.fuzz.campaign import Tally, run_one

    tally = Tally()
    for seed in range(40):
        tally.add(run_one(random.Random(seed), seed))
    assert tally.cases == 40 and tally.tracebacks == tally.hangs == tally.bad_exits == 0, tally.examples
