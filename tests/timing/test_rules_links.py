"""`amqp-heartbeat-under-idle` (INVARIANTS.md, "Links to what the app depends on"; issue 12):
an app's AMQP link and lockstep's own heartbeat service's, each a property over the region only
this rule reads, its boundaries, and what unknown and off mean."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing.heartbeat_config import runtime_config
from lockstep.timing.model import RABBITMQ_CONSUMER_TIMEOUT_S, BrokerLink, HeartbeatService, Stack
from tests.timing.strategies import base, edit, error_ids, findings_of, seconds

RULE = "amqp-heartbeat-under-idle"


def build(changes: dict) -> Stack:
    return Stack.model_validate(edit(base(), changes))


def link(**fields) -> dict:
    return {"services.0.broker": fields}


@given(st.integers(1, 65535), seconds(1, 7200))
@example(599, 300).via("slack 0: a frame every 299 s under a 300 s idle timeout")
@example(600, 300).via("slack -1: a frame every 300 s, the idle timeout's own length")
def test_a_frame_every_half_heartbeat_must_come_before_the_path_drops_the_idle_link(heartbeat, idle) -> None:
    stack = build(link(heartbeat_s=heartbeat, path_idle_s=idle, manual_ack=False))
    assert (RULE in error_ids(stack)) == (heartbeat / 2 >= idle)
    [f] = findings_of(stack, RULE, "api")
    assert f.slack_s == idle - heartbeat // 2 - 1


@given(st.none() | seconds(1, 7200))
def test_heartbeats_off_let_the_link_go_quiet_whatever_the_path(idle) -> None:
    [f] = findings_of(build(link(heartbeat_s=0, path_idle_s=idle, manual_ack=False)), RULE, "api")
    assert f.render() == (f"ERROR {RULE}  api: heartbeat 0s (broker.heartbeat_s) ≤ off 0s "
                          "→ turn AMQP heartbeats on (a heartbeat timeout above 0)")
    assert (f.service, f.relation) == ("api", ">")


@pytest.mark.parametrize(("fields", "needs"), [
    ({"path_idle_s": 350}, ("broker.heartbeat_s",)),  # the negotiated heartbeat unknown
    ({"heartbeat_s": 60}, ("broker.path_idle_s",)),  # the way to the broker unknown
])
def test_an_unknown_side_leaves_the_heartbeat_clause_skipped_naming_it(fields, needs) -> None:
    [f] = findings_of(build(link(manual_ack=False, **fields)), RULE, "api")
    assert (f.status, f.needs) == ("skipped", needs)


@given(seconds(0, 7200), seconds(1, 7200))
@example(1799, RABBITMQ_CONSUMER_TIMEOUT_S).via("slack 0")
@example(1800, RABBITMQ_CONSUMER_TIMEOUT_S).via("slack -1: the broker closes the channel as the ack comes")
def test_a_manual_ack_comes_within_the_brokers_consumer_timeout(held, timeout) -> None:
    stack = build(link(heartbeat_s=60, path_idle_s=350, max_unacked_s=held, consumer_timeout_s=timeout))
    assert (RULE in error_ids(stack)) == (held >= timeout)
    heartbeat, consumer = findings_of(stack, RULE, "api")
    assert (heartbeat.status, consumer.slack_s) == ("ok", timeout - held - 1)


def test_the_consumer_timeout_is_rabbitmqs_default_and_an_unknown_handling_time_is_skipped() -> None:
    assert BrokerLink().consumer_timeout_s == RABBITMQ_CONSUMER_TIMEOUT_S == 30 * 60
    _, consumer = findings_of(build(link(heartbeat_s=60, path_idle_s=350)), RULE, "api")
    assert (consumer.status, consumer.needs) == ("skipped", ("broker.max_unacked_s",))
    assert len(findings_of(build(link(heartbeat_s=60, path_idle_s=350, manual_ack=False)), RULE, "api")) == 1


def test_a_service_without_a_broker_link_has_no_finding() -> None:
    assert findings_of(build({}), RULE, "api") == []


def test_a_heartbeat_outside_amqps_range_is_refused_by_its_field() -> None:
    from lockstep.timing.config import stack_from_config
    from lockstep.timing.inputs import ConfigError
    with pytest.raises(ConfigError, match=r"services\.0\.broker\.heartbeat_s: Input should be less than or equal "
                                          r"to 65535 \(got 65536\)"):
        stack_from_config(edit(base(), link(heartbeat_s=65536)))


# ---- lockstep's own heartbeat service ----------------------------------------------------------
@given(st.integers(1, 65535), seconds(1, 7200))
def test_the_heartbeat_services_own_link_is_judged_by_the_same_relation(heartbeat, idle) -> None:
    stack = build({"heartbeat.broker": {"heartbeat_s": heartbeat, "path_idle_s": idle, "manual_ack": False}})
    [f] = findings_of(stack, RULE, stack.heartbeat.name)
    assert (f.status == "error") == (heartbeat / 2 >= idle)
    assert f.left.source == "heartbeat.broker.heartbeat_s / 2"


def test_the_heartbeat_service_asks_for_its_heartbeat_and_acks_its_replies_automatically() -> None:
    default = HeartbeatService.model_fields["broker"].default
    assert (default.heartbeat_s, default.manual_ack, default.path_idle_s) == (30, False, None)
    # a partial block keeps the service's own defaults, not a plain link's
    partial = build({"heartbeat.broker": {"path_idle_s": 350}}).heartbeat.broker
    assert (partial.heartbeat_s, partial.manual_ack) == (default.heartbeat_s, default.manual_ack)
    [f] = findings_of(build({"heartbeat.broker": {}}), RULE, "heartbeat")
    assert (f.status, f.needs) == ("skipped", ("heartbeat.broker.path_idle_s",))
    [f] = findings_of(build({}), RULE, "heartbeat")  # the example's NLB in front of the broker
    assert f.status == "ok"


@given(st.none() | st.integers(0, 65535))
def test_the_runtime_config_carries_the_heartbeat_the_service_asks_for(heartbeat) -> None:
    stack = build({"heartbeat.broker.heartbeat_s": heartbeat})
    assert runtime_config(stack).broker_heartbeat_s == heartbeat
    # read back from its ConfigMap (audit, policies): the link as declared, but for the way to
    # the broker, which no resource states
    from lockstep.timing.extract import heartbeat_service
    read = heartbeat_service(runtime_config(stack)).broker
    assert read == stack.heartbeat.broker.model_copy(update={"path_idle_s": None})


@st.composite
def links(draw) -> dict:
    def one() -> dict:
        return {"heartbeat_s": draw(st.none() | st.integers(0, 1200)), "path_idle_s": draw(st.none() | seconds(1, 600)),
                "manual_ack": draw(st.booleans()), "max_unacked_s": draw(st.none() | seconds(0, 4000))}
    return {"services.0.broker": one(), "heartbeat.broker": one()}


@given(links())
def test_the_broker_rule_breaks_exactly_where_the_catalogues_formula_does(changes) -> None:
    from tests.timing import oracle
    stack = build(changes)
    assert error_ids(stack) == oracle.stack_errors(stack)


def test_each_finding_names_both_sides_and_the_largest_heartbeat_that_holds() -> None:
    heartbeat, idle, held, timeout = 700, 350, 1900, 1800
    stack = build(link(heartbeat_s=heartbeat, path_idle_s=idle, max_unacked_s=held, consumer_timeout_s=timeout))
    assert [f.render() for f in findings_of(stack, RULE, "api")] == [
        f"ERROR {RULE}  api: heartbeat / 2 {heartbeat // 2}s (broker.heartbeat_s / 2) ≥ path idle {idle}s "
        f"(broker.path_idle_s)  slack {idle - heartbeat // 2 - 1}s → lower the heartbeat to ≤{2 * idle - 1}s "
        "(a frame every heartbeat / 2) or raise the idle timeout on the way to the broker",
        f"ERROR {RULE}  api: consumer_timeout {timeout}s (broker.consumer_timeout_s) ≤ max_unacked {held}s "
        f"(broker.max_unacked_s)  slack {timeout - held - 1}s → raise the broker's consumer_timeout or acknowledge sooner"]
    assert all(f.service == "api" for f in findings_of(stack, RULE, "api"))
