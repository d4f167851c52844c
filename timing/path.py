"""A service's delivery path as an ordered list of hops: the load balancer, the proxies of
`Service.path` (or the `sidecar` short form), then the app.

Each `PathHop` says which of the shared roles it has and which model field holds each, so a
rule is written once over adjacent hops (`timing.invariants.path`) and reads a load balancer,
an ingress proxy, a mesh proxy and the app the same way:

- `client_idle`: the idle timeout of connections from the hop in front (ingress-nginx
  `keep-alive`, the app's keep-alive; the load balancer, always outermost, has none here);
- `upstream_idle`: the idle timeout of its pooled connections to the next hop (an ALB reuses
  its connections to targets for its idle timeout; ingress-nginx `upstream-keepalive-timeout`;
  Istio's DestinationRule idle timeout);
- `request`: how long it waits for the next hop's answer (an ALB answers 504 when a target
  sends nothing for its idle timeout); the app's own is the longest request it serves;
- `drain`, `worker_shutdown`, `shutdown_delay`, `grace`: how a proxy stops;
- `app_waits`: a mesh proxy holds the app back until it is ready (true/false, not a number).

A hop that does not speak HTTP to the next one (an NLB's TCP or TLS listener passes the
client's connection through) has no role; the `sidecar` short form states only a drain and
is `transparent` to the idle and request chains, as it was before the path existed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from lockstep.timing import derived as d
from lockstep.timing.findings import Term
from lockstep.timing.hopkinds import HOP_KINDS
from lockstep.timing.lbkinds import KINDS

if TYPE_CHECKING:
    from lockstep.timing.model import Service

ROLE_FIELDS: Mapping[str, str] = {"client_idle": "client_idle_s", "upstream_idle": "upstream_idle_s",
                                  "request": "request_timeout_s", "worker_shutdown": "worker_shutdown_s",
                                  "shutdown_delay": "shutdown_delay_s", "grace": "grace_s", "drain": "drain_s",
                                  "app_waits": "app_waits"}


@dataclass(frozen=True, slots=True)
class PathHop:
    name: str  # how findings call it: "the LB", "path[0] (ingress-nginx)", "the app"
    prefix: str  # the config path its fields sit under, within the service
    owner: object
    roles: Mapping[str, tuple[str, str]]  # role → (model field, label: the upstream setting's name)
    defaulted: frozenset[str] = frozenset()
    kind: str = ""
    is_lb: bool = False
    transparent: bool = False
    mesh: bool = False
    reloads: bool = False
    phrases: Mapping[str, str] = field(default_factory=dict)  # role → how a fix names it, where not its label

    def setting(self, role: str) -> str:
        """How a fix names the hop's setting: "the app's keep-alive timeout"."""
        return f"{self.name}'s {self.phrases.get(role, self.roles[role][1])}"

    def has(self, role: str) -> bool:
        return role in self.roles

    def term(self, role: str) -> Term:
        """The hop's number for a role, labelled by its upstream name (and as the kind's
        default when the config left it unset); an unknown one is remembered as such."""
        name, label = self.roles[role]
        source = f"{self.prefix}.{name}"
        if name in self.defaulted:
            label = f"{label} ({self.kind} default)"
        if self.is_lb:
            return d.lb_field(self.owner, source, self.owner, name, label)  # type: ignore[arg-type]
        return d.field(label, self.owner, name, source)


def _lb_hop(svc: Service) -> PathHop | None:
    lb = svc.lb
    if lb is None:
        return None
    kind = KINDS[lb.kind]
    roles: dict[str, tuple[str, str]] = {}
    if lb.protocol in kind.http_protocols:
        idle = ("idle_timeout_s", "idle_timeout")
        roles = {"upstream_idle": idle, "request": idle}  # always outermost: nothing pools toward it
    return PathHop("the LB", "lb", lb, roles, kind=lb.kind, is_lb=True,
                   phrases=dict.fromkeys(roles, "idle timeout"))


def _proxy_hops(svc: Service) -> list[PathHop]:
    out = []
    for i, hop in enumerate(svc.path):
        kind = HOP_KINDS[hop.kind]
        roles = {role: (f, kind.upstream[f]) for role, f in ROLE_FIELDS.items()
                 if f in kind.upstream and not (getattr(hop, f) is None and f in kind.unbounded)}
        out.append(PathHop(f"path[{i}] ({hop.kind})", f"path[{i}]", hop, roles, hop.defaulted, hop.kind,
                           mesh=kind.role == "mesh", reloads=kind.reloads))
    if svc.sidecar is not None:
        out.append(PathHop(f"sidecar ({svc.sidecar.name})", "sidecar", svc.sidecar,
                           {"drain": ("drain_s", "sidecar.drain")}, kind="sidecar", transparent=True, mesh=True,
                           phrases={"drain": "drain"}))
    return out


def _app_hop(svc: Service) -> PathHop:
    return PathHop("the app", "app", svc.app, {"client_idle": ("keepalive_s", "keepalive"),
                                           "request": ("max_request_s", "max_request")}, kind="app",
                   phrases={"client_idle": "keep-alive timeout", "request": "longest request"})


def hops(svc: Service) -> list[PathHop]:
    """The service's path, outermost first: its load balancer (when it has one), its proxies,
    then the app."""
    lb = _lb_hop(svc)
    return ([lb] if lb is not None else []) + _proxy_hops(svc) + [_app_hop(svc)]


def pairs(svc: Service, outer_role: str, inner_role: str) -> list[tuple[PathHop, PathHop]]:
    """Adjacent hops of the chain (transparent ones left out) where the outer one has
    `outer_role` and the inner one `inner_role`."""
    chain = [h for h in hops(svc) if not h.transparent]
    return [(a, b) for a, b in zip(chain, chain[1:]) if a.has(outer_role) and b.has(inner_role)]


def request_chain(svc: Service) -> list[tuple[PathHop, PathHop]]:
    """Adjacent hops that each bound a request, a hop without a limit passed over (it cuts
    nothing), outermost first; the app's longest request is the innermost bound."""
    chain = [h for h in hops(svc) if not h.transparent and h.has("request")]
    return list(zip(chain, chain[1:]))


def mesh_hop(svc: Service) -> PathHop | None:
    """The pod's mesh proxy, from `path` or the `sidecar` short form."""
    return next((h for h in _proxy_hops(svc) if h.mesh), None)
