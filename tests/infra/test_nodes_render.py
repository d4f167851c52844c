"""What the stack owns for node disruptions is written out (issue 13): the NLB target group's
connection termination attributes and the node-port Service's traffic policy carry the model's
values; an ALB target group and a ClusterIP Service carry none of them."""

from __future__ import annotations

from tests.infra.support import example_values, render


def test_the_nlb_target_group_carries_the_connection_termination_attributes() -> None:
    res = render(example_values())
    tg = res.one("TargetGroup", "basketball-feed-tg").inputs
    assert tg["connectionTermination"] is False
    assert tg["targetHealthStates"] == [{"enableUnhealthyConnectionTermination": True}]


def test_kept_unhealthy_connections_get_their_draining_interval() -> None:
    values = example_values()
    values["services"][2]["lb"].update(unhealthy_connection_termination=False, unhealthy_draining_interval_s=15,
                                       deregistration_connection_termination=True)
    tg = render(values).one("TargetGroup", "basketball-feed-tg").inputs
    assert tg["connectionTermination"] is True
    assert tg["targetHealthStates"] == [{"enableUnhealthyConnectionTermination": False, "unhealthyDrainingInterval": 15}]


def test_an_alb_target_group_gets_no_nlb_attributes() -> None:
    tg = render(example_values()).one("TargetGroup", "api-tg").inputs
    assert "connectionTermination" not in tg and "targetHealthStates" not in tg


def test_the_node_port_service_carries_the_traffic_policy_and_a_cluster_ip_one_none() -> None:
    values = example_values()
    values["services"][2]["lb"]["external_traffic_policy"] = "Local"
    values["services"][2]["shutdown"].update(drain_s=45, grace_s=100)  # Local: the drain covers the node check
    del values["nodes"]["kubelet"]  # with Local a node shutdown would want a drain past the node check too
    values["heartbeat_specs"][1]["loss_time_s"] = 170
    res = render(values)
    assert res.k8s("Service", "feeds", "basketball-feed").inputs["spec"]["externalTrafficPolicy"] == "Local"
    assert "externalTrafficPolicy" not in res.k8s("Service", "web", "api").inputs["spec"]
