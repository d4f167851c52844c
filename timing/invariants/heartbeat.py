"""Watchdogs and the heartbeat (seeds 003 and 000)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing.findings import Term, Verdict, holds, judge
from lockstep.timing.heartbeat_config import unseen_field

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import HeartbeatService, Stack


def watchdog_shares_deploy_lock(stack: Stack, ctx: Ctx) -> list[Verdict]:
    wd = stack.watchdog
    if wd is None:
        return []
    return [holds(wd.name, bool(wd.deploy_lock),
                  Term("deploy_lock", wd.deploy_lock or "unset", "watchdog.deploy_lock", fields=("watchdog.deploy_lock",)),
                  "==",
                  Term("lock", "the deploy's lock", ""),
                  "make the deploy take the watchdog's lock (watchdog.deploy_lock)")]


def watchdog_tolerates_planned_drain(stack: Stack, ctx: Ctx) -> list[Verdict]:
    wd = stack.watchdog
    if wd is None:
        return []
    e = E.mul(E.sub(E.leaf(wd, "failures_before_action"), E.const(1)), E.leaf(wd, "period_s"))  # pragma: no mutate
    tol = Term("watchdog tolerance", e.value,
               f"(watchdog.failures_before_action {wd.failures_before_action} - 1) × "
               f"watchdog.period_s {wd.period_s}", fields=("watchdog.failures_before_action", "watchdog.period_s"), expr=e)  # pragma: no mutate
    by_name = {s.name: s for s in stack.services}
    found = []
    for name in wd.watches:
        svc = by_name[name]
        planned = d.total("stop + pod_ready", d.stop(svc), d.pod_ready(svc))
        need = int(planned.value) // wd.period_s + 2
        found.append(judge(name, tol, ">", planned, f"raise watchdog.failures_before_action to ≥{need}",
                           service=name))
    return found


def _specs(stack: Stack):
    by_name = {s.name: s for s in stack.services}
    for spec in stack.heartbeat_specs:
        yield spec, by_name[spec.service]


def _observe_delay(hb: HeartbeatService) -> Term:
    name = unseen_field(hb)
    return d.source_field(f"heartbeat.{name}", hb, name)


def heartbeat_rides_out_pod_replacement(stack: Stack, ctx: Ctx) -> list[Verdict]:
    hb = stack.heartbeat
    if hb is None:
        return []
    found = []
    for spec, svc in _specs(stack):
        need = d.total("replace_time + observe", d.replace_time(svc), _observe_delay(hb))
        found.append(judge(f"{spec.name} ({svc.name})",
                           d.field("loss_time", spec, "loss_time_s", "loss_time_s"), ">=", need,
                           f"raise loss_time_s to ≥{int(need.value) + ctx.margin_s}s or replace pods faster",
                           ctx.margin_s, service=svc.name))
    return found


def heartbeat_within_outage_budget(stack: Stack, ctx: Ctx) -> list[Verdict]:
    hb = stack.heartbeat
    if hb is None:
        return []
    found = []
    for spec, svc in _specs(stack):
        # The block is in effect once the gateway has applied it: decided at loss_time after
        # the change was seen, acknowledged within ack_timeout (else the service goes silent).
        used = d.total("loss_time + observe + ack", d.source_field("loss_time_s", spec, "loss_time_s"),
                       _observe_delay(hb), d.source_field("heartbeat.ack_timeout_s", hb, "ack_timeout_s"))
        found.append(judge(f"{spec.name} ({svc.name})", used,
                           "<=", d.field("max_outage", spec, "max_outage_s", "max_outage_s"),
                           "lower loss_time_s, observe more often or shorten heartbeat.ack_timeout_s "
                           "(the outage budget is agreed)",
                           service=svc.name))
    return found


def heartbeat_samples_often(stack: Stack, ctx: Ctx) -> list[Verdict]:
    hb = stack.heartbeat
    if hb is None:
        return []
    found = []
    for spec, svc in _specs(stack):
        e = E.down_div(E.leaf(spec, "loss_time_s"), E.const(2))  # pragma: no mutate
        half = Term("loss_time / 2", e.value, f"loss_time_s {spec.loss_time_s} / 2", fields=("loss_time_s",), expr=e)  # pragma: no mutate
        name = unseen_field(hb)
        found.append(judge(f"{spec.name} ({svc.name})",
                           d.field(name.removesuffix("_s"), hb, name, f"heartbeat.{name}"),
                           "<=", half, f"observe at least every {spec.loss_time_s // 2}s",
                           service=svc.name))
    return found


def heartbeat_recovery_covers_catch_up(stack: Stack, ctx: Ctx) -> list[Verdict]:
    found = []
    for spec, svc in _specs(stack):
        subject = f"{spec.name} ({svc.name})"
        recovery = d.field("recovery_time", spec, "recovery_time_s", "recovery_time_s")
        found.append(judge(subject, recovery, ">=",
                           d.field("catch_up", svc.app, "catch_up_s", "app.catch_up_s"),
                           "raise recovery_time_s to the consumer's catch-up time", service=svc.name))
        if svc.lb is not None:
            found.append(judge(subject, recovery, ">=",
                               d.lb_recover(svc.lb),
                               "raise recovery_time_s: the LB must route to the service again first",
                               service=svc.name))
    return found


def heartbeat_client_tolerates_beat_gaps(stack: Stack, ctx: Ctx) -> list[Verdict]:
    hb = stack.heartbeat
    if hb is None:
        return []
    return [judge(hb.name,
                  d.field("client_timeout", hb, "client_timeout_s", "heartbeat.client_timeout_s"), ">=",
                  Term("3 beats", 3 * hb.publish_interval_s,
                       f"3 × heartbeat.publish_interval_s {hb.publish_interval_s}",
                       fields=("heartbeat.publish_interval_s",),
                       expr=E.mul(E.const(3), E.leaf(hb, "publish_interval_s"))),  # pragma: no mutate
                  f"raise heartbeat.client_timeout_s to ≥{3 * hb.publish_interval_s}s or publish more often")]


def heartbeat_beats_expire(stack: Stack, ctx: Ctx) -> list[Verdict]:
    hb = stack.heartbeat
    if hb is None:
        return []
    return [judge(hb.name,
                  d.field("beat_ttl", hb, "beat_ttl_s", "heartbeat.beat_ttl_s"), "<=",
                  d.field("client_timeout", hb, "client_timeout_s", "heartbeat.client_timeout_s"),
                  f"lower heartbeat.beat_ttl_s to ≤{hb.client_timeout_s}s")]


def heartbeat_deploy_invisible(stack: Stack, ctx: Ctx) -> list[Verdict]:
    hb = stack.heartbeat
    if hb is None:
        return []
    publish = d.source_field("heartbeat.publish_interval_s", hb, "publish_interval_s")
    if hb.replicas == 1:
        gap = d.total("silence", d.pod_ready(hb), publish)
        fix = "run 2 replicas with leader election, or start faster"
    else:
        gap = d.total("silence", d.source_field("heartbeat.lease_duration_s", hb, "lease_duration_s"),
                      d.source_field("heartbeat.lease_retry_period_s", hb, "lease_retry_period_s"),
                      publish)
        fix = "shorten the lease or raise heartbeat.client_timeout_s"
    return [judge(hb.name, gap, "<",
                  d.field("client_timeout", hb, "client_timeout_s", "heartbeat.client_timeout_s"), fix)]
