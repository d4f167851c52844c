"""Small stacks for the simulation tests: one service each, every rule passing, so a test can
break one number and ask both the rules and the simulation about it."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

import pytest

from lockstep.timing.invariants import errors, evaluate
from lockstep.timing.model import Stack
from lockstep.timing.sim.spec import ServiceSpec, service_spec

ARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:listener/app/edge/50dc6c495c0c9188/f2f7dc8efc522ab2"


def web_service(**over: Any) -> dict[str, Any]:
    """An HTTP API behind an ALB on IP targets, without a readiness gate (so
    `rollout-waits-for-lb` is judged on minReadySeconds). Every rule passes."""
    svc: dict[str, Any] = {
        "name": "web", "kind": "Deployment", "image": "example/web:1", "container_port": 8080,
        "replicas": 3,
        "app": {"warmup_s": 10, "max_request_s": 20, "max_recovery_s": 30, "keepalive_s": 75,
                "catch_up_s": 0},
        "lb": {"kind": "alb", "target_type": "ip", "protocol": "HTTP", "port": 8080,
               "attach_to_arn": ARN, "idle_timeout_s": 60,
               "health_check": {"protocol": "HTTP", "path": "/hc", "interval_s": 5, "timeout_s": 4,
                                "healthy_threshold": 2, "unhealthy_threshold": 2},
               "deregistration_delay_s": 60, "deregistration_propagation_s": 15,
               "registration_propagation_s": 15},
        "probes": {"readiness": {"http_get": {"path": "/hc", "port": 8080}, "period_s": 5,
                                 "failure_threshold": 2},
                   "liveness": {"http_get": {"path": "/live", "port": 8080}, "period_s": 10,
                                "failure_threshold": 3}},
        "shutdown": {"drain_s": 20, "finish_s": 20, "grace_s": 60},
        "rollout": {"max_surge": 1, "max_unavailable": 0, "min_ready_s": 30, "progress_deadline_s": 600},
    }
    return merge(svc, over)


def feed_service(**over: Any) -> dict[str, Any]:
    """A queue consumer without a load balancer and without a PDB, watched by a heartbeat."""
    svc: dict[str, Any] = {
        "name": "feed", "kind": "Deployment", "image": "example/feed:1", "container_port": 8080,
        "replicas": 2,
        "app": {"warmup_s": 20, "max_request_s": 5, "max_recovery_s": None, "keepalive_s": None,
                "catch_up_s": 30},
        "probes": {"readiness": {"http_get": {"path": "/ready", "port": 8080}, "period_s": 5,
                                 "failure_threshold": 3},
                   "liveness": {"http_get": {"path": "/live", "port": 8080}, "initial_delay_s": 30,
                                "period_s": 10, "failure_threshold": 3}},
        "shutdown": {"drain_s": 0, "finish_s": 10, "grace_s": 30},
        "rollout": {"max_surge": 1, "max_unavailable": 0, "min_ready_s": 5, "progress_deadline_s": 300},
    }
    return merge(svc, over)


HEARTBEAT = {
    "image": "example/heartbeat:1", "replicas": 2, "observe_interval_s": 5, "publish_interval_s": 5,
    "client_timeout_s": 30, "beat_ttl_s": 30, "warmup_s": 5,
    "probes": {"readiness": {"http_get": {"path": "/ready", "port": 8080}, "period_s": 5}},
    "shutdown": {"drain_s": 0, "finish_s": 5, "grace_s": 30},
}


def spec_for(service: str, loss: int = 120, recovery: int = 60, outage: int = 300) -> dict[str, Any]:
    return {"name": f"{service}-scope", "service": service, "loss_time_s": loss,
            "recovery_time_s": recovery, "max_outage_s": outage, "affected": {"sport_ids": [1]}}


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def stack_of(*services: dict[str, Any], **top: Any) -> Stack:
    data = {"margin_s": 5, "kubernetes_version": "1.30", "services": list(services), **top}
    return Stack.model_validate(data, context={"skip_invariants": True})


def error_ids(stack: Stack) -> set[str]:
    return {f.id for f in errors(evaluate(stack))}


def spec_of(stack: Stack, index: int = 0) -> ServiceSpec:
    return service_spec(stack, stack.services[index])


@pytest.fixture(scope="session")
def kit() -> SimpleNamespace:
    """The builders above, for tests (pytest's importlib mode does not import conftest)."""
    return SimpleNamespace(web_service=web_service, feed_service=feed_service, heartbeat=HEARTBEAT,
                           spec_for=spec_for, merge=merge, stack_of=stack_of, error_ids=error_ids,
                           spec_of=spec_of)
