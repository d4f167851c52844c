"""AWS target groups → `LoadBalancer`: Pulumi's `aws:lb/targetGroup` inputs, and the
`aws elbv2 describe-target-groups` / `describe-target-group-attributes` output mapped onto
them (one translation). Absent numbers take the ELBv2 API's defaults
(`lbkinds`' `api_defaults`), propagation delays the LB kind's (`model.fill_lb_defaults`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from lockstep.timing import limits as L
from lockstep.timing.lbkinds import KINDS, PROTOCOLS, kind_of
from lockstep.timing.extract import traffic as T
from lockstep.timing.extract.values import ExtractError, annotation_number, build, digits, get, items, num, number, port_at, put
from lockstep.timing.model import HealthCheck, LoadBalancer

HTTP_PROTOCOLS = ("HTTP", "HTTPS")  # health checks that have a path and a matcher


def lb_kind(protocol: Any) -> str:
    kind = kind_of(protocol)
    if kind is None:
        raise ExtractError(f"target group protocol {protocol!r} is not modelled ({', '.join(PROTOCOLS)})")
    return kind.name


HC_FIELDS = {"interval": "interval_s", "timeout": "timeout_s", "healthyThreshold": "healthy_threshold",
             "unhealthyThreshold": "unhealthy_threshold"}


def health_check(props: Mapping[str, Any], kind: str) -> HealthCheck:
    """`healthCheck` of a target group; absent numbers take the ELBv2 API's defaults. The
    protocol defaults to HTTP for ALB groups and TCP for NLB groups, path "/" and matcher
    "200" for HTTP(S) checks, as the API does."""
    hc = get(props, "healthCheck") or {}
    data = {name: num(props, "healthCheck", key) for key, name in HC_FIELDS.items()}
    data = {k: KINDS[kind].api_defaults[k] if v is None else v for k, v in data.items()}
    protocol = get(hc, "protocol") or KINDS[kind].health_check_protocol
    data["protocol"] = protocol
    if protocol in HTTP_PROTOCOLS:
        data.update(path=get(hc, "path") or "/", matcher=get(hc, "matcher") or "200")
    port = get(hc, "port")
    if port not in (None, "traffic-port"):
        data["port"] = port_at(props, None, "healthCheck", "port")
    return build(HealthCheck, data)


def rule_routing(rule: Mapping[str, Any]) -> dict[str, Any]:
    """A listener rule's path patterns (`conditions[].pathPattern.values`) and priority, the
    model's `lb.path_patterns` and `lb.rule_priority`; a listener's default action has neither."""
    patterns = [v for c in (rule.get("conditions") or []) if isinstance(c, Mapping)
                for v in ((c.get("pathPattern") or {}).get("values") or []) if isinstance(v, str)]
    out: dict[str, Any] = {"path_patterns": tuple(patterns)} if patterns else {}
    raw = rule.get("priority")
    try:  # a whole number, as the policy engine's protobuf float too; anything else (a preview's unknown) is none
        priority = number(raw, "")  # pragma: no mutate (the message is never shown: caught below)
    except ExtractError:
        priority = None
    put(out, "rule_priority", priority)
    return out


def target_group(props: Mapping[str, Any], *, attach_to_arn: str | None = None,
                 idle_timeout_s: int | None = None, deregistration_propagation_s: int | None = None,
                 registration_propagation_s: int | None = None, path_patterns: tuple[str, ...] = (),
                 rule_priority: int | None = None) -> LoadBalancer:
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
    if KINDS[kind].connection_termination:
        data.update(T.connection_fields(props))  # absent: the ELBv2 defaults (the model's)
    if KINDS[kind].idle_timeout_from_lb:
        # The LB's attribute, not the group's: the caller's, else the controller's default.
        data["idle_timeout_s"] = KINDS[kind].lbc_defaults["idle_timeout_s"] if idle_timeout_s is None else idle_timeout_s
    put(data, "deregistration_propagation_s", deregistration_propagation_s)
    put(data, "registration_propagation_s", registration_propagation_s)
    if path_patterns:
        data["path_patterns"] = path_patterns
    put(data, "rule_priority", rule_priority)
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
             "slowStart": attribute_number(attrs, "slow_start.duration_seconds", "Attributes"),
             **T.props_from_attributes(attrs, "Attributes")}
    arns = items(get(tg, "LoadBalancerArns"))
    return target_group(props, attach_to_arn=str(arns[0]) if arns else None, **options)
