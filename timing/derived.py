"""The derived times of INVARIANTS.md, each written once.

Every function returns a `Term`: the number, the fields and numbers it was computed from
(so a finding can print both sides), and which inputs were unknown, each counted at its lower
bound (0, or the least value its API range allows: `lb_field`), so the term is the bound
that holds for any value; rules then decide or report `skipped`, never guess.
Rules, timelines, the policy pack, the audit and the config mutator all call these. Each
term built from known fields also carries the `timing.expr` tree its number is the value of,  # pragma: no mutate
which `lockstep fix` translates for its solver.

The module is long because every derived time is here, each written once, with its
expression beside its number.  # pragma: no mutate
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing import limits as L
from lockstep.timing.expr import ceil_div  # pragma: no mutate
from lockstep.timing.findings import Term
from lockstep.timing.workloads import WORKLOAD_KINDS

if TYPE_CHECKING:
    from lockstep.timing.model import FailoverTiming as Failover, HeartbeatService, LoadBalancer, Probe, Service


def field(label: str, owner: object, name: str, source: str, unit: str = "s") -> Term:
    """A single input, the model's `owner.name`; an unknown (None) input counts as 0 and is
    remembered (and has no expression: nothing can move it)."""  # pragma: no mutate
    value = getattr(owner, name)
    if value is None:
        return Term(label, 0, source, (source,), unit, (source,))
    e = E.leaf(owner, name)  # pragma: no mutate
    return Term(label, e.value, source, (), unit, (source,), e)


def lb_field(lb: LoadBalancer, source: str, owner: object, name: str, label: str = "", at: str = "lb") -> Term:
    """A load-balancer input (shown by its field path unless labelled), the LB sitting at `at`
    in the service (`lb`, or an ingress hop's `path[0].lb`). One no input states (`lb.unknown`,
    which names fields as under `lb`) holds its lower bound, and a None counts as 0: both are
    remembered as unknown."""
    value = getattr(owner, name)
    if value is None or "lb" + source.removeprefix(at) in lb.unknown:
        return Term(label or source, value or 0, source, (source,), fields=(source,))
    e = E.leaf(owner, name)  # pragma: no mutate
    return Term(label or source, e.value, source, fields=(source,), expr=e)  # pragma: no mutate


def source_field(source: str, owner: object, name: str) -> Term:
    """An input shown by its field path alone: a part of a sum or a product."""
    return field(source, owner, name, source)


def fixed(label: str, value: int, source: str = "", unit: str = "s") -> Term:
    """A number no field holds: a platform's fixed value, or what a rule requires."""
    return Term(label, value, source, (), unit, expr=E.const(value))  # pragma: no mutate


def exprs(*parts: Term) -> list[E.Expr] | None:  # pragma: no mutate function
    """The parts' expressions, or None when one has none."""
    out = [p.expr for p in parts]  # pragma: no mutate
    return None if None in out else out  # type: ignore[return-value]


def total(label: str, *parts: Term) -> Term:
    """Sum of terms; the source shows each part with its number."""
    es = exprs(*parts)  # pragma: no mutate
    e = None if es is None else E.add(*es)  # pragma: no mutate
    value = sum(int(p.value) for p in parts)
    source = " + ".join(_part(p) for p in parts)
    unknown = tuple(u for p in parts for u in p.unknown)
    return Term(label, value, source, unknown, fields=fields_of(*parts), expr=e)  # pragma: no mutate


def fields_of(*parts: Term) -> tuple[str, ...]:
    """The model fields of several terms, each once, in order."""
    return tuple(dict.fromkeys(f for p in parts for f in p.fields))


def _part(t: Term) -> str:
    if t.source in t.unknown and not t.value:
        shown = "?"  # an unknown input no range bounds
    else:
        shown = f"≥{t.value}" if t.unknown else str(t.value)
    return f"{t.source} {shown}" if " " not in t.source else f"{t.label} {shown}"


