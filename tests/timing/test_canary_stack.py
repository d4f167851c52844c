"""A stack's canary routed by the ALB: the controller attaches its target group (the model fills
`lb.attach_to_arn` as the audit reads it), and a load balancer that is not an ALB is an input
error naming the field (a listener of the stack's own is infra's to refuse: tests/infra)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from lockstep.timing.controllers import LBC_ATTACHED
from lockstep.timing.model import Service, fill_canary_attachment
from lockstep.timing.references import canary_alb_errors
from tests.timing.strategies import DELETE, build

CANARY = {"strategy": "canary", "traffic_routing": "alb", "scale_down_delay_s": 45}
UNSET = {f"services.0.lb.{k}": DELETE for k in ("attach_to_arn", "rule_priority", "listener_port", "vpc_id")}


def canary_api(**lb: object) -> Service:
    """The example's api as a canary routed by the ALB, its LB changed by `lb` (unvalidated)."""
    api = build({**UNSET, "services.0.argo": CANARY}).services[0]
    return api.model_copy(update={"lb": api.lb.model_copy(update=lb)})


def test_an_unset_attachment_of_a_canary_routed_by_the_alb_is_the_controllers() -> None:
    stack = build({**UNSET, "services.0.argo": CANARY})
    assert stack.services[0].lb.attach_to_arn == LBC_ATTACHED
    assert canary_alb_errors(0, stack.services[0]) == []


def test_a_null_attachment_is_filled_too() -> None:
    stack = build({**UNSET, "services.0.argo": CANARY, "services.0.lb.attach_to_arn": None})
    assert stack.services[0].lb.attach_to_arn == LBC_ATTACHED


@pytest.mark.parametrize("argo", [None, {"strategy": "canary"}, {"strategy": "blueGreen"}])
def test_without_alb_routing_an_unset_attachment_stays_unattached(argo) -> None:
    changes = {"services.0.lb.attach_to_arn": DELETE, "services.0.rollout.max_surge": "100%"}
    if argo is not None:
        changes["services.0.argo"] = argo
    assert build(changes).services[0].lb.attach_to_arn is None


def test_a_stated_attachment_is_kept_for_the_references_to_refuse() -> None:
    arn = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/edge/1/2"
    data = {"argo": dict(CANARY), "lb": {"attach_to_arn": arn, "kind": "alb"}}
    assert fill_canary_attachment(data) is data
    assert canary_api(attach_to_arn=arn).lb.attach_to_arn == arn


def test_the_fill_keeps_every_other_key_and_leaves_its_input_alone() -> None:
    lb = {"kind": "alb", "port": 8080}
    data = {"name": "api", "argo": dict(CANARY), "lb": lb}
    out = fill_canary_attachment(data)
    assert out == {"name": "api", "argo": CANARY, "lb": {"kind": "alb", "port": 8080, "attach_to_arn": LBC_ATTACHED}}
    assert lb == {"kind": "alb", "port": 8080} and "attach_to_arn" not in data["lb"]


@pytest.mark.parametrize("data", [
    "not a mapping", None,
    {"argo": CANARY},  # no lb: the references name it
    {"argo": CANARY, "lb": "not a mapping"},
    {"argo": "not a mapping", "lb": {}},
    {"argo": {"strategy": "canary", "traffic_routing": None}, "lb": {}},
    {"lb": {}},
])
def test_what_is_not_a_config_canary_routed_by_the_alb_is_returned_as_is(data) -> None:
    assert fill_canary_attachment(data) is data


def test_a_service_the_audit_read_keeps_its_unattached_group() -> None:
    # The audit passes models, not mappings: an unattached group it read stays unattached.
    api = canary_api()
    lb = api.lb.model_copy(update={"attach_to_arn": None})
    rebuilt = Service.model_validate({**dict(api), "lb": lb})
    assert rebuilt.lb.attach_to_arn is None


def test_a_canary_routed_by_the_alb_needs_an_alb() -> None:
    api = canary_api(kind="nlb")
    assert canary_alb_errors(3, api) == [
        "services.3.lb.kind: a canary routed by the ALB (argo.traffic_routing alb) needs lb.kind alb (got nlb)"]


def test_a_canary_routed_by_the_alb_needs_a_load_balancer() -> None:
    api = canary_api().model_copy(update={"lb": None})
    assert canary_alb_errors(1, api) == [
        "services.1.lb.kind: a canary routed by the ALB (argo.traffic_routing alb) needs lb.kind alb (got no lb)"]


def test_a_stated_listener_is_left_to_infra_and_judged_attached() -> None:
    stack = build({"services.0.argo": CANARY})  # the example's api states its listener rule
    assert canary_alb_errors(0, stack.services[0]) == []
    assert stack.services[0].lb.attach_to_arn.startswith("arn:aws:elasticloadbalancing:")


def test_a_blue_green_service_keeps_its_own_listener() -> None:
    stack = build({"services.0.argo": {"strategy": "blueGreen"}, "services.0.rollout.max_surge": "100%"})
    assert stack.services[0].lb.attach_to_arn.startswith("arn:aws:elasticloadbalancing:")


def test_the_stack_refuses_a_canary_routed_by_the_alb_behind_an_nlb() -> None:
    # basketball-feed: behind the example's NLB
    with pytest.raises(ValidationError, match=r"services\.2\.lb\.kind: a canary routed by the ALB "
                                              r"\(argo\.traffic_routing alb\) needs lb\.kind alb \(got nlb\)"):
        build({"services.2.kind": "Deployment", "services.2.argo": CANARY})


def test_the_stack_takes_a_basic_canary_behind_an_nlb() -> None:
    stack = build({"services.2.kind": "Deployment", "services.2.argo": {"strategy": "canary"}})
    assert stack.services[2].argo.traffic_routing is None


def test_a_canary_behind_an_nlb_is_named_beside_the_other_services_problems() -> None:
    with pytest.raises(ValidationError) as err:
        build({"services.0.shutdown.prestop": "command", "services.2.kind": "Deployment", "services.2.argo": CANARY})
    text = str(err.value)
    assert "services.0.shutdown.prestop: 'command'" in text and "services.2.lb.kind: a canary routed by the ALB" in text
