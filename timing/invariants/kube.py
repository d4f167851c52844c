"""Kubernetes probes, rollout and disruption (seed 000, Kubernetes docs, LBC docs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from timing import derived as d
from timing.findings import Finding, Term, holds, judge

if TYPE_CHECKING:
    from timing.invariants import Ctx
    from timing.model import Probe, Service


def startup_covers_warmup(svc: Service, ctx: Ctx) -> list[Finding]:
    tol = d.startup_tolerance(svc)
    if tol is None:
        return []
    return [judge("startup-covers-warmup", "error", svc.name, tol, ">=",
                  d.field("warmup", svc.app.warmup_s, "app.warmup_s"),
                  "raise the startup probe's failure_threshold × period (or add a startup probe)",
                  ctx.margin_s)]


def handler_key(probe: Probe) -> tuple[object, ...]:
    """What a probe asks: two probes with the same key fail at the same moment."""
    if probe.http_get is not None:
        return ("http", probe.http_get.path, probe.http_get.port)
    if probe.tcp_socket is not None:
        return ("tcp", probe.tcp_socket.port)
    if probe.grpc is not None:
        return ("grpc", probe.grpc.port)
    assert probe.exec is not None
    return ("exec", probe.exec.command)


def readiness_before_liveness(svc: Service, ctx: Ctx) -> list[Finding]:
    ready, live = svc.probes.readiness, svc.probes.liveness
    if ready is None or live is None:
        return []
    same = handler_key(ready) == handler_key(live)
    return [judge("readiness-before-liveness", "error" if same else "warning", svc.name,
                  d.unready_after(ready), "<", d.kill_tolerance(live),
                  "let readiness fail first: raise liveness failure_threshold × period "
                  "or use a separate liveness endpoint")]


def probe_timeout_within_period(svc: Service, ctx: Ctx) -> list[Finding]:
    found = []
    for name in ("startup", "readiness", "liveness"):
        probe = getattr(svc.probes, name)
        if probe is None:
            continue
        found.append(judge("probe-timeout-within-period", "warning", svc.name,
                           Term("timeout", probe.timeout_s, f"probes.{name}.timeout_s"), "<=",
                           Term("period", probe.period_s, f"probes.{name}.period_s"),
                           f"keep probes.{name}.timeout_s ≤ period_s"))
    return found


def rollout_keeps_capacity(svc: Service, ctx: Ctx) -> list[Finding]:
    n = d.replicas(svc)
    down = d.unavailable_pods(svc)
    src = "hpa.min_replicas" if svc.hpa is not None else "replicas"
    if svc.kind == "StatefulSet":
        left = Term("capacity during rollout", n - down, f"{src} {n} - 1 replaced in place", (), " pods")
    else:
        left = Term("capacity during rollout", n - down,
                    f"{src} {n} - rollout.max_unavailable {svc.rollout.max_unavailable} → {down} pods",
                    (), " pods")
    floor = judge("rollout-keeps-capacity", "error", svc.name, left, ">=", Term("minimum", 1, "", (), " pod"),
                  "add replicas or set rollout.max_unavailable: 0 with max_surge ≥ 1")
    if floor.status != "ok" or svc.kind == "StatefulSet":
        return [floor]
    surge = d.surge_pods(svc)
    if surge < 1 and down < 1:
        return [holds("rollout-keeps-capacity", "error", svc.name, False,
                      Term("max_surge", surge, "rollout.max_surge", (), " pods"), "in",
                      Term("allowed", "surge ≥ 1 or unavailable ≥ 1", "Kubernetes API"),
                      "set rollout.max_surge ≥ 1 (both 0 is rejected by the API)")]
    return [judge("rollout-keeps-capacity", "warning", svc.name,
                  Term("unavailable during rollout", down,
                       f"rollout.max_unavailable {svc.rollout.max_unavailable}", (), " pods"),
                  "<=", Term("surge-only", 0, "", (), " pods"),
                  "surge instead: rollout.max_unavailable: 0 and max_surge ≥ 1")]


def readiness_gate_can_pass(svc: Service, ctx: Ctx) -> list[Finding]:
    gate, lb = svc.readiness_gate, svc.lb
    if gate is None:
        return []
    problems = []
    if lb is None or lb.target_type != "ip":
        problems.append("IP targets")
    if lb is None or lb.attach_to_arn is None:
        problems.append("a target group attached to a load balancer")
    if not gate.namespace_labelled:
        problems.append("the namespace label elbv2.k8s.aws/pod-readiness-gate-inject=enabled")
    if not gate.injected_after_binding:
        problems.append("the Service and TargetGroupBinding created before the pods")
    return [holds("readiness-gate-can-pass", "error", svc.name, not problems,
                  Term("readiness gate", "needs", "readiness_gate"), "in",
                  Term("missing", ", ".join(problems) or "nothing", ""),
                  "provide " + "; ".join(problems) if problems else "")]


def rollout_waits_for_lb(svc: Service, ctx: Ctx) -> list[Finding]:
    lb = svc.lb
    if lb is None or lb.target_type != "ip":
        return []
    if svc.readiness_gate is not None:
        # the gate rule reads no ctx: passing None instead is an equivalent mutant
        gate = readiness_gate_can_pass(svc, ctx)[0]  # pragma: no mutate
        return [holds("rollout-waits-for-lb", "error", svc.name, gate.status == "ok",
                      Term("readiness gate", "can pass" if gate.status == "ok" else "cannot pass",
                           "readiness_gate"), "==", Term("required", "can pass", ""),
                      "fix readiness-gate-can-pass, or drop the gate and raise rollout.min_ready_s")]
    return [judge("rollout-waits-for-lb", "error", svc.name,
                  d.field("min_ready", svc.rollout.min_ready_s, "rollout.min_ready_s"), ">=",
                  d.lb_admit_new(lb, gated=False),  # pragma: no mutate (gated=None reads as False)
                  "add a readiness gate or raise rollout.min_ready_s", ctx.margin_s)]


def progress_deadline_covers_pod_ready(svc: Service, ctx: Ctx) -> list[Finding]:
    if svc.kind != "Deployment":
        return []
    deadline = d.field("progress_deadline", svc.rollout.progress_deadline_s, "rollout.progress_deadline_s")
    found = [judge("progress-deadline-covers-pod-ready", "error", svc.name, deadline, ">",
                   d.pod_ready(svc), "raise rollout.progress_deadline_s", ctx.margin_s)]
    found.append(judge("progress-deadline-covers-pod-ready", "error", svc.name, deadline, ">",
                       d.field("min_ready", svc.rollout.min_ready_s, "rollout.min_ready_s"),
                       "progressDeadlineSeconds must exceed minReadySeconds (API rule)"))
    return found


def _pdb_keep(svc: Service) -> int:
    """Pods a minAvailable PDB keeps (percentages rounded up)."""
    assert svc.pdb is not None and svc.pdb.min_available is not None  # pragma: no mutate (typing only)
    return d.scaled(svc.pdb.min_available, d.replicas(svc), round_up=True)


def _pdb_allowed(svc: Service) -> int:
    """Pods the PDB lets an eviction take (percentages rounded up)."""
    assert svc.pdb is not None
    if svc.pdb.min_available is not None:
        return d.replicas(svc) - _pdb_keep(svc)
    return d.scaled(svc.pdb.max_unavailable, d.replicas(svc), round_up=True)


def pdb_needs_replicas(svc: Service, ctx: Ctx) -> list[Finding]:
    pdb = svc.pdb
    if pdb is None or pdb.min_available is None:
        return []
    if _pdb_keep(svc) < 1:
        return []
    src = "hpa.min_replicas" if svc.hpa is not None else "replicas"
    return [judge("pdb-needs-replicas", "error", svc.name, Term("replicas", d.replicas(svc), src, (), ""),
                  ">=", Term("replicas", 2, f"pdb.min_available {pdb.min_available} ≥ 1", (), ""),
                  "run ≥2 replicas or drop the PDB")]


def pdb_allows_eviction(svc: Service, ctx: Ctx) -> list[Finding]:
    if svc.pdb is None:
        return []
    allowed = _pdb_allowed(svc)
    setting = (f"pdb.min_available {svc.pdb.min_available}" if svc.pdb.min_available is not None
               else f"pdb.max_unavailable {svc.pdb.max_unavailable}")
    return [judge("pdb-allows-eviction", "error", svc.name,
                  Term("allowed disruptions", allowed, f"{setting} of {d.replicas(svc)} replicas", (), ""),
                  ">=", Term("minimum", 1, "", (), ""),
                  "lower pdb.min_available below replicas (or accept it for a singleton)")]


def name_labels(name: str, extra: dict[str, str], name_label: bool) -> dict[str, str]:
    """The labels of a workload's pods: `app.kubernetes.io/name=<name>` (the selector infra
    deploys) unless the extra labels are already the pods' complete set."""
    if not name_label:
        return dict(extra)
    return {"app.kubernetes.io/name": name, **extra}


