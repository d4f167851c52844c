"""The registry of named invariants (INVARIANTS.md) and the one walk over it.

Rules are plain functions in the family modules; this module only lists them, runs them
over a stack, applies each service's `accept` list and raises every error at once.
The policy pack and the audit call the same functions on extracted pieces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from timing.findings import Finding
from timing.invariants import failover, heartbeat, kube, lb
from timing.model import Stack

Scope = Literal["lb", "service", "stack"]


@dataclass(frozen=True, slots=True)
class Ctx:
    """What rules need besides the model pieces: the stack's margin and cluster version."""

    margin_s: int
    kubernetes_version: tuple[int, int]

    @property
    def version_text(self) -> str:
        return f"{self.kubernetes_version[0]}.{self.kubernetes_version[1]}"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: str  # "error", "warning", or "error|warning" where the rule says which applies
    scope: Scope
    check: Callable[..., list[Finding]]


RULES: tuple[Rule, ...] = (
    Rule("lb-timeout-below-interval", "error", "lb", lb.lb_timeout_below_interval),
    Rule("lb-values-in-range", "error", "lb", lb.lb_values_in_range),
    Rule("lb-values-in-range", "error", "stack", failover.failover_values_in_range),
    Rule("keepalive-outlasts-lb-idle", "error", "service", lb.keepalive_outlasts_lb_idle),
    Rule("drain-covers-lb-detection", "error", "service", lb.drain_covers_lb_detection),
    Rule("drain-fits-grace", "error", "service", lb.drain_fits_grace),
    Rule("finish-covers-requests", "error", "service", lb.finish_covers_requests),
    Rule("deregistration-covers-requests", "error", "service", lb.deregistration_covers_requests),
    Rule("health-check-drain-needs-peers", "error", "service", lb.health_check_drain_needs_peers),
    Rule("recovery-within-budget", "error", "service", lb.recovery_within_budget),
    Rule("sidecar-outlives-app", "error", "service", lb.sidecar_outlives_app),
    Rule("prestop-uses-native-sleep", "warning", "service", lb.prestop_uses_native_sleep),
    Rule("startup-covers-warmup", "error", "service", kube.startup_covers_warmup),
    Rule("readiness-before-liveness", "error|warning", "service", kube.readiness_before_liveness),
    Rule("probe-timeout-within-period", "warning", "service", kube.probe_timeout_within_period),
    Rule("rollout-keeps-capacity", "error|warning", "service", kube.rollout_keeps_capacity),
    Rule("rollout-waits-for-lb", "error", "service", kube.rollout_waits_for_lb),
    Rule("readiness-gate-can-pass", "error", "service", kube.readiness_gate_can_pass),
    Rule("progress-deadline-covers-pod-ready", "error", "service", kube.progress_deadline_covers_pod_ready),
    Rule("pdb-needs-replicas", "error", "service", kube.pdb_needs_replicas),
    Rule("pdb-allows-eviction", "error", "service", kube.pdb_allows_eviction),
    Rule("pdb-selects-workload", "error", "service", kube.pdb_selects_workload),
    Rule("hpa-owns-replicas", "warning", "service", kube.hpa_owns_replicas),
    Rule("watchdog-shares-deploy-lock", "error", "stack", heartbeat.watchdog_shares_deploy_lock),
    Rule("watchdog-tolerates-planned-drain", "error", "stack", heartbeat.watchdog_tolerates_planned_drain),
    Rule("heartbeat-rides-out-pod-replacement", "error", "stack",
         heartbeat.heartbeat_rides_out_pod_replacement),
    Rule("heartbeat-within-outage-budget", "error", "stack", heartbeat.heartbeat_within_outage_budget),
    Rule("heartbeat-samples-often", "error", "stack", heartbeat.heartbeat_samples_often),
    Rule("heartbeat-recovery-covers-catch-up", "error", "stack",
         heartbeat.heartbeat_recovery_covers_catch_up),
    Rule("heartbeat-client-tolerates-beat-gaps", "error", "stack",
         heartbeat.heartbeat_client_tolerates_beat_gaps),
    Rule("heartbeat-beats-expire", "error", "stack", heartbeat.heartbeat_beats_expire),
    Rule("heartbeat-deploy-invisible", "error", "stack", heartbeat.heartbeat_deploy_invisible),
    Rule("failover-within-rto", "error", "stack", failover.failover_within_rto),
    Rule("failover-ignores-deploys", "error", "stack", failover.failover_ignores_deploys),
    Rule("failback-is-deliberate", "warning", "stack", failover.failback_is_deliberate),
)

RULE_IDS: tuple[str, ...] = tuple(dict.fromkeys(r.id for r in RULES))


class InvariantErrors(ValueError):
    """Raised by the model validator with every error-level finding at once."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        super().__init__("\n".join(f.render() for f in findings))


def parse_version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def context(stack: Stack) -> Ctx:
    return Ctx(stack.margin_s, parse_version(stack.kubernetes_version))


def apply_accepts(findings: list[Finding], accepts: dict[str, dict[str, str]]) -> list[Finding]:
    """Failed findings a service acknowledges are reported as accepted, never dropped."""
    out = []
    for f in findings:
        reason = accepts.get(f.service or f.subject, {}).get(f.id)
        out.append(f.accepted(reason) if reason is not None and f.failed else f)
    return out


def evaluate(stack: Stack) -> list[Finding]:
    """Every rule over the whole stack: passing, failing, skipped and accepted findings."""
    ctx = context(stack)
    found: list[Finding] = []
    for rule in RULES:
        if rule.scope == "stack":
            found.extend(rule.check(stack, ctx))
            continue
        for svc in stack.services:
            if rule.scope == "service":
                found.extend(rule.check(svc, ctx))
            elif svc.lb is not None:
                # lb-scope rules take ctx for one signature but read none of it: passing None
                # instead is an equivalent mutant
                found.extend(rule.check(svc.name, svc.lb, ctx))  # pragma: no mutate
    accepts = {s.name: {a.id: a.reason for a in s.accept} for s in stack.services}
    return apply_accepts(found, accepts)


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.status == "error"]


def raise_errors(stack: Stack) -> None:
    broken = errors(evaluate(stack))
    if broken:
        raise InvariantErrors(broken)