def product(label: str, a: Term, b: Term) -> Term:
    e = None if a.expr is None or b.expr is None else E.mul(a.expr, b.expr)  # pragma: no mutate
    value = int(a.value) * int(b.value)
    return Term(label, value, f"{_part(a)} × {_part(b)}", a.unknown + b.unknown, fields=fields_of(a, b), expr=e)  # pragma: no mutate


def relabel(t: Term, label: str, source: str | None = None) -> Term:
    """The same number (and expression) under another label."""
    return Term(label, t.value, t.source if source is None else source, t.unknown, t.unit, t.fields, t.expr)  # pragma: no mutate


def scaled(value: int | str, replicas: int, round_up: bool) -> int:
    """An int-or-percent field resolved against a replica count, as Kubernetes rounds."""
    if isinstance(value, int):
        return value
    pct = int(value[:-1])  # the model's pattern guarantees one trailing "%"
    return ceil_div(pct * replicas, 100) if round_up else pct * replicas // 100


def replicas(svc: Service) -> int:
    """The replica count the capacity rules judge: an HPA's floor when one owns them. An
    unknown count (a DaemonSet's nodes, unstated) counts as 0, the bound that holds for any
    value, and `count_unknown` names the field that decides it."""
    if svc.hpa is not None:
        return svc.hpa.min_replicas
    return 0 if svc.replicas is None else svc.replicas


def replica_field(svc: Service) -> str:
    """The field the replica count the rules judge comes from."""
    return "hpa.min_replicas" if svc.hpa is not None else "replicas"


def count_unknown(svc: Service) -> tuple[str, ...]:
    """The field that decides the pod count when no input states it (else nothing): a Term's
    `unknown` for every value computed from the count."""
    return (replica_field(svc),) if svc.hpa is None and svc.replicas is None else ()


def replica_expr(svc: Service) -> E.Expr | None:  # pragma: no mutate function
    """The pod count the rules judge as an expression (None when no input states it)."""
    if svc.hpa is not None:
        return E.leaf(svc.hpa, "min_replicas")  # pragma: no mutate
    return None if svc.replicas is None else E.leaf(svc, "replicas")  # pragma: no mutate


def replica_term(svc: Service, label: str = "replicas") -> Term:
    """The pod count as a Term: unknown (shown by its field) when no input states it."""
    src = replica_field(svc)
    return Term(label, replicas(svc), src, count_unknown(svc), "", (src,), replica_expr(svc))  # pragma: no mutate


def scaled_expr(owner: object, name: str, n: E.Expr, round_up: bool) -> E.Expr:  # pragma: no mutate function
    """`scaled` of the int-or-percent field `owner.name` against the pod count `n`, as an
    expression: a whole number is the field itself, a percentage a constant share of `n`."""  # pragma: no mutate
    value = getattr(owner, name)
    if isinstance(value, int):
        return E.leaf(owner, name)  # pragma: no mutate
    share = E.mul(E.const(int(value[:-1])), n)  # pragma: no mutate
    return E.up_div(share, E.const(100)) if round_up else E.down_div(share, E.const(100))  # pragma: no mutate


def surge_pods(svc: Service) -> int:
    return scaled(svc.rollout.max_surge, replicas(svc), round_up=True)


def _down(svc: Service) -> int:
    """maxUnavailable in pods, rounded as the kind's controller rounds it."""
    return scaled(svc.rollout.max_unavailable, replicas(svc), round_up=WORKLOAD_KINDS[svc.kind].unavailable_round_up)


def fencepost(svc: Service) -> bool:
    """Both rollout bounds come to 0 pods (a percentage surge or unavailability of few
    replicas): the controller then takes 1 pod down (Deployments: `ResolveFenceposts` in
    kubernetes/pkg/controller/deployment/util, "set maxUnavailable to 1"; DaemonSets:
    `updatedDesiredNodeCounts` in kubernetes/pkg/controller/daemon)."""
    return WORKLOAD_KINDS[svc.kind].fencepost and _down(svc) == 0 and surge_pods(svc) == 0


