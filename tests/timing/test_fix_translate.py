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
from hypothesis import example, given, settings
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
            if f.status == "skipped" or isinstance(f.left.value, str):
                continue  # undecided, or a relation of no number (mesh-drain-covers-lb's start order)
            if f.id not in NOT_TRANSLATED:
                assert translatable(f), f.render()
                _agrees(f)
                seen.add(f.id)
    # every translated rule is seen on the bundled stacks
    assert seen == set(BY_ID) - NOT_TRANSLATED
    start = [f for f in evaluate(read_stack_file(STACKS[0])) if f.id == "mesh-drain-covers-lb"
             and isinstance(f.left.value, str)]
    assert start and not any(translatable(f) for f in start)  # `fix` moves no number for it


@settings(deadline=None)
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

    holder = Holder()
    leaf = E.leaf(holder, "n")
    assert (leaf.op, leaf.owner, leaf.name, leaf.value, leaf.args) == ("field", holder, "n", 7, ())
    x = z3.Int("x")
    one = z3.IntVal(1)
    assert term(E.add(leaf, E.const(1)), lambda e: x if e.op == "field" else one).eq(z3.Sum([x, one]))
    assert [e.name for e in E.leaves(E.add(leaf, E.mul(E.const(2), leaf)))] == ["n", "n"]


def test_a_field_that_is_no_whole_number_has_no_leaf() -> None:
    class Holder:
        flag, unknown, text = True, None, "5"

    for name, shown in (("flag", "True"), ("unknown", "None"), ("text", "'5'")):
        with pytest.raises(TypeError, match=f"^Holder.{name} is not a whole number: {shown}$"):
            E.leaf(Holder(), name)


def _finding(left: int, relation: str, right: int, margin: int) -> Finding:
    v = judge("s", Term("l", left, "l", expr=E.const(left)), relation, Term("r", right, "r", expr=E.const(right)),
              "fix", margin)
    return stamp(BY_ID["drain-fits-grace"], v)


@given(st.integers(0, 100), st.sampled_from([">=", ">", "<=", "<"]), st.integers(0, 100), st.integers(0, 10))
@example(10, ">=", 7, 3)
@example(10, ">=", 8, 3)
@example(11, ">", 7, 3)
@example(10, ">", 7, 3)
@example(7, "<=", 10, 3)
@example(8, "<=", 10, 3)
@example(6, "<", 10, 3)
@example(7, "<", 10, 3)
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


def test_what_cannot_be_translated_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no term for a 'range' expression"):
        term(E.span(1, 2), pinned)
    known = Term("l", 5, "l", expr=E.const(5))
    f = stamp(BY_ID["drain-fits-grace"], judge("s", known, ">=", known, ""))
    from dataclasses import replace

    with pytest.raises(ValueError, match="drain-fits-grace: no constraint for relation '=='"):
        holds(replace(f, relation="=="), pinned)
    with pytest.raises(ValueError, match="drain-fits-grace: `in` needs a range or a choice, not 'const'"):
        holds(replace(f, relation="in"), pinned)
    with pytest.raises(AssertionError):
        holds(replace(f, right=Term("r", 5, "r")), pinned)
    with pytest.raises(AssertionError):
        holds(replace(f, left=Term("l", 5, "l")), pinned)


# ---- every derived time of known inputs carries its expression, equal to its number ------------
def _derived_terms(stack):  # type: ignore[no-untyped-def]
    from lockstep.timing import derived as d
    from lockstep.timing import nodes as N
    from lockstep.timing.invariants import rollouts

    for svc in stack.services:
        yield from (d.drain(svc), d.finish(svc), d.stop(svc), d.grace(svc), d.started(svc), d.pod_ready(svc),
                    d.replace_time(svc), d.rollout_time(svc), rollouts.switch_time(svc))
        if svc.lb is not None:
            yield from (d.lb_detect(svc.lb), d.lb_admit_new(svc.lb, True), d.lb_recover(svc.lb), d.detection(svc.lb))
    if stack.failover is not None:
        yield from (d.failover_time(stack.failover), d.failover_tolerance(stack.failover), d.failover_ttl(stack.failover))
    if stack.nodes is not None and stack.nodes.kubelet is not None:
        yield N.kubelet_budget(stack.nodes)


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_every_derived_time_of_known_inputs_has_its_expression(path: Path) -> None:
    for t in _derived_terms(read_stack_file(path)):
        if not t.unknown:
            assert t.expr is not None, t.render()
            assert t.expr.value == t.value, t.render()


SHARES = ["0%", "10%", "25%", "34%", "50%", "99%", "100%", 0, 1, 2]


@pytest.mark.parametrize("service", [1, 2], ids=["deployment", "statefulset"])
@pytest.mark.parametrize("surge", SHARES)
@pytest.mark.parametrize("down", SHARES)
def test_rollout_expressions_round_percentages_as_the_controller(service: int, surge, down) -> None:  # type: ignore[no-untyped-def]
    from lockstep.timing import derived as d
    from lockstep.timing.config import ConfigError
    from tests.timing.strategies import build

    for replicas in (1, 3, 7):
        try:
            stack = build({f"services.{service}.replicas": replicas, f"services.{service}.rollout":
                           {"max_surge": surge, "max_unavailable": down}})
        except (ConfigError, ValueError):
            continue
        svc = stack.services[service]
        rt, pods = d.rollout_time(svc), d.unavailable_expr(svc)
        assert rt.expr is not None and rt.expr.value == rt.value
        assert pods is not None and pods.value == d.unavailable_pods(svc)


def test_an_instance_target_switch_is_shown_by_its_field() -> None:
    from lockstep.timing.invariants import rollouts

    stack = read_stack_file(ROOT / "Pulumi.example.yaml")
    nlb = next(s for s in stack.services if s.lb is not None and s.lb.target_type == "instance")
    t = rollouts.switch_time(nlb)
    assert (t.label, t.source, t.value) == ("switch", "lb.endpoint_propagation_s", nlb.lb.endpoint_propagation_s)


@pytest.mark.parametrize(("budget", "field", "value"), [(45, "shutdown.node_termination_budget_s", 45),
                                                        (90, "shutdown.grace_s", 60)])
def test_a_node_budget_caps_the_grace_as_the_smaller_of_the_two(budget: int, field: str, value: int) -> None:
    from lockstep.timing import derived as d
    from tests.timing.strategies import build

    svc = build({"services.0.shutdown.node_termination_budget_s": budget, "services.0.shutdown.grace_s": 60}).services[0]
    g = d.grace(svc)
    assert (g.value, g.fields, g.source) == (value, (field,), field)
    assert g.expr is not None and g.expr.op == "min" and g.expr.value == value
    assert sorted(leaf.name for leaf in E.leaves(g.expr)) == ["grace_s", "node_termination_budget_s"]
