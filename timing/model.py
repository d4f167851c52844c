"""The typed timing model: every number lockstep deploys or reasons about.

Frozen pydantic v2 models with `extra="forbid"`. Units are in the field names (`_s` = whole
seconds). Ranges come from `timing.limits` (the API limits), so an impossible value is
rejected with its field path before any rule runs. Defaults exist only where they are the
value that will be deployed (Kubernetes' own defaults, which `infra/` writes out
explicitly) or a documented environmental fact (propagation delays, INVARIANTS.md);
`lockstep plan` prints every resolved number.

Cross-timeout rules are not here and the model imports none of them: they are plain
functions in `timing.invariants`, and validating a stack's numbers is a call
(`timing.invariants.validate`), not a model hook.

The module is long because it is one schema: every `lockstep:` key with its range and
description, in the order `docs/CONFIG.md` prints them; split across files it would scatter
the config's documentation.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    model_validator,
)

from lockstep.timing import limits as L
from lockstep.timing.controllers import LBC_ATTACHED
from lockstep.timing.hopkinds import HOP_FIELDS, HOP_KINDS, describe
from lockstep.timing.lbkinds import KINDS
from lockstep.timing.references import reference_errors
from lockstep.timing.workloads import WORKLOAD_KINDS


def _int(r: L.Range) -> Any:
    # Runs while the class bodies are built, at import, before mutmut picks a mutant, so its
    # mutants can never be live; the ranges are pinned by tests/timing/test_model.py instead.
    return Annotated[int, Field(ge=r.lo, le=r.hi, strict=True)]  # pragma: no mutate


Seconds = _int(L.SECONDS)
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]
Percent = Annotated[str, StringConstraints(pattern=r"^(100|[1-9]?[0-9])%$")]
IntOrPercent = Annotated[int, Field(ge=0, le=L.REPLICAS.hi, strict=True)] | Percent
KubeVersion = Annotated[str, StringConstraints(pattern=r"^1\.[0-9]{1,2}$")]
RuleId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)+$")]


class Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


# ---- application facts -----------------------------------------------------------------
class AppFacts(Strict):
    """What the application does; no manifest says it. `null` = unknown (rules that need
    it are reported as skipped, never guessed)."""

    warmup_s: Seconds | None = Field(description="start to first successful readiness check")
    max_request_s: Seconds | None = Field(description="longest request the service serves")
    max_recovery_s: Seconds | None = Field(description="agreed budget to regain LB health")
    keepalive_s: Seconds | None = Field(description="server's idle keep-alive timeout")
    catch_up_s: Seconds | None = Field(description="consumer lag catch-up after an outage")


# ---- load balancer -----------------------------------------------------------------------
class HealthCheck(Strict):
    protocol: Literal["HTTP", "HTTPS", "TCP"]
    path: str | None = Field(default=None, description="HTTP(S) only")
    port: Literal["traffic-port"] | _int(L.PORT) = "traffic-port"
    matcher: str | None = Field(default=None, description="HTTP codes, e.g. '200' (HTTP only)")
    interval_s: _int(L.HC_INTERVAL)
    timeout_s: _int(L.HC_TIMEOUT)
    healthy_threshold: _int(L.HC_THRESHOLD)
    unhealthy_threshold: _int(L.HC_THRESHOLD)


RemovalPath = Literal["deregistration", "endpoints", "health_check"]


class LoadBalancer(Strict):
    kind: Literal["alb", "nlb"]
    target_type: Literal["ip", "instance"]
    protocol: Literal["HTTP", "HTTPS", "TCP", "TLS"]
    port: _int(L.PORT) = Field(description="target group port (the container port for IP targets)")
    vpc_id: str | None = None
    attach_to_arn: str | None = Field(
        default=None,
        description="ALB listener ARN (a listener rule is created) or NLB load balancer ARN "
        "(a listener is created); a target group attached to nothing never reports healthy; unset for a "
        "canary routed by the ALB (argo.traffic_routing alb): the controller attaches the groups it makes "
        "from the Ingress infra renders",
    )
    listener_port: _int(L.PORT) | None = None
    rule_priority: Annotated[int, Field(ge=1, le=50000, strict=True)] | None = None
    path_patterns: tuple[str, ...] = ("/*",)
    idle_timeout_s: _int(L.IDLE_TIMEOUT) = Field(
        description="the LB's idle timeout (ALB attribute 1–4000; NLB TCP listener 60–6000, default 350; "
        "TLS fixed 350); the kind's own range is a rule's to judge")
    health_check: HealthCheck
    deregistration_delay_s: _int(L.DEREGISTRATION_DELAY)
    slow_start_s: _int(L.Range(0, L.SLOW_START.hi)) = 0
    removal: tuple[RemovalPath, ...] = Field(min_length=1)
    deregistration_propagation_s: _int(L.PROPAGATION)
    registration_propagation_s: _int(L.PROPAGATION)
    endpoint_propagation_s: _int(L.PROPAGATION) = L.ENDPOINT_PROPAGATION_DEFAULT
    # Node disruptions (issue 13). The Service's `spec.externalTrafficPolicy` defaults to
    # Cluster (Kubernetes Service API); with Local, an instance target is a node only while it
    # runs a ready local pod, which the LB learns from the node's healthCheckNodePort.
    external_traffic_policy: Literal["Cluster", "Local"] = Field(
        default="Cluster", description="the Service's externalTrafficPolicy (instance targets: Local makes the "
        "LB health-check the node's healthCheckNodePort)")
    # NLB target group attributes; the defaults are the ELBv2 API's (API reference, target group
    # attributes): connections to an unhealthy target are reset (true), with no draining interval
    # (0, settable only with termination off), and a deregistered target's connections are left
    # open after the delay (false). Those are the TCP/TLS defaults, the protocols lockstep
    # models; UDP and TCP_UDP groups differ (deregistration termination defaults to true there).
    unhealthy_connection_termination: bool = Field(
        default=True, description="NLB: target_health_state.unhealthy.connection_termination.enabled")
    unhealthy_draining_interval_s: _int(L.NLB_UNHEALTHY_DRAINING) = Field(
        default=0, description="NLB: target_health_state.unhealthy.draining_interval_seconds (only with "
        "unhealthy_connection_termination false)")
    deregistration_connection_termination: bool = Field(
        default=False, description="NLB: deregistration_delay.connection_termination.enabled")
    # Fields no input states (a TargetGroupBinding whose target group the input lacks): each
    # holds the lowest value its API range allows, and `derived.lb_field` marks it unknown, so a
    # rule decides only where that bound decides (`timing.bind.lbs.unbound_lb`). Not configurable.
    _unknown: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def unknown(self) -> frozenset[str]:
        return self._unknown

    @model_validator(mode="before")
    @classmethod
    def _documented_defaults(cls, data: Any) -> Any:
        # Propagation delays depend on the LB kind, and the removal path on the target type
        # (INVARIANTS.md); fill them in so the frozen model holds the numbers rules use.
        if isinstance(data, dict):
            data = fill_lb_defaults(data)
        return data


def fill_lb_defaults(data: dict[str, Any]) -> dict[str, Any]:
    kind = KINDS.get(data["kind"]) if isinstance(data.get("kind"), str) else None
    out = dict(data)
    # A kind that is not a string (a list, a mapping) is left for the field to refuse.
    if kind is not None:
        for key, value in kind.propagation.items():
            out.setdefault(key, value)
        protocol = out.get("protocol")
        if isinstance(protocol, str) and protocol in kind.idle_timeout_default:
            out.setdefault("idle_timeout_s", kind.idle_timeout_default[protocol])
    if "removal" not in out and out.get("target_type") in ("ip", "instance"):
        out["removal"] = ("deregistration",) if out["target_type"] == "ip" else ("endpoints",)
    return out


# ---- probes ------------------------------------------------------------------------------
class HttpGet(Strict):
    path: str = Field(pattern=r"^/")
    port: _int(L.PORT)
    scheme: Literal["HTTP", "HTTPS"] = "HTTP"


class TcpSocket(Strict):
    port: _int(L.PORT)


class Exec(Strict):
    command: tuple[str, ...] = Field(min_length=1)


class Grpc(Strict):
    port: _int(L.PORT)


class Probe(Strict):
    http_get: HttpGet | None = None
    tcp_socket: TcpSocket | None = None
    exec: Exec | None = None
    grpc: Grpc | None = None
    initial_delay_s: _int(L.PROBE_INITIAL_DELAY) = L.K8S_DEFAULTS["initial_delay_s"]
    period_s: _int(L.PROBE_PERIOD) = L.K8S_DEFAULTS["period_s"]
    timeout_s: _int(L.PROBE_TIMEOUT) = L.K8S_DEFAULTS["timeout_s"]
    success_threshold: _int(L.PROBE_THRESHOLD) = L.K8S_DEFAULTS["success_threshold"]
    failure_threshold: _int(L.PROBE_THRESHOLD) = L.K8S_DEFAULTS["failure_threshold"]

    @model_validator(mode="after")
    def _one_handler(self) -> Probe:
        handlers = [h for h in (self.http_get, self.tcp_socket, self.exec, self.grpc) if h]
        if len(handlers) != 1:
            raise ValueError("a probe needs exactly one handler: http_get, tcp_socket, exec or grpc")
        return self


class Probes(Strict):
    startup: Probe | None = None
    readiness: Probe | None = None
    liveness: Probe | None = None

    @model_validator(mode="after")
    def _success_one(self) -> Probes:
        # The Kubernetes API rejects any other value for these two probes.
        for name in ("startup", "liveness"):
            probe = getattr(self, name)
            if probe is not None and probe.success_threshold != 1:
                raise ValueError(f"{name}.success_threshold must be 1 (Kubernetes API rule)")
        return self


# ---- shutdown, rollout, disruption ---------------------------------------------------------
class Shutdown(Strict):
    drain_s: Seconds | None = Field(
        description="preStop sleep, or seconds served while failing the LB check; null: unknown (what `audit` "
        "reads from a preStop command that is not a sleep, without a lockstep.dev/drain-seconds annotation): "
        "a stack config must state it")
    finish_s: Seconds | None = Field(description="time to finish in-flight work after the server stops accepting")
    grace_s: _int(L.GRACE) = Field(description="terminationGracePeriodSeconds")
    node_termination_budget_s: Seconds | None = Field(
        default=None, description="e.g. 120 for spot interruptions: caps the grace period")
    prestop: Literal["sleep", "exec", "none", "command"] | None = Field(
        default=None,
        description="null: the native `sleep` action on Kubernetes >= 1.30, `exec sleep` before; "
        "command: an `exec` hook that runs something other than sleep (read by `audit`, never deployed)",
    )


class Sidecar(Strict):
    name: str = "istio-proxy"
    drain_s: Seconds = Field(description="how long the mesh proxy keeps serving after SIGTERM")


# RabbitMQ's `consumer_timeout` is 1800000 ms (30 min) unless the broker's config says
# otherwise (RabbitMQ consumer acknowledgement docs, "Delivery Acknowledgement Timeout").
RABBITMQ_CONSUMER_TIMEOUT_S = 1800
# RDS Proxy closes a client connection idle 1800 s unless `IdleClientTimeout` says otherwise
# (RDS user guide, "RDS Proxy connection considerations").
RDS_PROXY_IDLE_CLIENT_TIMEOUT_S = 1800


class BrokerLink(Strict):
    """A client's AMQP connection to its broker (`amqp-heartbeat-under-idle`). The heartbeat
    timeout in effect is negotiated: RabbitMQ proposes 60 s; its Java, .NET and Erlang clients
    take the lower of two non-zero values (either zero: the other); pika takes its own value
    when it states one (pika/connection.py `_tune_heartbeat_timeout`). Frames go every
    heartbeat / 2 (RabbitMQ heartbeats guide)."""

    heartbeat_s: _int(L.Range(0, 65535)) | None = Field(
        default=None, description="the AMQP heartbeat timeout in effect on the link (0: heartbeats off; null: unknown)")
    path_idle_s: Seconds | None = Field(
        default=None, description="the shortest idle timeout of any hop between the client and the broker (an NLB "
        f"TCP listener's `tcp.idle_timeout.seconds`, {L.NLB_IDLE_TIMEOUT_DEFAULT} by default); null: unknown")
    manual_ack: bool = Field(default=True, description="the client acknowledges deliveries itself (false: a "
                             "publisher, or a consumer with automatic acknowledgement)")
    consumer_timeout_s: Seconds = Field(default=RABBITMQ_CONSUMER_TIMEOUT_S, description="the broker's "
                                        "`consumer_timeout`: it closes the channel of a delivery unacknowledged this long")
    max_unacked_s: Seconds | None = Field(default=None, description="the longest the client holds a delivery "
                                          "before acknowledging it (its longest message handling); null: unknown")


class HeartbeatBrokerLink(BrokerLink):
    """lockstep's own heartbeat service's link: pika keeps the heartbeat it asks for, and its
    reply consumer acknowledges automatically."""

    heartbeat_s: _int(L.Range(0, 65535)) | None = Field(
        default=30, description="the AMQP heartbeat the service asks for, which pika keeps (0: off; null: take "
        "the broker's proposal, RabbitMQ's 60 s unless its config says otherwise)")
    manual_ack: bool = False


# gRPC servers refuse keepalive pings closer together than 5 min unless told otherwise: gRPC
# core's GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS is 300000 (its keepalive guide),
# grpc-go's `keepalive.EnforcementPolicy.MinTime` 5 min and grpc-java's `permitKeepAliveTime`
# 5 min; a client pinging more often is sent GOAWAY `too_many_pings` (grpc/grpc #9902, grpc-go
# #2443). A client's own keepalive is off by default (gRPC core: INT_MAX).
GRPC_PERMIT_KEEPALIVE_S = 300


class GrpcServing(Strict):
    """The app serves gRPC on long-lived client connections that come through its load balancer
    (`grpc-keepalive-fits-path`). An NLB passes the clients' HTTP/2 connection through, pings
    and all; an ALB ends it and does not count HTTP/2 PING frames as activity (ALB attributes
    doc, "Connection idle timeout")."""

    client_keepalive_s: Seconds | None = Field(
        default=None, description="the clients' keepalive time: a PING after this long without activity "
        "(GRPC_ARG_KEEPALIVE_TIME_MS, grpc-go `ClientParameters.Time`, grpc-java `keepAliveTime`); 0: off, "
        "gRPC's default; null: unknown")
    permit_keepalive_s: Seconds = Field(
        default=GRPC_PERMIT_KEEPALIVE_S, description="the shortest ping interval the server the clients' "
        "connection ends at accepts (GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, grpc-go "
        "`EnforcementPolicy.MinTime`, grpc-java `permitKeepAliveTime`); pings closer together get GOAWAY "
        "`too_many_pings`")
    max_silence_s: Seconds | None = Field(
        default=None, description="the longest a client's connection carries no message (between calls, or "
        "on a quiet stream): what an ALB, which does not count pings, sees as idle; null: unknown")
    path_idle_s: Seconds | None = Field(
        default=None, description="another idle timeout on the clients' way to the app besides the service's "
        "load balancer (a NAT gateway, a firewall); without a load balancer the only one (null there: unknown)")


class ConnectionPool(Strict):
    """A pool of client connections the app keeps to what it depends on (a database, RDS Proxy,
    PgBouncer) (`pool-retires-before-path`). A pooled connection sits idle until the pool
    touches it (its keep-alive) or retires it (its maximum lifetime): that must come before any
    idle timeout on the way closes it, or the pool hands out a dead connection. HikariCP: set
    `maxLifetime` several seconds shorter than any infrastructure limit (its README; default
    30 min, `keepaliveTime` off before 5.1)."""

    name: Name = Field(description="what the pool connects to, for findings")
    max_lifetime_s: Seconds | None = Field(
        default=None, description="the pool retires a connection this long after opening it (HikariCP "
        "`maxLifetime`, pgx `MaxConnLifetime`, SQLAlchemy `pool_recycle`); 0: never; null: unknown")
    keepalive_s: Seconds | None = Field(
        default=None, description="the pool touches a connection idle this long (HikariCP `keepaliveTime`, "
        "TCP keep-alive probes); 0: never; null: unknown")
    path_idle_s: Seconds | None = Field(
        default=None, description="the shortest idle timeout of the network on the way (an NLB TCP listener's "
        f"{L.NLB_IDLE_TIMEOUT_DEFAULT} s by default, a NAT gateway, a firewall); 0: none; null: unknown")
    server_idle_s: Seconds | None = Field(
        default=None, description="the server or its proxy closes a client connection idle this long (RDS Proxy "
        f"`IdleClientTimeout`, {RDS_PROXY_IDLE_CLIENT_TIMEOUT_S} s by default; PgBouncer `client_idle_timeout`, "
        "off by default); 0: none; null: unknown")


class Route(Strict):
    """One rule of an Ingress the stack writes for an ingress proxy hop: requests for this host
    and path go to the service."""

    host: str | None = Field(default=None, min_length=1, max_length=253,
                             description="the host the rule matches (null: every host)")
    path: str = Field(default="/", pattern=r"^/", description="the path the rule matches")
    path_type: Literal["Prefix", "Exact", "ImplementationSpecific"] = Field(
        default="Prefix", description="how the path matches (the Ingress API's pathType)")


class Hop(Strict):
    """One proxy between the load balancer and the app (`timing.hopkinds` has each kind's fields,
    upstream names and defaults): a field the kind lacks is refused, one it has and the config
    leaves unset takes the kind's default (`defaulted` names them), or stays unknown (null)."""

    kind: Literal[tuple(HOP_KINDS)]  # type: ignore[valid-type]  # the kinds of `timing.hopkinds`
    client_idle_s: Seconds | None = Field(default=None, description=describe(
        "client_idle_s", "how long it keeps an idle connection from the hop in front open"))
    upstream_idle_s: Seconds | None = Field(default=None, description=describe(
        "upstream_idle_s", "how long it keeps an idle pooled connection to the next hop"))
    request_timeout_s: Seconds | None = Field(default=None, description=describe(
        "request_timeout_s", "how long it waits for the next hop's response"))
    worker_shutdown_s: Seconds | None = Field(default=None, description=describe(
        "worker_shutdown_s", "how long a reload's old workers may finish before they are killed"))
    shutdown_delay_s: Seconds | None = Field(default=None, description=describe(
        "shutdown_delay_s", "how long the proxy keeps accepting once its pod is terminating: its preStop's sleep, "
        "then the wait before it is told to stop"))
    grace_s: _int(L.GRACE) | None = Field(default=None, description=describe(
        "grace_s", "the proxy pods' terminationGracePeriodSeconds"))
    drain_s: Seconds | None = Field(default=None, description=describe(
        "drain_s", "how long the mesh proxy keeps serving after SIGTERM"))
    app_waits: bool | None = Field(default=None, description=describe(
        "app_waits", "whether the app's containers start only once the mesh proxy is ready (null: unknown)"))
    routes: tuple[Route, ...] = Field(
        default=(), description="ingress-nginx: the stack writes an Ingress of the controller's class routing "
        "these to the service, with the hop's `proxy-read-timeout` as its annotation (empty: the Ingress is "
        "not the stack's; the controller's ConfigMap and pods never are)")
    ingress_class: str | None = Field(
        default=None, min_length=1, description="ingress-nginx: the written Ingress's class (null: the kind's, "
        "`nginx`)")
    lb: LoadBalancer | None = Field(
        default=None, description="ingress-nginx: the load balancer in front of the controller's pods (the NLB "
        "of its Service), its keys those of `lb`; described, never written by the stack (null: the controller's "
        "shutdown delay is not judged against it)")
    _defaulted: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def defaulted(self) -> frozenset[str]:
        """The fields the kind's default filled (the config left them unset)."""
        return self._defaulted

    @model_validator(mode="wrap")
    @classmethod
    def _kind_fields(cls, data: Any, handler: Any) -> Hop:
        kind = HOP_KINDS.get(data["kind"]) if isinstance(data, dict) and isinstance(data.get("kind"), str) else None
        if kind is None:
            return handler(data)  # not a mapping, or a kind for the field to refuse
        foreign = [f for f in HOP_FIELDS if data.get(f) is not None and f not in kind.upstream]
        foreign += [f for f in ("routes", "ingress_class", "lb") if data.get(f) and not kind.ingress_class]
        if foreign:
            raise ValueError(f"{foreign[0]}: {kind.name} has no such setting (it has: "
                             f"{', '.join(kind.upstream)})")
        filled = {f: v for f, v in kind.defaults.items() if data.get(f) is None}
        hop = handler({**data, **filled})
        hop._defaulted = frozenset(filled)
        return hop


