"""Timelines: what happens, second by second, in a drain, a rollout, a failure and a failover,
and how long each hop of a service's delivery path waits (`timing.path`).

Built only from the derived times of `timing.derived` (never re-computed here), so the
plan a reviewer reads is the arithmetic the rules judge. `lockstep plan` prints them as
text and as a Mermaid gantt chart for pull-request comments.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockstep.timing import derived as d
from lockstep.timing.findings import Term
from lockstep.timing.model import Failover, HeartbeatService, HeartbeatSpec, Service, Stack
from lockstep.timing.path import hops, mesh_hop


@dataclass(frozen=True, slots=True)
class Span:
    """Something that lasts from `start_s` to `end_s` (equal for an instant)."""

    start_s: int
    end_s: int
    label: str
    source: str = ""


@dataclass(frozen=True, slots=True)
class Timeline:
    title: str
    spans: tuple[Span, ...]

    @property
    def end_s(self) -> int:
        return max(s.end_s for s in self.spans)


def _v(term: Term) -> int:
    return int(term.value)


def drain_timeline(svc: Service) -> Timeline:
    """SIGTERM/preStop → LB stops sending → server stops listening → in-flight done → kill."""
    drain, stop, grace = _v(d.drain(svc)), _v(d.stop(svc)), _v(d.grace(svc))
    spans = [Span(0, drain, "serving while leaving (drain)", "shutdown.drain_s")]
    if svc.lb is not None:
        detect = d.lb_detect(svc.lb)
        spans.append(Span(0, _v(detect), "LB still sends new requests", detect.source))
    mesh = mesh_hop(svc)
    if mesh is not None:
        held = mesh.term("drain")
        spans.append(Span(0, _v(held), f"{mesh.name} passes requests ({held.label})", held.source))
    spans.append(Span(drain, drain, "server stops listening"))
    spans.append(Span(drain, stop, "finishing in-flight work", "shutdown.finish_s"))
    spans.append(Span(stop, stop, "process exits"))
    spans.append(Span(grace, grace, "kill (grace ends)", d.grace(svc).source))
    return Timeline(f"{svc.name}: drain handshake", tuple(spans))


# How a timeline names each role of a hop (`timing.path`), in the order a connection meets them.
_WAITS = {"client_idle": "closes a connection idle from the hop in front after",
          "upstream_idle": "reuses an idle pooled connection to the next hop for up to",
          "request": "waits for the next hop's answer for up to"}


def path_timelines(svc: Service) -> list[Timeline]:
    """The delivery path's waits, hop by hop from the outermost: how long each one keeps an
    idle connection (its pool toward the next hop must end before the next hop's own idle
    timeout) and how long it waits for an answer (each inner one no longer than the one
    in front). Drawn where at least two hops state the numbers."""
    chain = [h for h in hops(svc) if not h.transparent]
    out = []
    for title, roles in (("idle connections along the path", ("client_idle", "upstream_idle")),
                         ("one request along the path", ("request",))):
        spans, named = [], set()
        for hop in chain:
            for role in (r for r in roles if hop.has(r)):
                t = hop.term(role)
                if role == "request" and hop.kind == "app":
                    label = f"the app's longest request takes {_v(t)}s ({t.label})"
                else:
                    label = f"{hop.name} {_WAITS[role]} {_v(t)}s ({t.label})"
                spans.append(Span(0, _v(t), label, t.source))
                named.add(hop.name)
        if len(named) > 1:
            out.append(Timeline(f"{svc.name}: {title}", tuple(spans)))
    return out


def proxy_timelines(svc: Service) -> list[Timeline]:
    """An ingress proxy that reloads (ingress-nginx), twice: a reload, whose old workers carry the
    longest request, and its own pod going, accepting until the LB in front (when stated) has
    stopped sending to it, then quitting until its workers or its grace run out."""
    out = []
    for hop in (h for h in hops(svc) if h.reloads):
        worker, delay, grace = hop.term("worker_shutdown"), hop.term("shutdown_delay"), hop.term("grace")
        longest = d.field("max_request", svc.app, "max_request_s", "app.max_request_s")
        out.append(Timeline(f"{svc.name}: {hop.name} reloads", (
            Span(0, 0, "configuration change: new workers take new connections"),
            Span(0, _v(longest), f"the longest request on an old worker ({longest.label})", longest.source),
            Span(0, _v(worker), f"old workers finish ({worker.label})", worker.source),
            Span(_v(worker), _v(worker), "old workers closed"))))
        spans = []
        front = hop.owner.lb  # type: ignore[attr-defined]  # a reloading hop is a path Hop
        if front is not None:
            detect = d.lb_detect(front, f"{hop.prefix}.lb")
            spans.append(Span(0, _v(detect), "the LB in front still sends new connections", detect.source))
        spans += [Span(0, _v(delay), f"accepting while leaving ({delay.label})", delay.source),
                  Span(_v(delay), _v(delay) + _v(worker), f"old workers finish ({worker.label})", worker.source),
                  Span(_v(grace), _v(grace), f"kill ({grace.label})", grace.source)]
        out.append(Timeline(f"{svc.name}: {hop.name}'s pod goes", tuple(spans)))
    return out


def rollout_timeline(svc: Service) -> Timeline:
    """One wave per surge (Deployment) or one pod at a time (StatefulSet)."""
    n = d.replicas(svc)
    ready, end = _v(d.pod_ready(svc)), _v(d.stop(svc))
    spans = []
    if svc.kind == "StatefulSet":
        slot = _v(d.replace_time(svc))
        for i in range(n):
            # Pods are replaced from the highest ordinal down, each only after the last is ready.
            spans.append(Span(i * slot, (i + 1) * slot, f"replace {svc.name}-{n - 1 - i}"))
    else:
        step = max(d.surge_pods(svc), d.unavailable_pods(svc))  # ≥ 1 (the controller's fencepost)
        waves = d.ceil_div(n, step)
        for i in range(waves):
            spans.append(Span(i * ready, (i + 1) * ready, f"wave {i + 1}: up to {step} new pods ready"))
        spans.append(Span(waves * ready, waves * ready + end, "last old pods drain and stop"))
    total = d.rollout_time(svc)
    spans.append(Span(_v(total), _v(total), "rollout complete", total.source))
    return Timeline(f"{svc.name}: rolling deploy", tuple(spans))


def failure_timeline(spec: HeartbeatSpec, svc: Service, hb: HeartbeatService) -> Timeline:
    """A real failure of the watched service, to its scope blocked and clients told."""
    observe, publish = hb.observe_interval_s, hb.publish_interval_s
    block = spec.loss_time_s + observe  # loss seen at the first observation after loss_time
    spans = [
        Span(0, observe, "first observation sees the failure", "heartbeat.observe_interval_s"),
        Span(0, block, "unhealthy for loss_time (+ one observation)", "loss_time_s"),
        Span(block, block, f"block command confirmed for {spec.name}"),
        Span(block, block + publish, "next beat reports the scope blocked", "heartbeat.publish_interval_s"),
        Span(spec.max_outage_s, spec.max_outage_s, "outage budget ends", "max_outage_s"),
    ]
    return Timeline(f"{spec.name} ({svc.name}): failure to block", tuple(spans))


def recovery_timeline(spec: HeartbeatSpec, svc: Service, hb: HeartbeatService) -> Timeline:
    unblock = spec.recovery_time_s + hb.observe_interval_s
    spans = [Span(0, unblock, "healthy for recovery_time (+ one observation)", "recovery_time_s"),
             Span(unblock, unblock, f"unblock command for {spec.name}")]
    if svc.lb is not None:
        back = d.lb_recover(svc.lb)
        spans.insert(0, Span(0, _v(back), "LB routes to the service again", back.source))
    return Timeline(f"{spec.name} ({svc.name}): recovery to unblock", tuple(spans))


def failover_timeline(fo: Failover) -> Timeline:
    detect = fo.check_interval_s * fo.failure_threshold
    spans = [Span(0, detect, "health checks fail (interval × failures)", "failover.check_interval_s")]
    at = detect
    if fo.mode == "dns":
        stale = d.stale_for(fo)
        spans.append(Span(at, at + _v(stale), "resolvers and clients keep the old answer (TTL, or the clients' "
                          "DNS cache when longer)", stale.source))
        at += _v(stale)
    else:
        spans.append(Span(at, at, "negotiate returns the secondary endpoint"))
    spans.append(Span(at, at + fo.client_reconnect_s, "clients reconnect", "failover.client_reconnect_s"))
    total = d.failover_time(fo)
    spans.append(Span(_v(total), _v(total), "clients served by the other region", total.source))
    spans.append(Span(fo.rto_s, fo.rto_s, "recovery time objective", "failover.rto_s"))
    return Timeline(f"failover ({fo.mode}): region loss to clients served", tuple(spans))


def stack_timelines(stack: Stack) -> list[Timeline]:
    out: list[Timeline] = []
    for svc in stack.services:
        out.append(drain_timeline(svc))
        out.extend(path_timelines(svc))
        out.extend(proxy_timelines(svc))
        if d.rolls(svc):  # OnDelete: no rollout to draw
            out.append(rollout_timeline(svc))
    if stack.heartbeat is not None:
        by_name = {s.name: s for s in stack.services}
        for spec in stack.heartbeat_specs:
            out.append(failure_timeline(spec, by_name[spec.service], stack.heartbeat))
            out.append(recovery_timeline(spec, by_name[spec.service], stack.heartbeat))
    if stack.failover is not None:
        out.append(failover_timeline(stack.failover))
    return out


def render_text(tl: Timeline) -> str:
    lines = [tl.title]
    for s in sorted(tl.spans, key=lambda s: (s.start_s, s.end_s)):
        when = f"t={s.start_s}s" if s.start_s == s.end_s else f"t={s.start_s}s..{s.end_s}s"
        src = f"  ({s.source})" if s.source else ""
        lines.append(f"  {when:<14} {s.label}{src}")
    return "\n".join(lines)


def _mermaid_label(text: str) -> str:
    # ':' and '#' end a task label in Mermaid's gantt grammar.
    return text.replace(":", " ").replace("#", "no.").replace(";", ",")


# The chart's input dates are Unix millisecond timestamps (`dateFormat x`, "Unix ms timestamp"
# in Mermaid's gantt syntax docs): t=N s is written N × 1000. `dateFormat X` (seconds) is
# documented but Mermaid 11 reads any all-digit start under either `x` or `X` as
# milliseconds (its ganttDb `getStartDate` returns `new Date(Number(str))` for both), so
# with `X` every start collapsed to ~0 while the `Ns` lengths stayed in seconds: wave 2 of
# a rollout sat on top of wave 1 and every milestone at 0. Older Mermaid (dayjs/moment
# strict parsing) reads `x` as milliseconds too, so this form renders alike on both.
# Positions are exact; the axis labels are the viewer's local minutes:seconds of those
# instants, so they wrap after an hour and read 30 minutes off in a half-hour time zone.
_MS_PER_S = 1000


def render_mermaid(timelines: list[Timeline]) -> str:
    lines = ["gantt", "  dateFormat x", "  axisFormat %M:%S"]
    for i, tl in enumerate(timelines):
        lines.append(f"  section {_mermaid_label(tl.title)}")
        for j, s in enumerate(tl.spans):
            ident = f"t{i}_{j}"
            start = s.start_s * _MS_PER_S
            # A milestone is drawn at start + length / 2 (Mermaid docs, "Milestones"): length 0s.
            tag = "milestone, " if s.start_s == s.end_s else ""
            lines.append(f"  {_mermaid_label(s.label)} :{tag}{ident}, {start}, {s.end_s - s.start_s}s")
    return "\n".join(lines)


def derived_times(stack: Stack) -> dict[str, dict[str, int]]:
    """Every derived time of INVARIANTS.md per service (for `plan --format json`)."""
    out: dict[str, dict[str, int]] = {}
    for svc in stack.services:
        times = {"drain": d.drain(svc), "stop": d.stop(svc), "grace": d.grace(svc),
                 "started": d.started(svc), "pod_ready": d.pod_ready(svc), "replace_time": d.replace_time(svc),
                 "rollout_time": d.rollout_time(svc)}
        if svc.lb is not None:
            times.update(lb_detect=d.lb_detect(svc.lb),
                         lb_admit_new=d.lb_admit_new(svc.lb, svc.readiness_gate is not None),
                         lb_recover=d.lb_recover(svc.lb))
        startup = d.startup_tolerance(svc)
        if startup is not None:
            times["startup_tolerance"] = startup
        if svc.probes.readiness is not None:
            times["unready_after"] = d.unready_after(svc.probes.readiness)
        if svc.probes.liveness is not None:
            times["kill_tolerance"] = d.kill_tolerance(svc.probes.liveness)
        out[svc.name] = {k: _v(t) for k, t in times.items()}
    if stack.failover is not None:
        out["failover"] = {"failover_time": _v(d.failover_time(stack.failover))}
    return out
