"""`grpc-keepalive-fits-path` (INVARIANTS.md, "Links to what the app depends on"; issue 12): a
gRPC server's clients behind an NLB, behind an ALB and with no load balancer, each a property
over the region only this rule reads, its boundaries, and what unknown and off mean."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing.lbkinds import KINDS
from lockstep.timing.model import GRPC_PERMIT_KEEPALIVE_S, GrpcServing, Stack
from tests.timing.strategies import base, edit, error_ids, findings_of, seconds

RULE = "grpc-keepalive-fits-path"
ALB, NLB, BARE = "api", "basketball-feed", "football-feed"  # the example's services: ALB, NLB TCP, no LB
INDEX = {ALB: 0, BARE: 1, NLB: 2}


def build(service: str, grpc: dict, **lb) -> Stack:
    i = INDEX[service]
    changes: dict = {f"services.{i}.grpc": grpc}
    changes.update({f"services.{i}.lb.{k}": v for k, v in lb.items()})
    return Stack.model_validate(edit(base(), changes))


def test_the_permitted_interval_is_grpcs_five_minutes_and_the_clients_keepalive_unknown() -> None:
    assert GRPC_PERMIT_KEEPALIVE_S == 5 * 60 == GrpcServing().permit_keepalive_s
    assert GrpcServing().client_keepalive_s is None
    # an NLB passes the clients' HTTP/2 connection through; an ALB ends it and ignores its PINGs
    assert (KINDS["nlb"].passes_http2_through, KINDS["alb"].passes_http2_through) == (True, False)


@given(seconds(1, 7200), seconds(1, 7200), seconds(60, 6000))
@example(300, 300, 350).via("slack 0 against the permit: a ping exactly as far apart as allowed")
@example(299, 300, 350).via("slack -1: too_many_pings")
@example(349, 300, 350).via("slack 0 against the NLB: the ping a second before it drops the connection")
@example(350, 300, 350).via("slack -1: the NLB drops it as the ping leaves")
def test_through_an_nlb_pings_come_no_closer_than_permitted_and_before_the_idle_timeout(ka, permit, idle) -> None:
    stack = build(NLB, {"client_keepalive_s": ka, "permit_keepalive_s": permit}, idle_timeout_s=idle)
    assert (RULE in error_ids(stack)) == (ka < permit or ka >= idle)
    pings, path = findings_of(stack, RULE, NLB)
    assert (pings.slack_s, path.slack_s) == (ka - permit, idle - ka - 1)
    assert (pings.right.source, path.right.source) == ("grpc.permit_keepalive_s", "lb.idle_timeout_s")


@given(seconds(1, 7200), seconds(60, 6000), seconds(1, 7200))
def test_another_idle_timeout_on_the_way_counts_when_it_is_shorter(ka, lb_idle, other) -> None:
    stack = build(NLB, {"client_keepalive_s": ka, "permit_keepalive_s": 1, "path_idle_s": other},
                  idle_timeout_s=lb_idle)
    _, path = findings_of(stack, RULE, NLB)
    assert (path.right.label, path.right.value) == ("path idle", min(lb_idle, other))
    assert path.right.source == f"min(lb.idle_timeout_s {lb_idle}, grpc.path_idle_s {other})"
    assert (path.status == "error") == (ka >= min(lb_idle, other))


@given(seconds(1, 7200), seconds(1, 4000))
@example(59, 60).via("slack 0: a message every 59 s under the ALB's 60 s")
@example(60, 60).via("slack -1")
def test_through_an_alb_only_a_message_keeps_the_connection(silence, idle) -> None:
    # whatever the keepalive: the ALB does not count its pings, nor pass them to the server
    stack = build(ALB, {"max_silence_s": silence, "client_keepalive_s": 1}, idle_timeout_s=idle)
    [f] = findings_of(stack, RULE, ALB)
    assert (f.status == "error") == (silence >= idle)
    assert (f.left.source, f.right.source, f.slack_s) == ("grpc.max_silence_s", "lb.idle_timeout_s", idle - silence - 1)


def test_each_finding_says_which_side_to_move() -> None:
    [f] = findings_of(build(ALB, {"max_silence_s": 90}), RULE, ALB)
    assert f.render() == (f"ERROR {RULE}  {ALB}: max silence 90s (grpc.max_silence_s) ≥ lb idle 60s "
                          "(lb.idle_timeout_s)  slack -31s → send a message on every client connection at least "
                          "every 59s (the ALB does not count pings as activity) or raise the idle timeout")
    pings, path = findings_of(build(NLB, {"client_keepalive_s": 60}), RULE, NLB)
    assert pings.render() == (f"ERROR {RULE}  {NLB}: client keepalive 60s (grpc.client_keepalive_s) < permitted "
                              "ping interval 300s (grpc.permit_keepalive_s)  slack -240s → raise the clients' "
                              "keepalive time to ≥300s or lower the server's permitted ping interval")
    assert path.status == "ok"
    _, path = findings_of(build(NLB, {"client_keepalive_s": 400}), RULE, NLB)
    assert path.render() == (f"ERROR {RULE}  {NLB}: client keepalive 400s (grpc.client_keepalive_s) ≥ lb idle "
                             "350s (lb.idle_timeout_s)  slack -51s → lower the clients' keepalive time to ≤349s or "
                             "raise the idle timeout")
    assert {f.service for f in findings_of(build(NLB, {"client_keepalive_s": 400}), RULE, NLB)} == {NLB}


@pytest.mark.parametrize("service", [NLB, BARE])
def test_a_keepalive_left_off_lets_the_connection_go_quiet(service) -> None:
    [f] = findings_of(build(service, {"client_keepalive_s": 0, "path_idle_s": 900}), RULE, service)
    assert f.render() == (f"ERROR {RULE}  {service}: client keepalive 0s (grpc.client_keepalive_s) ≤ off 0s → "
                          "turn the clients' keepalive on, at 300s or more and below the idle timeout on the way")


@pytest.mark.parametrize(("service", "grpc", "needs"), [
    (NLB, {}, [("grpc.client_keepalive_s",), ("grpc.client_keepalive_s",)]),
    (ALB, {"client_keepalive_s": 30}, [("grpc.max_silence_s",)]),
    (BARE, {"client_keepalive_s": 600}, [(), ("grpc.path_idle_s",)]),  # no LB: the way's idle timeout unknown
])
def test_an_unknown_side_is_skipped_naming_it(service, grpc, needs) -> None:
    found = findings_of(build(service, grpc), RULE, service)
    assert [f.needs for f in found] == needs
    assert all(f.status == ("ok" if not f.needs else "skipped") for f in found)


@given(seconds(1, 7200), seconds(1, 7200))
def test_without_a_load_balancer_the_stated_idle_timeout_is_the_whole_way(ka, idle) -> None:
    stack = build(BARE, {"client_keepalive_s": ka, "permit_keepalive_s": 1, "path_idle_s": idle})
    _, path = findings_of(stack, RULE, BARE)
    assert (path.right.source, path.status == "error") == ("grpc.path_idle_s", ka >= idle)
    assert path.right.render() == f"path idle {idle}s (grpc.path_idle_s)"


def test_only_the_example_service_that_serves_grpc_has_findings_and_they_hold() -> None:
    found = findings_of(Stack.model_validate(base()), RULE)
    assert {f.subject for f in found} == {"odds-stream"}
    assert [f.status for f in found] == ["ok", "ok"]
    assert [f.slack_s for f in found] == [0, 49]  # pings as often as permitted, 50 s under the NLB's 350


@st.composite
def grpc_stacks(draw) -> Stack:
    def one() -> dict:
        return {"client_keepalive_s": draw(st.none() | seconds(0, 900)),
                "permit_keepalive_s": draw(seconds(1, 600)),
                "max_silence_s": draw(st.none() | seconds(1, 300)),
                "path_idle_s": draw(st.none() | seconds(1, 900))}
    changes = {f"services.{i}.grpc": one() for i in INDEX.values() if draw(st.booleans())}
    changes["services.2.lb.idle_timeout_s"] = draw(seconds(60, 900))
    return Stack.model_validate(edit(base(), changes))


@given(grpc_stacks())
def test_the_rule_breaks_exactly_where_the_catalogues_formula_does(stack) -> None:
    from tests.timing import oracle
    assert error_ids(stack) == oracle.stack_errors(stack)
