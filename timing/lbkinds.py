"""What differs between load-balancer kinds, as data: one `LbKind` per kind.

Code asks the table (`KINDS[lb.kind]`, `kind_of(protocol)`) instead of comparing kind names.
Adding a kind (ingress-nginx, an Envoy gateway, EKS Auto Mode's ALB/NLB) is a row here plus
its reader (docs/CONTRIBUTING.md).

Sources, per value:
- target-group protocols and health-check defaults of a group created through the API:
  ELBv2 `CreateTargetGroup` (HTTP/HTTPS groups: interval 30, timeout 5, healthy 5, unhealthy 2;
  TCP/TLS: interval 30, timeout 10, healthy 5, unhealthy 2);
- what the AWS Load Balancer Controller uses when an annotation is absent: its Ingress
  annotations (`healthcheck-interval-seconds` 15, `healthcheck-timeout-seconds` 5, threshold
  counts 2 and 2, `target-type` instance, ALB `idle_timeout.timeout_seconds` 60) and Service
  annotations (NLB `healthcheck-interval` 10, `healthcheck-timeout` 10, thresholds 3 and 3,
  `nlb-target-type` instance, success codes 200-399 for HTTP checks);
- idle timeouts: ALB `idle_timeout.timeout_seconds` 1–4000 (ALB attributes); NLB TCP listener
  `tcp.idle_timeout.seconds` 60–6000, default 350, TLS listeners fixed at 350 ("Update the TCP
  idle timeout for your Network Load Balancer listener");
- slow start (`slow_start.duration_seconds` 30–900) exists for ALB target groups only;
- how long a load balancer takes to act on (de)registration: INVARIANTS.md (ALB ~15 s, NLB up
  to ~120 s; LBC issues #1719, #2366).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Mapping

from lockstep.timing import limits as L


@dataclass(frozen=True, slots=True)
class LbKind:
    name: str
    protocols: tuple[str, ...]  # target-group protocols of this kind
    http_protocols: tuple[str, ...]  # protocols it speaks HTTP to targets with (keep-alive applies)
    health_check_protocols: tuple[str, ...]  # what its health checks may use
    health_check_protocol: str  # the API's default health-check protocol
    http_matcher: str  # the controller's default success codes for an HTTP(S) check
    api_defaults: Mapping[str, int]  # health check of a target group created directly
    lbc_defaults: Mapping[str, int | str]  # what the controller uses without annotations
    propagation: Mapping[str, int]  # (de)registration propagation delays
    idle_timeout: Mapping[str, L.Range]  # idle-timeout range by protocol (lo == hi: fixed)
    idle_timeout_default: Mapping[str, int]  # where the LB has one without configuration
    idle_timeout_from_lb: bool  # set on the load balancer (an attribute the controller annotates)
    slow_start: bool
    timeout_below_interval: bool  # the health-check timeout must be below the interval
    attaches_by: str  # "listener rule" (path routing on a shared listener) or "listener"
    annotation_prefix: str
    annotations: Mapping[str, tuple[str, ...]]  # model field → the controller annotation(s) that set it
    annotated_protocol: str | None  # the protocol the protocol annotation's presence means (None: its value)
    health_check_follows_protocol: bool  # the default health-check protocol is the group's own
    legacy_ip_type: str | None  # a legacy `type` annotation value meaning IP targets
    # the target group has the connection termination attributes of an unhealthy or deregistered
    # target (`target_health_state.unhealthy.*`, `deregistration_delay.connection_termination.enabled`:
    # NLB target groups only, ELBv2 target group attributes)
    connection_termination: bool = False
    # the clients' HTTP/2 connection goes through to the target, pings and all (an NLB passes TCP
    # through); an ALB ends it, and "does not support HTTP/2 PING frames: these do not reset the
    # connection idle timeout" (ALB attributes doc, "Connection idle timeout")
    passes_http2_through: bool = False


ALB: Final = LbKind(
    name="alb", protocols=("HTTP", "HTTPS"), http_protocols=("HTTP", "HTTPS"),
    health_check_protocols=("HTTP", "HTTPS"), health_check_protocol="HTTP", http_matcher="200",
    api_defaults={"interval_s": 30, "timeout_s": 5, "healthy_threshold": 5, "unhealthy_threshold": 2},
    lbc_defaults={"interval_s": 15, "timeout_s": 5, "healthy_threshold": 2, "unhealthy_threshold": 2,
                  "target_type": "instance", "idle_timeout_s": 60},
    propagation={"deregistration_propagation_s": 15, "registration_propagation_s": 15},
    idle_timeout={"HTTP": L.ALB_IDLE_TIMEOUT, "HTTPS": L.ALB_IDLE_TIMEOUT}, idle_timeout_default={},
    idle_timeout_from_lb=True, slow_start=True, timeout_below_interval=True, attaches_by="listener rule",
    annotation_prefix="alb.ingress.kubernetes.io/",
    annotations={"lb.target_type": ("target-type",), "lb.protocol": ("backend-protocol",),
                 "lb.health_check.protocol": ("healthcheck-protocol",), "lb.health_check.port": ("healthcheck-port",),
                 "lb.health_check.path": ("healthcheck-path",), "lb.health_check.matcher": ("success-codes",),
                 "lb.health_check.interval_s": ("healthcheck-interval-seconds",),
                 "lb.health_check.timeout_s": ("healthcheck-timeout-seconds",),
                 "lb.health_check.healthy_threshold": ("healthy-threshold-count",),
                 "lb.health_check.unhealthy_threshold": ("unhealthy-threshold-count",),
                 "lb.deregistration_delay_s": ("target-group-attributes",),
                 "lb.slow_start_s": ("target-group-attributes",), "lb.idle_timeout_s": ("load-balancer-attributes",)},
    annotated_protocol=None, health_check_follows_protocol=True, legacy_ip_type=None,
)
NLB: Final = LbKind(
    name="nlb", protocols=("TCP", "TLS"), http_protocols=(),
    health_check_protocols=("TCP", "HTTP", "HTTPS"), health_check_protocol="TCP", http_matcher="200-399",
    api_defaults={"interval_s": 30, "timeout_s": 10, "healthy_threshold": 5, "unhealthy_threshold": 2},
    lbc_defaults={"interval_s": 10, "timeout_s": 10, "healthy_threshold": 3, "unhealthy_threshold": 3,
                  "target_type": "instance"},
    propagation={"deregistration_propagation_s": 120, "registration_propagation_s": 120},
    idle_timeout={"TCP": L.NLB_TCP_IDLE_TIMEOUT, "TLS": L.Range(L.NLB_IDLE_TIMEOUT_DEFAULT, L.NLB_IDLE_TIMEOUT_DEFAULT)},
    idle_timeout_default={"TCP": L.NLB_IDLE_TIMEOUT_DEFAULT, "TLS": L.NLB_IDLE_TIMEOUT_DEFAULT},
    idle_timeout_from_lb=False, slow_start=False, timeout_below_interval=False, attaches_by="listener",
    annotation_prefix="service.beta.kubernetes.io/aws-load-balancer-",
    annotations={"lb.target_type": ("nlb-target-type", "type"), "lb.protocol": ("ssl-cert",),
                 "lb.health_check.protocol": ("healthcheck-protocol",), "lb.health_check.port": ("healthcheck-port",),
                 "lb.health_check.path": ("healthcheck-path",), "lb.health_check.matcher": ("healthcheck-success-codes",),
                 "lb.health_check.interval_s": ("healthcheck-interval",),
                 "lb.health_check.timeout_s": ("healthcheck-timeout",),
                 "lb.health_check.healthy_threshold": ("healthcheck-healthy-threshold",),
                 "lb.health_check.unhealthy_threshold": ("healthcheck-unhealthy-threshold",),
                 "lb.deregistration_delay_s": ("target-group-attributes",)},
    # a certificate makes the listener TLS (its idle timeout is then fixed); `type: nlb-ip` is the
    # controller's legacy spelling of IP targets (LBC Service annotations)
    annotated_protocol="TLS", health_check_follows_protocol=False, legacy_ip_type="nlb-ip",
    connection_termination=True, passes_http2_through=True,
)
KINDS: Final[dict[str, LbKind]] = {k.name: k for k in (ALB, NLB)}
PROTOCOLS: Final = tuple(p for k in KINDS.values() for p in k.protocols)
SLOW_START_KINDS: Final = ", ".join(k.name.upper() for k in KINDS.values() if k.slow_start)  # for messages


def kind_of(protocol: object) -> LbKind | None:
    """The kind whose target groups use `protocol` (None: a protocol no kind models)."""
    return next((k for k in KINDS.values() if protocol in k.protocols), None)
