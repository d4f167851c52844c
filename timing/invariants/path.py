"""The delivery path's rules, each written once over adjacent hops (`timing.path`):
keep-alives ordered along the chain, request timeouts shrinking inward, an ingress proxy's
reloads sparing requests, and a mesh proxy's drain (CATALOGUE-NEXT section A; ingress-nginx
#3099, #1373, #11891; istio #55138, #34855; linkerd2 #10379; the AWS ALB attributes doc).

`keepalive-outlasts-lb-idle` stays the first pair of the keep-alive chain (the load balancer
and the hop behind it, the app when the path has no proxy); `keepalive-chain-ordered` judges
every later pair with the same relation (`keepalive_pair`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from lockstep.timing import derived as d
from lockstep.timing.findings import Term, Verdict, holds, judge
from lockstep.timing.path import PathHop, hops, mesh_hop, pairs, request_chain

if TYPE_CHECKING:
    from lockstep.timing.invariants import Ctx
    from lockstep.timing.model import Service


def keepalive_pair(svc: Service, outer: PathHop, inner: PathHop) -> Verdict:
    """The inner hop's server keeps an idle connection open longer than the outer hop keeps it
    in its pool: otherwise it closes a connection the outer hop is about to reuse (502 from
    nginx, 503 "upstream connect error" from Envoy, 502 from an ALB)."""
    pool = outer.term("upstream_idle")
    found = judge(svc.name, inner.term("client_idle"), ">", pool,
                  f"raise {inner.setting('client_idle')} to ≥{int(pool.value) + 1}s "
                  f"or lower {outer.setting('upstream_idle')}")
    lb = svc.lb
    if outer.is_lb and lb is not None and "lb.protocol" in lb.unknown and found.outcome == "broken":
        # the relation holds for HTTP(S) target groups only: an unknown protocol leaves it undecided
        return replace(found, outcome="skipped", needs=("lb.protocol",))
    return found


def keepalive_outlasts_lb_idle(svc: Service, ctx: Ctx) -> list[Verdict]:
    return [keepalive_pair(svc, a, b) for a, b in pairs(svc, "upstream_idle", "client_idle") if a.is_lb]


def keepalive_chain_ordered(svc: Service, ctx: Ctx) -> list[Verdict]:
    return [keepalive_pair(svc, a, b) for a, b in pairs(svc, "upstream_idle", "client_idle") if not a.is_lb]


def timeouts_shrink_inward(svc: Service, ctx: Ctx) -> list[Verdict]:
    """Each hop waits for the next at least as long as the next waits (the app: its longest
    request): otherwise the outer hop answers 504 while the inner one still works."""
    out = []
    for outer, inner in request_chain(svc):
        need = inner.term("request")
        out.append(judge(svc.name, outer.term("request"), ">=", need,
                         f"raise {outer.setting('request')} to ≥{int(need.value)}s "
                         f"or lower {inner.setting('request')}"))
    return out


def proxy_reload_spares_requests(svc: Service, ctx: Ctx) -> list[Verdict]:
    """An ingress proxy that replaces its workers on every configuration change (any Ingress
    edit, for ingress-nginx) kills the old ones `worker-shutdown-timeout` later: the longest
    request must end by then, and the pod's grace must cover that wait after the shutdown delay.
    When its own pod goes, it stops accepting after the shutdown delay: the load balancer in
    front of it (`lb` of the hop, when stated) must have stopped sending to it by then."""
    out = []
    for hop in (h for h in hops(svc) if h.reloads):
        shutdown, delay = hop.term("worker_shutdown"), hop.term("shutdown_delay")
        longest = d.field("max_request", svc.app, "max_request_s", "app.max_request_s")
        out.append(judge(svc.name, shutdown, ">=", longest,
                         f"raise {hop.setting('worker_shutdown')} to ≥{int(longest.value)}s"))
        stop = d.total("worker-shutdown-timeout + --shutdown-grace-period", shutdown, delay)
        out.append(judge(svc.name, hop.term("grace"), ">=", stop,
                         f"raise {hop.setting('grace')} to ≥{int(stop.value)}s or shorten its shutdown"))
        front = hop.owner.lb  # type: ignore[attr-defined]  # a reloading hop is a path Hop
        if front is not None:
            detect = d.lb_detect(front, f"{hop.prefix}.lb")
            out.append(judge(svc.name, delay, ">=", detect,
                             f"raise {hop.setting('shutdown_delay')} to ≥{int(detect.value) + ctx.margin_s}s "
                             "or detect faster", ctx.margin_s))
    return out


def mesh_drain_covers_lb(svc: Service, ctx: Ctx) -> list[Verdict]:
    """The pod's mesh proxy passes the requests the load balancer still sends until it has
    noticed the pod going: its drain must last as long, plus the stack's margin. And the app
    starts only once the proxy is ready (`app_waits` of a `path` hop; the `sidecar` short form
    states no such thing): otherwise its first calls find no proxy and fail."""
    mesh = mesh_hop(svc)
    if mesh is None:
        return []
    out = []
    if svc.lb is not None:
        detect = d.lb_detect(svc.lb)
        out.append(judge(svc.name, mesh.term("drain"), ">=", detect,
                         f"raise {mesh.setting('drain')} to ≥{int(detect.value) + ctx.margin_s}s "
                         "or detect faster", ctx.margin_s))
    if mesh.has("app_waits"):
        out.append(_app_waits(svc, mesh))
    return out


def _app_waits(svc: Service, mesh: PathHop) -> Verdict:
    source, waits = f"{mesh.prefix}.app_waits", getattr(mesh.owner, "app_waits")
    label = mesh.roles["app_waits"][1] + (f" ({mesh.kind} default)" if "app_waits" in mesh.defaulted else "")
    left = Term(label, "unknown" if waits is None else "on" if waits else "off", source, fields=(source,))
    right = Term("the app's start", "after the proxy is ready", "")
    fix = f"set {mesh.setting('app_waits')} so the app starts after its proxy"
    if waits is None:  # the installation decides (Istio's native-sidecar mode): not guessed
        return Verdict(svc.name, left, "==", right, 0, None, fix, "skipped", (source,))
    return holds(svc.name, waits, left, "==", right, fix)


def sidecar_outlives_app(svc: Service, ctx: Ctx) -> list[Verdict]:
    """The mesh proxy outlives the app's drain and finish (its drain from `sidecar`, or from the
    mesh hop's own setting or its kind's default)."""
    mesh = mesh_hop(svc)
    if mesh is None:
        return []
    return [judge(svc.name, mesh.term("drain"), ">=", d.stop(svc),
                  "keep the mesh proxy up until the app has drained and finished")]
