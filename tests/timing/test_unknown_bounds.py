"""An unknown input carries its lower bound: a load balancer's field that no input states
(a TargetGroupBinding whose target group the input lacks) holds the least value its API range
allows, every derived time built from it is a bound the true time is at or above, and a rule
decides exactly where that bound decides (issue 14)."""

from __future__ import annotations

from types import SimpleNamespace

from dataclasses import replace

from hypothesis import example, given
from hypothesis import strategies as st

from tests.timing.strategies import API, BASKETBALL, build, seconds
from lockstep.timing import derived as d
from lockstep.timing.context import Ctx
from lockstep.timing.findings import Term, judge
from lockstep.timing.invariants import kube, rollouts
from lockstep.timing.invariants import lb as lb_rules
from lockstep.timing.invariants import path as path_rules


def at(value: object) -> SimpleNamespace:
    """A model object holding one number as `v`, for the field helpers."""
    return SimpleNamespace(v=value)

CTX = Ctx(5, (1, 30))
HC = ("lb.health_check.interval_s", "lb.health_check.timeout_s", "lb.health_check.healthy_threshold",
      "lb.health_check.unhealthy_threshold")


def unstated(lb, *fields: str):
    """The load balancer with `fields` unknown (their values stand for lower bounds)."""
    out = lb.model_copy()
    out._unknown = frozenset(fields)
    return out


def service(i: int, *fields: str, changes: dict | None = None):
    svc = build(changes).services[i]
    return svc.model_copy(update={"lb": unstated(svc.lb, *fields)})


# ---- the term ----------------------------------------------------------------------------------------
def test_a_bounded_unknown_prints_its_bound_and_an_unbounded_one_prints_unknown() -> None:
    assert Term("interval", 5, "lb.health_check.interval_s", ("lb.health_check.interval_s",)).render() == (
        "interval unknown, ≥5s (lb.health_check.interval_s)")
    assert Term("n", 2, "lb.x", ("lb.x",), "").render() == "n unknown, ≥2 (lb.x)"
    assert Term("drain", 0, "shutdown.drain_s", ("shutdown.drain_s",)).render() == "drain unknown (shutdown.drain_s)"
    assert Term("sum", 7, "a 5 + b ≥2", ("b",)).render() == "sum ≥7s (a 5 + b ≥2)"
    assert Term("sum", 7, "a 5 + b 2").render() == "sum 7s (a 5 + b 2)"


def test_a_load_balancer_field_is_unknown_only_when_no_input_states_it() -> None:
    lb = build().services[API].lb
    assert d.lb_field(lb, "lb.idle_timeout_s", at(60), "v") == Term("lb.idle_timeout_s", 60, "lb.idle_timeout_s",
                                                           fields=("lb.idle_timeout_s",))
    bare = unstated(lb, "lb.idle_timeout_s")
    assert d.lb_field(bare, "lb.idle_timeout_s", at(1), "v", "idle") == Term(
        "idle", 1, "lb.idle_timeout_s", ("lb.idle_timeout_s",), fields=("lb.idle_timeout_s",))
    assert d.lb_field(bare, "lb.port", at(80), "v") == Term("lb.port", 80, "lb.port", fields=("lb.port",))
    assert d.lb_field(lb, "lb.deregistration_propagation_s", at(None), "v") == Term(
        "lb.deregistration_propagation_s", 0, "lb.deregistration_propagation_s",
        ("lb.deregistration_propagation_s",), fields=("lb.deregistration_propagation_s",))


def test_the_parts_of_a_sum_show_a_bound_as_at_least_and_an_unbounded_unknown_as_a_question_mark() -> None:
    lb = unstated(build().services[API].lb, *HC, "lb.registration_propagation_s")
    t = d.lb_admit_new(lb, gated=False)
    assert (t.value, t.unknown) == (24, ("lb.registration_propagation_s", HC[0], HC[1]))
    assert t.source == ("lb.registration_propagation_s ≥15 + lb.health_check.interval_s ≥5 + "
                        "lb.health_check.timeout_s ≥4")
    assert d.total("t", d.field("x", at(None), "v", "x"), d.field("y", at(3), "v", "y")).source == "x ? + y 3"


def test_every_load_balancer_time_marks_the_unknown_fields_it_reads() -> None:
    lb = unstated(build().services[API].lb, *HC, "lb.deregistration_propagation_s")
    assert d.detection(lb).unknown == (HC[0], HC[3])
    assert d.lb_recover(lb).unknown == (HC[0], HC[2])
    assert d.lb_recover(lb).source == "lb.health_check.interval_s ≥5 × lb.health_check.healthy_threshold ≥2"
    assert d.lb_detect(lb).render() == "lb_detect ≥15s (deregistration: lb.deregistration_propagation_s)"
    known = build().services[API].lb
    assert (d.detection(known).unknown, d.lb_recover(known).unknown, d.lb_detect(known).unknown) == ((), (), ())


# ---- the verdict -------------------------------------------------------------------------------------
@given(bound=seconds(0, 200), extra=seconds(0, 200), other=seconds(0, 200), margin=seconds(0, 10),
       relation=st.sampled_from([">=", ">", "<=", "<"]), unknown_left=st.booleans())
