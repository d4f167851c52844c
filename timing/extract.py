"""Resources → model pieces: the one translation, shared by the policy pack and `audit`.

Inputs are mappings as Kubernetes documents spell them (camelCase, `spec.template.spec...`)
and as Pulumi hands AWS inputs to policies (`healthCheck.interval`, `deregistrationDelay`).
Any `Mapping`/`Sequence` works (pulumi-policy wraps props in read-only proxies), and numbers
may arrive as floats (protobuf `Struct`): whole floats become ints.

Absent fields get the value the platform itself uses: Kubernetes' defaults
(`limits.K8S_DEFAULTS`), the ELBv2 API's defaults for a target group created directly
(`limits.AWS_API_DEFAULTS`), propagation delays by LB kind (`model.fill_lb_defaults`).
App facts no manifest states come from `lockstep.dev/*` annotations and stay `None`
(unknown) without them: rules then report `skipped`, never a guess.

Out-of-range numbers must still reach the rules (`lb-values-in-range` reports them), so
`build` validates a model with each out-of-range number clamped to the bound it broke —
every other constraint and validator still runs — and then puts the real number back with
`model_copy(update=...)`. Anything else invalid raises `ExtractError`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from timing import limits as L
from timing.heartbeat_config import CONFIGMAP_KEY, RuntimeConfig
from timing.model import (
    Accept, AppFacts, Exec, Failover, Grpc, HealthCheck, HeartbeatService, HeartbeatSpec, Hpa,
    HttpGet, LoadBalancer, Pdb, Probe, Probes, ReadinessGate, Rollout, Service, Shutdown, TcpSocket,
)

ANNOTATION = "lockstep.dev/"
APP_ANNOTATIONS = {"warmup_s": "warmup-seconds", "max_request_s": "max-request-seconds",
                   "max_recovery_s": "max-recovery-seconds", "keepalive_s": "keepalive-seconds",
                   "catch_up_s": "catch-up-seconds"}
RANGE_ERRORS = ("greater_than_equal", "less_than_equal", "greater_than", "less_than")
SLEEP = re.compile(r"(?:^|[\s/;&|(])sleep\s+(\d+)([smh]?)(?![\w.])")
UNIT = {"": 1, "s": 1, "m": 60, "h": 3600}
ALB_PROTOCOLS = ("HTTP", "HTTPS")
PLACEHOLDER = 1  # validates a field no resource states, then replaced by None (unknown)


M = TypeVar("M", bound=BaseModel)


class ExtractError(ValueError):
    """A resource the model cannot represent (wrong type, unsupported protocol, ...)."""


# ---- plumbing ------------------------------------------------------------------------------
def get(obj: Any, *path: str) -> Any:
    """`obj[a][b]...`, or None as soon as a step is missing or not a mapping."""
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def items(value: Any) -> list[Any]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return []


def number(value: Any, where: str) -> Any:
    """Whole floats (protobuf) become ints; None stays None; anything else must be an int."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ExtractError(f"{where}: expected whole seconds/count, got {value!r}")


def digits(value: Any) -> Any:
    """Digit strings as ints (named ports are not; older pulumi-aws typed some numbers as strings)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def int_or_percent(value: Any, where: str) -> Any:
    return value if isinstance(value, str) else number(value, where)


def num(obj: Any, *path: str) -> Any:
    """The whole number at `path` (None when absent); an error names the path."""
    return number(get(obj, *path), ".".join(path))


def amount(obj: Any, *path: str) -> Any:
    """An int-or-percent field (`maxSurge: 25%`) at `path`."""
    return int_or_percent(get(obj, *path), ".".join(path))


def port_at(obj: Any, ports: Mapping[str, int] | None, *path: str) -> Any:
    return port_number(get(obj, *path), ports, ".".join(path))


def put(data: dict[str, Any], key: str, value: Any) -> None:
    """Set only what the resource states, so the model's own defaults apply otherwise."""
    if value is not None:
        data[key] = value


def bound(error: Mapping[str, Any]) -> Any:
    ctx = error.get("ctx") or {}
    for key, step in (("ge", 0), ("le", 0), ("gt", 1), ("lt", -1)):
        if key in ctx:
            return ctx[key] + step
    return None


