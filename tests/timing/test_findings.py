"""Findings: slack arithmetic, verdicts with unknown inputs, and the printed line."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing.findings import NEGATION, PRETTY, Finding, Term, Verdict, holds, in_range, judge, slack, unknown

ints = st.integers(-1000, 1000)


# ---- slack -----------------------------------------------------------------------------------
@given(ints, ints, st.integers(0, 100))
@example(10, 5, 5)
def test_slack_is_zero_exactly_at_the_boundary_and_minus_one_just_past_it(left, right, margin) -> None:
    assert slack(left, ">=", right, margin) == left - (right + margin)
    assert slack(left, ">", right, margin) == left - (right + margin) - 1
    assert slack(left, "<=", right, margin) == right - (left + margin)
    assert slack(left, "<", right, margin) == right - (left + margin) - 1
    # the relation holds exactly when the slack is not negative
    assert (slack(left, ">=", right, margin) >= 0) == (left >= right + margin)
    assert (slack(left, ">", right, margin) >= 0) == (left > right + margin)
    assert (slack(left, "<=", right, margin) >= 0) == (left + margin <= right)
    assert (slack(left, "<", right, margin) >= 0) == (left + margin < right)


def test_slack_margin_defaults_to_zero() -> None:
    assert slack(7, ">=", 5) == 2
    assert slack(5, "<", 7) == 1


def test_slack_refuses_a_relation_it_cannot_count() -> None:
    with pytest.raises(ValueError, match="unknown relation 'in'"):
        slack(1, "in", 2)


# ---- judge: decided vs skipped -------------------------------------------------------------------
def t(value: int, source: str, unknown: bool = False) -> Term:
    return Term(source, value, source, (source,) if unknown else ())


@pytest.mark.parametrize(("rel", "lv", "rv", "unknown_side", "status"), [
    # >= : a bigger left helps. Unknown counts as 0.
    (">=", 5, 0, "right", "skipped"),   # passes with right=0, could fail for a larger right
    (">=", 0, 5, "right", "broken"),     # fails even at right=0: a larger right only makes it worse
    (">=", 0, 5, "left", "skipped"),    # fails at left=0, a larger left could pass
    (">=", 5, 0, "left", "ok"),         # passes with the known part alone: more left only helps
    ("<=", 5, 0, "left", "broken"),      # left+0 > right: a larger left only makes it worse
    ("<=", 0, 5, "left", "skipped"),    # passes at left=0, a larger left could break it
    ("<=", 5, 0, "right", "skipped"),   # fails at right=0, a larger right could pass
    ("<=", 0, 5, "right", "ok"),
    (">=", 5, 5, "left", "ok"),         # slack 0 already holds: more left only helps
    ("<=", 5, 5, "right", "ok"),        # slack 0 already holds: more right only helps
    (">", 0, 0, "left", "skipped"),
    ("<", 0, 0, "right", "skipped"),
    (">", 1, 0, "right", "skipped"),
    ("<", 0, 1, "left", "skipped"),
])
def test_an_unknown_input_decides_only_when_no_value_could_flip_the_verdict(rel, lv, rv, unknown_side, status) -> None:
    left = t(lv, "a", unknown_side == "left")
    right = t(rv, "b", unknown_side == "right")
    f = judge("svc", left, rel, right, "fix it")
    assert f.outcome == status
    unknown = ("a",) if unknown_side == "left" else ("b",)
    assert f.needs == (unknown if status == "skipped" else ())


def test_a_skipped_verdict_keeps_its_severity_case() -> None:
    v = judge("s", t(0, "a", True), ">=", t(5, "b"), "f", case="warning")
    assert (v.outcome, v.case) == ("skipped", "warning")


def test_known_inputs_are_never_skipped() -> None:
    assert judge("s", t(1, "a"), ">=", t(2, "b"), "f").outcome == "broken"
    assert judge("s", t(2, "a"), ">=", t(2, "b"), "f").outcome == "ok"


def test_a_skipped_finding_names_every_unknown_input_once_in_order() -> None:
    left = Term("x", 0, "x + y", ("a", "b"))
    right = Term("z", 3, "z", ("b", "c"))
    f = judge("s", left, ">=", right, "f")
    assert (f.outcome, f.needs, f.slack_s) == ("skipped", ("a", "b", "c"), -3)


def test_judge_carries_every_field_into_the_finding() -> None:
    f = judge("subj", t(3, "a"), "<=", t(10, "b"), "the fix", margin=2, service="svc", case="warning")
    assert f == Verdict("subj", t(3, "a"), "<=", t(10, "b"), 2, 5, "the fix", "ok", (), "svc", "warning")
    g = judge("subj", t(3, "a", True), ">=", t(10, "b"), "the fix", margin=2, service="svc")
    assert (g.service, g.margin_s, g.fix, g.case, g.outcome) == ("svc", 2, "the fix", None, "skipped")


def test_judge_accepts_only_numbers() -> None:
    with pytest.raises(AssertionError):
        judge("s", Term("a", "x", "a"), ">=", t(1, "b"), "f")
    with pytest.raises(AssertionError):
        judge("s", t(1, "b"), ">=", Term("a", "x", "a"), "f")


def test_holds_refuses_a_verdict_that_is_not_a_bool() -> None:
    with pytest.raises(TypeError, match=r"^holds\(\) needs a bool verdict, got None$"):
        holds("s", None, Term("a", "x", "sa"), "==", Term("b", "y", ""), "fix")  # type: ignore[arg-type]


def test_holds_reports_a_relation_without_slack() -> None:
    ok = holds("s", True, Term("a", "x", "sa"), "==", Term("b", "y", ""), "fix", service="svc", case="error")
    assert ok == Verdict("s", Term("a", "x", "sa"), "==", Term("b", "y", ""), 0, None, "fix", "ok", (), "svc", "error")
    bad = holds("s", False, Term("a", "x", "sa"), "==", Term("b", "y", ""), "fix")
    assert (bad.outcome, bad.service, bad.case) == ("broken", "", None)


def test_unknown_reports_a_relation_that_cannot_be_decided_with_what_decides_it() -> None:
    v = unknown("s", Term("a", "x", "sa"), "in", Term("b", "y", ""), "fix", ("f.g",))
    assert v == Verdict("s", Term("a", "x", "sa"), "in", Term("b", "y", ""), 0, None, "fix", "skipped", ("f.g",))


@pytest.mark.parametrize(("value", "outcome", "slack"), [(5, "ok", 0), (7, "ok", 2), (10, "ok", 0), (4, "broken", -1),
                                                         (11, "broken", -1)])
def test_in_range_holds_between_both_bounds_and_counts_slack_to_the_nearer(value, outcome, slack) -> None:
    v = in_range("s", "interval", "lb.x", value, 5, 10, "s", "set lb.x within 5–10")
    assert (v.outcome, v.slack_s, v.relation) == (outcome, slack, "in")
    assert v.left == Term("interval", value, "lb.x", (), "s", ("lb.x",)) and v.right == Term("API range", "5–10s", "")
    assert (v.fix, v.margin_s, v.needs, v.service, v.case) == ("set lb.x within 5–10", 0, (), "", None)


# ---- Term.render ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("term", "shown"), [
    (Term("drain", 20, "shutdown.drain_s"), "drain 20s (shutdown.drain_s)"),
    (Term("targets", 2, "", (), ""), "targets 2"),
    (Term("replicas", 3, "replicas", (), ""), "replicas 3 (replicas)"),
    (Term("keepalive", 0, "app.keepalive_s", ("app.keepalive_s",)), "keepalive unknown (app.keepalive_s)"),
    (Term("stop", 20, "a 20 + b ?", ("b",)), "stop ≥20s (a 20 + b ?)"),
    (Term("pods", 1, "x", (), " pods"), "pods 1 pods (x)"),
    (Term("mode", "exec sleep", "shutdown.prestop"), "mode exec sleep (shutdown.prestop)"),
    (Term("range", "2–10", ""), "range 2–10"),
])
def test_a_term_prints_its_value_with_unit_and_where_it_comes_from(term, shown) -> None:
    assert term.render() == shown


# ---- Finding.render ----------------------------------------------------------------------------
def finding(status: str, relation: str, margin: int = 0, slack_s: int | None = -1, **kw) -> Finding:
    return Finding("rule-x", "error", status, "svc", Term("l", 1, "a"), relation, Term("r", 2, "b"), margin,
                   slack_s, "do it", **kw)


@pytest.mark.parametrize(("relation", "line"), [
    (">=", "ERROR rule-x  svc: l 1s (a) < r 2s (b) + margin 3s  slack -1s → do it"),
    (">", "ERROR rule-x  svc: l 1s (a) ≤ r 2s (b) + margin 3s  slack -1s → do it"),
    ("<=", "ERROR rule-x  svc: l 1s (a) + margin 3s > r 2s (b)  slack -1s → do it"),
    ("<", "ERROR rule-x  svc: l 1s (a) + margin 3s ≥ r 2s (b)  slack -1s → do it"),
])
def test_a_broken_relation_prints_its_negation_with_the_margin_on_the_side_that_must_stay_smaller(relation, line) -> None:
    assert finding("error", relation, margin=3).render() == line


def test_a_passing_finding_prints_the_relation_without_a_fix() -> None:
    assert finding("ok", ">=", slack_s=4).render() == "OK rule-x  svc: l 1s (a) ≥ r 2s (b)  slack 4s"
    assert finding("ok", "<", slack_s=0).render() == "OK rule-x  svc: l 1s (a) < r 2s (b)  slack 0s"


def test_no_margin_and_no_slack_print_nothing_for_them() -> None:
    assert finding("warning", "==", slack_s=None).render() == "WARNING rule-x  svc: l 1s (a) ≠ r 2s (b) → do it"
    assert finding("ok", "in", slack_s=None).render() == "OK rule-x  svc: l 1s (a) in r 2s (b)"


def test_a_skipped_finding_names_what_would_decide_it() -> None:
    f = finding("skipped", ">=", needs=("app.x", "app.y"))
    assert f.render() == "SKIPPED rule-x  svc: l 1s (a) ≥ r 2s (b)  slack -1s → needs app.x, app.y"


def test_an_accepted_finding_prints_the_broken_relation_and_the_reason() -> None:
    f = finding("error", ">=").accepted("singleton on purpose")
    assert (f.status, f.reason) == ("accepted", "singleton on purpose")
    assert f.render() == "ACCEPTED rule-x  svc: l 1s (a) < r 2s (b)  slack -1s → accepted: singleton on purpose"


@pytest.mark.parametrize(("status", "failed"), [("ok", False), ("error", True), ("warning", True),
                                                 ("skipped", False), ("accepted", False)])
def test_only_errors_and_warnings_count_as_failed(status, failed) -> None:
    assert finding(status, ">=").failed is failed


def test_the_slack_unit_follows_the_left_term() -> None:
    f = Finding("rule-x", "error", "error", "s", Term("n", 1, "", (), ""), ">=", Term("m", 2, "", (), ""), 0, -1, "f")
    assert f.render() == "ERROR rule-x  s: n 1 < m 2  slack -1 → f"


def test_as_dict_carries_every_field_and_the_printed_line() -> None:
    f = finding("error", "<=", margin=3, needs=("n",), reason="why", service="svc2")
    assert f.as_dict() == {
        "id": "rule-x", "severity": "error", "status": "error", "subject": "svc", "relation": "<=",
        "left": {"label": "l", "value": 1, "source": "a", "fields": []},
        "right": {"label": "r", "value": 2, "source": "b", "fields": []},
        "margin_s": 3, "slack_s": -1, "fix": "do it", "needs": ["n"], "reason": "why",
        "message": "ERROR rule-x  svc: l 1s (a) + margin 3s > r 2s (b)  slack -1s → do it",
    }


def test_as_dict_lists_each_sides_fields() -> None:
    f = Finding("rule-x", "error", "ok", "svc", Term("l", 1, "a", fields=("a", "c")), ">=", Term("r", 0, "b", fields=("b",)),
                0, 1, "")
    assert (f.as_dict()["left"]["fields"], f.as_dict()["right"]["fields"]) == (["a", "c"], ["b"])


def test_every_relation_has_a_negation_and_a_printed_form() -> None:
    assert set(NEGATION) == {">=", ">", "<=", "<", "==", "in"}
    assert {NEGATION[NEGATION[r]] for r in (">=", ">", "<=", "<")} == {">=", ">", "<=", "<"}
    assert all(r in PRETTY for r in [*NEGATION, *NEGATION.values()])
