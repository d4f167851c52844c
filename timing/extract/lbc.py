"""The AWS Load Balancer Controller's annotations → the target group it creates.

Annotations become target-group props for `aws.target_group`, so there is still one
translation. Where an annotation is absent the controller's defaults apply
(`lbkinds`' `lbc_defaults`, target type `instance` included), not the ELBv2 API's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from lockstep.timing import limits as L
from lockstep.timing.controllers import LBC_ATTACHED, NLB_CLASSES
from lockstep.timing.extract import traffic as T
from lockstep.timing.extract.aws import HC_FIELDS, HTTP_PROTOCOLS, attribute_number, target_group
from lockstep.timing.lbkinds import ALB, KINDS, NLB
from lockstep.timing.extract.values import ExtractError, annotation_number, get, put
from lockstep.timing.model import LoadBalancer

ALB_ANNOTATION = ALB.annotation_prefix
NLB_ANNOTATION = NLB.annotation_prefix
LBC_MANAGED = LBC_ATTACHED
# model field → annotation (prefix stripped) that sets it, by kind (the first of the table's)
LBC_ANNOTATIONS = {k.name: {f: keys[0] for f, keys in k.annotations.items()} for k in KINDS.values()}


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
    """Whether the controller (the LBC, or EKS Auto Mode's: `timing.controllers`), not the
    in-tree cloud provider, reconciles a LoadBalancer Service."""
    kind = get(annotations, NLB_ANNOTATION + "type")
    return load_balancer_class in NLB_CLASSES or kind in ("external", "nlb-ip")


def lbc_target_group(annotations: Mapping[str, Any], kind_name: str, *, port: int,
                     **options: Any) -> LoadBalancer:
    """The target group the controller creates from its annotations (prefix stripped:
    `alb_annotations`, or `prefixed(svc, NLB_ANNOTATION)`). `options` go to `target_group`
    (propagation delays); an idle timeout the LB carries comes from `load-balancer-attributes`."""
    kind = KINDS[kind_name]
    keys, prefix, defaults = LBC_ANNOTATIONS[kind_name], kind.annotation_prefix, kind.lbc_defaults

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
    if kind.annotated_protocol is not None:
        protocol = kind.annotated_protocol if raw("lb.protocol") else kind.protocols[0]
    else:
        protocol = choice(raw("lb.protocol"), kind.protocols, where("lb.protocol")) if raw("lb.protocol") \
            else kind.protocols[0]
    hc_default = protocol if kind.health_check_follows_protocol else kind.health_check_protocol
    hc["protocol"] = (choice(raw("lb.health_check.protocol"), kind.health_check_protocols,
                             where("lb.health_check.protocol")) if raw("lb.health_check.protocol") else hc_default)
    legacy_ip = kind.legacy_ip_type is not None and get(annotations, "type") == kind.legacy_ip_type
    target = "ip" if legacy_ip else choice(raw("lb.target_type") or defaults["target_type"], ("ip", "instance"),
                                           where("lb.target_type"))
    if hc["protocol"] in HTTP_PROTOCOLS:
        hc["path"] = raw("lb.health_check.path") or "/"
        hc["matcher"] = raw("lb.health_check.matcher") or kind.http_matcher
    put(hc, "port", raw("lb.health_check.port"))
    tg_attrs = string_map(raw("lb.deregistration_delay_s") or "", where("lb.deregistration_delay_s"))
    props: dict[str, Any] = {
        "protocol": protocol, "port": port, "healthCheck": hc,
        "targetType": target,
        "deregistrationDelay": attribute_number(tg_attrs, "deregistration_delay.timeout_seconds",
                                                where("lb.deregistration_delay_s")),
        "slowStart": attribute_number(tg_attrs, "slow_start.duration_seconds", where("lb.deregistration_delay_s")),
        **(T.props_from_attributes(tg_attrs, where("lb.deregistration_delay_s")) if kind.connection_termination else {}),
    }
    if kind.idle_timeout_from_lb:
        lb_attrs = string_map(raw("lb.idle_timeout_s") or "", where("lb.idle_timeout_s"))
        options = {**options, "idle_timeout_s": attribute_number(lb_attrs, "idle_timeout.timeout_seconds",
                                                                   where("lb.idle_timeout_s"))}
    return target_group(props, attach_to_arn=LBC_MANAGED, **options)
