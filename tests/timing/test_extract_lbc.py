"""timing.extract for what `lockstep audit` reads: AWS Load Balancer Controller annotations
(Ingress/Service) and `aws elbv2 describe-target-groups` JSON, both turned into target-group
props for the one `target_group` translation."""

from __future__ import annotations

import pytest

from lockstep.timing import extract as x
from lockstep.timing.model import HealthCheck

ALB = "alb.ingress.kubernetes.io/"
NLB = "service.beta.kubernetes.io/aws-load-balancer-"


# ---- annotation formats -------------------------------------------------------------------------
def test_string_map_reads_key_value_pairs_skipping_empty_items():
    assert x.string_map(" a=1,, b = 2 ,", "w") == {"a": "1", "b": "2"}
    assert x.string_map("", "w") == {}
    assert x.string_map("k=v=w", "w") == {"k": "v=w"}


def test_string_map_rejects_an_item_without_a_value():
    with pytest.raises(x.ExtractError) as err:
        x.string_map("a=1, oops ", "where")
    assert str(err.value) == "where: expected key=value pairs, got 'oops'"


def test_annotation_number_reads_signed_whole_numbers():
    assert x.annotation_number(" 15 ", "w") == 15
    assert x.annotation_number("-3", "w") == -3


@pytest.mark.parametrize("raw", ["15s", "1.5", "", 7.5, "X3", "--3"])
def test_annotation_number_rejects_anything_else(raw):
    with pytest.raises(x.ExtractError) as err:
        x.annotation_number(raw, "where")
    assert str(err.value) == f"where: expected a whole number, got {raw!r}"


def test_choice_matches_case_insensitively_and_returns_the_canonical_spelling():
    assert x.choice(" https ", ("HTTP", "HTTPS"), "w") == "HTTPS"
    with pytest.raises(x.ExtractError) as err:
        x.choice("udp", ("HTTP", "HTTPS"), "where")
    assert str(err.value) == "where: expected one of HTTP, HTTPS, got 'udp'"


def test_prefixed_keeps_only_the_prefixed_keys_without_the_prefix():
    assert x.prefixed({ALB + "target-type": "ip", "other": "x"}, ALB) == {"target-type": "ip"}
    assert x.prefixed(None, ALB) == {}


def test_a_backend_services_alb_annotations_override_the_ingress():
    ingress = {ALB + "target-type": "instance", ALB + "healthcheck-path": "/hc"}
    service = {ALB + "target-type": "ip"}
    assert x.alb_annotations(ingress, service) == {"target-type": "ip", "healthcheck-path": "/hc"}
    assert x.alb_annotations(None, None) == {}


@pytest.mark.parametrize("annotations, cls, managed", [
    ({NLB + "type": "external"}, None, True), ({NLB + "type": "nlb-ip"}, None, True),
    ({}, "service.k8s.aws/nlb", True), ({NLB + "type": "nlb"}, None, False), (None, None, False),
])
def test_nlb_managed_only_when_the_controller_reconciles_the_service(annotations, cls, managed):
    assert x.nlb_managed(annotations, cls) is managed


# ---- controller-created target groups ----------------------------------------------------------
def test_an_alb_target_group_without_annotations_takes_the_controllers_defaults():
    lb = x.lbc_target_group({}, "alb", port=8080)
    assert (lb.kind, lb.protocol, lb.target_type, lb.port, lb.attach_to_arn) == (
        "alb", "HTTP", "instance", 8080, x.LBC_MANAGED)
    assert lb.health_check == HealthCheck(protocol="HTTP", path="/", matcher="200", interval_s=15, timeout_s=5,
                                          healthy_threshold=2, unhealthy_threshold=2)
    assert (lb.deregistration_delay_s, lb.slow_start_s, lb.idle_timeout_s) == (300, 0, 60)


def test_an_alb_target_group_reads_every_annotation():
    notes = {"target-type": "ip", "backend-protocol": "HTTPS", "healthcheck-protocol": "HTTP",
             "healthcheck-port": "8081", "healthcheck-path": "/hc", "success-codes": "200-299",
             "healthcheck-interval-seconds": "10", "healthcheck-timeout-seconds": "6",
             "healthy-threshold-count": "3", "unhealthy-threshold-count": "4",
             "target-group-attributes": "deregistration_delay.timeout_seconds=45,slow_start.duration_seconds=30",
             "load-balancer-attributes": "idle_timeout.timeout_seconds=120"}
    lb = x.lbc_target_group(notes, "alb", port=8443, deregistration_propagation_s=20)
    assert (lb.protocol, lb.target_type, lb.port) == ("HTTPS", "ip", 8443)
    assert lb.health_check == HealthCheck(protocol="HTTP", path="/hc", matcher="200-299", port=8081,
                                          interval_s=10, timeout_s=6, healthy_threshold=3, unhealthy_threshold=4)
    assert (lb.deregistration_delay_s, lb.slow_start_s, lb.idle_timeout_s) == (45, 30, 120)
    assert lb.deregistration_propagation_s == 20


