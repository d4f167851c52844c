"""The resources the Pulumi program registers for the bundled example stack (recorded under
Pulumi's mocks by `infra.render.record`) pass every policy; the same resources with one
number edited by hand fail the matching policy with the exact line."""

from __future__ import annotations

import pytest
import yaml

from lockstep.policies.rules import all_policies
from lockstep.timing.config import EXAMPLE, lockstep_values

from tests.policies.support import edited, violations


@pytest.fixture(scope="module")
def example() -> dict:
    """name → (type, props, dependency names), as `support.edited`/`violations` take them.
    Props are the recorded inputs plus the mock-assigned `arn`/`id` (outputs, as a stack
    policy sees them); dependencies are the recorded `depends_on`."""
    from lockstep.infra.render import record

    recorded = [r for r in record(lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"])) if r.custom]
    names = {r.urn: r.name for r in recorded}
    return {r.name: (r.type, {**r.inputs, **({"arn": r.arn} if r.arn else {}), **({"id": r.id} if r.id else {})},
                     tuple(names[d] for d in r.depends_on if d in names)) for r in recorded}


def at(example: dict, name: str) -> str:
    return f"urn:pulumi:test::lockstep::{example[name][0]}::{name}"


def test_the_example_registers_the_resources_the_policies_bind(example):
    kinds = {t for t, _, _ in example.values()}
    assert {"aws:lb/targetGroup:TargetGroup", "kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding",
            "kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet", "kubernetes:core/v1:ConfigMap",
            "kubernetes:policy/v1:PodDisruptionBudget", "aws:route53/healthCheck:HealthCheck"} <= kinds


@pytest.mark.parametrize("policy", [p.name for p in all_policies()])
def test_the_example_stack_passes_every_policy(example, policy):
    assert violations(policy, example) == []


def test_a_raised_target_group_interval_fails_lb_values_in_range(example):
    stack = edited({"api-tg:healthCheck:interval": 301.0}, example)
    assert violations("lb-values-in-range", stack) == [(
        "ERROR lb-values-in-range  api-tg: interval 301s (lb.health_check.interval_s) not in API range 5–300s  "
        "slack -1s → set lb.health_check.interval_s within 5–300", at(example, "api-tg"))]


def test_a_shortened_prestop_fails_drain_covers_lb_detection(example):
    sleep = "basketball-feed-statefulset:spec:template:spec:containers:0:lifecycle:preStop:sleep:seconds"
    stack = edited({sleep: 14.0}, example)
    assert violations("drain-covers-lb-detection", stack) == [(
        "ERROR drain-covers-lb-detection  basketball-feed: drain 14s (shutdown.drain_s) < lb_detect 10s "
        "(endpoints: lb.endpoint_propagation_s) + margin 5s  slack -1s → raise the drain to ≥15s or detect faster",
        at(example, "basketball-feed-statefulset"))]


def test_a_pdb_min_available_equal_to_replicas_fails_pdb_allows_eviction(example):
    stack = edited({"football-feed-pdb:spec:minAvailable": 2.0}, example)
    assert violations("pdb-allows-eviction", stack) == [(
        "ERROR pdb-allows-eviction  football-feed: allowed disruptions 0 (pdb.min_available 2 of 2 replicas) < "
        "minimum 1  slack -1 → lower pdb.min_available below replicas (or accept it for a singleton)",
        at(example, "football-feed-deployment"))]


def test_the_app_facts_infra_writes_let_the_pack_decide_instead_of_skipping(example):
    # finish-covers-requests needs the finish time and max request, which only the
    # lockstep.dev/* annotations carry: lowering one by hand must fail, not skip.
    stack = edited({"api-deployment:metadata:annotations:lockstep.dev/finish-seconds": "20"}, example)
    assert violations("finish-covers-requests", stack) == [(
        "ERROR finish-covers-requests  api: finish 20s (shutdown.finish_s) < max_request 30s (app.max_request_s)"
        "  slack -10s → let in-flight requests finish: raise shutdown.finish_s to the longest request",
        at(example, "api-deployment"))]