def unavailable_pods(svc: Service) -> int:
    """Pods a rollout may take down at once (StatefulSets replace one pod at a time)."""
    if WORKLOAD_KINDS[svc.kind].in_place or fencepost(svc):
        return 1
    return _down(svc)


def unavailable_expr(svc: Service) -> E.Expr | None:  # pragma: no mutate function
    """`unavailable_pods` as an expression (None when the pod count is unknown). The fencepost
    is arithmetic: max(down, 1 − min(surge, 1)) is 1 exactly when both bounds come to 0 pods."""
    count = replica_expr(svc)  # pragma: no mutate
    kind = WORKLOAD_KINDS[svc.kind]
    if count is None:
        return None
    if kind.in_place:
        return E.const(1)  # pragma: no mutate
    down = scaled_expr(svc.rollout, "max_unavailable", count, kind.unavailable_round_up)  # pragma: no mutate
    if not kind.fencepost:
        return down
    surge = scaled_expr(svc.rollout, "max_surge", count, True)  # pragma: no mutate
    return E.largest(down, E.sub(E.const(1), E.smallest(surge, E.const(1))))  # pragma: no mutate


def rolls(svc: Service) -> bool:
    """Whether a change of the pod template rolls the pods at all (`OnDelete`: only a pod
    someone deletes is replaced, so there is no rollout to judge)."""
    return svc.rollout.update_strategy == "RollingUpdate"


# ---- load balancer --------------------------------------------------------------------------
def detection(lb: LoadBalancer, at: str = "lb") -> Term:
    hc = lb.health_check
    return product("health_check", lb_field(lb, f"{at}.health_check.interval_s", hc, "interval_s", at=at),
                   lb_field(lb, f"{at}.health_check.unhealthy_threshold", hc, "unhealthy_threshold", at=at))


def removal_paths(lb: LoadBalancer, at: str = "lb") -> list[Term]:
    paths = []
    for path in lb.removal:
        if path == "deregistration":
            paths.append(lb_field(lb, f"{at}.deregistration_propagation_s", lb, "deregistration_propagation_s",
                                  "deregistration", at))
        elif path == "endpoints":
            paths.append(field("endpoints", lb, "endpoint_propagation_s", f"{at}.endpoint_propagation_s"))
        else:
            paths.append(detection(lb, at))
    return paths


def lb_detect(lb: LoadBalancer, at: str = "lb") -> Term:
    """Worst case from "target starts leaving" to "LB sends it no new requests": the
    fastest of the service's removal paths (`at`: where the LB sits, as `lb_field` says)."""
    paths = removal_paths(lb, at)
    best = min(paths, key=lambda t: int(t.value))
    es = exprs(*paths)  # pragma: no mutate
    e = None if es is None else (es[0] if len(es) == 1 else E.smallest(*es))  # pragma: no mutate
    return Term("lb_detect", best.value, f"{best.label}: {best.source}", best.unknown, fields=best.fields, expr=e)  # pragma: no mutate


def lb_admit_new(lb: LoadBalancer, gated: bool) -> Term:
    """A new target needs one passing check after registration propagates; with a readiness
    gate, the controller polls target health on top."""
    hc = lb.health_check
    parts = [lb_field(lb, "lb.registration_propagation_s", lb, "registration_propagation_s"),
             lb_field(lb, "lb.health_check.interval_s", hc, "interval_s"),
             lb_field(lb, "lb.health_check.timeout_s", hc, "timeout_s")]
    if gated is True:  # not truthiness: a None slipped in must not add the controller poll
        poll = "controller poll"  # shown by its label: one literal for label and source
        parts.append(fixed(poll, L.CONTROLLER_GATE_POLL_S, poll))
    t = total("lb_admit_new", *parts)
    return t


def lb_recover(lb: LoadBalancer) -> Term:
    hc = lb.health_check
    return product("lb_recover", lb_field(lb, "lb.health_check.interval_s", hc, "interval_s"),
                   lb_field(lb, "lb.health_check.healthy_threshold", hc, "healthy_threshold"))