def clamped(err: ValidationError) -> dict[str, Any]:
    """The top-level fields that broke only a numeric bound, each at the bound it broke."""
    out: dict[str, Any] = {}
    for e in err.errors():
        if e["type"] in RANGE_ERRORS and len(e["loc"]) == 1:
            out[str(e["loc"][0])] = bound(e)
    return out


def build(cls: type[M], data: dict[str, Any]) -> M:
    """Validate `data`; out-of-range numbers are kept (see the module doc)."""
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        fixed = clamped(err)
    try:
        model = cls.model_validate({**data, **fixed})
    except ValidationError as err:
        raise ExtractError(f"{cls.__name__}: {describe(err)}") from None
    return model.model_copy(update={k: data[k] for k in fixed})


def describe(err: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or '(object)'}: {e['msg']}" for e in err.errors())


def with_unknown(model: M, **unknown: None) -> M:
    """Mark fields no resource states as unknown (None) on an otherwise validated model."""
    return model.model_copy(update=unknown)


# ---- annotations --------------------------------------------------------------------------
def seconds_annotation(annotations: Mapping[str, Any] | None, name: str) -> int | None:
    raw = get(annotations, ANNOTATION + name)
    if raw is None:
        return None
    text = str(raw).strip()
    if not text.isdigit():
        raise ExtractError(f"{ANNOTATION}{name}: expected whole seconds, got {raw!r}")
    return int(text)


def app_facts(annotations: Mapping[str, Any] | None) -> AppFacts:
    values = {f: seconds_annotation(annotations, a) for f, a in APP_ANNOTATIONS.items()}
    return build(AppFacts, values)


def fact_annotations(svc: Service | HeartbeatService) -> dict[str, str]:
    """What no manifest states, as the annotations `app_facts`, `accepts` and the finish time
    read back: `infra` writes them on every workload so the policy pack and the audit can
    decide the rules that need them instead of reporting them skipped. The heartbeat
    service states only its warm-up and finish time."""
    if isinstance(svc, HeartbeatService):
        app, accepted = {"warmup_s": svc.warmup_s}, ()
    else:
        app, accepted = svc.app.model_dump(), svc.accept
    out = {ANNOTATION + name: str(app[f]) for f, name in APP_ANNOTATIONS.items()
           if app.get(f) is not None}
    if svc.shutdown.finish_s is not None:
        out[ANNOTATION + "finish-seconds"] = str(svc.shutdown.finish_s)
    if accepted:
        out[ANNOTATION + "accept"] = ",".join(a.id for a in accepted)
    return out


def accepts(annotations: Mapping[str, Any] | None) -> tuple[Accept, ...]:
    """`lockstep.dev/accept: id,id` → accepted rules (the annotation is the stated reason)."""
    raw = get(annotations, ANNOTATION + "accept") or ""
    ids = [i.strip() for i in str(raw).split(",") if i.strip()]
    return tuple(build(Accept, {"id": i, "reason": f"{ANNOTATION}accept annotation"}) for i in ids)


# ---- probes and shutdown ---------------------------------------------------------------
def port_number(value: Any, ports: Mapping[str, int] | None, where: str) -> Any:
    """A numeric port, or a named container port resolved through `ports`."""
    if isinstance(value, str) and not value.isdigit():
        if ports is None or value not in ports:
            raise ExtractError(f"{where}: named port {value!r} not declared by the container")
        return ports[value]
    return number(digits(value), where)


def handler(spec: Mapping[str, Any], ports: Mapping[str, int] | None) -> dict[str, Any]:
    if get(spec, "httpGet") is not None:
        data = {"path": get(spec, "httpGet", "path") or "/", "port": port_at(spec, ports, "httpGet", "port")}
        put(data, "scheme", get(spec, "httpGet", "scheme"))
        return {"http_get": build(HttpGet, data)}
    if get(spec, "tcpSocket") is not None:
        return {"tcp_socket": build(TcpSocket, {"port": port_at(spec, ports, "tcpSocket", "port")})}
    if get(spec, "grpc") is not None:
        return {"grpc": build(Grpc, {"port": num(spec, "grpc", "port")})}
    if get(spec, "exec") is not None:
        return {"exec": build(Exec, {"command": tuple(items(get(spec, "exec", "command")))})}
    return {}


