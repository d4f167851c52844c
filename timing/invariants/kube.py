"""Kubernetes probes, rollout and disruption (seed 000, Kubernetes docs, LBC docs)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing.conventions import name_labels
from lockstep.timing.findings import Term, Verdict, holds, judge
from lockstep.timing.findings import unknown as unknown_verdict
from lockstep.timing.workloads import WORKLOAD_KINDS

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import Probe, Service


def startup_covers_warmup(svc: Service, ctx: Ctx) -> list[Verdict]:
    tol = d.startup_tolerance(svc)
    if tol is None:
        return []
    return [judge(svc.name, tol, ">=",
                  d.field("warmup", svc.app, "warmup_s", "app.warmup_s"),
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


def readiness_before_liveness(svc: Service, ctx: Ctx) -> list[Verdict]:
    ready, live = svc.probes.readiness, svc.probes.liveness
    if ready is None or live is None:
        return []
    same = handler_key(ready) == handler_key(live)
    return [judge(svc.name, d.unready_after(ready), "<", d.kill_tolerance(live),
                  "let readiness fail first: raise liveness failure_threshold × period "
                  "or use a separate liveness endpoint", case="error" if same else "warning")]


def probe_timeout_within_period(svc: Service, ctx: Ctx) -> list[Verdict]:
    found = []
    for name in ("startup", "readiness", "liveness"):
        probe = getattr(svc.probes, name)
        if probe is None:
            continue
        found.append(judge(svc.name,
                           d.field("timeout", probe, "timeout_s", f"probes.{name}.timeout_s"), "<=",
                           d.field("period", probe, "period_s", f"probes.{name}.period_s"),
                           f"keep probes.{name}.timeout_s ≤ period_s"))
    return found


def rollout_keeps_capacity(svc: Service, ctx: Ctx) -> list[Verdict]:
    if not d.rolls(svc):
        return []  # OnDelete: no rollout takes pods down; only a pod someone deletes is replaced
    kind = WORKLOAD_KINDS[svc.kind]
    n = d.replicas(svc)
    src = d.replica_field(svc)
    if kind.zero_pace_rejected and svc.rollout.max_surge in (0, "0%") and svc.rollout.max_unavailable in (0, "0%"):
        # Kubernetes API validation: maxSurge and maxUnavailable may not both be zero.
        return [holds(svc.name, False,
                      Term("max_surge", str(svc.rollout.max_surge), "rollout.max_surge",
                           fields=("rollout.max_surge", "rollout.max_unavailable")), "in",
                      Term("allowed", "not 0 together with rollout.max_unavailable 0", "Kubernetes API"),
                      "set rollout.max_surge ≥ 1 (the API rejects max_surge and max_unavailable both 0)",
                      case="error")]
    down = d.unavailable_pods(svc)
    unknown = d.count_unknown(svc)
    if unknown:
        how = src  # the count is unknown: the capacity is shown by the field that decides it
    elif kind.in_place:
        how = f"{src} {n} - 1 replaced in place"
    elif d.fencepost(svc):
        how = (f"{src} {n} - rollout.max_surge {svc.rollout.max_surge} and rollout.max_unavailable "
               f"{svc.rollout.max_unavailable} both round to 0 pods: the controller takes 1 down")
    else:
        how = f"{src} {n} - rollout.max_unavailable {svc.rollout.max_unavailable} → {down} pods"
    fields = (src,) if kind.in_place else (src, "rollout.max_unavailable", "rollout.max_surge")
    pods_down = d.unavailable_expr(svc)  # pragma: no mutate
    count = d.replica_expr(svc)  # pragma: no mutate
    left = None if unknown or pods_down is None or count is None else E.sub(count, pods_down)  # pragma: no mutate
    floor = judge(svc.name, Term("capacity during rollout", 0 if unknown else n - down, how, unknown, " pods",
                                   fields, left), ">=",
                  d.fixed("minimum", 1, unit=" pod"),
                  "add replicas or set rollout.max_unavailable: 0 with max_surge ≥ 1", case="error")
    if floor.outcome != "ok" or kind.in_place:
        return [floor]
    return [judge(svc.name, Term("unavailable during rollout", down, how if d.fencepost(svc) else
                                 f"rollout.max_unavailable {svc.rollout.max_unavailable}", (), " pods", fields,
                                 pods_down),
                  "<=", d.fixed("surge-only", 0, unit=" pods"),
                  "surge instead: rollout.max_unavailable: 0 and max_surge ≥ 1", case="warning")]


def readiness_gate_can_pass(svc: Service, ctx: Ctx) -> list[Verdict]:
    gate, lb = svc.readiness_gate, svc.lb
    if gate is None:
        return []
    problems = []
    if lb is None or lb.target_type != "ip":
        problems.append("IP targets")
    attach_unknown = lb is not None and "lb.attach_to_arn" in lb.unknown  # a target group the input lacks
    if lb is None or (lb.attach_to_arn is None and not attach_unknown):
        problems.append("a target group attached to a load balancer")
    # A gate the pod template declares is in every pod, however it was created: the controller
    # sets the condition of any pod that carries it (LBC `updateTargetHealthPodConditionForPod`
    # returns only for pods without the gate). Only the webhook's injection needs the namespace
    # label and the binding to exist before the pods (LBC docs, "Pod readiness gate").
    if not gate.declared:
        if not gate.namespace_labelled:
            problems.append("the namespace label elbv2.k8s.aws/pod-readiness-gate-inject=enabled")
        if gate.injected_after_binding is False:
            problems.append("the Service and TargetGroupBinding created before the pods")
    order_unknown = not gate.declared and gate.injected_after_binding is None
    left = Term("readiness gate", "declared in the pod template" if gate.declared else "injected by the webhook",
                "readiness_gate", fields=("readiness_gate",))
    right = Term("missing", ", ".join(problems) or "nothing", "")
    if (order_unknown or attach_unknown) and not problems:
        needs = ("readiness_gate.injected_after_binding",) * order_unknown + ("lb.attach_to_arn",) * attach_unknown
        return [unknown_verdict(svc.name, left, "in", right, "", needs)]
    return [holds(svc.name, not problems, left, "in", right, "provide " + "; ".join(problems) if problems else "")]


def rollout_waits_for_lb(svc: Service, ctx: Ctx) -> list[Verdict]:
    """A readiness gate that can pass holds new pods back until the LB admits them; without
    one (or with one that cannot pass) minReadySeconds must cover the admission."""
    lb = svc.lb
    if lb is None or lb.target_type != "ip" or not d.rolls(svc):
        return []
    gate = readiness_gate_can_pass(svc, ctx)  # pragma: no mutate (the gate rule reads no ctx)
    if gate and gate[0].outcome == "ok":
        return [holds(svc.name, True, Term("readiness gate", "can pass", "readiness_gate", fields=("readiness_gate",)),
                      "==",
                      Term("required", "can pass", ""), "")]
    waits = judge(svc.name, d.field("min_ready", svc.rollout, "min_ready_s", "rollout.min_ready_s"), ">=",
                  d.lb_admit_new(lb, gated=False),  # pragma: no mutate (gated=None reads as False)
                  "make the readiness gate passable, or raise rollout.min_ready_s" if gate else
                  "add a readiness gate or raise rollout.min_ready_s", ctx.margin_s)
    if gate and gate[0].outcome == "skipped" and waits.outcome == "broken":
        # min_ready alone does not suffice: whether the gate holds the rollout back decides it
        return [replace(waits, outcome="skipped", needs=gate[0].needs)]
    return [waits]


def progress_deadline_covers_pod_ready(svc: Service, ctx: Ctx) -> list[Verdict]:
    if not WORKLOAD_KINDS[svc.kind].progress_deadline:
        return []
    deadline = d.field("progress_deadline", svc.rollout, "progress_deadline_s", "rollout.progress_deadline_s")
    found = [judge(svc.name, deadline, ">",
                   d.pod_ready(svc), "raise rollout.progress_deadline_s", ctx.margin_s)]
    found.append(judge(svc.name, deadline, ">",
                       d.field("min_ready", svc.rollout, "min_ready_s", "rollout.min_ready_s"),
                       "progressDeadlineSeconds must exceed minReadySeconds (API rule)"))
    return found


def _pdb_keep(svc: Service) -> int:
    """Pods a minAvailable PDB keeps (percentages rounded up)."""
    assert svc.pdb is not None and svc.pdb.min_available is not None  # pragma: no mutate (typing only)
    return d.scaled(svc.pdb.min_available, d.replicas(svc), round_up=True)


def pdb_allowed_expr(svc: Service) -> E.Expr | None:  # pragma: no mutate function
    """`_pdb_allowed` as an expression (None when the pod count is unknown)."""
    pdb, count = svc.pdb, d.replica_expr(svc)  # pragma: no mutate
    assert pdb is not None  # pragma: no mutate (typing only)
    if count is None:
        return None
    if pdb.min_available is not None:
        return E.sub(count, d.scaled_expr(pdb, "min_available", count, True))  # pragma: no mutate
    return d.scaled_expr(pdb, "max_unavailable", count, True)  # pragma: no mutate


def _pdb_allowed(svc: Service) -> int:
    """Pods the PDB lets an eviction take (percentages rounded up)."""
    assert svc.pdb is not None
    if svc.pdb.min_available is not None:
        return d.replicas(svc) - _pdb_keep(svc)
    return d.scaled(svc.pdb.max_unavailable, d.replicas(svc), round_up=True)


def pdb_needs_replicas(svc: Service, ctx: Ctx) -> list[Verdict]:
    pdb = svc.pdb
    if pdb is None or pdb.min_available is None:
        return []
    # A PDB keeping no pod asks nothing of the count; with the count unknown, any other does.
    keeps = _pdb_keep(svc) >= 1 or (bool(d.count_unknown(svc)) and pdb.min_available not in (0, "0%"))
    if not keeps:
        return []
    return [judge(svc.name, d.replica_term(svc),
                  ">=", Term("replicas", 2, f"pdb.min_available {pdb.min_available} ≥ 1", (), "",
                             ("pdb.min_available",), E.const(2)),  # pragma: no mutate
                  "run ≥2 replicas or drop the PDB")]


def pdb_allows_eviction(svc: Service, ctx: Ctx) -> list[Verdict]:
    if svc.pdb is None:
        return []
    allowed = _pdb_allowed(svc)
    setting = (f"pdb.min_available {svc.pdb.min_available}" if svc.pdb.min_available is not None
               else f"pdb.max_unavailable {svc.pdb.max_unavailable}")
    # A plain number of pods the PDB may take does not depend on the count; anything else does.
    by_count = svc.pdb.min_available is not None or isinstance(svc.pdb.max_unavailable, str)
    unknown = d.count_unknown(svc) if by_count else ()
    count = d.replica_term(svc)
    of = f"{setting} of {count.render()}" if count.unknown else f"{setting} of {d.replicas(svc)} replicas"
    return [judge(svc.name,
                  # with the count unknown, no fewer than 0 (the bound that holds for any count)
                  Term("allowed disruptions", max(allowed, 0) if unknown else allowed, of, unknown, "",
                       (setting.split()[0], d.replica_field(svc)), None if unknown else pdb_allowed_expr(svc)),  # pragma: no mutate
                  ">=", d.fixed("minimum", 1, unit=""),
                  "lower pdb.min_available below replicas (or accept it for a singleton)")]


def pod_labels(svc: Service) -> dict[str, str]:
    """The labels every pod of the service carries (the workload's selector is the first)."""
    return name_labels(svc.name, svc.labels, svc.name_label)


def pdb_selects_workload(svc: Service, ctx: Ctx) -> list[Verdict]:
    if svc.pdb is None:
        return []
    selector = svc.pdb.selector if svc.pdb.selector is not None else pod_labels(svc)
    labels = pod_labels(svc)
    # policy/v1: an empty selector selects every pod in the PDB's namespace, these included.
    ok = all(labels.get(k) == v for k, v in selector.items())
    shown = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "(empty: every pod in the namespace)"
    return [holds(svc.name, ok, Term("pdb selector", shown, "pdb.selector", fields=("pdb.selector",)),
                  "in", Term("pod labels", ",".join(f"{k}={v}" for k, v in sorted(labels.items())), "labels",
                             fields=("labels",)),
                  "make pdb.selector a subset of the pod labels (or leave it unset)")]


def hpa_owns_replicas(svc: Service, ctx: Ctx) -> list[Verdict]:
    if svc.hpa is None:
        return []
    return [holds(svc.name, svc.replicas is None,
                  Term("replicas", "set" if svc.replicas is not None else "unset", "replicas", fields=("replicas",)),
                  "==",
                  Term("with an hpa", "unset", ""),
                  "remove replicas: every apply resets the count the HPA chose")]