# ---- pod lifecycle -----------------------------------------------------------------------------
def drain(svc: Service | HeartbeatService) -> Term:
    return field("drain", svc.shutdown, "drain_s", "shutdown.drain_s")


def finish(svc: Service | HeartbeatService) -> Term:
    return field("finish", svc.shutdown, "finish_s", "shutdown.finish_s")


def stop(svc: Service | HeartbeatService) -> Term:
    return total("stop", drain(svc), finish(svc))


def grace(svc: Service | HeartbeatService) -> Term:
    sd = svc.shutdown
    own = field("grace", sd, "grace_s", "shutdown.grace_s")
    if sd.node_termination_budget_s is None:
        return own
    budget = field("grace", sd, "node_termination_budget_s", "shutdown.node_termination_budget_s")
    shown = budget if sd.node_termination_budget_s < sd.grace_s else own
    e = E.smallest(E.leaf(sd, "node_termination_budget_s"), E.leaf(sd, "grace_s"))  # pragma: no mutate
    return Term(shown.label, shown.value, shown.source, shown.unknown, shown.unit, shown.fields, e)


def tolerance(probe: Probe, prefix: str) -> Term:
    """How long a failing probe is put up with: initial delay + (failures - 1) × period."""
    e = E.add(E.leaf(probe, "initial_delay_s"),  # pragma: no mutate
              E.mul(E.sub(E.leaf(probe, "failure_threshold"), E.const(1)), E.leaf(probe, "period_s")))  # pragma: no mutate
    return Term("tolerance", e.value,
                f"{prefix}.initial_delay_s {probe.initial_delay_s} + ({prefix}.failure_threshold "
                f"{probe.failure_threshold} - 1) × {prefix}.period_s {probe.period_s}",
                fields=(f"{prefix}.initial_delay_s", f"{prefix}.failure_threshold", f"{prefix}.period_s"), expr=e)  # pragma: no mutate


def startup_tolerance(svc: Service) -> Term | None:
    """None when nothing can kill a slow start (no startup and no liveness probe)."""
    if svc.probes.startup is not None:
        t = tolerance(svc.probes.startup, "probes.startup")
    elif svc.probes.liveness is not None:
        t = tolerance(svc.probes.liveness, "probes.liveness")
    else:
        return None
    return relabel(t, "startup_tolerance")


def unready_after(probe: Probe) -> Term:
    e = E.mul(E.leaf(probe, "period_s"), E.leaf(probe, "failure_threshold"))  # pragma: no mutate
    return Term("unready_after", e.value,
                f"probes.readiness.period_s {probe.period_s} × probes.readiness.failure_threshold "
                f"{probe.failure_threshold}", fields=("probes.readiness.period_s", "probes.readiness.failure_threshold"), expr=e)  # pragma: no mutate


def kill_tolerance(probe: Probe) -> Term:
    e = E.mul(E.sub(E.leaf(probe, "failure_threshold"), E.const(1)), E.leaf(probe, "period_s"))  # pragma: no mutate
    return Term("kill_tolerance", e.value,
                f"(probes.liveness.failure_threshold {probe.failure_threshold} - 1) × "
                f"probes.liveness.period_s {probe.period_s}",
                fields=("probes.liveness.failure_threshold", "probes.liveness.period_s"), expr=e)  # pragma: no mutate


