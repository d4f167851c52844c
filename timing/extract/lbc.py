"""The AWS Load Balancer Controller's annotations → the target group it creates.

Annotations become target-group props for `aws.target_group`, so there is still one
translation. Where an annotation is absent the controller's defaults apply
(`limits.LBC_DEFAULTS`, target type `instance` included), not the ELBv2 API's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from timing import limits as L
from timing.extract.aws import ALB_PROTOCOLS, HC_FIELDS, attribute_number, target_group
from timing.extract.values import ExtractError, annotation_number, get, put
from timing.model import LoadBalancer

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