class Rollout(Strict):
    max_surge: IntOrPercent = L.K8S_DEFAULTS["max_surge"]
    max_unavailable: IntOrPercent = L.K8S_DEFAULTS["max_unavailable"]
    min_ready_s: _int(L.MIN_READY) = L.K8S_DEFAULTS["min_ready_s"]
    progress_deadline_s: _int(L.PROGRESS_DEADLINE) = L.K8S_DEFAULTS["progress_deadline_s"]
    update_strategy: Literal["RollingUpdate", "OnDelete"] = Field(
        default="RollingUpdate", description="DaemonSet: OnDelete replaces a pod only when it is deleted (the "
        "rollout rules then have no rollout to judge); a DaemonSet's unstated max_unavailable is 1 and max_surge 0")


class ArgoRollout(Strict):
    """The service is an Argo Rollout (`argoproj.io/v1alpha1`): its ReplicaSets roll as a
    Deployment's do (the service's `kind` stays Deployment), and after the switch the old
    ReplicaSet is scaled down after `scale_down_delay_s`."""

    strategy: Literal["blueGreen", "canary"]
    traffic_routing: Literal["alb"] | None = Field(
        default=None, description="canary only: weights set on the ALB listener (trafficRouting.alb); "
        "null: a basic canary, weighted by pod counts (no scale-down delay applies)")
    scale_down_delay_s: Seconds = Field(
        default=L.ARGO_SCALE_DOWN_DELAY_DEFAULT,
        description="scaleDownDelaySeconds: after the switch, the old ReplicaSet waits this long before it is "
        "scaled down (blue-green, and canary with traffic routing)")
    abort_scale_down_delay_s: Seconds = Field(
        default=L.ARGO_SCALE_DOWN_DELAY_DEFAULT,
        description="abortScaleDownDelaySeconds: on abort, the new ReplicaSet waits this long before it is scaled "
        "down; 0: it is never scaled down")

    @model_validator(mode="after")
    def _routing(self) -> ArgoRollout:
        if self.strategy == "blueGreen" and self.traffic_routing is not None:
            raise ValueError("traffic_routing is a canary setting (blue-green switches the active Service)")
        return self


