"""What differs between the hops of a delivery path, as data: one `HopKind` per kind.

A service's path (`Service.path`) lists the proxies between its load balancer and the app,
outermost first: an ingress proxy (ingress-nginx, an Envoy/Istio gateway), then the pod's own
mesh proxy (an Istio sidecar, the Linkerd proxy). The load balancer (`lb:`) is the first hop
and the app (`app:`) the last; `timing.path` puts them together. Code asks this table for a
hop's fields, upstream names and defaults instead of comparing kind names.

Every hop holds the same few timing fields (seconds); a kind lists the ones it has, each with
the setting's upstream name, and its default where the proxy has one:

- `client_idle_s`: how long it keeps an idle connection from the hop in front open (a
  server's keep-alive timeout);
- `upstream_idle_s`: how long it keeps an idle pooled connection to the next hop for reuse;
- `request_timeout_s`: how long it waits for the next hop's response before answering 504;
  a kind whose default is no limit says so in `unbounded` (the field then stays unset);
- `worker_shutdown_s`, `shutdown_delay_s`, `grace_s`: how its own pod stops (ingress-nginx:
  old workers are killed `worker-shutdown-timeout` after every reload);
- `drain_s`: how long a mesh proxy keeps serving after SIGTERM;
- `app_waits` (true/false, not seconds): a mesh proxy holds the app's containers back until it
  is ready, so the app never starts with no proxy to pass its traffic.

A field the kind has and the config leaves unset takes the kind's default (a finding names it
as the default); a field the kind has no default for stays unknown, and the rules that need it
are skipped with its path. Sources, per value, beside each row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, Mapping

HopField = Literal["client_idle_s", "upstream_idle_s", "request_timeout_s", "worker_shutdown_s",
                   "shutdown_delay_s", "grace_s", "drain_s", "app_waits"]
HOP_FIELDS: Final[tuple[HopField, ...]] = ("client_idle_s", "upstream_idle_s", "request_timeout_s",
                                          "worker_shutdown_s", "shutdown_delay_s", "grace_s", "drain_s",
                                          "app_waits")


@dataclass(frozen=True, slots=True)
class HopKind:
    name: str
    role: Literal["ingress", "mesh"]  # an ingress proxy (its own pods) or the pod's mesh proxy
    upstream: Mapping[str, str]  # model field → the setting's upstream name (the fields it has)
    defaults: Mapping[str, int]  # the fields the proxy sets when nothing says otherwise (`app_waits`: a bool)
    unbounded: frozenset[str] = frozenset()  # fields whose default is "no limit"
    reloads: bool = False  # any configuration change replaces its workers (`worker_shutdown_s`)
    ingress_class: str = ""  # its class by default: a hop with `routes` is an Ingress of it the stack writes
    source: str = ""


# ingress-nginx, from the controller's code (internal/ingress/controller/config/config.go,
# NewDefault; pkg/flags/flags.go) and its ConfigMap docs, which agree on these values:
# `keep-alive` 75 s toward clients (nginx keepalive_timeout); `upstream-keepalive-timeout` 60 s
# for the pooled upstream connections; `proxy-read-timeout` 60 s, the wait between two reads
# from the upstream (so the first byte too), also settable per Ingress by the
# `nginx.ingress.kubernetes.io/proxy-read-timeout` annotation as whole seconds (the annotation
# parser takes integers only: "60s" is refused and the ConfigMap's value used); nginx's
# `worker-shutdown-timeout` "240s": on a reload (any Ingress change) the old workers keep their
# connections until then and are then closed; `--shutdown-grace-period` 0 s, the wait after
# SIGTERM before nginx is told to stop; the chart's `controller.terminationGracePeriodSeconds`
# 300. (The docs' table gives `keep-alive-requests` 100 where the code has 1000; lockstep does
# not use it.)
INGRESS_NGINX: Final = HopKind(
    "ingress-nginx", "ingress",
    upstream={"client_idle_s": "keep-alive", "upstream_idle_s": "upstream-keepalive-timeout",
              "request_timeout_s": "proxy-read-timeout", "worker_shutdown_s": "worker-shutdown-timeout",
              "shutdown_delay_s": "--shutdown-grace-period", "grace_s": "terminationGracePeriodSeconds"},
    defaults={"client_idle_s": 75, "upstream_idle_s": 60, "request_timeout_s": 60, "worker_shutdown_s": 240,
              "shutdown_delay_s": 0, "grace_s": 300},
    reloads=True, ingress_class="nginx",  # `--ingress-class` and the chart's IngressClass: "nginx"
    source="ingress-nginx ConfigMap docs and config.go defaults; the chart's controller.terminationGracePeriodSeconds",
)

# Envoy as Istio configures it: `DestinationRule.trafficPolicy.connectionPool.http.idleTimeout`
# is 1 h unless set (destination_rule.proto; HTTP/2 PINGs do not count as activity);
# ProxyConfig `terminationDrainDuration` is 5 s (mesh/v1alpha1/proxy.proto; per pod through the
# `proxy.istio.io/config` annotation); a VirtualService `timeout` is disabled unless set, and
# the sidecar's inbound route has none (istio #33209), so such a hop bounds no request; the HTTP
# connection manager's `idle_timeout` toward downstream clients is Envoy's default of 1 h (Envoy
# timeouts FAQ), which Istio leaves in place unless ISTIO_META_IDLE_TIMEOUT says otherwise
# (reported in istio #41328; not read from Istio's code).
_ENVOY_UPSTREAM: Final = {"client_idle_s": "HttpConnectionManager idle_timeout",
                          "upstream_idle_s": "DestinationRule connectionPool.http.idleTimeout",
                          "request_timeout_s": "VirtualService timeout",
                          "drain_s": "ProxyConfig terminationDrainDuration"}
_ENVOY_DEFAULTS: Final = {"client_idle_s": 3600, "upstream_idle_s": 3600, "drain_s": 5}
# Whether the sidecar holds the app back: ProxyConfig `holdApplicationUntilProxyStarts`, off
# unless set (istio #11130, the 1.7 release note adding it: "disabled by default"), or a native
# sidecar (a restartable init container the kubelet starts, and waits for, before the app). The
# native mode is istiod's `ENABLE_NATIVE_SIDECARS`, on by default from Istio 1.27 where the
# cluster runs sidecar containers, off before; per pod, the `sidecar.istio.io/nativeSidecar`
# annotation overrides it. With neither stated it depends on the installation: no default.
ISTIO_SIDECAR_UPSTREAM: Final = {**_ENVOY_UPSTREAM,
                                 "app_waits": "ProxyConfig holdApplicationUntilProxyStarts or a native sidecar"}
ISTIO_GATEWAY: Final = HopKind("istio-gateway", "ingress", _ENVOY_UPSTREAM, _ENVOY_DEFAULTS,
                               unbounded=frozenset({"request_timeout_s"}),
                               source="Istio DestinationRule, ProxyConfig and VirtualService references")
ISTIO_SIDECAR: Final = HopKind("istio-sidecar", "mesh", ISTIO_SIDECAR_UPSTREAM, _ENVOY_DEFAULTS,
                               unbounded=frozenset({"request_timeout_s"}),
                               source="Istio DestinationRule, ProxyConfig and VirtualService references")

# The Linkerd proxy: `config.alpha.linkerd.io/proxy-wait-before-exit-seconds` is 0 unless set
# (the chart's proxy.waitBeforeExitSeconds): the proxy stops on SIGTERM at once. Its HTTP/1
# connection pools drop idle connections after 3 s, inbound (toward the app) and outbound alike
# (linkerd2-proxy linkerd/app/src/env.rs, LINKERD2_PROXY_INBOUND_HTTP1_CONNECTION_POOL_IDLE_TIMEOUT;
# no annotation sets it). How long it keeps an idle connection from the hop in front is not
# documented: it stays unknown. `config.linkerd.io/proxy-await` holds the app until the proxy is
# ready, enabled unless set to "disabled" (Linkerd 2.10 release notes, which added it on by
# default; the proxy configuration reference).
LINKERD_PROXY: Final = HopKind(
    "linkerd-proxy", "mesh",
    upstream={"client_idle_s": "inbound idle timeout", "upstream_idle_s": "HTTP/1 connection pool idle timeout",
              "drain_s": "config.alpha.linkerd.io/proxy-wait-before-exit-seconds",
              "app_waits": "config.linkerd.io/proxy-await"},
    defaults={"upstream_idle_s": 3, "drain_s": 0, "app_waits": True},
    source="Linkerd proxy configuration reference; linkerd2-proxy env.rs",
)

HOP_KINDS: Final[Mapping[str, HopKind]] = {k.name: k for k in (INGRESS_NGINX, ISTIO_GATEWAY, ISTIO_SIDECAR,
                                                                LINKERD_PROXY)}


def describe(field: str, what: str) -> str:
    """A hop field's config documentation: what it is, then each kind's setting and default,
    from the table (docs/CONFIG.md prints it), so no default is typed twice."""
    parts = []
    for kind in HOP_KINDS.values():
        if field in kind.upstream:
            # str(True).lower(): a bool default in YAML's spelling; a number is unchanged
            default = ("none" if field in kind.unbounded
                       else str(kind.defaults[field]).lower() if field in kind.defaults else "unknown")
            parts.append(f"{kind.name}: {kind.upstream[field]}, default {default}")
    return f"{what} ({'; '.join(parts)})"

