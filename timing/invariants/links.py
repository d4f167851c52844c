"""The connections an app keeps open toward what it depends on (CATALOGUE-NEXT section A):
an AMQP link to its broker, lockstep's own heartbeat service's included.

`amqp-heartbeat-under-idle`: heartbeats on, and a frame every heartbeat / 2 keeps the link
busier than the shortest idle timeout on the way to the broker (an NLB, a NAT gateway): else
the link goes quiet, the hop drops it without a word and the client finds out at its next
publish (RabbitMQ heartbeats guide). A consumer acknowledging by hand must do so within the
broker's `consumer_timeout`, or the broker closes its channel with PRECONDITION_FAILED and
redelivers (RabbitMQ consumer acknowledgement docs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing import expr as E  # pragma: no mutate
from lockstep.timing.findings import Term, Verdict, holds, judge

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import BrokerLink, Service, Stack


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