class Pdb(Strict):
    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    selector: dict[str, str] | None = Field(
        default=None, description="matchLabels; null: the workload's pod labels")

    @model_validator(mode="after")
    def _exactly_one(self) -> Pdb:
        if (self.min_available is None) == (self.max_unavailable is None):
            raise ValueError("set exactly one of min_available or max_unavailable")
        return self


class Hpa(Strict):
    min_replicas: _int(L.Range(1, L.REPLICAS.hi))
    max_replicas: _int(L.Range(1, L.REPLICAS.hi))
    target_cpu_percent: _int(L.Range(1, 1000)) = 70

    @model_validator(mode="after")
    def _ordered(self) -> Hpa:
        if self.max_replicas < self.min_replicas:
            raise ValueError("max_replicas must be >= min_replicas")
        return self


class ReadinessGate(Strict):
    """The AWS Load Balancer Controller's pod readiness gate. The defaults are what `infra/`
    deploys; `audit` and the policy pack fill them from what they observe."""

    namespace_labelled: bool = True
    injected_after_binding: bool | None = Field(
        default=True, description="the Service and TargetGroupBinding existed before the pods "
        "(the webhook injects the gate only at pod creation); null: unknown")
    declared: bool = Field(default=False, description="the pod template itself declares the gate "
                           "(no webhook injection needed)")


