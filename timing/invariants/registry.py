"""Every rule declared once: id, severities, what decides it, and the checks that judge it.

A rule body (a plain function in a family module: `lb`, `kube`, `heartbeat`, `failover`)
returns `Verdict`s; it never types its id or severity. `stamp` turns a verdict into a
`Finding` with the declaration's id and severity. `lockstep check`, the policy pack, the audit,
the README tables and the policy list all read this one table (`docs/CONTRIBUTING.md`: adding
a rule).

`decided` says where a front end can judge the rule from:
- "resource": one resource says everything (a target group, a Route 53 health check, one
  Deployment/StatefulSet): a per-resource policy;
- "resources": the linked resources together (workload + Service + binding + target group +
  listener, PDB, HPA, the heartbeat ConfigMap, the failover records): a stack policy;
- "config": no resource states what it needs; only a stack config decides it (`why` says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

from lockstep.timing.findings import Finding, Severity, Status, Verdict
from lockstep.timing.invariants import failover as fo
from lockstep.timing.invariants import heartbeat as hb
from lockstep.timing.invariants import kube, lb, rollouts
from lockstep.timing.invariants import links as lk
from lockstep.timing.invariants import path as pa
from lockstep.timing.invariants import nodes as nd

Scope = Literal["lb", "service", "stack"]
Decided = Literal["resource", "resources", "config"]

ERROR: tuple[Severity, ...] = ("error",)
WARNING: tuple[Severity, ...] = ("warning",)
BOTH: tuple[Severity, ...] = ("error", "warning")


@dataclass(frozen=True, slots=True)
class Check:
    """One function judging a rule at one scope: "lb" (a target group), "service", "stack"."""

    scope: Scope
    body: Callable[..., list[Verdict]]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severities: tuple[Severity, ...]
    decided: Decided
    checks: tuple[Check, ...]
    reads: str  # the resources that decide it (README) or, for "config", why none does
    advisory_name: str = ""  # the policy of the warning case of a two-severity rule

    @property
    def severity(self) -> str:
        return "|".join(self.severities)


def rule(id: str, severities: tuple[Severity, ...], decided: Decided, reads: str,
         *checks: tuple[Scope, Callable[..., list[Verdict]]]) -> Rule:
    # Runs while RULES is built, at import, before mutmut picks a mutant: its mutants can never
    # be live; the declarations are pinned by tests/timing/test_registry.py instead.
    return Rule(id, severities, decided, tuple(Check(s, b) for s, b in checks), reads)  # pragma: no mutate


W = "workload"
CHAIN = "workload + LB chain"
HB = "heartbeat ConfigMap + watched workloads"
# The pod's mesh proxy (Istio, Linkerd: `timing.bind.mesh`) and ingress-nginx in front of it
# (`timing.bind.nginx`) are read from the resources; an Istio gateway is stack config only.
MESH = "Namespace (mesh injection), istio mesh ConfigMap"  # the mesh proxy's drain
POOL = "Namespace (mesh injection), DestinationRule"  # its pool toward the app
NGINX = "Ingress (ingress-nginx class) + the controller's Deployment, flags and ConfigMap"

RULES: tuple[Rule, ...] = (
    rule("lb-timeout-below-interval", ERROR, "resource", "target group", ("lb", lb.lb_timeout_below_interval)),
    rule("lb-values-in-range", ERROR, "resource", "target group, Route 53 health check",
         ("lb", lb.lb_values_in_range), ("stack", fo.failover_values_in_range)),
    rule("keepalive-outlasts-lb-idle", ERROR, "resources", CHAIN, ("service", pa.keepalive_outlasts_lb_idle)),
    rule("drain-covers-lb-detection", ERROR, "resources", CHAIN, ("service", lb.drain_covers_lb_detection)),
    rule("drain-fits-grace", ERROR, "resource", W, ("service", lb.drain_fits_grace)),
    rule("finish-covers-requests", ERROR, "resource", W, ("service", lb.finish_covers_requests)),
    rule("deregistration-covers-requests", ERROR, "resources", CHAIN,
         ("service", lb.deregistration_covers_requests)),
    rule("health-check-drain-needs-peers", ERROR, "config",
         "draining by failing the LB health check is server behaviour; resources give the removal path "
         "by target type only", ("service", lb.health_check_drain_needs_peers)),
    rule("recovery-within-budget", ERROR, "resources", CHAIN, ("service", lb.recovery_within_budget)),
    rule("sidecar-outlives-app", ERROR, "resources", W + " + " + MESH, ("service", pa.sidecar_outlives_app)),
    rule("prestop-uses-native-sleep", WARNING, "resource", W, ("service", lb.prestop_uses_native_sleep)),
    rule("startup-covers-warmup", ERROR, "resource", W, ("service", kube.startup_covers_warmup)),
    rule("readiness-before-liveness", BOTH, "resource", W, ("service", kube.readiness_before_liveness)),
    rule("probe-timeout-within-period", WARNING, "resource", W, ("service", kube.probe_timeout_within_period)),
    rule("rollout-keeps-capacity", BOTH, "resources", "workload + HPA", ("service", kube.rollout_keeps_capacity)),
    rule("rollout-waits-for-lb", ERROR, "resources", CHAIN + " + Namespace (gate label)",
         ("service", kube.rollout_waits_for_lb)),
    rule("readiness-gate-can-pass", ERROR, "resources", CHAIN + " + Namespace, dependencies",
         ("service", kube.readiness_gate_can_pass)),
    rule("progress-deadline-covers-pod-ready", ERROR, "resources", "workload (+ LB chain when gated)",
         ("service", kube.progress_deadline_covers_pod_ready)),
    rule("pdb-needs-replicas", ERROR, "resources", "workload + PDB + HPA", ("service", kube.pdb_needs_replicas)),
    rule("pdb-allows-eviction", ERROR, "resources", "workload + PDB + HPA", ("service", kube.pdb_allows_eviction)),
    rule("pdb-selects-workload", ERROR, "config",
         "the linker pairs a PDB with the pods its selector selects, as the eviction API does: from resources the "
         "rule holds by construction, and a PDB selecting no pods is reported as protecting nothing",
         ("service", kube.pdb_selects_workload)),
    rule("hpa-owns-replicas", WARNING, "resources", "workload + HPA", ("service", kube.hpa_owns_replicas)),
    rule("watchdog-shares-deploy-lock", ERROR, "config", "a host watchdog is not a Pulumi resource",
         ("stack", hb.watchdog_shares_deploy_lock)),
    rule("watchdog-tolerates-planned-drain", ERROR, "config", "a host watchdog is not a Pulumi resource",
         ("stack", hb.watchdog_tolerates_planned_drain)),
    rule("heartbeat-rides-out-pod-replacement", ERROR, "resources", HB,
         ("stack", hb.heartbeat_rides_out_pod_replacement)),
    rule("heartbeat-within-outage-budget", ERROR, "config",
         "the agreed maximum outage is not in the heartbeat ConfigMap", ("stack", hb.heartbeat_within_outage_budget)),
    rule("heartbeat-samples-often", ERROR, "resources", HB, ("stack", hb.heartbeat_samples_often)),
    rule("heartbeat-recovery-covers-catch-up", ERROR, "resources", HB + " (+ LB chain)",
         ("stack", hb.heartbeat_recovery_covers_catch_up)),
    rule("heartbeat-client-tolerates-beat-gaps", ERROR, "resources", "heartbeat ConfigMap",
         ("stack", hb.heartbeat_client_tolerates_beat_gaps)),
    rule("heartbeat-beats-expire", ERROR, "resources", "heartbeat ConfigMap", ("stack", hb.heartbeat_beats_expire)),
    rule("heartbeat-deploy-invisible", ERROR, "resources", "heartbeat ConfigMap + its Deployment",
         ("stack", hb.heartbeat_deploy_invisible)),
    rule("failover-within-rto", ERROR, "config", "the RTO and the clients' reconnect time are in no resource",
         ("stack", fo.failover_within_rto)),
    rule("client-dns-cache-within-ttl", ERROR, "config", "how long clients cache a resolved name is client "
         "configuration no resource states", ("stack", fo.client_dns_cache_within_ttl)),
    rule("failover-ignores-deploys", ERROR, "resources",
         "Route 53 health check + record + entry workload + LB chain + HPA", ("stack", fo.failover_ignores_deploys)),
    rule("failback-is-deliberate", WARNING, "config", "failback checks and connection closing are application "
         "behaviour", ("stack", fo.failback_is_deliberate)),
    # issue 13: node disruptions. The node sources are read by `timing.bind.nodes`; the rules
    # still "config" say what no resource states yet in their `reads`.
    rule("node-budget-covers-drain", BOTH, "resources",
         CHAIN + " + Karpenter NodePool + cluster-autoscaler / aws-node-termination-handler / Karpenter "
         "controller args and env (lockstep.dev/spot-reaction-seconds on the NodePool)",
         ("stack", nd.node_budget_covers_drain)),
    rule("node-shutdown-drains-without-endpoints", ERROR, "resources",
         CHAIN + " + KubeletConfiguration, or the NodePools' EC2NodeClass NodeConfig (shutdownGracePeriod) + "
         "NodePool capacity type + Karpenter controller / aws-node-termination-handler "
         "(lockstep.dev/undrained-shutdowns on the NodePool)",
         ("stack", nd.node_shutdown_drains_without_endpoints)),
    rule("eviction-waits-for-lb", ERROR, "resources", CHAIN + " + PDB + Namespace (gate label)",
         ("service", nd.eviction_waits_for_lb)),
    rule("eviction-leaves-a-target", ERROR, "resources", CHAIN + " + PDB + HPA", ("service", nd.eviction_leaves_a_target)),
    rule("etp-local-drain-covers-node-check", ERROR, "resources",
         CHAIN + " (instance targets) + Service externalTrafficPolicy", ("service", nd.etp_local_drain_covers_node_check)),
    rule("nlb-connections-survive-removal", ERROR, "resources",
         CHAIN + " + NLB target group connection attributes (Service target-group-attributes annotation, or the "
         "bound target group)", ("service", nd.nlb_connections_survive_removal)),
    rule("heartbeat-rides-out-rollout", ERROR, "resources", HB + " + PDB", ("stack", nd.heartbeat_rides_out_rollout)),
    rule("rollout-scale-down-outlasts-switch", ERROR, "resources", "Argo Rollout + LB chain",
         ("service", rollouts.rollout_scale_down_outlasts_switch)),
    rule("readiness-probe-behind-lb", ERROR, "resources", CHAIN, ("service", rollouts.readiness_probe_behind_lb)),
    # issue 12: the delivery path as a chain of hops (`timing.path`), read from the resources
    # for ingress-nginx and the mesh proxies (an Istio gateway: stack config only).
    rule("keepalive-chain-ordered", ERROR, "resources", W + " + " + NGINX + ", " + POOL,
         ("service", pa.keepalive_chain_ordered)),
    rule("timeouts-shrink-inward", ERROR, "resources", CHAIN + " + " + NGINX, ("service", pa.timeouts_shrink_inward)),
    rule("proxy-reload-spares-requests", ERROR, "resources", W + " + " + NGINX + " + the NLB Service in front of it",
         ("service", pa.proxy_reload_spares_requests)),
    rule("mesh-drain-covers-lb", ERROR, "resources", CHAIN + " + " + MESH, ("service", pa.mesh_drain_covers_lb)),
    rule("amqp-heartbeat-under-idle", ERROR, "config",
         "an AMQP client's heartbeat and the idle timeouts on its way to the broker are client and network "
         "configuration no resource states", ("service", lk.amqp_heartbeat_under_idle),
         ("stack", lk.heartbeat_broker_link)),
    # gRPC clients and connection pools are code and client configuration no manifest states:
    # the workload's `lockstep.dev/grpc-*` and `lockstep.dev/pool.<name>` annotations carry them.
    rule("grpc-keepalive-fits-path", ERROR, "resources", CHAIN + " + lockstep.dev/grpc-* annotations",
         ("service", lk.grpc_keepalive_fits_path)),
    rule("pool-retires-before-path", ERROR, "resource", W,
         ("service", lk.pool_retires_before_path)),
)

RULE_IDS: tuple[str, ...] = tuple(r.id for r in RULES)
RESOURCE_RULES: tuple[Rule, ...] = tuple(r for r in RULES if r.decided != "config")
BY_ID: dict[str, Rule] = {r.id: r for r in RULES}


def stamp(rule: Rule, v: Verdict, service: str | None = None) -> Finding:
    """The finding of one verdict: the declaration's id, and its severity — the verdict's
    case where the rule declares two (a case the rule does not declare is a bug, not a finding).
    A finding of a service-scope check belongs to that `service` (its `accept` list applies);
    without one, to the verdict's own. (Built in one call: `dataclasses.replace` per finding
    was 40 % of judging a 1,000-service stack.)"""
    if v.case is None and len(rule.severities) != 1:
        raise ValueError(f"{rule.id}: a verdict of a two-severity rule must name its case")
    severity = rule.severities[0] if v.case is None else v.case
    if severity not in rule.severities:
        raise ValueError(f"{rule.id}: severity {severity!r} is not declared")
    status: Status = severity if v.outcome == "broken" else v.outcome
    return Finding(rule.id, severity, status, v.subject, v.left, v.relation, v.right, v.margin_s, v.slack_s,
                   v.fix, v.needs, "", v.service if service is None else service)
