"""Regional failover (seed 002): negotiate-time endpoint selection or Route 53."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing import limits as L
from lockstep.timing.findings import Term, Verdict, holds, in_range, judge

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import Stack


def failover_values_in_range(stack: Stack, ctx: Ctx) -> list[Verdict]:
    """`lb-values-in-range` for Route 53: request interval 10 or 30, failures 1–10."""
    fo = stack.failover
    if fo is None or fo.mode != "dns":
        return []
    interval_ok = fo.check_interval_s in L.R53_REQUEST_INTERVALS
    found = [holds("failover", interval_ok,
                   Term("request_interval", fo.check_interval_s, "failover.check_interval_s",
                        fields=("failover.check_interval_s",), expr=E.leaf(fo, "check_interval_s")), "in",  # pragma: no mutate
                   Term("Route 53", " or ".join(f"{v}s" for v in L.R53_REQUEST_INTERVALS), "",
                        expr=E.choice(*L.R53_REQUEST_INTERVALS)),  # pragma: no mutate
                   "Route 53 health checks run every 10 or 30 seconds")]
    r = L.R53_FAILURE_THRESHOLD
    found.append(in_range("failover", "failure_threshold", "failover.failure_threshold", fo.failure_threshold,
                          r.lo, r.hi, "", f"set failover.failure_threshold within {r.lo}–{r.hi}",
                          E.leaf(fo, "failure_threshold")))  # pragma: no mutate
    return found


def failover_within_rto(stack: Stack, ctx: Ctx) -> list[Verdict]:
    fo = stack.failover
    if fo is None:
        return []
    return [judge("failover", d.failover_time(fo), "<=",
                  d.field("rto", fo, "rto_s", "failover.rto_s"),
                  "check more often, lower the TTL (and the clients' DNS cache) or the client reconnect time, "
                  "or agree a longer RTO")]


def failover_ignores_deploys(stack: Stack, ctx: Ctx) -> list[Verdict]:
    fo = stack.failover
    if fo is None:
        return []
    from lockstep.timing.invariants.kube import rollout_keeps_capacity

    svc = next((s for s in stack.services if s.name == fo.entry_service), None)
    if svc is None:
        return []  # a health check alone names no entry service (a stack config always does)
    # the capacity rule reads no ctx: passing None instead is an equivalent mutant
    capacity = rollout_keeps_capacity(svc, ctx)  # pragma: no mutate
    if all(f.outcome == "ok" for f in capacity):
        return [holds("failover", True,
                      Term("entry service", svc.name, "failover.entry_service", fields=("failover.entry_service",)), "==",
                      Term("rollout", "keeps capacity", "failover.entry_service rollout",
                           fields=("failover.entry_service",)), "")]  # never failed
    if svc.lb is None:
        blip = d.pod_ready(svc)
    else:
        blip = d.total("deploy blip", d.lb_detect(svc.lb), d.lb_admit_new(svc.lb, svc.readiness_gate is not None))
    return [judge("failover", d.failover_tolerance(fo), ">", blip,
                  "make the entry service's rollout keep capacity, or tolerate more failed checks",
                  service=svc.name)]


def failback_is_deliberate(stack: Stack, ctx: Ctx) -> list[Verdict]:
    fo = stack.failover
    if fo is None:
        return []
    found = [judge("failover",
                   d.field("failback_checks", fo, "failback_checks", "failover.failback_checks", ""), ">=",
                   d.field("failure_threshold", fo, "failure_threshold", "failover.failure_threshold", ""),
                   "wait for as many passing checks before failback as failing ones before failover")]
    found.append(holds("failover", fo.failback_close != "immediate",
                       Term("close secondary", fo.failback_close, "failover.failback_close",
                            fields=("failover.failback_close",)), "in",
                       Term("deliberate", "never or staggered", ""),
                       "close secondary connections in a staggered step, or let clients stay"))
    return found


def client_dns_cache_within_ttl(stack: Stack, ctx: Ctx) -> list[Verdict]:
    """DNS failover moves clients only once they ask again: a client caching a name longer than
    the record's TTL keeps sending to the failed region (AWS SDK for Java, "Set the JVM TTL for
    DNS name lookups"; grpc-java #10581)."""
    fo = stack.failover
    if fo is None or fo.mode != "dns":
        return []
    ttl = d.failover_ttl(fo)
    return [judge("failover", d.field("client_dns_cache", fo, "client_dns_cache_s", "failover.client_dns_cache_s"),
                  "<=", ttl, f"cache resolved names for ≤{int(ttl.value)}s in the clients (the record's TTL)")]