class Resources(Strict):
    cpu_request: str = "100m"
    memory_request: str = "128Mi"
    memory_limit: str | None = "512Mi"


class Hardening(Strict):
    run_as_non_root: bool = True
    run_as_user: Annotated[int, Field(ge=1, le=2147483647)] | None = 10001
    read_only_root_filesystem: bool = True
    drop_all_capabilities: bool = True


class Accept(Strict):
    id: RuleId
    reason: str = Field(min_length=3)


# ---- services --------------------------------------------------------------------------
class Service(Strict):
    name: Name
    namespace: Name = "default"
    kind: Literal["Deployment", "StatefulSet", "DaemonSet"]
    image: str = Field(min_length=1)
    container_port: _int(L.PORT)
    replicas: _int(L.REPLICAS) | None = Field(
        default=None, description="null only when an HPA owns them; DaemonSet: the nodes it runs on (what `audit` "
        "and the pack read from the lockstep.dev/nodes annotation), null: unknown (rules that need the pod count "
        "are skipped); a Deployment or StatefulSet must state it")
    labels: dict[str, str] = Field(default_factory=dict, description="extra pod labels")
    name_label: bool = Field(
        default=True, description="pods also carry app.kubernetes.io/name=<name> (what infra "
        "deploys); extraction sets false, `labels` then being the pods' complete label set")
    app: AppFacts
    lb: LoadBalancer | None = None
    probes: Probes
    shutdown: Shutdown
    sidecar: Sidecar | None = None
    broker: BrokerLink | None = Field(default=None, description="the app's AMQP connection to its broker, if any")
    grpc: GrpcServing | None = Field(default=None, description="the app serves gRPC on long-lived client "
                                     "connections, if it does")
    pools: tuple[ConnectionPool, ...] = Field(default=(), description="the app's pools of connections to what it "
                                              "depends on")
    path: tuple[Hop, ...] = Field(default=(), description="the proxies between the load balancer and the app, "
                                  "outermost first (an ingress proxy, then the pod's mesh proxy): `sidecar` is "
                                  "the short form of a last mesh hop that states only its drain")
    rollout: Rollout = Rollout()
    pdb: Pdb | None = None
    hpa: Hpa | None = None
    readiness_gate: ReadinessGate | None = None
    argo: ArgoRollout | None = Field(default=None, description="the workload is an Argo Rollout (null: the "
                                     "workload `kind` says)")
    schedule_s: Seconds = Field(default=L.STATEFULSET_SCHEDULE_DEFAULT,
                                description="StatefulSet: scheduling + image pull of a replacement")
    resources: Resources = Resources()
    hardening: Hardening = Hardening()
    accept: tuple[Accept, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _kind_rollout_defaults(cls, data: Any) -> Any:
        # A kind whose rollout defaults are not the Deployment's (a DaemonSet's 1 unavailable, no
        # surge) gets them for what the rollout leaves unstated, so the model holds what deploys.
        # (A kind without such defaults gets an equal rollout back: the defaults are empty.)
        if not isinstance(data, dict):
            return data
        kind = WORKLOAD_KINDS.get(data["kind"]) if isinstance(data.get("kind"), str) else None
        defaults = kind.rollout_defaults if kind is not None else {}
        given = data.get("rollout")
        if isinstance(given, Rollout):
            # a copy, not a re-validation: a reader keeps out-of-range numbers for the rules to report
            unset = {k: v for k, v in defaults.items() if k not in given.model_fields_set}
            return {**data, "rollout": given.model_copy(update=unset)}
        if given is None or isinstance(given, dict):
            return {**data, "rollout": {**defaults, **(given or {})}}
        return data  # left for the field to refuse

    @model_validator(mode="after")
    def _replicas_owner(self) -> Service:
        kind = WORKLOAD_KINDS[self.kind]
        if self.hpa is not None and not kind.scalable:
            raise ValueError(f"hpa: a {self.kind} has no scale subresource (one pod per node): remove hpa")
        if self.replicas is None and self.hpa is None and not kind.count_may_be_unknown:
            raise ValueError("replicas is required unless an hpa owns the replica count")
        mesh = [i for i, h in enumerate(self.path) if HOP_KINDS[h.kind].role == "mesh"]
        if mesh and (self.sidecar is not None or len(mesh) > 1 or mesh[0] != len(self.path) - 1):
            raise ValueError(f"path[{mesh[0]}]: the pod's mesh proxy is one hop, the last of the path; "
                             "state it there or as `sidecar`, not both")
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"pools: {twice} is named twice; each pool needs its own name")
        if self.rollout.update_strategy not in kind.update_strategies:
            raise ValueError(f"rollout.update_strategy: {self.rollout.update_strategy} is not a {self.kind} "
                             f"strategy (allowed: {', '.join(kind.update_strategies)})")
        return self

    @model_validator(mode="before")
    @classmethod
    def _controller_attaches_canary(cls, data: Any) -> Any:
        return fill_canary_attachment(data)


