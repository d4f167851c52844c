"""timing.extract.traffic: the Service's externalTrafficPolicy and the NLB target group's
connection attributes, read from a Service, the LBC's target-group-attributes annotation,
`describe-target-group-attributes` output and a Pulumi target group's inputs (issue 13)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing import extract as x
from lockstep.timing import limits as L
from lockstep.timing.extract import traffic as T
from lockstep.timing.model import LoadBalancer

NLB = "service.beta.kubernetes.io/aws-load-balancer-"
ATTRS = NLB + "target-group-attributes"
KEYS = {a.field: a.key for a in T.CONNECTION_ATTRIBUTES}
NLB_TG = {"protocol": "TCP", "port": 30700, "targetType": "instance",
          "healthCheck": {"protocol": "TCP", "interval": 10, "timeout": 10, "healthyThreshold": 3,
                          "unhealthyThreshold": 3}}


# ---- externalTrafficPolicy ----------------------------------------------------------------------
def test_a_service_without_a_traffic_policy_states_none_and_the_default_is_cluster():
    assert T.traffic_policy({"spec": {"type": "LoadBalancer"}}) is None
    assert T.traffic_policy(None) is None
    assert T.ETP_DEFAULT == "Cluster" == LoadBalancer.model_fields["external_traffic_policy"].default


@pytest.mark.parametrize("policy", ["Cluster", "Local"])
def test_a_stated_traffic_policy_is_read_as_is(policy):
    assert T.traffic_policy({"spec": {"externalTrafficPolicy": policy}}) == policy


@pytest.mark.parametrize("raw", ["local", "OnlyLocal", "", 1, ["Local"]])
def test_any_other_traffic_policy_is_bad_input_naming_the_field_and_the_allowed_values(raw):
    with pytest.raises(x.ExtractError) as err:
        T.traffic_policy({"spec": {"externalTrafficPolicy": raw}})
    assert str(err.value) == f"spec.externalTrafficPolicy: expected one of Cluster, Local, got {raw!r}"


# ---- the attribute table ------------------------------------------------------------------------
def test_the_table_names_each_attribute_once_with_the_model_default():
    assert KEYS == {"unhealthy_connection_termination": "target_health_state.unhealthy.connection_termination.enabled",
                    "unhealthy_draining_interval_s": "target_health_state.unhealthy.draining_interval_seconds",
                    "deregistration_connection_termination": "deregistration_delay.connection_termination.enabled"}
    assert [a.default for a in T.CONNECTION_ATTRIBUTES] == [True, 0, False]
    assert T.BY_KEY == {a.key: a for a in T.CONNECTION_ATTRIBUTES}
    assert T.UNHEALTHY_DRAINING.seconds == L.NLB_UNHEALTHY_DRAINING
    assert T.UNHEALTHY_TERMINATION.allowed == "true or false"
    assert T.UNHEALTHY_DRAINING.allowed == "whole seconds 0–360000"


@pytest.mark.parametrize(("raw", "want"), [("true", True), ("false", False), (" true ", True), (True, True),
                                            (False, False)])
def test_a_boolean_attribute_takes_true_or_false(raw, want):
    assert T.value(T.UNHEALTHY_TERMINATION, raw, "w") is want


@pytest.mark.parametrize("raw", ["True", "yes", "1", 1, "", None])
def test_a_boolean_attribute_refuses_anything_else_naming_where_the_key_and_the_values(raw):
    with pytest.raises(x.ExtractError) as err:
        T.value(T.DEREGISTRATION_TERMINATION, raw, "where")
    assert str(err.value) == (f"where deregistration_delay.connection_termination.enabled: expected true or false, "
                              f"got {raw!r}")


@given(st.integers(min_value=-10, max_value=L.NLB_UNHEALTHY_DRAINING.hi + 10))
@example(L.NLB_UNHEALTHY_DRAINING.lo)
@example(L.NLB_UNHEALTHY_DRAINING.hi)
@example(L.NLB_UNHEALTHY_DRAINING.lo - 1)
@example(L.NLB_UNHEALTHY_DRAINING.hi + 1)
def test_a_draining_interval_is_taken_exactly_inside_the_api_range(n):
    inside = L.NLB_UNHEALTHY_DRAINING.lo <= n <= L.NLB_UNHEALTHY_DRAINING.hi
    for raw in (n, str(n), float(n)):
        if inside:
            assert T.value(T.UNHEALTHY_DRAINING, raw, "w") == n
        else:
            with pytest.raises(x.ExtractError, match="expected whole seconds 0–360000"):
                T.value(T.UNHEALTHY_DRAINING, raw, "w")


@pytest.mark.parametrize("raw", ["15s", "1.5", 7.5, True, "", "abc"])
def test_a_draining_interval_refuses_what_is_not_whole_seconds(raw):
    with pytest.raises(x.ExtractError) as err:
        T.value(T.UNHEALTHY_DRAINING, raw, "where")
    assert str(err.value) == (f"where target_health_state.unhealthy.draining_interval_seconds: expected whole "
                              f"seconds 0–360000, got {raw!r}")


def test_attributes_become_the_pulumi_inputs_that_hold_them_and_others_are_left_alone():
    attrs = {KEYS["unhealthy_connection_termination"]: "false", KEYS["unhealthy_draining_interval_s"]: "45",
             KEYS["deregistration_connection_termination"]: "true", "stickiness.enabled": "true"}
    assert T.props_from_attributes(attrs, "w") == {
        "targetHealthStates": [{"enableUnhealthyConnectionTermination": False, "unhealthyDrainingInterval": 45}],
        "connectionTermination": True}
    assert T.props_from_attributes({KEYS["deregistration_connection_termination"]: "false"}, "w") == {
        "connectionTermination": False}
    assert T.props_from_attributes({}, "w") == {}


def test_pulumi_inputs_give_the_fields_they_state_and_nothing_else():
    props = {"targetHealthStates": [{"enableUnhealthyConnectionTermination": False, "unhealthyDrainingInterval": 45}],
             "connectionTermination": True}
    assert T.connection_fields(props) == {"unhealthy_connection_termination": False,
                                          "unhealthy_draining_interval_s": 45,
                                          "deregistration_connection_termination": True}
    assert T.stated(props) == set(KEYS.values())
    partial = {"targetHealthStates": [{"enableUnhealthyConnectionTermination": True}]}
    assert T.connection_fields(partial) == {"unhealthy_connection_termination": True}
    assert T.stated(partial) == {KEYS["unhealthy_connection_termination"]}
    for empty in ({}, {"targetHealthStates": []}, {"targetHealthStates": None}):
        assert T.connection_fields(empty) == {} and T.stated(empty) == set()


def test_a_bad_pulumi_input_names_its_path():
    with pytest.raises(x.ExtractError) as err:
        T.connection_fields({"targetHealthStates": [{"unhealthyDrainingInterval": -1}]})
    assert str(err.value) == ("targetHealthStates.0.unhealthyDrainingInterval target_health_state.unhealthy."
                              "draining_interval_seconds: expected whole seconds 0–360000, got -1")


def test_put_path_builds_mappings_and_a_one_element_list_and_at_path_reads_them_back():
    obj: dict = {}
    T.put_path(obj, ("a", 0, "b"), 1)
    T.put_path(obj, ("a", 0, "c"), 2)
    T.put_path(obj, ("d", "e"), 3)
    T.put_path(obj, ("f",), 4)
    T.put_path(obj, ("g", 0, "h", "i"), 5)  # steps after the list index still nest
    assert obj == {"a": [{"b": 1, "c": 2}], "d": {"e": 3}, "f": 4, "g": [{"h": {"i": 5}}]}
    assert [T.at_path(obj, p) for p in (("a", 0, "b"), ("a", 0, "c"), ("d", "e"), ("f",))] == [1, 2, 3, 4]
    assert T.at_path(obj, ("a", 1, "b")) is None and T.at_path(obj, ("x", 0)) is None


# ---- through the one target-group translation ---------------------------------------------------
def test_an_nlb_target_group_without_the_attributes_takes_the_elbv2_defaults():
    lb = x.target_group(NLB_TG)
    assert (lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
            lb.deregistration_connection_termination) == (True, 0, False)


def test_an_nlb_target_group_reads_its_stated_attributes():
    props = {**NLB_TG, "connectionTermination": True,
             "targetHealthStates": [{"enableUnhealthyConnectionTermination": False, "unhealthyDrainingInterval": 30}]}
    lb = x.target_group(props)
    assert (lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
            lb.deregistration_connection_termination) == (False, 30, True)


def test_an_alb_target_group_ignores_nlb_only_attributes():
    props = {"protocol": "HTTP", "port": 8080, "targetType": "ip", "connectionTermination": "nonsense",
             "targetHealthStates": [{"unhealthyDrainingInterval": -5}]}
    lb = x.target_group(props)
    assert (lb.unhealthy_connection_termination, lb.deregistration_connection_termination) == (True, False)


def test_described_attributes_set_the_connection_fields():
    tg = {"Protocol": "TCP", "Port": 30700, "TargetType": "instance", "HealthCheckProtocol": "TCP"}
    lb = x.described_target_group(tg, {KEYS["deregistration_connection_termination"]: "true",
                                       KEYS["unhealthy_connection_termination"]: "false",
                                       KEYS["unhealthy_draining_interval_s"]: "20"})
    assert (lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
            lb.deregistration_connection_termination) == (False, 20, True)
    with pytest.raises(x.ExtractError) as err:
        x.described_target_group(tg, {KEYS["unhealthy_connection_termination"]: "off"})
    assert str(err.value) == ("Attributes target_health_state.unhealthy.connection_termination.enabled: expected "
                              "true or false, got 'off'")


def test_the_nlb_annotation_sets_the_connection_fields_and_a_bad_one_names_the_annotation():
    ann = {"target-group-attributes": "deregistration_delay.timeout_seconds=60,"
                                      "target_health_state.unhealthy.connection_termination.enabled=false,"
                                      "target_health_state.unhealthy.draining_interval_seconds=30,"
                                      "deregistration_delay.connection_termination.enabled=true"}
    lb = x.lbc_target_group(ann, "nlb", port=7000)
    assert (lb.deregistration_delay_s, lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
            lb.deregistration_connection_termination) == (60, False, 30, True)
    with pytest.raises(x.ExtractError) as err:
        x.lbc_target_group({"target-group-attributes": "target_health_state.unhealthy.draining_interval_seconds="
                                                       "360001"}, "nlb", port=7000)
    assert str(err.value) == (f"{ATTRS} target_health_state.unhealthy.draining_interval_seconds: expected whole "
                              "seconds 0–360000, got '360001'")


def test_an_alb_ingress_annotation_does_not_read_nlb_attributes():
    ann = {"target-group-attributes": "deregistration_connection_termination.enabled=maybe,"
                                      "deregistration_delay.connection_termination.enabled=maybe"}
    lb = x.lbc_target_group(ann, "alb", port=8080)
    assert lb.deregistration_connection_termination is False