def test_an_alb_health_check_follows_the_backend_protocol_when_not_annotated():
    lb = x.lbc_target_group({"backend-protocol": "https"}, "alb", port=443)
    assert (lb.protocol, lb.health_check.protocol) == ("HTTPS", "HTTPS")


def test_an_nlb_target_group_without_annotations_takes_the_controllers_defaults():
    lb = x.lbc_target_group({}, "nlb", port=30700)
    assert (lb.kind, lb.protocol, lb.target_type, lb.attach_to_arn) == ("nlb", "TCP", "instance", x.LBC_MANAGED)
    assert lb.health_check == HealthCheck(protocol="TCP", interval_s=10, timeout_s=10, healthy_threshold=3,
                                          unhealthy_threshold=3)
    assert (lb.deregistration_delay_s, lb.idle_timeout_s) == (300, 350)


def test_an_nlb_target_group_reads_every_annotation():
    notes = {"nlb-target-type": "ip", "ssl-cert": "arn:cert", "healthcheck-protocol": "http",
             "healthcheck-interval": "30", "healthcheck-timeout": "6", "healthcheck-healthy-threshold": "2",
             "healthcheck-unhealthy-threshold": "2",
             "target-group-attributes": "deregistration_delay.timeout_seconds=0"}
    lb = x.lbc_target_group(notes, "nlb", port=7000)
    assert (lb.protocol, lb.target_type) == ("TLS", "ip")
    assert lb.health_check == HealthCheck(protocol="HTTP", path="/", matcher="200-399", interval_s=30,
                                          timeout_s=6, healthy_threshold=2, unhealthy_threshold=2)
    assert lb.deregistration_delay_s == 0


def test_an_nlb_tls_listener_checks_targets_over_tcp_unless_annotated():
    """The certificate makes the listener TLS; the health check's default stays the kind's own
    (TCP), not the listener's protocol."""
    lb = x.lbc_target_group({"ssl-cert": "arn:cert"}, "nlb", port=7000)
    assert (lb.protocol, lb.health_check.protocol, lb.idle_timeout_s) == ("TLS", "TCP", 350)


def test_the_legacy_nlb_ip_type_means_ip_targets():
    lb = x.lbc_target_group({"type": "nlb-ip", "nlb-target-type": "instance"}, "nlb", port=7000)
    assert lb.target_type == "ip"


def test_an_nlb_http_health_check_keeps_an_annotated_path_and_codes():
    notes = {"healthcheck-protocol": "HTTPS", "healthcheck-path": "/ready", "healthcheck-success-codes": "200"}
    hc = x.lbc_target_group(notes, "nlb", port=7000).health_check
    assert (hc.protocol, hc.path, hc.matcher) == ("HTTPS", "/ready", "200")