def fill_canary_attachment(data: Any) -> Any:
    """A stack's canary routed by the ALB runs on the ALB the controller makes from the Ingress
    infra renders (`infra/ingress.py`): the controller attaches the target group, so an unset
    `lb.attach_to_arn` is filled as the audit reads such a group (`controllers.LBC_ATTACHED`).
    Only config input (mappings) is filled: the audit passes the LB it read, attached or not."""
    if not isinstance(data, dict):
        return data
    argo, lb = data.get("argo"), data.get("lb")
    if not (isinstance(argo, dict) and argo.get("traffic_routing") == "alb" and isinstance(lb, dict)):
        return data
    if lb.get("attach_to_arn") is not None:
        return data  # a stated ARN is for `timing.references` to refuse (the stack owns no listener)
    return {**data, "lb": {**lb, "attach_to_arn": LBC_ATTACHED}}


# ---- watchdog, heartbeat ---------------------------------------------------------------------
class Watchdog(Strict):
    name: Name = "watchdog"
    period_s: _int(L.Range(1, 86400))
    failures_before_action: _int(L.Range(1, 100))
    deploy_lock: str | None = Field(description="the lock the deploy takes too (e.g. a flock path)")
    watches: tuple[Name, ...] = Field(min_length=1, description="services it may restart")


