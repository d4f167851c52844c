"""Policy tests without the engine: a compliant stack of resources written the way
pulumi-kubernetes and pulumi-aws hand inputs to policies (camelCase, numbers as floats),
validation args built by hand (as pulumi-policy's own tests do), violations collected.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts, PolicyResource, PolicyResourceOptions, ResourceValidationArgs,
    StackValidationArgs, StackValidationPolicy,
)

from lockstep.policies.rules import all_policies
from lockstep.timing.heartbeat_config import CONFIGMAP_KEY

TG_ARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/api/0123456789abcdef"
LISTENER_ARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/edge/50dc6c495c0c9188/f2f7dc8efc522ab2"


def urn(kind: str, name: str) -> str:
    return f"urn:pulumi:test::lockstep::{kind}::{name}"


def probe(path: str, period: float, failures: float, **more: float) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": 8080.0, "scheme": "HTTP"}, "periodSeconds": period,
            "failureThreshold": failures, **more}


def deployment(name: str, namespace: str, annotations: dict[str, str], **spec: Any) -> dict[str, Any]:
    container = {"name": name, "image": f"ghcr.io/example/{name}:1", "ports": [{"name": "traffic", "containerPort": 8080.0}],
                 "readinessProbe": probe("/hc/ready", 5.0, 3.0), "livenessProbe": probe("/hc/live", 10.0, 3.0)}
    body = {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1.0, "maxUnavailable": 0.0}},
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}}, "progressDeadlineSeconds": 600.0,
            "minReadySeconds": 0.0,
            "template": {"metadata": {"labels": {"app.kubernetes.io/name": name}},
                         "spec": {"terminationGracePeriodSeconds": 30.0, "containers": [container]}}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "annotations": annotations}, "spec": {**body, **spec}}


def api_deployment() -> dict[str, Any]:
    """An HTTP API behind an ALB on IP targets (the example stack's `api`), app facts annotated."""
    obj = deployment("api", "web", {
        "lockstep.dev/warmup-seconds": "10", "lockstep.dev/max-request-seconds": "30",
        "lockstep.dev/max-recovery-seconds": "30", "lockstep.dev/keepalive-seconds": "75",
        "lockstep.dev/finish-seconds": "30", "lockstep.dev/catch-up-seconds": "0"})
    pod = obj["spec"]["template"]["spec"]
    pod["terminationGracePeriodSeconds"] = 60.0
    c = pod["containers"][0]
    c["lifecycle"] = {"preStop": {"sleep": {"seconds": 20.0}}}
    c["startupProbe"] = probe("/hc/live", 5.0, 6.0, timeoutSeconds=2.0)
    c["readinessProbe"] = probe("/hc/ready", 5.0, 2.0, timeoutSeconds=2.0)
    c["livenessProbe"] = probe("/hc/live", 10.0, 3.0, timeoutSeconds=2.0)
    return obj


def feed_deployment() -> dict[str, Any]:
    """A consumer without LB, watched by the heartbeat (the example's `football-feed`)."""
    obj = deployment("feed", "feeds", {
        "lockstep.dev/warmup-seconds": "20", "lockstep.dev/max-request-seconds": "5",
        "lockstep.dev/finish-seconds": "20", "lockstep.dev/catch-up-seconds": "30"},
        replicas=2.0, minReadySeconds=5.0, progressDeadlineSeconds=300.0)
    obj["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["initialDelaySeconds"] = 30.0
    return obj


def runtime_config() -> dict[str, Any]:
    return {"schema_version": 1, "service": "heartbeat", "replicas": 2, "observe_interval_s": 5,
            "publish_interval_s": 5, "client_timeout_s": 30, "beat_ttl_s": 30, "port": 8080,
            "namespaces": ["feeds"],
            "lease": {"name": "heartbeat-leader", "namespace": "heartbeat", "duration_s": 15,
                      "renew_deadline_s": 10, "retry_period_s": 2},
            "commands_exchange": "c", "beats_exchange": "b", "grace_s": 30,
            "specs": [{"name": "feed-live", "workload": {"name": "feed", "namespace": "feeds", "kind": "Deployment"},
                       "loss_time_s": 120, "recovery_time_s": 60, "affected": {"sport_ids": [1]}}]}


def pdb(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": name}}, **spec}}


def compliant() -> dict[str, tuple[str, dict[str, Any], tuple[str, ...]]]:
    """name → (type token, props, names it depends on). Every invariant holds."""
    return {
        "ns-web": ("kubernetes:core/v1:Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "web", "labels": {"elbv2.k8s.aws/pod-readiness-gate-inject": "enabled"}}}, ()),
        "api-tg": ("aws:lb/targetGroup:TargetGroup", {
            "arn": TG_ARN, "protocol": "HTTP", "port": 8080.0, "targetType": "ip", "vpcId": "vpc-1",
            "deregistrationDelay": 60.0, "slowStart": 0.0,
            "healthCheck": {"protocol": "HTTP", "path": "/hc/ready", "matcher": "200", "port": "traffic-port",
                            "interval": 5.0, "timeout": 4.0, "healthyThreshold": 2.0, "unhealthyThreshold": 2.0}}, ()),
        "api-rule": ("aws:lb/listenerRule:ListenerRule", {
            "listenerArn": LISTENER_ARN, "priority": 100.0,
            "actions": [{"type": "forward", "targetGroupArn": TG_ARN}]}, ("api-tg",)),
        "api-service": ("kubernetes:core/v1:Service", {"apiVersion": "v1", "kind": "Service", "metadata": {
            "name": "api", "namespace": "web"}, "spec": {"selector": {"app.kubernetes.io/name": "api"},
                                                          "ports": [{"port": 8080.0, "targetPort": 8080.0}]}}, ()),
        "api-tgb": ("kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding", {
            "apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
            "metadata": {"name": "api", "namespace": "web"},
            "spec": {"targetGroupARN": TG_ARN, "targetType": "ip", "serviceRef": {"name": "api", "port": 8080.0}}},
            ("api-tg",)),
        "api-deployment": ("kubernetes:apps/v1:Deployment", api_deployment(), ("ns-web", "api-service", "api-tgb")),
        "api-pdb": ("kubernetes:policy/v1:PodDisruptionBudget", pdb("api", "web", minAvailable=2.0), ()),
        "api-hpa": ("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", {
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "api", "namespace": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "api"},
                     "minReplicas": 3.0, "maxReplicas": 12.0}}, ("api-deployment",)),
        "feed-deployment": ("kubernetes:apps/v1:Deployment", feed_deployment(), ()),
        "feed-pdb": ("kubernetes:policy/v1:PodDisruptionBudget", pdb("feed", "feeds", minAvailable=1.0), ()),
        "heartbeat-config": ("kubernetes:core/v1:ConfigMap", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "heartbeat-config", "namespace": "heartbeat"},
            "data": {CONFIGMAP_KEY: json.dumps(runtime_config())}}, ()),
        "heartbeat-deployment": ("kubernetes:apps/v1:Deployment", deployment(
            "heartbeat", "heartbeat", {"lockstep.dev/warmup-seconds": "5", "lockstep.dev/finish-seconds": "5"},
            replicas=2.0), ("heartbeat-config",)),
        "primary-health": ("aws:route53/healthCheck:HealthCheck", {
            "type": "HTTPS", "fqdn": "api-euw1.example.com", "resourcePath": "/api/health", "port": 443.0,
            "requestInterval": 10.0, "failureThreshold": 3.0}, ()),
        "primary-record": ("aws:route53/record:Record", {
            "name": "api.example.com", "type": "CNAME", "ttl": 60.0, "records": ["api-euw1.example.com"],
            "setIdentifier": "eu-west", "failoverRoutingPolicies": [{"type": "PRIMARY"}]}, ("primary-health",)),
    }