@pytest.mark.parametrize("kind, notes, message", [
    ("alb", {"healthcheck-interval-seconds": "ten"},
     "alb.ingress.kubernetes.io/healthcheck-interval-seconds: expected a whole number, got 'ten'"),
    ("nlb", {"healthcheck-timeout": "x"},
     "service.beta.kubernetes.io/aws-load-balancer-healthcheck-timeout: expected a whole number, got 'x'"),
    ("alb", {"backend-protocol": "GRPC"},
     "alb.ingress.kubernetes.io/backend-protocol: expected one of HTTP, HTTPS, got 'GRPC'"),
    ("alb", {"healthcheck-protocol": "TCP"},
     "alb.ingress.kubernetes.io/healthcheck-protocol: expected one of HTTP, HTTPS, got 'TCP'"),
    ("nlb", {"healthcheck-protocol": "UDP"},
     "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol: expected one of TCP, HTTP, HTTPS, got 'UDP'"),
    ("alb", {"target-type": "lambda"},
     "alb.ingress.kubernetes.io/target-type: expected one of ip, instance, got 'lambda'"),
    ("alb", {"target-group-attributes": "deregistration_delay.timeout_seconds"},
     "alb.ingress.kubernetes.io/target-group-attributes: expected key=value pairs, "
     "got 'deregistration_delay.timeout_seconds'"),
    ("alb", {"target-group-attributes": "deregistration_delay.timeout_seconds=soon"},
     "alb.ingress.kubernetes.io/target-group-attributes deregistration_delay.timeout_seconds: "
     "expected a whole number, got 'soon'"),
    ("alb", {"target-group-attributes": "slow_start.duration_seconds=later"},
     "alb.ingress.kubernetes.io/target-group-attributes slow_start.duration_seconds: "
     "expected a whole number, got 'later'"),
    ("alb", {"load-balancer-attributes": "idle_timeout.timeout_seconds=long"},
     "alb.ingress.kubernetes.io/load-balancer-attributes idle_timeout.timeout_seconds: "
     "expected a whole number, got 'long'"),
    ("alb", {"load-balancer-attributes": "idle"},
     "alb.ingress.kubernetes.io/load-balancer-attributes: expected key=value pairs, got 'idle'"),
])
def test_a_bad_annotation_is_named_with_its_full_key(kind, notes, message):
    with pytest.raises(x.ExtractError) as err:
        x.lbc_target_group(notes, kind, port=80)
    assert str(err.value) == message


def test_attribute_number_is_none_when_the_attribute_is_absent():
    assert x.attribute_number({}, "k", "w") is None
    assert x.attribute_number({"k": "7"}, "k", "w") == 7


# ---- aws elbv2 JSON ----------------------------------------------------------------------------
DESCRIBED = {
    "TargetGroupArn": "arn:tg", "Protocol": "HTTP", "Port": 8080, "VpcId": "vpc-1", "TargetType": "ip",
    "HealthCheckProtocol": "HTTP", "HealthCheckPort": "traffic-port", "HealthCheckPath": "/hc",
    "HealthCheckIntervalSeconds": 10, "HealthCheckTimeoutSeconds": 5, "HealthyThresholdCount": 3,
    "UnhealthyThresholdCount": 2, "Matcher": {"HttpCode": "200-299"},
    "LoadBalancerArns": ["arn:lb/app/edge", "arn:lb/app/other"],
}


def test_a_described_target_group_reads_every_field_and_its_attributes():
    attrs = x.attribute_map([{"Key": "deregistration_delay.timeout_seconds", "Value": "60"},
                             {"Key": "slow_start.duration_seconds", "Value": 30}])
    assert attrs == {"deregistration_delay.timeout_seconds": "60", "slow_start.duration_seconds": "30"}
    lb = x.described_target_group(DESCRIBED, attrs, registration_propagation_s=5)
    assert (lb.kind, lb.protocol, lb.port, lb.vpc_id, lb.target_type, lb.attach_to_arn) == (
        "alb", "HTTP", 8080, "vpc-1", "ip", "arn:lb/app/edge")
    assert lb.health_check == HealthCheck(protocol="HTTP", path="/hc", matcher="200-299", interval_s=10,
                                          timeout_s=5, healthy_threshold=3, unhealthy_threshold=2)
    assert (lb.deregistration_delay_s, lb.slow_start_s, lb.registration_propagation_s) == (60, 30, 5)


def test_a_described_target_group_without_attributes_or_load_balancer_takes_api_defaults():
    tg = {"Protocol": "TCP", "Port": 7000, "TargetType": "instance", "LoadBalancerArns": []}
    lb = x.described_target_group(tg)
    assert (lb.attach_to_arn, lb.deregistration_delay_s, lb.slow_start_s) == (None, 300, 0)
    assert lb.health_check == HealthCheck(protocol="TCP", interval_s=30, timeout_s=10, healthy_threshold=5,
                                          unhealthy_threshold=2)


def test_described_attributes_must_be_key_value_records():
    with pytest.raises(x.ExtractError) as err:
        x.attribute_map([{"Name": "x"}])
    assert str(err.value) == "Attributes: expected a list of {Key, Value}"
    with pytest.raises(x.ExtractError) as err:
        x.described_target_group(DESCRIBED, {"slow_start.duration_seconds": "x"})
    assert str(err.value) == "Attributes slow_start.duration_seconds: expected a whole number, got 'x'"
    with pytest.raises(x.ExtractError) as err:
        x.described_target_group(DESCRIBED, {"deregistration_delay.timeout_seconds": "x"})
    assert str(err.value) == "Attributes deregistration_delay.timeout_seconds: expected a whole number, got 'x'"
    assert x.attribute_map(None) == {}
