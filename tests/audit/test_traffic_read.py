"""The audit reads the NLB connection attributes and the traffic policy of a Service bound to
a target group made outside Kubernetes (TargetGroupBinding + `describe-target-groups` and
`describe-target-group-attributes` output), and reports what they leave unstated (issue 13)."""

from __future__ import annotations

import json

from lockstep.timing.audit import adapt, audit
from lockstep.timing.audit.reader import read_all
from lockstep.timing.bind import link
from lockstep.timing.context import Ctx
from lockstep.timing.extract import traffic as T

ARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/stream/73e2d6bc24d8a067"
MANIFESTS = """
apiVersion: elbv2.k8s.aws/v1beta1
kind: TargetGroupBinding
metadata: {name: stream, namespace: feeds}
spec:
  serviceRef: {name: stream, port: 7000}
  targetGroupARN: %s
  targetType: instance
---
apiVersion: v1
kind: Service
metadata: {name: stream, namespace: feeds}
spec:
  type: NodePort
  %s
  selector: {app: stream}
  ports: [{port: 7000, targetPort: 7000, nodePort: 30700}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: stream
  namespace: feeds
  annotations: {lockstep.dev/finish-seconds: "10", lockstep.dev/max-request-seconds: "10",
                lockstep.dev/warmup-seconds: "10"}
spec:
  replicas: 3
  selector: {matchLabels: {app: stream}}
  template:
    metadata: {labels: {app: stream}}
    spec:
      containers:
        - name: stream
          image: ghcr.io/example/stream:1.0.0
          ports: [{containerPort: 7000}]
          readinessProbe: {tcpSocket: {port: 7000}}
          lifecycle: {preStop: {sleep: {seconds: 15}}}
"""
GROUP = {"TargetGroups": [{"TargetGroupArn": ARN, "TargetGroupName": "stream", "Protocol": "TCP", "Port": 30700,
                           "TargetType": "instance", "HealthCheckProtocol": "TCP", "HealthCheckIntervalSeconds": 10,
                           "UnhealthyThresholdCount": 3, "LoadBalancerArns": ["arn:lb/net/stream"]}]}


def bundle(tmp_path, policy: str, attributes: list[dict] | None) -> str:
    (tmp_path / "stream.yaml").write_text(MANIFESTS % (ARN, policy))
    (tmp_path / "groups.json").write_text(json.dumps(GROUP))
    if attributes is not None:
        (tmp_path / "attrs.json").write_text(json.dumps({"TargetGroupArn": ARN, "Attributes": attributes}))
    return str(tmp_path)


def subject(path: str):
    docs, problems = read_all([path])
    assert not problems
    (s,) = link.link(adapt.resources(docs)).subjects
    return s


def test_the_described_attributes_and_the_stated_policy_reach_the_bound_load_balancer(tmp_path):
    attrs = [{"Key": T.UNHEALTHY_TERMINATION.key, "Value": "false"}, {"Key": T.UNHEALTHY_DRAINING.key, "Value": "40"},
             {"Key": T.DEREGISTRATION_TERMINATION.key, "Value": "true"},
             {"Key": "deregistration_delay.timeout_seconds", "Value": "30"}]
    s = subject(bundle(tmp_path, "externalTrafficPolicy: Local", attrs))
    lb = s.service.lb
    assert (lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
            lb.deregistration_connection_termination, lb.external_traffic_policy) == (False, 40, True, "Local")
    assert not any("connection_termination" in d or "externalTrafficPolicy" in d for d in s.source.defaults)
    result = audit([str(tmp_path)], Ctx(5, (1, 30)), {})
    (etp,) = [loc for j in result.judged for loc in j.findings if loc.finding.id == "etp-local-drain-covers-node-check"]
    assert etp.finding.status == "error"  # 15 s < kube-proxy 10 + 3 × 10 s checks + margin
    assert etp.file.endswith("stream.yaml") and etp.line == 37  # at the preStop sleep


def test_what_the_target_group_leaves_unstated_is_reported_as_the_default_it_runs_with(tmp_path):
    s = subject(bundle(tmp_path, "", None))
    lb = s.service.lb
    assert (lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
            lb.deregistration_connection_termination, lb.external_traffic_policy) == (True, 0, False, "Cluster")
    for attr in T.CONNECTION_ATTRIBUTES:
        assert any(d.startswith(f"{attr.key} {str(attr.default).lower()} (not stated") for d in s.source.defaults)
    assert "externalTrafficPolicy Cluster" in s.source.defaults


def test_a_described_attribute_outside_what_the_api_takes_is_one_problem_line(tmp_path):
    result = audit([bundle(tmp_path, "", [{"Key": T.UNHEALTHY_DRAINING.key, "Value": "-1"}])], Ctx(5, (1, 30)), {})
    assert len(result.problems) == 1
    assert "attrs.json:1: Attributes target_health_state.unhealthy.draining_interval_seconds: expected whole " \
           "seconds 0–360000, got '-1'" in result.problems[0]