def started(svc: Service | HeartbeatService) -> Term:
    """From container start to the first readiness check that can pass. The warm-up, caught
    by the startup probe's first check after it (at most one period late; readiness is not
    probed before the startup probe passes), and never before the readiness probe's initial
    delay. `lockstep simulate` found the plain warm-up too short: a startup probe checking
    every 40 s kept a replacement out for ~70 s while the rules budgeted 40 s."""
    from lockstep.timing.model import Service

    warm = (source_field("app.warmup_s", svc.app, "warmup_s") if isinstance(svc, Service)
            else source_field("warmup_s", svc, "warmup_s"))
    startup, ready = svc.probes.startup, svc.probes.readiness
    delayed = ready is not None and ready.initial_delay_s > 0
    if startup is None and not delayed:
        return warm
    value, source, fields, e = int(warm.value), _part(warm), warm.fields, warm.expr  # pragma: no mutate
    if startup is not None:
        value = max(value, startup.initial_delay_s) + startup.period_s
        e = None if e is None else E.add(E.largest(e, E.leaf(startup, "initial_delay_s")), E.leaf(startup, "period_s"))  # pragma: no mutate
        source = (f"max({source}, probes.startup.initial_delay_s {startup.initial_delay_s}) + "
                  f"probes.startup.period_s {startup.period_s}")
        fields += ("probes.startup.initial_delay_s", "probes.startup.period_s")
    if delayed:
        assert ready is not None  # pragma: no mutate -- narrows the type only
        value = max(value, ready.initial_delay_s)
        e = None if e is None else E.largest(e, E.leaf(ready, "initial_delay_s"))  # pragma: no mutate
        source = f"max({source}, probes.readiness.initial_delay_s {ready.initial_delay_s})"
        fields += ("probes.readiness.initial_delay_s",)
    return Term("started", value, source, warm.unknown, fields=fields, expr=e)  # pragma: no mutate


def pod_ready(svc: Service | HeartbeatService) -> Term:
    """A replacement pod carrying traffic."""
    from lockstep.timing.model import Service

    parts = [started(svc)]
    ready = svc.probes.readiness
    if ready is not None:
        e = E.mul(E.leaf(ready, "period_s"), E.leaf(ready, "success_threshold"))  # pragma: no mutate
        parts.append(Term("readiness", e.value,
                          f"probes.readiness.period_s {ready.period_s} × "
                          f"probes.readiness.success_threshold {ready.success_threshold}",
                          fields=("probes.readiness.period_s", "probes.readiness.success_threshold"), expr=e))  # pragma: no mutate
    if isinstance(svc, Service):
        parts.append(source_field("rollout.min_ready_s", svc.rollout, "min_ready_s"))
        if svc.readiness_gate is not None and svc.lb is not None:
            parts.append(lb_admit_new(svc.lb, gated=True))
    else:
        parts.append(source_field("min_ready_s", svc, "min_ready_s"))
    return total("pod_ready", *parts)


def replace_time(svc: Service | HeartbeatService) -> Term:
    """How long one replacement leaves a slot empty. A StatefulSet's old pod must be gone
    before its successor is scheduled (lockstep's heartbeat service is a Deployment)."""
    from lockstep.timing.model import Service

    ready = pod_ready(svc)
    if not isinstance(svc, Service) or not WORKLOAD_KINDS[svc.kind].in_place:
        return relabel(ready, "replace_time")
    return total("replace_time", stop(svc), source_field("schedule_s", svc, "schedule_s"), ready)