def pod_labels(svc: Service) -> dict[str, str]:
    """The labels every pod of the service carries (the workload's selector is the first)."""
    return name_labels(svc.name, svc.labels, svc.name_label)


def pdb_selects_workload(svc: Service, ctx: Ctx) -> list[Finding]:
    if svc.pdb is None:
        return []
    selector = svc.pdb.selector if svc.pdb.selector is not None else pod_labels(svc)
    labels = pod_labels(svc)
    ok = bool(selector) and all(labels.get(k) == v for k, v in selector.items())
    shown = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "(empty)"
    return [holds("pdb-selects-workload", "error", svc.name, ok, Term("pdb selector", shown, "pdb.selector"),
                  "in", Term("pod labels", ",".join(f"{k}={v}" for k, v in sorted(labels.items())), "labels"),
                  "make pdb.selector a subset of the pod labels (or leave it unset)")]


def hpa_owns_replicas(svc: Service, ctx: Ctx) -> list[Finding]:
    if svc.hpa is None:
        return []
    return [holds("hpa-owns-replicas", "warning", svc.name, svc.replicas is None,
                  Term("replicas", "set" if svc.replicas is not None else "unset", "replicas"), "==",
                  Term("with an hpa", "unset", ""),
                  "remove replicas: every apply resets the count the HPA chose")]