class HeartbeatService(Strict):
    name: Name = "heartbeat"
    namespace: Name = "heartbeat"
    image: str = Field(min_length=1)
    replicas: _int(L.Range(1, 10))
    port: _int(L.PORT) = 8080
    observe_interval_s: _int(L.Range(1, 3600))
    publish_interval_s: _int(L.Range(1, 3600))
    client_timeout_s: _int(L.Range(1, 86400))
    beat_ttl_s: _int(L.Range(1, 86400))
    lease_duration_s: _int(L.Range(1, 3600)) = 15
    lease_renew_deadline_s: _int(L.Range(1, 3600)) = 10
    lease_retry_period_s: _int(L.Range(1, 3600)) = 2
    warmup_s: Seconds | None = Field(description="start to first successful readiness check; null only "
                                     "where no resource states it (audit, policies): a stack config must")
    probes: Probes
    min_ready_s: _int(L.MIN_READY) = 0
    shutdown: Shutdown
    rollout: Rollout = Rollout(max_surge=1, max_unavailable=0)
    pdb: Pdb | None = Pdb(max_unavailable=1)
    resources: Resources = Resources()
    hardening: Hardening = Hardening()
    commands_exchange: str = "lockstep.heartbeat.commands"
    beats_exchange: str = "lockstep.heartbeat.beats"
    observe_mode: Literal["watch", "poll"] = Field(
        default="poll", description="poll: list every observe_interval_s (the default, so a stack "
        "stating only observe_interval_s keeps its meaning); watch: list + watch the workloads (an "
        "event is acted on when it arrives; a relist every resync_period_s bounds what a stalled "
        "watch can miss, and the rules judge that bound)")
    resync_period_s: _int(L.Range(1, 86400)) = Field(
        default=300, description="watch mode: relist everything this often even when the watch is healthy")
    confirm_timeout_s: _int(L.Range(1, 3600)) = Field(
        default=5, description="how long one broker operation (connect, publish confirm) may take "
        "before the broker counts as failed (no beats)")
    ack_timeout_s: _int(L.Range(1, 3600)) = Field(
        default=5, description="how long the gateway may take to acknowledge an applied command "
        "before it counts as failed (no beats)")
    broker_secret_key: str = Field(default="rabbitmq_url",
                                   description="the `lockstep:` secret config key holding the AMQP URL")
    broker: HeartbeatBrokerLink = Field(default=HeartbeatBrokerLink(), description="its own AMQP link to the broker")

    @model_validator(mode="after")
    def _lease_order(self) -> HeartbeatService:
        # client-go's leader election refuses anything else.
        if not (self.lease_duration_s > self.lease_renew_deadline_s > self.lease_retry_period_s):
            raise ValueError("lease_duration_s > lease_renew_deadline_s > lease_retry_period_s required")
        return self