PROBE_FIELDS = {"initialDelaySeconds": "initial_delay_s", "periodSeconds": "period_s",
                "timeoutSeconds": "timeout_s", "successThreshold": "success_threshold",
                "failureThreshold": "failure_threshold"}


def probe(spec: Mapping[str, Any] | None, ports: Mapping[str, int] | None = None) -> Probe | None:
    """A Kubernetes probe; absent numbers take Kubernetes' defaults (the model's)."""
    if spec is None:
        return None
    data = handler(spec, ports)
    for key, name in PROBE_FIELDS.items():
        put(data, name, num(spec, key))
    return build(Probe, data)


def container_ports(container: Mapping[str, Any]) -> dict[str, int]:
    """Named container ports; a name that is not a string is an input error, never a crash."""
    named = {}
    for p in items(get(container, "ports")):
        name = get(p, "name")
        if name and not isinstance(name, str):
            raise ExtractError(f"ports.name: expected a string, got {name!r}")
        if name:
            named[name] = num(p, "containerPort")
    return named


def probes(container: Mapping[str, Any]) -> Probes:
    ports = container_ports(container)
    return build(Probes, {"startup": probe(get(container, "startupProbe"), ports),
                          "readiness": probe(get(container, "readinessProbe"), ports),
                          "liveness": probe(get(container, "livenessProbe"), ports)})


def sleep_seconds(command: Sequence[Any]) -> int | None:
    """`sleep N` (also `/bin/sleep N`, `sh -c "sleep 20 && ..."`, `sleep 1m`) → N seconds."""
    match = SLEEP.search(" ".join(str(c) for c in command))
    if match is None:
        return None
    return int(match.group(1)) * UNIT[match.group(2)]


def prestop(container: Mapping[str, Any]) -> tuple[str, int]:
    """(action, drain seconds). The native `sleep` action or an `exec` that sleeps; an `exec`
    without a recognisable sleep, an `httpGet` hook or none drain for 0 s as far as anyone
    can tell from the manifest ("exec"/"none", 0)."""
    hook = get(container, "lifecycle", "preStop")
    if get(hook, "sleep") is not None:
        return "sleep", num(hook, "sleep", "seconds")
    if get(hook, "exec") is not None:
        return "exec", sleep_seconds(items(get(hook, "exec", "command"))) or 0
    return "none", 0


def serving_container(pod_spec: Mapping[str, Any], port: int | None = None) -> Mapping[str, Any]:
    """The container that declares `port` (the LB's target port); without one, the first
    container declaring any port; else the first container."""
    containers = items(get(pod_spec, "containers"))
    if not containers:
        raise ExtractError("pod spec has no containers")
    declared = [c for c in containers if items(get(c, "ports"))]
    for c in declared:
        if port in [num(p, "containerPort") for p in items(get(c, "ports"))]:
            return c
    return (declared or containers)[0]


def pod_shutdown(pod_spec: Mapping[str, Any], finish_s: int | None,
                 port: int | None = None) -> Shutdown:
    """preStop drain of the serving container, grace (default 30), finish from the caller
    (annotation `lockstep.dev/finish-seconds`; None = unknown)."""
    action, drain = prestop(serving_container(pod_spec, port))
    grace = num(pod_spec, "terminationGracePeriodSeconds")
    data = {"drain_s": drain, "finish_s": finish_s, "prestop": action,
            "grace_s": L.K8S_DEFAULTS["grace_s"] if grace is None else grace}
    return build(Shutdown, data)


# ---- rollout, disruption, autoscaling ------------------------------------------------------
def rollout(obj: Mapping[str, Any]) -> Rollout:
    """Deployment strategy (Recreate = every pod down at once) and its deadlines; a
    StatefulSet keeps the defaults for what it lacks (the rules replace its pods one by one)."""
    spec = get(obj, "spec")
    data: dict[str, Any] = {}
    if get(spec, "strategy", "type") == "Recreate":
        data.update(max_surge=0, max_unavailable="100%")
    put(data, "max_surge", amount(spec, "strategy", "rollingUpdate", "maxSurge"))
    put(data, "max_unavailable", amount(spec, "strategy", "rollingUpdate", "maxUnavailable"))
    put(data, "min_ready_s", num(spec, "minReadySeconds"))
    put(data, "progress_deadline_s", num(spec, "progressDeadlineSeconds"))
    return build(Rollout, data)


