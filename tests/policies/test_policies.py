"""Each policy, from the compliant stack with one field changed, reports the exact line
`lockstep check` would print (Finding.render()) against the resource that breaks it."""

from __future__ import annotations

import json

import pytest

from lockstep.policies.rules import all_policies
from lockstep.timing.heartbeat_config import CONFIGMAP_KEY

from tests.policies.support import edited, runtime_config, urn, violations

C = "api-deployment:spec:template:spec:containers:0"
NOTE = "api-deployment:metadata:annotations:lockstep.dev/"
DEP = "kubernetes:apps/v1:Deployment"

# (policy, the one change, resource reported against, exact message)
CASES = [
    ("lb-timeout-below-interval", {"api-tg:healthCheck:timeout": 5.0}, "aws:lb/targetGroup:TargetGroup::api-tg",
     "ERROR lb-timeout-below-interval  api-tg: timeout 5s (lb.health_check.timeout_s) ≥ interval 5s "
     "(lb.health_check.interval_s)  slack -1s → lower the timeout to ≤4s or raise the interval"),
    ("lb-values-in-range", {"api-tg:healthCheck:interval": 301.0}, "aws:lb/targetGroup:TargetGroup::api-tg",
     "ERROR lb-values-in-range  api-tg: interval 301s (lb.health_check.interval_s) not in API range 5–300s  "
     "slack -1s → set lb.health_check.interval_s within 5–300"),
    ("lb-values-in-range", {"primary-health:requestInterval": 20.0},
     "aws:route53/healthCheck:HealthCheck::primary-health",
     "ERROR lb-values-in-range  failover: request_interval 20s (failover.check_interval_s) not in Route 53 "
     "10s or 30s → Route 53 health checks run every 10 or 30 seconds"),
    ("startup-covers-warmup", {NOTE + "warmup-seconds": "21"}, f"{DEP}::api-deployment",
     "ERROR startup-covers-warmup  api: startup_tolerance 25s (probes.startup.initial_delay_s 0 + "
     "(probes.startup.failure_threshold 6 - 1) × probes.startup.period_s 5) < warmup 21s (app.warmup_s) + "
     "margin 5s  slack -1s → raise the startup probe's failure_threshold × period (or add a startup probe)"),
    ("readiness-before-liveness", {C + ":readinessProbe:httpGet:path": "/hc/live",
                                   C + ":readinessProbe:failureThreshold": 4.0}, f"{DEP}::api-deployment",
     "ERROR readiness-before-liveness  api: unready_after 20s (probes.readiness.period_s 5 × "
     "probes.readiness.failure_threshold 4) ≥ kill_tolerance 20s ((probes.liveness.failure_threshold 3 - 1) × "
     "probes.liveness.period_s 10)  slack -1s → let readiness fail first: raise liveness failure_threshold × "
     "period or use a separate liveness endpoint"),
    ("readiness-before-liveness-advisory", {C + ":readinessProbe:failureThreshold": 4.0}, f"{DEP}::api-deployment",
     "WARNING readiness-before-liveness  api: unready_after 20s (probes.readiness.period_s 5 × "
     "probes.readiness.failure_threshold 4) ≥ kill_tolerance 20s ((probes.liveness.failure_threshold 3 - 1) × "
     "probes.liveness.period_s 10)  slack -1s → let readiness fail first: raise liveness failure_threshold × "
     "period or use a separate liveness endpoint"),
    ("probe-timeout-within-period", {C + ":readinessProbe:timeoutSeconds": 6.0}, f"{DEP}::api-deployment",
     "WARNING probe-timeout-within-period  api: timeout 6s (probes.readiness.timeout_s) > period 5s "
     "(probes.readiness.period_s)  slack -1s → keep probes.readiness.timeout_s ≤ period_s"),
    ("drain-fits-grace", {"api-deployment:spec:template:spec:terminationGracePeriodSeconds": 54.0},
     f"{DEP}::api-deployment",
     "ERROR drain-fits-grace  api: drain + finish 50s (shutdown.drain_s 20 + shutdown.finish_s 30) + margin 5s "
     "> grace 54s (shutdown.grace_s)  slack -1s → raise the grace period to ≥55s or shorten the drain"),
    ("finish-covers-requests", {NOTE + "finish-seconds": "29"}, f"{DEP}::api-deployment",
     "ERROR finish-covers-requests  api: finish 29s (shutdown.finish_s) < max_request 30s (app.max_request_s)  "
     "slack -1s → let in-flight requests finish: raise shutdown.finish_s to the longest request"),
    ("prestop-uses-native-sleep", {C + ":lifecycle:preStop": {"exec": {"command": ["sleep", "20"]}}},
     f"{DEP}::api-deployment",
     "WARNING prestop-uses-native-sleep  api: preStop exec sleep (shutdown.prestop) ≠ kubelet sleep action "
     "(Kubernetes 1.30) → use the native sleep action (set shutdown.prestop: sleep or leave it unset)"),
    ("keepalive-outlasts-lb-idle", {NOTE + "keepalive-seconds": "60"}, f"{DEP}::api-deployment",
     "ERROR keepalive-outlasts-lb-idle  api: keepalive 60s (app.keepalive_s) ≤ idle_timeout 60s "
     "(lb.idle_timeout_s)  slack -1s → raise the app's keep-alive timeout to ≥61s or lower the LB's idle timeout"),
    ("drain-covers-lb-detection", {C + ":lifecycle:preStop:sleep:seconds": 19.0}, f"{DEP}::api-deployment",
     "ERROR drain-covers-lb-detection  api: drain 19s (shutdown.drain_s) < lb_detect 15s (deregistration: "
     "lb.deregistration_propagation_s) + margin 5s  slack -1s → raise the drain to ≥20s or detect faster"),
    ("deregistration-covers-requests", {"api-tg:deregistrationDelay": 44.0}, f"{DEP}::api-deployment",
     "ERROR deregistration-covers-requests  api: deregistration_delay 44s (lb.deregistration_delay_s) < "
     "lb_detect + max_request 45s (lb_detect 15 + app.max_request_s 30)  slack -1s → raise the deregistration "
     "delay to ≥45s"),
    ("recovery-within-budget", {"api-tg:healthCheck:healthyThreshold": 7.0}, f"{DEP}::api-deployment",
     "ERROR recovery-within-budget  api: lb_recover 35s (lb.health_check.interval_s 5 × "
     "lb.health_check.healthy_threshold 7) > max_recovery 30s (app.max_recovery_s)  slack -5s → lower the "
     "healthy threshold or the interval"),
    ("rollout-keeps-capacity", {"feed-deployment:spec:replicas": 1.0,
                                "feed-deployment:spec:strategy:rollingUpdate:maxUnavailable": 1.0},
     f"{DEP}::feed-deployment",
     "ERROR rollout-keeps-capacity  feed: capacity during rollout 0 pods (replicas 1 - rollout.max_unavailable 1 "
     "→ 1 pods) < minimum 1 pod  slack -1 pods → add replicas or set rollout.max_unavailable: 0 with "
     "max_surge ≥ 1"),
    ("rollout-keeps-capacity-advisory", {"feed-deployment:spec:strategy:rollingUpdate:maxUnavailable": 1.0},
     f"{DEP}::feed-deployment",
     "WARNING rollout-keeps-capacity  feed: unavailable during rollout 1 pods (rollout.max_unavailable 1) > "
     "surge-only 0 pods  slack -1 pods → surge instead: rollout.max_unavailable: 0 and max_surge ≥ 1"),
    ("rollout-waits-for-lb", {"ns-web:metadata:labels": {}}, f"{DEP}::api-deployment",
     "ERROR rollout-waits-for-lb  api: min_ready 0s (rollout.min_ready_s) < lb_admit_new 24s "
     "(lb.registration_propagation_s 15 + lb.health_check.interval_s 5 + lb.health_check.timeout_s 4) + "
     "margin 5s  slack -29s → add a readiness gate or raise rollout.min_ready_s"),
    ("readiness-gate-can-pass", {"api-rule:actions": []}, f"{DEP}::api-deployment",
     "ERROR readiness-gate-can-pass  api: readiness gate injected by the webhook (readiness_gate) not in missing a target group "
     "attached to a load balancer → provide a target group attached to a load balancer"),
    ("progress-deadline-covers-pod-ready", {"feed-deployment:spec:progressDeadlineSeconds": 35.0},
     f"{DEP}::feed-deployment",
     "ERROR progress-deadline-covers-pod-ready  feed: progress_deadline 35s (rollout.progress_deadline_s) ≤ "
     "pod_ready 30s (app.warmup_s 20 + readiness 5 + rollout.min_ready_s 5) + margin 5s  slack -1s → raise "
     "rollout.progress_deadline_s"),
    ("pdb-needs-replicas", {"feed-deployment:spec:replicas": 1.0}, f"{DEP}::feed-deployment",
     "ERROR pdb-needs-replicas  feed: replicas 1 (replicas) < replicas 2 (pdb.min_available 1 ≥ 1)  slack -1 → "
     "run ≥2 replicas or drop the PDB"),
    ("pdb-allows-eviction", {"feed-pdb:spec:minAvailable": 2.0}, f"{DEP}::feed-deployment",
     "ERROR pdb-allows-eviction  feed: allowed disruptions 0 (pdb.min_available 2 of 2 replicas) < minimum 1  "
     "slack -1 → lower pdb.min_available below replicas (or accept it for a singleton)"),
    ("hpa-owns-replicas", {"api-deployment:spec:replicas": 3.0}, f"{DEP}::api-deployment",
     "WARNING hpa-owns-replicas  api: replicas set (replicas) ≠ with an hpa unset → remove replicas: every apply "
     "resets the count the HPA chose"),
    ("failover-ignores-deploys", {"api-deployment:spec:strategy:rollingUpdate:maxUnavailable": 1.0},
     "aws:route53/healthCheck:HealthCheck::primary-health",
     "ERROR failover-ignores-deploys  failover: tolerance 20s ((failover.failure_threshold 3 - 1) × "
     "failover.check_interval_s 10) ≤ deploy blip 54s (lb_detect 15 + lb_admit_new 39)  slack -35s → make the "
     "entry service's rollout keep capacity, or tolerate more failed checks"),
]