class AffectedPattern(Strict):
    sport_ids: tuple[Annotated[int, Field(ge=0)], ...] = ()
    match_statuses: tuple[str, ...] = ()
    required_sources: tuple[str, ...] = ()
    extra: dict[str, tuple[str | int, ...]] = Field(default_factory=dict)


class HeartbeatSpec(Strict):
    name: Name
    service: Name = Field(description="the watched service (a stack service name)")
    loss_time_s: _int(L.Range(1, 86400))
    recovery_time_s: Seconds
    max_outage_s: _int(L.Range(1, 86400)) | None = Field(
        description="the agreed outage budget; null only where no resource states it (audit, "
        "policies): a stack config must")
    affected: AffectedPattern


# ---- regional failover -------------------------------------------------------------------------
class Region(Strict):
    name: Name
    aws_region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
    role: Literal["primary", "secondary"]
    endpoint: str = Field(min_length=1, description="hostname clients connect to in this region")
    health_path: str = Field(default="/api/health", pattern=r"^/")
    health_port: _int(L.PORT) = 443
    weight: _int(L.Range(0, 255)) = 1
    lb_dns_name: str | None = Field(default=None, description="alias target (dns mode, alias records)")
    lb_zone_id: str | None = None


class FailoverTiming(Strict):
    """What the failover rules read. The policy pack and the audit build this much from a
    Route 53 health check and its record; what no resource states is null (unknown)."""

    mode: Literal["negotiate", "dns"]
    routing: Literal["failover", "weighted"] = "failover"
    entry_service: Name | None = Field(description="the regional entry service; null: not known (one health "
                                       "check alone names none)")
    check_interval_s: _int(L.Range(1, 3600)) = Field(description="negotiate: poll; dns: Route 53 request interval")
    failure_threshold: _int(L.Range(1, 100))
    ttl_s: _int(L.DNS_TTL) | None = Field(default=None, description="dns, non-alias records only")
    alias: bool = False
    client_reconnect_s: Seconds | None = Field(description="null: unknown (rules that need it are skipped)")
    client_dns_cache_s: Seconds | None = Field(
        default=None, description="dns: how long clients keep a resolved name before asking again (the JVM's "
        "`networkaddress.cache.ttl`, an SDK's or a resolver's cache); null: unknown (rules that need it are skipped)")
    rto_s: _int(L.Range(1, 86400)) | None = Field(description="null: unknown (rules that need it are skipped)")
    failback_checks: _int(L.Range(1, 100)) | None = Field(
        description="passing checks before the primary is used again; null: unknown")
    failback_close: Literal["never", "staggered", "immediate"] = "staggered"

    @model_validator(mode="after")
    def _ttl(self) -> FailoverTiming:
        if self.alias and self.ttl_s not in (None, L.R53_ALIAS_TTL):
            raise ValueError(f"alias records have a fixed {L.R53_ALIAS_TTL}s TTL: leave ttl_s unset")
        return self


class Failover(FailoverTiming):
    """A stack's failover: every timing fact stated (a stack config knows them), and the regions."""

    entry_service: Name = Field(description="the regional entry service (a stack service name)")
    client_reconnect_s: Seconds
    rto_s: _int(L.Range(1, 86400))
    failback_checks: _int(L.Range(1, 100)) = Field(description="passing checks before the primary is used again")
    hosted_zone_id: str | None = None
    record_name: str | None = None
    regions: tuple[Region, ...] = Field(min_length=2)

    @model_validator(mode="after")
    def _shape(self) -> Failover:
        if self.mode == "dns" and not self.alias and self.ttl_s is None:
            raise ValueError("dns mode without alias records needs ttl_s")
        if self.routing == "failover" and sorted(r.role for r in self.regions) != ["primary", "secondary"]:
            raise ValueError("failover routing needs exactly one primary and one secondary region")
        return self


# ---- node disruptions (issue 13) ----------------------------------------------------------------
class ClusterAutoscaler(Strict):
    max_graceful_termination_s: Seconds = Field(
        default=L.CA_MAX_GRACEFUL_TERMINATION_DEFAULT,
        description="--max-graceful-termination-sec: the longest a scale-down waits for a pod to stop (a "
        "longer pod grace is cut to it)")


class KarpenterNodePool(Strict):
    # Defaults from Karpenter's v1 NodePool API (kubernetes-sigs/karpenter, pkg/apis/v1
    # nodepool.go): terminationGracePeriod has none ("If left undefined, the controller will wait
    # indefinitely for pods to be drained"); disruption defaults to consolidateAfter 0s,
    # consolidationPolicy WhenEmptyOrUnderutilized and one budget of nodes 10%. Without a
    # karpenter.sh/capacity-type requirement the AWS provider launches on-demand (its cloud
    # provider tests: "should default to on-demand"); spot only when the requirement allows it.
    name: Name
    termination_grace_period_s: Seconds | None = Field(
        default=None, description="spec.template.spec.terminationGracePeriod; null: unset, Karpenter then "
        "waits for every pod however long (no node budget); set, it bypasses PDBs when it runs out and "
        "deletes a pod early enough for its own grace to end by then")
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        default="WhenEmptyOrUnderutilized", description="spec.disruption.consolidationPolicy")
    consolidate_after_s: Seconds = Field(default=0, description="spec.disruption.consolidateAfter (0s when "
                                         "the disruption block is left out)")
    budget_nodes: IntOrPercent = Field(
        default="10%", description="spec.disruption.budgets[].nodes, the most restrictive one (Karpenter's "
        "default budget is 10%)")
    capacity_types: tuple[Literal["spot", "on-demand"], ...] = Field(
        default=("on-demand",), min_length=1,
        description="values of the karpenter.sh/capacity-type requirement (on-demand when not required)")
    interruption_queue: bool = Field(
        default=False, description="Karpenter's settings.interruptionQueue is set: it drains a spot node when "
        "the interruption notice arrives (without it Karpenter does not act on the notice)")