@example(bound=15, extra=0, other=20, margin=5, relation=">=", unknown_left=False)
@example(bound=15, extra=0, other=19, margin=5, relation=">=", unknown_left=False)
def test_a_verdict_decided_at_the_bound_is_the_verdict_for_every_value_above_it(
        bound, extra, other, margin, relation, unknown_left) -> None:
    def verdict(value: int, unknown: tuple[str, ...]):
        u = Term("u", value, "u", unknown)
        k = Term("k", other, "k")
        return judge("s", u, relation, k, "", margin) if unknown_left else judge("s", k, relation, u, "", margin)

    at_bound = verdict(bound, ("u",))
    truth = verdict(bound + extra, ())
    if at_bound.outcome != "skipped":
        assert at_bound.outcome == truth.outcome
    else:
        assert at_bound.needs == ("u",)


def test_a_drain_below_the_fastest_possible_deregistration_is_broken_above_it_undecided() -> None:
    short = lb_rules.drain_covers_lb_detection(service(API, "lb.deregistration_propagation_s",
                                                       changes={f"services.{API}.shutdown.drain_s": 19}), CTX)[0]
    assert (short.outcome, short.slack_s) == ("broken", -1)
    enough = lb_rules.drain_covers_lb_detection(service(API, "lb.deregistration_propagation_s",
                                                        changes={f"services.{API}.shutdown.drain_s": 20}), CTX)[0]
    assert (enough.outcome, enough.needs) == ("skipped", ("lb.deregistration_propagation_s",))


def test_an_unknown_deregistration_delay_below_the_need_is_undecided_and_one_bounded_above_it_holds() -> None:
    zero = {f"services.{API}.lb.deregistration_delay_s": 0}
    v = lb_rules.deregistration_covers_requests(service(API, "lb.deregistration_delay_s", changes=zero), CTX)[0]
    assert (v.outcome, v.needs, v.left.label) == ("skipped", ("lb.deregistration_delay_s",), "deregistration_delay")
    assert lb_rules.deregistration_covers_requests(service(API, changes=zero), CTX)[0].outcome == "broken"
    # at least the example's 60 s covers detection 15 s + the longest request 30 s, whatever it is
    assert lb_rules.deregistration_covers_requests(service(API, "lb.deregistration_delay_s"), CTX)[0].outcome == "ok"


def test_an_unknown_protocol_never_breaks_the_keepalive_rule_which_holds_for_http_groups_only() -> None:
    short = {f"services.{API}.app.keepalive_s": 10}
    assert path_rules.keepalive_outlasts_lb_idle(service(API, changes=short), CTX)[0].outcome == "broken"
    v = path_rules.keepalive_outlasts_lb_idle(service(API, "lb.protocol", changes=short), CTX)[0]
    assert (v.outcome, v.needs) == ("skipped", ("lb.protocol",))
    ok = path_rules.keepalive_outlasts_lb_idle(service(API, "lb.protocol"), CTX)[0]
    assert (ok.outcome, ok.needs) == ("ok", ())
    idle = path_rules.keepalive_outlasts_lb_idle(service(API, "lb.idle_timeout_s"), CTX)[0]
    assert (idle.outcome, idle.needs, idle.right.label) == ("skipped", ("lb.idle_timeout_s",), "idle_timeout")


def test_an_unknown_attachment_leaves_the_gate_rule_undecided_unless_something_else_breaks_it() -> None:
    v = kube.readiness_gate_can_pass(service(API, "lb.attach_to_arn"), CTX)[0]
    assert (v.outcome, v.needs) == ("skipped", ("lb.attach_to_arn",))
    both = kube.readiness_gate_can_pass(service(API, "lb.attach_to_arn", changes={
        f"services.{API}.readiness_gate.injected_after_binding": None}), CTX)[0]
    assert (both.outcome, both.needs) == ("skipped", ("readiness_gate.injected_after_binding", "lb.attach_to_arn"))
    unlabelled = kube.readiness_gate_can_pass(service(API, "lb.attach_to_arn", changes={
        f"services.{API}.readiness_gate.namespace_labelled": False}), CTX)[0]
    assert unlabelled.outcome == "broken"
    assert "attached" not in unlabelled.right.value  # the unknown attachment is not named a problem
    detached = build({f"services.{API}.lb.attach_to_arn": None}).services[API]
    assert "attached" in kube.readiness_gate_can_pass(detached, CTX)[0].right.value


def test_the_rollout_switch_carries_an_unknown_deregistration_propagation() -> None:
    svc = service(API, "lb.deregistration_propagation_s")
    assert rollouts.switch_time(svc).unknown == ("lb.deregistration_propagation_s",)
    assert rollouts.switch_time(build().services[API]).unknown == ()
    assert rollouts.switch_time(service(BASKETBALL, "lb.deregistration_propagation_s")).unknown == ()


def test_a_load_balancer_states_every_field_unless_told_otherwise() -> None:
    lb = build().services[API].lb
    assert lb.unknown == frozenset()
    assert replace(d.lb_detect(lb), fields=()) == Term("lb_detect", 15, "deregistration: lb.deregistration_propagation_s")