def pdb(obj: Mapping[str, Any]) -> Pdb:
    """policy/v1 PodDisruptionBudget; the selector keeps `matchLabels` (see `selects` for
    the full selector)."""
    spec = get(obj, "spec")
    labels = get(spec, "selector", "matchLabels")
    data = {"min_available": amount(spec, "minAvailable"), "max_unavailable": amount(spec, "maxUnavailable"),
            "selector": None if labels is None else {str(k): str(v) for k, v in labels.items()}}
    return build(Pdb, data)


def hpa(obj: Mapping[str, Any]) -> Hpa:
    """autoscaling/v2 HorizontalPodAutoscaler (minReplicas defaults to 1)."""
    spec = get(obj, "spec")
    data = {"min_replicas": num(spec, "minReplicas") or 1, "max_replicas": num(spec, "maxReplicas")}
    for metric in items(get(spec, "metrics")):
        if get(metric, "resource", "name") == "cpu":
            put(data, "target_cpu_percent", num(metric, "resource", "target", "averageUtilization"))
    return build(Hpa, data)


def hpa_target(obj: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the workload an HPA scales."""
    ref = get(obj, "spec", "scaleTargetRef")
    return str(get(ref, "kind")), str(get(ref, "name"))


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, Any]) -> bool:
    """Kubernetes LabelSelector semantics: `matchLabels` and `matchExpressions` (In, NotIn,
    Exists, DoesNotExist) all hold. An empty selector selects everything; None nothing."""
    if selector is None:
        return False
    wanted = get(selector, "matchLabels") or {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        return False
    return all(expression_holds(e, labels) for e in items(get(selector, "matchExpressions")))


def expression_holds(expr: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    key, op = get(expr, "key"), get(expr, "operator")
    values = items(get(expr, "values"))
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ExtractError(f"matchExpressions: unknown operator {op!r}")


# ---- workloads ---------------------------------------------------------------------------
def annotations_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """Workload annotations, the pod template's under the workload's own."""
    return {**(get(obj, "spec", "template", "metadata", "annotations") or {}),
            **(get(obj, "metadata", "annotations") or {})}


def replica_count(obj: Mapping[str, Any], owned_by_hpa: bool) -> int | None:
    """`spec.replicas`; absent means 1, or "owned by the HPA" when one scales the workload."""
    value = num(obj, "spec", "replicas")
    if value is None and not owned_by_hpa:
        return 1
    return value


def workload(obj: Mapping[str, Any], *, lb: LoadBalancer | None = None, pdb: Pdb | None = None,
             hpa: Hpa | None = None, readiness_gate: ReadinessGate | None = None,
             annotations: Mapping[str, Any] | None = None) -> Service:
    """A Deployment/StatefulSet manifest → Service. The serving container is the one that
    declares the LB's target port (IP targets), else the first declaring a port
    (`serving_container`); its first declared port is the container port."""
    notes = annotations_of(obj) if annotations is None else annotations
    pod_spec = get(obj, "spec", "template", "spec")
    target = lb.port if lb is not None and lb.target_type == "ip" else None
    container = serving_container(pod_spec, target)
    data = {
        "name": get(obj, "metadata", "name"), "kind": get(obj, "kind"),
        "image": get(container, "image"), "container_port": serving_port(container, target),
        "replicas": replica_count(obj, hpa is not None),
        "labels": dict(get(obj, "spec", "template", "metadata", "labels") or {}), "name_label": False,
        "app": app_facts(notes), "probes": probes(container),
        "shutdown": pod_shutdown(pod_spec, seconds_annotation(notes, "finish-seconds"), target),
        "rollout": rollout(obj), "pdb": pdb, "hpa": hpa, "lb": lb,
        "readiness_gate": readiness_gate, "accept": accepts(notes),
    }
    put(data, "namespace", get(obj, "metadata", "namespace"))
    return build(Service, data)


def serving_port(container: Mapping[str, Any], target: int | None) -> Any:
    declared = [num(p, "containerPort") for p in items(get(container, "ports"))]
    if target in declared or (target is not None and not declared):
        return target
    if declared:
        return declared[0]
    raise ExtractError(f"container {get(container, 'name')!r} declares no port")


# ---- AWS target groups ------------------------------------------------------------------------
def lb_kind(protocol: Any) -> str:
    if protocol in ALB_PROTOCOLS:
        return "alb"
    if protocol in ("TCP", "TLS"):
        return "nlb"
    raise ExtractError(f"target group protocol {protocol!r} is not modelled (HTTP, HTTPS, TCP, TLS)")


HC_FIELDS = {"interval": "interval_s", "timeout": "timeout_s", "healthyThreshold": "healthy_threshold",
             "unhealthyThreshold": "unhealthy_threshold"}


def health_check(props: Mapping[str, Any], kind: str) -> HealthCheck:
    """`healthCheck` of a target group; absent numbers take the ELBv2 API's defaults. The
    protocol defaults to HTTP for ALB groups and TCP for NLB groups, path "/" and matcher
    "200" for HTTP(S) checks, as the API does."""
    hc = get(props, "healthCheck") or {}
    data = {name: num(props, "healthCheck", key) for key, name in HC_FIELDS.items()}
    data = {k: L.AWS_API_DEFAULTS[kind][k] if v is None else v for k, v in data.items()}
    protocol = get(hc, "protocol") or ("HTTP" if kind == "alb" else "TCP")
    data["protocol"] = protocol
    if protocol in ALB_PROTOCOLS:
        data.update(path=get(hc, "path") or "/", matcher=get(hc, "matcher") or "200")
    port = get(hc, "port")
    if port not in (None, "traffic-port"):
        data["port"] = port_at(props, None, "healthCheck", "port")
    return build(HealthCheck, data)


def target_group(props: Mapping[str, Any], *, attach_to_arn: str | None = None,
                 idle_timeout_s: int | None = None, deregistration_propagation_s: int | None = None,
                 registration_propagation_s: int | None = None) -> LoadBalancer:
    """`aws:lb/targetGroup:TargetGroup` inputs → LoadBalancer. The kind follows the protocol,
    the removal path the target type (AWS default `instance`), propagation delays the kind
    unless given. What a target group does not carry comes from the caller: whether a
    listener uses it, and the LB's idle timeout (default: the ALB default, 60 s)."""
    protocol = get(props, "protocol")
    kind = lb_kind(protocol)
    data: dict[str, Any] = {
        "kind": kind, "protocol": protocol, "target_type": get(props, "targetType") or "instance",
        "port": num(props, "port"), "health_check": health_check(props, kind),
        "attach_to_arn": attach_to_arn, "vpc_id": get(props, "vpcId"),
        "deregistration_delay_s": number(digits(get(props, "deregistrationDelay")), "deregistrationDelay"),
        "slow_start_s": num(props, "slowStart") or 0,
    }
    if data["deregistration_delay_s"] is None:
        data["deregistration_delay_s"] = L.DEREGISTRATION_DELAY_DEFAULT
    if kind == "alb":
        data["idle_timeout_s"] = L.LBC_DEFAULTS["alb"]["idle_timeout_s"] if idle_timeout_s is None else idle_timeout_s
    put(data, "deregistration_propagation_s", deregistration_propagation_s)
    put(data, "registration_propagation_s", registration_propagation_s)
    return build(LoadBalancer, data)


class Binding(NamedTuple):
    """A TargetGroupBinding: which target group, which Service port, which target type."""

    namespace: str
    target_group_arn: Any
    target_type: str | None
    service: str
    port: Any


def binding(obj: Mapping[str, Any]) -> Binding:
    spec = get(obj, "spec")
    return Binding(get(obj, "metadata", "namespace") or "default", get(spec, "targetGroupARN"),
                   get(spec, "targetType"), str(get(spec, "serviceRef", "name")),
                   get(spec, "serviceRef", "port"))


# ---- Route 53 failover ---------------------------------------------------------------------------
def route53_check(props: Mapping[str, Any]) -> tuple[int, int]:
    """(request interval, failure threshold) of a Route 53 health check; API defaults 30, 3."""
    interval, failures = num(props, "requestInterval"), num(props, "failureThreshold")
    return 30 if interval is None else interval, 3 if failures is None else failures


def failover(check: Mapping[str, Any], record: Mapping[str, Any], entry_service: str) -> Failover:
    """A Route 53 health check and the record it guards → Failover (mode `dns`). What no
    resource states — RTO, client reconnect time, failback checks — is unknown (None)."""
    interval, failures = route53_check(check)
    alias = bool(items(get(record, "aliases")))
    ttl = num(record, "ttl")
    routing = "weighted" if items(get(record, "weightedRoutingPolicies")) else "failover"
    return Failover.model_construct(
        mode="dns", routing=routing, entry_service=entry_service, check_interval_s=interval,
        failure_threshold=failures, ttl_s=None if alias else ttl, alias=alias,
        client_reconnect_s=None, rto_s=None, failback_checks=None, regions=())


# ---- the heartbeat ConfigMap ------------------------------------------------------------------
def heartbeat_config(configmap: Mapping[str, Any]) -> RuntimeConfig:
    raw = get(configmap, "data", CONFIGMAP_KEY)
    if raw is None:
        raise ExtractError(f"ConfigMap has no data key {CONFIGMAP_KEY!r}")
    try:
        return RuntimeConfig.model_validate(json.loads(raw))
    except (ValueError, ValidationError) as err:
        raise ExtractError(f"{CONFIGMAP_KEY}: {err}") from None


def heartbeat_specs(config: RuntimeConfig) -> tuple[HeartbeatSpec, ...]:
    """The specs; each watches its workload by name. The agreed outage budget is not in the
    ConfigMap: `max_outage_s` is unknown."""
    return tuple(with_unknown(build(HeartbeatSpec, {
        "name": s.name, "service": s.workload.name, "loss_time_s": s.loss_time_s,
        "recovery_time_s": s.recovery_time_s, "max_outage_s": PLACEHOLDER, "affected": s.affected}), max_outage_s=None)
        for s in config.specs)


def heartbeat_service(config: RuntimeConfig, deployment: Mapping[str, Any] | None = None) -> HeartbeatService:
    """The heartbeat service from its ConfigMap and (when present) its Deployment: probes,
    preStop, grace, minReadySeconds and `lockstep.dev/warmup-seconds` (else unknown)."""
    notes = annotations_of(deployment or {})
    pod_spec = get(deployment, "spec", "template", "spec") or {"containers": [{}]}
    container = serving_container(pod_spec, config.port)
    shutdown = (pod_shutdown(pod_spec, seconds_annotation(notes, "finish-seconds"), config.port)
                if deployment is not None else build(Shutdown, {"drain_s": 0, "finish_s": None,
                                                                "grace_s": config.grace_s}))
    data = {
        "name": config.service, "namespace": config.lease.namespace,
        "image": get(container, "image") or "unknown", "replicas": config.replicas, "port": config.port,
        "observe_interval_s": config.observe_interval_s, "publish_interval_s": config.publish_interval_s,
        "client_timeout_s": config.client_timeout_s, "beat_ttl_s": config.beat_ttl_s,
        "lease_duration_s": config.lease.duration_s, "lease_renew_deadline_s": config.lease.renew_deadline_s,
        "lease_retry_period_s": config.lease.retry_period_s, "warmup_s": PLACEHOLDER,
        "probes": probes(container), "shutdown": shutdown,
        "min_ready_s": num(deployment, "spec", "minReadySeconds") or 0,
    }
    warmup = seconds_annotation(notes, "warmup-seconds")
    model = build(HeartbeatService, data)
    return model.model_copy(update={"warmup_s": warmup})


# ---- AWS Load Balancer Controller annotations, `aws elbv2` JSON --------------------------------
# Both become target-group props for `target_group`, so there is still one translation. Where
# an annotation is absent the controller's defaults apply (`limits.LBC_DEFAULTS`, target type
# `instance` included), not the ELBv2 API's.
ALB_ANNOTATION = "alb.ingress.kubernetes.io/"
NLB_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-"
LBC_MANAGED = "attached by the AWS Load Balancer Controller"
LBC_ANNOTATIONS = {  # model field → annotation (prefix stripped) that sets it
    "alb": {"lb.target_type": "target-type", "lb.protocol": "backend-protocol",
            "lb.health_check.protocol": "healthcheck-protocol", "lb.health_check.port": "healthcheck-port",
            "lb.health_check.path": "healthcheck-path", "lb.health_check.matcher": "success-codes",
            "lb.health_check.interval_s": "healthcheck-interval-seconds",
            "lb.health_check.timeout_s": "healthcheck-timeout-seconds",
            "lb.health_check.healthy_threshold": "healthy-threshold-count",
            "lb.health_check.unhealthy_threshold": "unhealthy-threshold-count",
            "lb.deregistration_delay_s": "target-group-attributes",
            "lb.slow_start_s": "target-group-attributes", "lb.idle_timeout_s": "load-balancer-attributes"},
    "nlb": {"lb.target_type": "nlb-target-type", "lb.protocol": "ssl-cert",
            "lb.health_check.protocol": "healthcheck-protocol", "lb.health_check.port": "healthcheck-port",
            "lb.health_check.path": "healthcheck-path", "lb.health_check.matcher": "healthcheck-success-codes",
            "lb.health_check.interval_s": "healthcheck-interval",
            "lb.health_check.timeout_s": "healthcheck-timeout",
            "lb.health_check.healthy_threshold": "healthcheck-healthy-threshold",
            "lb.health_check.unhealthy_threshold": "healthcheck-unhealthy-threshold",
            "lb.deregistration_delay_s": "target-group-attributes"},
}


def string_map(raw: Any, where: str) -> dict[str, str]:
    """The controller's stringMap annotation format `k1=v1,k2=v2`."""
    out = {}
    for item in str(raw).split(","):
        key, sep, value = item.partition("=")
        if not item.strip():
            continue
        if not sep:
            raise ExtractError(f"{where}: expected key=value pairs, got {item.strip()!r}")
        out[key.strip()] = value.strip()
    return out


def annotation_number(raw: Any, where: str) -> int:
    """Annotation values are strings; a whole number, sign allowed (the range is a rule's)."""
    text = str(raw).strip()
    if not text.removeprefix("-").isdigit():
        raise ExtractError(f"{where}: expected a whole number, got {raw!r}")
    return int(text)


def choice(raw: Any, allowed: Sequence[str], where: str) -> str:
    for value in allowed:
        if str(raw).strip().lower() == value.lower():
            return value
    raise ExtractError(f"{where}: expected one of {', '.join(allowed)}, got {raw!r}")


def prefixed(annotations: Mapping[str, Any] | None, prefix: str) -> dict[str, Any]:
    return {k[len(prefix):]: v for k, v in (annotations or {}).items() if str(k).startswith(prefix)}


def alb_annotations(ingress: Mapping[str, Any] | None, service: Mapping[str, Any] | None) -> dict[str, Any]:
    """An Ingress backend's `alb.ingress.kubernetes.io/*` annotations: the backend Service's
    override the Ingress's, as the controller merges them."""
    return {**prefixed(ingress, ALB_ANNOTATION), **prefixed(service, ALB_ANNOTATION)}


def nlb_managed(annotations: Mapping[str, Any] | None, load_balancer_class: Any) -> bool:
    """Whether the controller (not the in-tree cloud provider) reconciles a LoadBalancer Service."""
    kind = get(annotations, NLB_ANNOTATION + "type")
    return load_balancer_class == "service.k8s.aws/nlb" or kind in ("external", "nlb-ip")


def lbc_target_group(annotations: Mapping[str, Any], kind: str, *, port: int,
                     **options: Any) -> LoadBalancer:
    """The target group the controller creates from its annotations (prefix stripped:
    `alb_annotations`, or `prefixed(svc, NLB_ANNOTATION)`). `options` go to `target_group`
    (propagation delays); the ALB idle timeout comes from `load-balancer-attributes`."""
    keys, prefix = LBC_ANNOTATIONS[kind], ALB_ANNOTATION if kind == "alb" else NLB_ANNOTATION
    defaults = L.LBC_DEFAULTS[kind]

    def raw(field: str) -> Any:
        return get(annotations, keys[field])

    def where(field: str) -> str:
        return prefix + keys[field]

    hc: dict[str, Any] = {}
    for key, name in HC_FIELDS.items():
        field = f"lb.health_check.{name}"
        hc[key] = defaults[name] if raw(field) is None else annotation_number(raw(field), where(field))
    # A default is used as is; only an annotated value goes through `choice` (which would
    # also accept a default spelled in the wrong case).
    if kind == "alb":
        protocol = choice(raw("lb.protocol"), ALB_PROTOCOLS, where("lb.protocol")) if raw("lb.protocol") else "HTTP"
        hc["protocol"] = choice(raw("lb.health_check.protocol") or protocol, ALB_PROTOCOLS,
                                where("lb.health_check.protocol"))
    else:
        protocol = "TLS" if raw("lb.protocol") else "TCP"
        hc["protocol"] = (choice(raw("lb.health_check.protocol"), ("TCP", *ALB_PROTOCOLS),
                                 where("lb.health_check.protocol")) if raw("lb.health_check.protocol") else "TCP")
    legacy_ip = kind == "nlb" and get(annotations, "type") == "nlb-ip"
    target = "ip" if legacy_ip else choice(raw("lb.target_type") or defaults["target_type"], ("ip", "instance"),
                                           where("lb.target_type"))
    if hc["protocol"] in ALB_PROTOCOLS:
        hc["path"] = raw("lb.health_check.path") or "/"
        hc["matcher"] = raw("lb.health_check.matcher") or ("200" if kind == "alb" else "200-399")
    put(hc, "port", raw("lb.health_check.port"))
    tg_attrs = string_map(raw("lb.deregistration_delay_s") or "", where("lb.deregistration_delay_s"))
    props: dict[str, Any] = {
        "protocol": protocol, "port": port, "healthCheck": hc,
        "targetType": target,
        "deregistrationDelay": attribute_number(tg_attrs, "deregistration_delay.timeout_seconds",
                                                where("lb.deregistration_delay_s")),
        "slowStart": attribute_number(tg_attrs, "slow_start.duration_seconds", where("lb.deregistration_delay_s")),
    }
    if kind == "alb":
        lb_attrs = string_map(raw("lb.idle_timeout_s") or "", where("lb.idle_timeout_s"))
        options = {**options, "idle_timeout_s": attribute_number(lb_attrs, "idle_timeout.timeout_seconds",
                                                                   where("lb.idle_timeout_s"))}
    return target_group(props, attach_to_arn=LBC_MANAGED, **options)


def attribute_number(attributes: Mapping[str, Any], key: str, where: str) -> int | None:
    return None if key not in attributes else annotation_number(attributes[key], f"{where} {key}")


DESCRIBED_HEALTH_CHECK = {"interval": "HealthCheckIntervalSeconds", "timeout": "HealthCheckTimeoutSeconds",
                          "healthyThreshold": "HealthyThresholdCount",
                          "unhealthyThreshold": "UnhealthyThresholdCount", "protocol": "HealthCheckProtocol",
                          "path": "HealthCheckPath", "port": "HealthCheckPort"}


def attribute_map(attributes: Any) -> dict[str, str]:
    """`describe-target-group-attributes`' `[{"Key": k, "Value": v}, ...]` → {k: v}."""
    out = {}
    for item in items(attributes):
        if not isinstance(get(item, "Key"), str):
            raise ExtractError("Attributes: expected a list of {Key, Value}")
        out[item["Key"]] = str(get(item, "Value"))
    return out


def described_target_group(tg: Mapping[str, Any], attributes: Mapping[str, str] | None = None,
                           **options: Any) -> LoadBalancer:
    """One target group of `aws elbv2 describe-target-groups` (and its attributes from
    `describe-target-group-attributes`; absent → the API defaults). `LoadBalancerArns`
    non-empty = attached."""
    attrs = attributes or {}
    hc = {key: get(tg, name) for key, name in DESCRIBED_HEALTH_CHECK.items()}  # None = absent: API default
    put(hc, "matcher", get(tg, "Matcher", "HttpCode"))
    props = {"protocol": get(tg, "Protocol"), "targetType": get(tg, "TargetType"), "port": get(tg, "Port"),
             "vpcId": get(tg, "VpcId"), "healthCheck": hc,
             "deregistrationDelay": attribute_number(attrs, "deregistration_delay.timeout_seconds", "Attributes"),
             "slowStart": attribute_number(attrs, "slow_start.duration_seconds", "Attributes")}
    arns = items(get(tg, "LoadBalancerArns"))
    return target_group(props, attach_to_arn=str(arns[0]) if arns else None, **options)