class TerminationHandler(Strict):
    """aws-node-termination-handler: drains a node on a spot notice or an ASG lifecycle hook.
    Defaults from its pkg/config/config.go (pod grace -1, node grace in `timing.limits`); IMDS mode (a
    DaemonSet polling instance metadata) unless the queue processor is enabled."""

    mode: Literal["imds", "queue"] = "imds"
    pod_termination_grace_period_s: Seconds | None = Field(
        default=None, description="--pod-termination-grace-period; null: -1, the pod's own grace period; "
        "set, it replaces every drained pod's grace (kubectl drain --grace-period)")
    node_termination_grace_period_s: Seconds = Field(
        default=L.NTH_NODE_TERMINATION_GRACE_DEFAULT, description="--node-termination-grace-period: the drain's "
        "timeout, and how long before the event the drain starts (IMDS mode: below the "
        f"{L.SPOT_NOTICE_S} s spot notice it leaves pods only this long)")


class AsgLifecycleHook(Strict):
    heartbeat_timeout_s: _int(L.ASG_HOOK_TIMEOUT) = Field(
        default=L.ASG_HOOK_TIMEOUT_DEFAULT, description="the termination hook's HeartbeatTimeout: how long "
        "the instance waits in Terminating:Wait for the drain")


class KubeletShutdown(Strict):
    # KubeletConfiguration: both periods default to 0, which turns graceful node shutdown off
    # (Kubernetes docs, "Node Shutdowns"; the kubelet's nodeshutdown migrateConfig builds no
    # groups for 0). The kubelet raises logind's InhibitDelayMaxSec to shutdownGracePeriod itself
    # and does not start its shutdown manager when it cannot, which lockstep does not model.
    shutdown_grace_period_s: Seconds = Field(
        default=0, description="KubeletConfiguration shutdownGracePeriod; 0: no graceful node shutdown")
    shutdown_grace_period_critical_pods_s: Seconds = Field(
        default=0, description="shutdownGracePeriodCriticalPods: the part reserved for critical pods")

    @model_validator(mode="after")
    def _critical_within(self) -> KubeletShutdown:
        # The kubelet refuses a critical-pod share larger than the whole shutdown period (its
        # config validation: "shutdownGracePeriodCriticalPods ... must be <= shutdownGracePeriod",
        # checked while the GracefulNodeShutdown gate is on, the default since 1.21).
        if self.shutdown_grace_period_critical_pods_s > self.shutdown_grace_period_s:
            raise ValueError("shutdown_grace_period_critical_pods_s must be <= shutdown_grace_period_s")
        return self


class Nodes(Strict):
    """What removes nodes under the stack's pods. Each source is optional; the node budget of a
    pod is the smallest that a declared source grants (`timing.nodes.node_budget_s`)."""

    cluster_autoscaler: ClusterAutoscaler | None = None
    karpenter: tuple[KarpenterNodePool, ...] = ()
    asg_spot: bool = Field(default=False, description="spot capacity in node groups / ASGs (outside Karpenter)")
    termination_handler: TerminationHandler | None = None
    asg_lifecycle_hook: AsgLifecycleHook | None = None
    spot_reaction_s: Seconds | None = Field(
        default=None, description="how long the spot handler takes to see a notice and start the drain; "
        "null: unknown (rules that need it are skipped)")
    kubelet: KubeletShutdown | None = Field(
        default=None, description="the nodes' graceful shutdown; null: not configured (shutdownGracePeriod 0)")
    # Whether anything shuts a node down with no drain in front is a fact of the platform, not of
    # any resource: the default is that it may (an EC2 stop or terminate from outside, an instance
    # retirement no handler watches, an ASG scale-in without a lifecycle hook). Spot capacity that
    # no handler drains shuts down undrained whatever this says (`timing.nodes.undrained_spot`).
    undrained_shutdowns: bool = Field(
        default=True, description="nodes may shut down with no drain first, so only the kubelet's graceful "
        "shutdown stops their pods; false: every node removal is drained first (Karpenter's interruption "
        "queue, aws-node-termination-handler, ASG lifecycle hooks)")
    # Sources no input states (the audit given no KubeletConfiguration, NodePools without the
    # Karpenter controller): the field paths `timing.nodes` then treats as unknown, so a rule
    # that needs them is skipped. Set by `timing.bind.nodes` only; not configurable.
    _unknown: frozenset[str] = PrivateAttr(default=frozenset())

    @property
    def unknown(self) -> frozenset[str]:
        return self._unknown


# ---- the stack ---------------------------------------------------------------------------------
class Stack(Strict):
    margin_s: _int(L.Range(0, 3600)) = L.MARGIN_DEFAULT
    kubernetes_version: KubeVersion
    services: tuple[Service, ...] = Field(min_length=1)
    watchdog: Watchdog | None = None
    heartbeat: HeartbeatService | None = None
    heartbeat_specs: tuple[HeartbeatSpec, ...] = ()
    failover: Failover | None = None
    nodes: Nodes | None = Field(default=None, description="node disruption sources (autoscalers, spot, kubelet)")

    accept: tuple[Accept, ...] = Field(
        default=(), description="findings of the stack itself (watchdog, heartbeat, failover) it breaks on purpose")

    @model_validator(mode="after")
    def _references(self) -> Stack:
        problems = reference_errors(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self