@pytest.mark.parametrize("policy, change, at, message", CASES, ids=[f"{c[0]}:{next(iter(c[1]))}" for c in CASES])
def test_one_changed_field_breaks_the_policy_with_the_exact_line(policy, change, at, message):
    assert violations(policy, edited(change)) == [(message, f"urn:pulumi:test::lockstep::{at}")]


@pytest.mark.parametrize("policy", [p.name for p in all_policies()])
def test_the_compliant_stack_passes_every_policy(policy):
    assert violations(policy) == []


def with_runtime(**changes: object) -> dict:
    """The compliant stack with top-level or first-spec keys of the heartbeat ConfigMap changed."""
    cfg = runtime_config()
    for key, value in changes.items():
        (cfg["specs"][0] if key in cfg["specs"][0] else cfg)[key] = value
    return edited({"heartbeat-config:data": {CONFIGMAP_KEY: json.dumps(cfg)}})


FEED = urn(DEP, "feed-deployment")
HEARTBEAT = urn("kubernetes:core/v1:ConfigMap", "heartbeat-config")  # the heartbeat's numbers
HEARTBEAT_CASES = [
    ("heartbeat-rides-out-pod-replacement", {"loss_time_s": 39}, FEED,
     "ERROR heartbeat-rides-out-pod-replacement  feed-live (feed): loss_time 39s (loss_time_s) < replace_time + "
     "observe 35s (replace_time 30 + heartbeat.observe_interval_s 5) + margin 5s  slack -1s → raise loss_time_s "
     "to ≥40s or replace pods faster"),
    ("heartbeat-samples-often", {"observe_interval_s": 61}, FEED,
     "ERROR heartbeat-samples-often  feed-live (feed): observe_interval 61s (heartbeat.observe_interval_s) > "
     "loss_time / 2 60s (loss_time_s 120 / 2)  slack -1s → observe at least every 60s"),
    ("heartbeat-recovery-covers-catch-up", {"recovery_time_s": 29}, FEED,
     "ERROR heartbeat-recovery-covers-catch-up  feed-live (feed): recovery_time 29s (recovery_time_s) < catch_up "
     "30s (app.catch_up_s)  slack -1s → raise recovery_time_s to the consumer's catch-up time"),
    ("heartbeat-client-tolerates-beat-gaps", {"client_timeout_s": 14}, HEARTBEAT,
     "ERROR heartbeat-client-tolerates-beat-gaps  heartbeat: client_timeout 14s (heartbeat.client_timeout_s) < "
     "3 beats 15s (3 × heartbeat.publish_interval_s 5)  slack -1s → raise heartbeat.client_timeout_s to ≥15s or "
     "publish more often"),
    ("heartbeat-beats-expire", {"beat_ttl_s": 31}, HEARTBEAT,
     "ERROR heartbeat-beats-expire  heartbeat: beat_ttl 31s (heartbeat.beat_ttl_s) > client_timeout 30s "
     "(heartbeat.client_timeout_s)  slack -1s → lower heartbeat.beat_ttl_s to ≤30s"),
]


