"""One definition, two uses: a rule's relation evaluated by `check` and translated for the solver.

The solver's truth value of every relation, with each field at its own number, equals the
rule's verdict; each side's expression evaluates to the number the finding prints; and the
translation's arithmetic and margins are those of `findings.slack`.
"""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
import z3
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.timing import expr as E
from lockstep.timing.config import read_stack_file
from lockstep.timing.findings import Finding, Term, in_range, judge, slack
from lockstep.timing.fix.translate import holds, pinned, term, translatable
from lockstep.timing.invariants import evaluate
from lockstep.timing.invariants.registry import stamp, BY_ID
from tests.timing.strategies import varied_stacks

ROOT = Path(__file__).resolve().parents[2]
STACKS = [ROOT / "Pulumi.example.yaml", *sorted(Path(p) for p in glob.glob(str(ROOT / "examples" / "*.yaml")))]

# Rules whose relation is not arithmetic over numbers (a label, a flag, a selector; the
# node-shutdown rule's "the pod leaves the endpoints after it has exited"), and
# lb-values-in-range, whose passing target group is one summary finding (a broken value is its
# own, translated, finding): `lockstep fix` reports a broken one as a rule no number decides.
NOT_TRANSLATED = {
    "watchdog-shares-deploy-lock", "readiness-gate-can-pass", "rollout-waits-for-lb", "eviction-waits-for-lb",
    "pdb-selects-workload", "hpa-owns-replicas", "readiness-probe-behind-lb", "failover-ignores-deploys",
    "failback-is-deliberate", "nlb-connections-survive-removal", "node-shutdown-drains-without-endpoints",
    "lb-values-in-range", "prestop-uses-native-sleep",
}


def _verdict_true(f: Finding) -> bool:
    return z3.is_true(z3.simplify(holds(f, pinned)))


def _agrees(f: Finding) -> None:
    assert f.left.expr is not None and f.right.expr is not None
    if f.relation != "in":
        assert f.left.expr.value == f.left.value and f.right.expr.value == f.right.value, f.render()
        assert z3.simplify(term(f.left.expr, pinned)).as_long() == f.left.value
        assert z3.simplify(term(f.right.expr, pinned)).as_long() == f.right.value
    assert _verdict_true(f) == (f.status == "ok"), f.render()  # failed and accepted findings are broken


def test_a_rule_outside_the_declared_set_is_translated_wherever_it_is_decided() -> None:
    seen: set[str] = set()
    for path in STACKS:
        for f in evaluate(read_stack_file(path)):
            if f.status == "skipped":
                continue
            if f.id not in NOT_TRANSLATED:
                assert translatable(f), f.render()
                _agrees(f)
                seen.add(f.id)
    # every translated rule is seen on the bundled stacks but the mesh one (no example has a sidecar)
    assert seen == set(BY_ID) - NOT_TRANSLATED - {"sidecar-outlives-app"}


@settings(max_examples=60, deadline=None)
@given(varied_stacks())
def test_the_solver_truth_of_every_relation_is_the_rules_verdict(stack) -> None:
    for f in evaluate(stack):
        if f.status != "skipped" and translatable(f):
            _agrees(f)


def _x(n: int) -> E.Expr:
    return E.const(n)


@given(st.integers(0, 500), st.integers(1, 50), st.integers(-50, 50))
def test_each_operation_translates_to_its_arithmetic(a: int, b: int, c: int) -> None:
    cases = [(E.add(_x(a), _x(b), _x(c)), a + b + c), (E.sub(_x(a), _x(c)), a - c), (E.mul(_x(a), _x(c)), a * c),
             (E.smallest(_x(a), _x(b), _x(c)), min(a, b, c)), (E.largest(_x(a), _x(b), _x(c)), max(a, b, c)),
             (E.up_div(_x(a), _x(b)), -(-a // b)), (E.down_div(_x(a), _x(b)), a // b)]
    for e, want in cases:
        assert e.value == want
        assert z3.simplify(term(e, pinned)).as_long() == want


def test_a_field_translates_through_the_callers_variable() -> None:
    class Holder:
        n = 7

    leaf = E.leaf(Holder(), "n")
    x = z3.Int("x")
    assert term(E.add(leaf, E.const(1)), lambda e: x).eq(z3.Sum([x, z3.IntVal(1)]))
    assert [e.name for e in E.leaves(E.add(leaf, E.mul(E.const(2), leaf)))] == ["n", "n"]


def test_a_field_that_is_no_whole_number_has_no_leaf() -> None:
    class Holder:
        flag, unknown, text = True, None, "5"

    for name in ("flag", "unknown", "text"):
        with pytest.raises(TypeError):
            E.leaf(Holder(), name)


def _finding(left: int, relation: str, right: int, margin: int) -> Finding:
    v = judge("s", Term("l", left, "l", expr=E.const(left)), relation, Term("r", right, "r", expr=E.const(right)),
              "fix", margin)
    return stamp(BY_ID["drain-fits-grace"], v)


@given(st.integers(0, 100), st.sampled_from([">=", ">", "<=", "<"]), st.integers(0, 100), st.integers(0, 10))
def test_a_relation_holds_exactly_where_its_slack_is_not_negative(left: int, relation: str, right: int,
                                                                  margin: int) -> None:
    f = _finding(left, relation, right, margin)
    assert _verdict_true(f) == (slack(left, relation, right, margin) >= 0)


@pytest.mark.parametrize(("value", "ok"), [(9, False), (10, True), (20, True), (21, False)])
def test_a_range_holds_within_its_ends(value: int, ok: bool) -> None:
    v = in_range("s", "x", "x", value, 10, 20, "s", "fix", E.const(value))
    assert _verdict_true(stamp(BY_ID["lb-values-in-range"], v)) is ok


@pytest.mark.parametrize(("value", "ok"), [(10, True), (30, True), (20, False)])
def test_a_choice_holds_for_its_members_only(value: int, ok: bool) -> None:
    v = judge("s", Term("x", value, "x", expr=E.const(value)), ">=", Term("y", 0, "y", expr=E.const(0)), "")
    f = stamp(BY_ID["lb-values-in-range"], v)
    from dataclasses import replace

    f = replace(f, relation="in", right=Term("Route 53", "10 or 30", "", expr=E.choice(10, 30)))
    assert _verdict_true(f) is ok
    assert E.choice(10, 30).value == 10 and E.span(5, 9).value == 5


def test_an_unknown_side_is_not_translatable() -> None:
    known = Term("l", 5, "l", expr=E.const(5))
    unknown = Term("r", 0, "r", ("r",), expr=E.const(0))
    for left, right in ((known, unknown), (unknown, known), (known, Term("r", 0, "r"))):
        f = stamp(BY_ID["drain-fits-grace"], judge("s", left, ">=", right, ""))
        assert not translatable(f)
    f = stamp(BY_ID["drain-fits-grace"], judge("s", known, ">=", known, ""))
    assert translatable(f)