def rollout_time(svc: Service) -> Term:
    """Estimate of one full rolling deploy. An unknown pod count counts as 0 pods (the bound
    that holds for any count: one stop), remembered in `unknown`."""
    n, unknown, count = replicas(svc), count_unknown(svc), replica_expr(svc)  # pragma: no mutate
    shown = "?" if unknown else str(n)
    if WORKLOAD_KINDS[svc.kind].in_place:
        rep = replace_time(svc)
        e = None if count is None or rep.expr is None else E.mul(count, rep.expr)  # pragma: no mutate
        return Term("rollout_time", n * int(rep.value), f"replicas {shown} × replace_time {rep.value}",
                    unknown + rep.unknown, fields=(replica_field(svc), *rep.fields), expr=e)  # pragma: no mutate
    ready, end = pod_ready(svc), stop(svc)
    step = max(surge_pods(svc), unavailable_pods(svc))  # ≥ 1: both 0 is the controller's fencepost (one down)
    waves = ceil_div(n, step)
    e = None  # pragma: no mutate
    if count is not None and ready.expr is not None and end.expr is not None:  # pragma: no mutate
        # max(surge, down, 1) is `step` wherever the rollout runs: both bounds 0 is the fencepost's one pod
        per_wave = E.largest(scaled_expr(svc.rollout, "max_surge", count, True),  # pragma: no mutate
                             scaled_expr(svc.rollout, "max_unavailable", count,  # pragma: no mutate
                                         WORKLOAD_KINDS[svc.kind].unavailable_round_up), E.const(1))  # pragma: no mutate
        e = E.add(E.mul(E.up_div(count, per_wave), ready.expr), end.expr)  # pragma: no mutate
    return Term("rollout_time", waves * int(ready.value) + int(end.value),
                f"ceil(replicas {shown} / {step} per wave) × pod_ready {ready.value} + stop {end.value}",
                unknown + ready.unknown + end.unknown, fields=(replica_field(svc), *fields_of(ready, end)), expr=e)  # pragma: no mutate


# ---- failover ------------------------------------------------------------------------------------
def failover_ttl(fo: Failover) -> Term:
    if fo.alias:
        return fixed("ttl", L.R53_ALIAS_TTL, "alias record: fixed")
    return field("ttl", fo, "ttl_s", "failover.ttl_s")


def failover_time(fo: Failover) -> Term:
    # A report shows this part as "detect N" (its label and value); its own source is never
    # printed, so that text cannot be checked and is kept apart under the pragma.
    detect_source = "failover.check_interval_s × failover.failure_threshold"  # pragma: no mutate
    e = E.mul(E.leaf(fo, "check_interval_s"), E.leaf(fo, "failure_threshold"))  # pragma: no mutate
    detect = Term("detect", e.value, detect_source,
                  fields=("failover.check_interval_s", "failover.failure_threshold"), expr=e)  # pragma: no mutate
    reconnect = source_field("failover.client_reconnect_s", fo, "client_reconnect_s")
    if fo.mode == "dns":
        return total("failover_time", detect, stale_for(fo), reconnect)
    return total("failover_time", detect, reconnect)


def stale_for(fo: Failover) -> Term:
    """How long a client may still use the failed region's address: the record's TTL, or its own
    DNS cache when that is longer (client-dns-cache-within-ttl)."""
    ttl = failover_ttl(fo)
    cache = source_field("failover.client_dns_cache_s", fo, "client_dns_cache_s")
    e = None if ttl.expr is None or cache.expr is None else E.largest(ttl.expr, cache.expr)  # pragma: no mutate
    return Term("max(ttl, client_dns_cache)", max(int(ttl.value), int(cache.value)), f"max({_part(ttl)}, {_part(cache)})",
                ttl.unknown + cache.unknown, fields=fields_of(ttl, cache), expr=e)  # pragma: no mutate


def shortest(label: str, *parts: Term) -> Term:
    """The least of several terms (the first idle timeout on a way closes the connection); an
    unknown part counts at its lower bound, which is then the least's too."""
    es = exprs(*parts)  # pragma: no mutate
    e = None if es is None else E.smallest(*es)  # pragma: no mutate
    return Term(label, min(int(p.value) for p in parts), f"min({', '.join(_part(p) for p in parts)})",
                tuple(u for p in parts for u in p.unknown), fields=fields_of(*parts), expr=e)  # pragma: no mutate


def failover_tolerance(fo: Failover) -> Term:
    e = E.mul(E.sub(E.leaf(fo, "failure_threshold"), E.const(1)), E.leaf(fo, "check_interval_s"))  # pragma: no mutate
    return Term("tolerance", e.value,
                f"(failover.failure_threshold {fo.failure_threshold} - 1) × "
                f"failover.check_interval_s {fo.check_interval_s}",
                fields=("failover.failure_threshold", "failover.check_interval_s"), expr=e)  # pragma: no mutate
