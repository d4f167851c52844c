"""Load balancer, connections and drain (seed 003; LBC #1719 #2366; AWS ALB docs).

Each rule is a plain function returning findings; `lb`-scope rules need only a target
group, so the policy pack can run them on one resource.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing import limits as L
from lockstep.timing.findings import Term, Verdict, holds, in_range, judge
from lockstep.timing.lbkinds import KINDS, SLOW_START_KINDS

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import LoadBalancer, Service


def lb_timeout_below_interval(subject: str, lb: LoadBalancer) -> list[Verdict]:
    if not KINDS[lb.kind].timeout_below_interval:
        return []
    hc = lb.health_check
    return [judge(subject,
                  d.field("timeout", hc, "timeout_s", "lb.health_check.timeout_s"), "<",
                  d.field("interval", hc, "interval_s", "lb.health_check.interval_s"),
                  f"lower the timeout to ≤{hc.interval_s - 1}s or raise the interval")]


def _in_range(subject: str, label: str, source: str, owner: object, name: str, lo: int, hi: int) -> Verdict:
    unit = "" if "threshold" in label else "s"
    return in_range(subject, label, source, getattr(owner, name), lo, hi, unit, f"set {source} within {lo}–{hi}",
                    E.leaf(owner, name))  # pragma: no mutate


def lb_values_in_range(subject: str, lb: LoadBalancer) -> list[Verdict]:
    hc = lb.health_check
    checks = [
        ("interval", "lb.health_check.interval_s", hc, "interval_s", L.HC_INTERVAL),
        ("timeout", "lb.health_check.timeout_s", hc, "timeout_s", L.HC_TIMEOUT),
        ("healthy_threshold", "lb.health_check.healthy_threshold", hc, "healthy_threshold", L.HC_THRESHOLD),
        ("unhealthy_threshold", "lb.health_check.unhealthy_threshold", hc, "unhealthy_threshold",
         L.HC_THRESHOLD),
        ("deregistration_delay", "lb.deregistration_delay_s", lb, "deregistration_delay_s",
         L.DEREGISTRATION_DELAY),
    ]
    kind = KINDS[lb.kind]
    idle = kind.idle_timeout.get(lb.protocol)
    if idle is not None:
        checks.append(("idle_timeout", "lb.idle_timeout_s", lb, "idle_timeout_s", idle))
    if lb.slow_start_s != 0 and kind.slow_start:
        # Slow start is 0 (off) or 30–900.
        checks.append(("slow_start", "lb.slow_start_s", lb, "slow_start_s", L.SLOW_START))
    found = [_in_range(subject, label, src, o, n, r.lo, r.hi) for label, src, o, n, r in checks]
    if lb.slow_start_s != 0 and not kind.slow_start:
        found.append(holds(subject, False, Term("slow_start", lb.slow_start_s, "lb.slow_start_s",
                                                fields=("lb.slow_start_s",)), "==",
                           Term(f"{kind.name.upper()} target groups", "no slow start", ""),
                           f"set lb.slow_start_s to 0: slow start is for {SLOW_START_KINDS} target groups only"))
    broken = [f for f in found if f.outcome != "ok"]
    return broken or [Verdict(subject, Term("target group values", len(found), "", (), ""), "in",
                              Term("API ranges", "ELBv2", ""), 0, min(f.slack_s for f in found), "", "ok")]


def drain_covers_lb_detection(svc: Service, ctx: Ctx) -> list[Verdict]:
    if svc.lb is None:
        return []
    detect = d.lb_detect(svc.lb)
    need = int(detect.value) + ctx.margin_s
    return [judge(svc.name, d.drain(svc), ">=", detect,
                  f"raise the drain to ≥{need}s or detect faster", ctx.margin_s)]


def drain_fits_grace(svc: Service, ctx: Ctx) -> list[Verdict]:
    used = d.total("drain + finish", d.drain(svc), d.finish(svc))
    limit = d.grace(svc)
    return [judge(svc.name, used, "<=", limit,
                  f"raise the grace period to ≥{int(used.value) + ctx.margin_s}s or shorten the drain",
                  ctx.margin_s)]


def finish_covers_requests(svc: Service, ctx: Ctx) -> list[Verdict]:
    return [judge(svc.name, d.finish(svc), ">=",
                  d.field("max_request", svc.app, "max_request_s", "app.max_request_s"),
                  "let in-flight requests finish: raise shutdown.finish_s to the longest request")]


def deregistration_covers_requests(svc: Service, ctx: Ctx) -> list[Verdict]:
    lb = svc.lb
    if lb is None or "deregistration" not in lb.removal:
        return []
    need = d.total("lb_detect + max_request", d.lb_detect(lb),
                   d.source_field("app.max_request_s", svc.app, "max_request_s"))
    return [judge(svc.name,
                  d.lb_field(lb, "lb.deregistration_delay_s", lb, "deregistration_delay_s", "deregistration_delay"),
                  ">=", need, f"raise the deregistration delay to ≥{need.value}s")]


def health_check_drain_needs_peers(svc: Service, ctx: Ctx) -> list[Verdict]:
    lb = svc.lb
    if lb is None or set(lb.removal) != {"health_check"}:
        return []
    return [judge(svc.name, d.replica_term(svc, "targets"),
                  ">=", d.fixed("targets", 2, unit=""), "run ≥2 targets: an LB fails open when every target is unhealthy")]


def recovery_within_budget(svc: Service, ctx: Ctx) -> list[Verdict]:
    if svc.lb is None:
        return []
    return [judge(svc.name, d.lb_recover(svc.lb), "<=",
                  d.field("max_recovery", svc.app, "max_recovery_s", "app.max_recovery_s"),
                  "lower the healthy threshold or the interval")]


def prestop_uses_native_sleep(svc: Service, ctx: Ctx) -> list[Verdict]:
    native = ctx.kubernetes_version >= L.NATIVE_SLEEP_SINCE
    if not native or svc.shutdown.prestop != "exec" or svc.shutdown.drain_s == 0:
        return []
    return [holds(svc.name, False,
                  Term("preStop", "exec sleep", "shutdown.prestop", fields=("shutdown.prestop",)), "==",
                  Term("kubelet", "sleep action", f"Kubernetes {ctx.version_text}"),
                  "use the native sleep action (set shutdown.prestop: sleep or leave it unset)")]
