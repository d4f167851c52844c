"""What the node sources really grant, as their controllers' code does it (issue 13, checked
against the upstream sources cited in timing/limits.py and timing/model.py).

aws-node-termination-handler schedules a drain at the event's start time minus
`--node-termination-grace-period`; in IMDS mode a spot event starts at the interruption, so a
period under the two-minute notice delays the drain and leaves pods only the period. Queue mode
(start = when the notice was sent) and spot that Karpenter's own queue drains are not delayed."""

from __future__ import annotations

import pytest
from hypothesis import example, given

from tests.timing.strategies import API, DELETE, base, build, findings_of, seconds
from lockstep.timing import limits as L
from lockstep.timing import nodes as N
from lockstep.timing.model import Nodes

NODE_GRACE = "nodes.termination_handler.node_termination_grace_period_s"


def _handler(mode: str, node_grace: int) -> dict:
    return {"termination_handler": {"mode": mode, "node_termination_grace_period_s": node_grace}}


@given(seconds(1, 200), seconds(0, 60))
@example(L.SPOT_NOTICE_S - 1, 0).via("one second under the notice: the handler's period decides")
@example(L.SPOT_NOTICE_S, 0).via("the notice itself: the drain starts when the notice arrives")
@example(100, 20).via("the period equals what the reaction leaves")
def test_an_imds_handler_grants_node_group_spot_the_lesser_of_its_period_and_the_notice(node_grace, reaction) -> None:
    nodes = Nodes.model_validate({"asg_spot": True, "spot_reaction_s": reaction, **_handler("imds", node_grace)})
    assert N.node_budget_s(build().services[API], nodes) == min(L.SPOT_NOTICE_S - reaction, node_grace)
    delayed = [b for b in N.budgets(nodes) if b.grant.label == "handler node grace"]
    assert [(b.grant.value, b.grant.fields, b.lead) for b in delayed] == (
        [(node_grace, (NODE_GRACE,), None)] if node_grace < L.SPOT_NOTICE_S else [])


@given(seconds(1, 200), seconds(0, 60))
def test_a_queue_handler_drains_when_the_notice_is_sent_whatever_its_period(node_grace, reaction) -> None:
    nodes = Nodes.model_validate({"asg_spot": True, "spot_reaction_s": reaction, **_handler("queue", node_grace)})
    assert N.node_budget_s(build().services[API], nodes) == L.SPOT_NOTICE_S - reaction
    assert "handler node grace" not in [b.grant.label for b in N.budgets(nodes)]


@pytest.mark.parametrize(("nodes", "delayed"), [
    # a NodePool whose spot Karpenter's queue drains at once: the handler's schedule does not bind
    ({"karpenter": [{"name": "p", "capacity_types": ["spot"], "interruption_queue": True}]}, False),
    # the same NodePool without the queue: the handler is what drains it
    ({"karpenter": [{"name": "p", "capacity_types": ["spot"]}]}, True),
    # on-demand only: no spot notice to schedule against
    ({"karpenter": [{"name": "p"}]}, False),
    ({}, False),
    ({"asg_spot": True}, True),
])
def test_the_handlers_period_binds_only_spot_it_drains_itself(nodes, delayed) -> None:
    stack_nodes = Nodes.model_validate({**nodes, **_handler("imds", 30), "spot_reaction_s": 5})
    labels = [b.grant.label for b in N.budgets(stack_nodes)]
    assert ("handler node grace" in labels) is delayed


def test_a_handler_period_shorter_than_the_drain_is_reported_with_its_field() -> None:
    # the example's api drains 20 s and finishes in 30 s: 50 + margin 5 > a 50 s period
    stack = build({"nodes.asg_spot": True, "nodes.termination_handler": {"node_termination_grace_period_s": 50}})
    [f] = [f for f in findings_of(stack, "node-budget-covers-drain", "api") if f.severity == "error"]
    assert f.render() == (
        "ERROR node-budget-covers-drain  api: drain + finish 50s (shutdown.drain_s 20 + shutdown.finish_s 30) + "
        "margin 5s > handler node grace 50s (nodes.termination_handler.node_termination_grace_period_s)  "
        "slack -5s → raise nodes.termination_handler.node_termination_grace_period_s to ≥55s or shorten the drain")


def test_the_handlers_default_period_leaves_the_notice_to_decide() -> None:
    nodes = Nodes.model_validate({"asg_spot": True, "termination_handler": {}, "spot_reaction_s": 5})
    assert nodes.termination_handler.node_termination_grace_period_s == L.NTH_NODE_TERMINATION_GRACE_DEFAULT
    assert [b.grant.label for b in N.budgets(nodes)] == ["spot notice"]


# ---- heartbeat-rides-out-rollout over several specs ---------------------------------------------------------
@pytest.mark.parametrize("order", [(1, 0, 2), (0, 1, 2), (2, 1, 0)])
def test_every_watched_deployment_is_judged_whatever_the_specs_listed_before_it(order) -> None:
    # basketball (a StatefulSet: the replacement rule's) and football (surging: nothing goes down)
    # are not judged; api, rolled by taking a pod down with no PDB, is, wherever it is listed
    specs = base()["heartbeat_specs"]
    specs = [specs[0], specs[1], dict(specs[0], name="api-live", service="api", loss_time_s=40)]
    stack = build({"heartbeat_specs": [specs[i] for i in order], "services.0.pdb": DELETE,
                   "services.0.rollout.max_surge": 0, "services.0.rollout.max_unavailable": 1})
    assert [(f.subject, f.status) for f in findings_of(stack, "heartbeat-rides-out-rollout")] == [
        ("api-live (api)", "error")]
