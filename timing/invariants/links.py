"""The long-lived connections at either end of an app (CATALOGUE-NEXT section A): an AMQP
link to its broker (lockstep's own heartbeat service's included), its gRPC clients'
connections, and its pools of connections to what it depends on.

`amqp-heartbeat-under-idle`: heartbeats on, and a frame every heartbeat / 2 keeps the link
busier than the shortest idle timeout on the way to the broker (an NLB, a NAT gateway): else
the link goes quiet, the hop drops it without a word and the client finds out at its next
publish (RabbitMQ heartbeats guide). A consumer acknowledging by hand must do so within the
broker's `consumer_timeout`, or the broker closes its channel with PRECONDITION_FAILED and
redelivers (RabbitMQ consumer acknowledgement docs).

`grpc-keepalive-fits-path`: through an NLB (or no load balancer) the clients' keepalive pings
must come no closer together than the server permits (else GOAWAY `too_many_pings`, grpc/grpc
#9902, grpc-go #2443) and before the path's idle timeout (else "transport is closing" after the
NLB's 350 s). An ALB ends the clients' HTTP/2 connection and does not count PING frames as
activity: there, the connection must carry a message more often than the ALB's idle timeout.

`pool-retires-before-path`: a pooled connection sits idle until the pool touches it (its
keep-alive) or retires it (its maximum lifetime); that must come, with the stack's margin,
before every idle timeout on the way (the network's, the server's or its proxy's: RDS Proxy
`IdleClientTimeout`, PgBouncer `client_idle_timeout`), or the pool hands out a connection the
other end has closed (HikariCP README, "maxLifetime"; HikariCP #2017).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing.findings import Term, Verdict, holds, judge
from lockstep.timing.lbkinds import KINDS

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import BrokerLink, ConnectionPool, GrpcServing, Service, Stack


def broker_link(subject: str, link: BrokerLink, prefix: str) -> list[Verdict]:
    heartbeat = d.field("heartbeat", link, "heartbeat_s", f"{prefix}.heartbeat_s")
    out = []
    if link.heartbeat_s == 0:
        out.append(holds(subject, False, heartbeat, ">", d.fixed("off", 0),
                         "turn AMQP heartbeats on (a heartbeat timeout above 0)"))
    else:
        idle = d.field("path idle", link, "path_idle_s", f"{prefix}.path_idle_s")
        e = None if heartbeat.expr is None else E.down_div(heartbeat.expr, E.const(2))  # pragma: no mutate
        # ⌊h / 2⌋ < idle ⇔ h / 2 < idle for whole seconds: the frame interval, rounded down
        half = Term("heartbeat / 2", int(heartbeat.value) // 2, f"{heartbeat.source} / 2", heartbeat.unknown,
                    fields=heartbeat.fields, expr=e)  # pragma: no mutate
        out.append(judge(subject, half, "<", idle,
                         f"lower the heartbeat to ≤{2 * int(idle.value) - 1}s (a frame every heartbeat / 2) "
                         "or raise the idle timeout on the way to the broker"))
    if link.manual_ack:
        held = d.field("max_unacked", link, "max_unacked_s", f"{prefix}.max_unacked_s")
        out.append(judge(subject, d.field("consumer_timeout", link, "consumer_timeout_s", f"{prefix}.consumer_timeout_s"),
                         ">", held, "raise the broker's consumer_timeout or acknowledge sooner"))
    return out


def amqp_heartbeat_under_idle(svc: Service, ctx: Ctx) -> list[Verdict]:
    return broker_link(svc.name, svc.broker, "broker") if svc.broker is not None else []


def heartbeat_broker_link(stack: Stack, ctx: Ctx) -> list[Verdict]:
    """lockstep's own heartbeat service: its publisher's link to the broker."""
    hb = stack.heartbeat
    return broker_link(hb.name, hb.broker, "heartbeat.broker") if hb is not None else []


# ---- gRPC clients ---------------------------------------------------------------------------
def grpc_path_idle(svc: Service, grpc: GrpcServing) -> Term:
    """The first idle timeout on the clients' way to the app: the load balancer's, or another
    the config states (without a load balancer, that one alone)."""
    parts = []
    if svc.lb is not None:
        parts.append(d.lb_field(svc.lb, "lb.idle_timeout_s", svc.lb, "idle_timeout_s", "lb idle"))
    if svc.lb is None or grpc.path_idle_s is not None:
        parts.append(d.field("path idle", grpc, "path_idle_s", "grpc.path_idle_s"))
    return parts[0] if len(parts) == 1 else d.shortest("path idle", *parts)


def grpc_keepalive_fits_path(svc: Service, ctx: Ctx) -> list[Verdict]:
    grpc = svc.grpc
    if grpc is None:
        return []
    idle = grpc_path_idle(svc, grpc)
    if svc.lb is not None and not KINDS[svc.lb.kind].passes_http2_through:
        silence = d.field("max silence", grpc, "max_silence_s", "grpc.max_silence_s")
        return [judge(svc.name, silence, "<", idle,
                      f"send a message on every client connection at least every {int(idle.value) - 1}s "
                      "(the ALB does not count pings as activity) or raise the idle timeout")]
    keepalive = d.field("client keepalive", grpc, "client_keepalive_s", "grpc.client_keepalive_s")
    if grpc.client_keepalive_s == 0:
        return [holds(svc.name, False, keepalive, ">", d.fixed("off", 0),
                      f"turn the clients' keepalive on, at {int(grpc.permit_keepalive_s)}s or more and below "
                      "the idle timeout on the way")]
    permit = d.field("permitted ping interval", grpc, "permit_keepalive_s", "grpc.permit_keepalive_s")
    return [judge(svc.name, keepalive, ">=", permit,
                  f"raise the clients' keepalive time to ≥{int(permit.value)}s or lower the server's permitted "
                  "ping interval"),
            judge(svc.name, keepalive, "<", idle,
                  f"lower the clients' keepalive time to ≤{int(idle.value) - 1}s or raise the idle timeout")]


# ---- connection pools -----------------------------------------------------------------------
POOL_LIMITS = (("path_idle_s", "path idle"), ("server_idle_s", "server idle"))


def pool_idle(pool: ConnectionPool, prefix: str) -> tuple[Term | None, tuple[str, ...]]:
    """The longest a pooled connection can sit idle: until the pool touches it or retires it,
    whichever is sooner (None: it does neither), and the pool's fields left unknown. The known
    one alone bounds it from above: an unknown other can only make it shorter."""
    parts = (("keepalive_s", "keepalive"), ("max_lifetime_s", "max_lifetime"))
    known = [d.field(label, pool, name, f"{prefix}.{name}") for name, label in parts if getattr(pool, name)]
    unknown = tuple(f"{prefix}.{name}" for name, _ in parts if getattr(pool, name) is None)
    if not known:
        open_ = [d.field(label, pool, name, f"{prefix}.{name}") for name, label in parts if getattr(pool, name) is None]
        return (open_[0] if open_ else None), unknown
    return (known[0] if len(known) == 1 else d.shortest("pool idle", *known)), unknown


def pool_retires_before_path(svc: Service, ctx: Ctx) -> list[Verdict]:
    out: list[Verdict] = []
    for i, pool in enumerate(svc.pools):
        prefix = f"pools[{i}]"
        limits = [d.field(label, pool, name, f"{prefix}.{name}") for name, label in POOL_LIMITS
                  if getattr(pool, name) != 0]
        if not limits:
            continue  # nothing on the way closes an idle connection
        idle, unknown = pool_idle(pool, prefix)
        if idle is None:  # neither a lifetime nor a keep-alive: idle for as long as the app is quiet
            fields = (f"{prefix}.max_lifetime_s", f"{prefix}.keepalive_s")
            never = Term("pool idle", "unbounded", " and ".join(f"{f} 0" for f in fields), fields=fields)
            limit = next((t for t in limits if not t.unknown), limits[0])
            v = holds(svc.name, False, never, "<=", limit, f"give pool {pool.name} a maximum lifetime or a "
                      f"keep-alive of at most {int(limit.value) - ctx.margin_s}s")
            out.append(v if not limit.unknown else replace(v, outcome="skipped", needs=limit.unknown))
            continue
        for limit in limits:
            v = judge(svc.name, idle, "<=", limit,
                      f"retire or touch pool {pool.name}'s idle connections within "
                      f"{int(limit.value) - ctx.margin_s}s ({prefix}.max_lifetime_s or {prefix}.keepalive_s)",
                      ctx.margin_s)
            if v.outcome == "broken" and unknown:
                v = replace(v, outcome="skipped", needs=tuple(dict.fromkeys(unknown + v.needs)))
            out.append(v)
    return out