def edited(changes: dict[str, Any], base: dict | None = None) -> dict:
    """A copy of `base` (default: the compliant stack) with `{"resource:path:to:key": value}`
    changes (colons: annotation keys contain dots); the value DELETE removes the key."""
    out = copy.deepcopy(base if base is not None else compliant())
    for path, value in changes.items():
        name, *keys = path.split(":")
        node = out[name][1]
        for key in keys[:-1]:
            node = node[int(key)] if isinstance(node, list) else node[key]
        last = keys[-1]
        if value is DELETE:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return out


DELETE = object()


def options() -> PolicyResourceOptions:
    return PolicyResourceOptions(protect=False, ignore_changes=[], delete_before_replace=None, aliases=[],
                                 custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[])


def policy_resources(stack: dict) -> list[PolicyResource]:
    """PolicyResources as the engine hands them to a stack policy, dependencies linked."""
    made: dict[str, PolicyResource] = {}
    for name, (typ, props, _) in stack.items():
        made[name] = PolicyResource(typ, props, urn(typ, name), name, options(), None, None, [], {})
    for name, (_, _, deps) in stack.items():
        made[name].dependencies.extend(made[d] for d in deps)
    return list(made.values())


def policy_named(name: str):
    return next(p for p in all_policies() if p.name == name)


def violations(policy_name: str, stack: dict | None = None, config: dict | None = None) -> list[tuple[str, str | None]]:
    """Run one policy on a stack the way the engine would: a stack policy once, a resource
    policy on every resource. Returns (message, urn) pairs."""
    stack = stack if stack is not None else compliant()
    policy = policy_named(policy_name)
    found: list[tuple[str, str | None]] = []

    def report(message: str, at: str | None = None) -> None:
        found.append((message, at))

    if isinstance(policy, StackValidationPolicy):
        policy.validate(StackValidationArgs(policy_resources(stack), config or {}), report)
        return found
    for r in policy_resources(stack):
        before = len(found)
        policy.validate(ResourceValidationArgs(r.resource_type, r.props, r.urn, r.name, options(), None,
                                               config or {}), report)
        found[before:] = [(m, r.urn) for m, _ in found[before:]]
    return found


def messages(policy_name: str, stack: dict | None = None, config: dict | None = None) -> list[str]:
    return [m for m, _ in violations(policy_name, stack, config)]