@pytest.mark.parametrize("policy, change, at, message", HEARTBEAT_CASES, ids=[c[0] for c in HEARTBEAT_CASES])
def test_one_changed_heartbeat_config_value_breaks_the_policy(policy, change, at, message):
    assert violations(policy, with_runtime(**change)) == [(message, at)]


def test_a_heartbeat_lease_outlasting_the_client_timeout_makes_a_deploy_visible():
    stack = with_runtime(lease={"name": "heartbeat-leader", "namespace": "heartbeat", "duration_s": 24,
                                "renew_deadline_s": 10, "retry_period_s": 2})
    assert violations("heartbeat-deploy-invisible", stack) == [(
        "ERROR heartbeat-deploy-invisible  heartbeat: silence 31s (heartbeat.lease_duration_s 24 + "
        "heartbeat.lease_retry_period_s 2 + heartbeat.publish_interval_s 5) ≥ client_timeout 30s "
        "(heartbeat.client_timeout_s)  slack -2s → shorten the lease or raise heartbeat.client_timeout_s", HEARTBEAT)]


def test_a_pdb_selecting_none_of_the_pods_protects_nothing_and_is_never_paired_by_name():
    """The eviction API applies a PDB to the pods its selector selects: a PDB named like the
    workload whose selector misses it is no PDB of that workload (its rules see none)."""
    stack = edited({"feed-pdb:spec:selector:matchLabels": {"app.kubernetes.io/name": "football"},
                    "feed-pdb:spec:minAvailable": 2.0})
    assert violations("pdb-allows-eviction", stack) == []
    assert "pdb-selects-workload" not in [p.name for p in all_policies()]
