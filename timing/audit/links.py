"""Follow the links between documents and build the subjects the rules judge.

Ingress → Service by backend name (the controller's ALB; the Service's own
`alb.ingress.kubernetes.io/*` annotations override the Ingress's), LoadBalancer Service →
its NLB, TargetGroupBinding → described target group, Service → workload by label selector,
PDB → workload by selector, HPA → workload by `scaleTargetRef`, Namespace label → readiness
gate. Every model piece comes from `timing.extract`; this module only decides which
documents belong together.
"""

from __future__ import annotations

from typing import Any

from timing import extract as X
from timing.audit.graph import MANAGED_TGB, Index, LbSource, Origin, dig, meta, name, namespace, ref
from timing.audit.reader import Doc
from timing.model import LoadBalancer

ANN = ("metadata", "annotations")


def value_of(lb: LoadBalancer, dotted: str) -> Any:
    node: Any = lb
    for part in dotted.split(".")[1:]:
        node = getattr(node, part, None)
    return node


def is_alb(ing: Doc, classes: dict[str, Any]) -> bool:
    cls = dig(ing.obj, "spec", "ingressClassName") or meta(ing, "annotations").get("kubernetes.io/ingress.class")
    if cls is None:
        return any(k.startswith(X.ALB_ANNOTATION) for k in meta(ing, "annotations"))
    return cls == "alb" or classes.get(cls) == "ingress.k8s.aws/alb"


def backends(ing: Doc) -> list[tuple[str, Any]]:
    """(service name, service port) of every backend (networking.k8s.io/v1 and v1beta1)."""
    spec = ing.obj.get("spec") or {}
    found = [spec.get("defaultBackend"), spec.get("backend")]
    for rule in X.items(spec.get("rules")):
        found += [dig(p, "backend") for p in X.items(dig(rule, "http", "paths"))]
    out = []
    for b in found:
        svc = dig(b, "service", "name") or dig(b, "serviceName")
        port = dig(b, "service", "port", "number") or dig(b, "service", "port", "name") or dig(b, "servicePort")
        if isinstance(svc, str) and port != "use-annotation":
            out.append((svc, port))
    return list(dict.fromkeys(out))


def target_port(svc: Doc, port: Any, workload: Doc) -> int:
    """The pod port behind a Service port (named target ports resolved in the pod template)."""
    ports = X.items(dig(svc.obj, "spec", "ports"))
    entry = next((p for p in ports if port is not None and port in (dig(p, "port"), dig(p, "name"))),
                 ports[0] if ports else {})
    tp = dig(entry, "targetPort") or dig(entry, "port")
    if isinstance(tp, str) and not tp.isdigit():
        for c in X.items(dig(workload.obj, "spec", "template", "spec", "containers")):
            for p in X.items(dig(c, "ports")):
                if dig(p, "name") == tp:
                    tp = dig(p, "containerPort")
    try:
        return int(tp)
    except (TypeError, ValueError):
        return 80


# Fields set through a stringMap annotation, by the attribute that sets them.
ATTRIBUTES = {"lb.deregistration_delay_s": "deregistration_delay.timeout_seconds",
              "lb.slow_start_s": "slow_start.duration_seconds",
              "lb.idle_timeout_s": "idle_timeout.timeout_seconds"}
REPORTED_DEFAULTS = ("lb.target_type", "lb.health_check.interval_s", "lb.health_check.timeout_s",
                     "lb.health_check.healthy_threshold", "lb.health_check.unhealthy_threshold",
                     "lb.deregistration_delay_s", "lb.idle_timeout_s")


def annotation_origins(lb: LoadBalancer, kind: str, docs: list[Doc], fallback: Doc,
                       prefix: str) -> tuple[dict[str, Origin], list[str]]:
    """Which document set each LB field, and which of the timing fields took the controller's
    default (the report lists them: a default is a value nobody chose)."""
    origins: dict[str, Origin] = {}
    defaults: list[str] = []
    annotations = [(d, meta(d, "annotations")) for d in docs]
    for field, key in X.LBC_ANNOTATIONS[kind].items():
        keys = (key, "type") if kind == "nlb" and field == "lb.target_type" else (key,)
        found = [(d, prefix + k) for k in keys for d, ann in annotations
                 if prefix + k in ann and ATTRIBUTES.get(field, "") in str(ann[prefix + k])]
        if found:
            origins[field] = Origin(found[0][0], (*ANN, found[0][1]))
            continue
        origins[field] = Origin(fallback, None)
        if field in REPORTED_DEFAULTS and not (kind == "nlb" and field == "lb.idle_timeout_s"):
            defaults.append(f"{ATTRIBUTES.get(field, key)} {value_of(lb, field)}")
    return origins, sorted(set(defaults))


def alb_sources(svc: Doc, workload: Doc, idx: Index, ctx: dict[str, Any]) -> list[LbSource]:
    out = []
    for ing, port in idx.backends.get((namespace(svc), name(svc)), []):
        if is_alb(ing, ctx["classes"]):
            ann = X.alb_annotations(meta(ing, "annotations"), meta(svc, "annotations"))
            lb_attrs_doc = ing
            if X.ALB_ANNOTATION + "load-balancer-attributes" not in meta(ing, "annotations"):
                group = meta(ing, "annotations").get(X.ALB_ANNOTATION + "group.name")
                lb_attrs_doc = ctx["groups"].get(group, ing)
            ann.pop("load-balancer-attributes", None)  # an Ingress (group) attribute, not a Service one
            put_attrs = meta(lb_attrs_doc, "annotations").get(X.ALB_ANNOTATION + "load-balancer-attributes")
            if put_attrs is not None:
                ann["load-balancer-attributes"] = put_attrs
            lb = X.lbc_target_group(ann, "alb", port=target_port(svc, port, workload), **ctx["options"])
            origins, defaults = annotation_origins(lb, "alb", [svc, ing, lb_attrs_doc], ing, X.ALB_ANNOTATION)
            out.append(LbSource(lb, f"{ref(ing)} → {ref(svc)}", origins,
                                {"ingress": ing, "service": svc}, defaults))
    return out


def nlb_source(svc: Doc, workload: Doc, ctx: dict[str, Any]) -> LbSource | None:
    ann = meta(svc, "annotations")
    spec = svc.obj.get("spec") or {}
    if spec.get("type") != "LoadBalancer" or not X.nlb_managed(ann, spec.get("loadBalancerClass")):
        return None
    lb = X.lbc_target_group(X.prefixed(ann, X.NLB_ANNOTATION), "nlb", port=target_port(svc, None, workload),
                            **ctx["options"])
    origins, defaults = annotation_origins(lb, "nlb", [svc], svc, X.NLB_ANNOTATION)
    return LbSource(lb, f"{ref(svc)} (NLB)", origins, {"service": svc}, defaults)


def tgb_sources(svc: Doc, idx: Index, ctx: dict[str, Any], notes: list[str]) -> tuple[list[LbSource], bool]:
    """Described target groups bound to this Service; True when one replaces the annotations
    (a controller-managed binding: AWS holds what the controller actually made)."""
    out, replaces = [], False
    for tgb in idx.bindings.get((namespace(svc), name(svc)), []):
        b = X.binding(tgb.obj)
        managed = any(label in meta(tgb, "labels") for label in MANAGED_TGB)
        tg_name = dig(tgb.obj, "spec", "targetGroupName")
        found = idx.find_tg(b.target_group_arn, tg_name)
        if found is None:
            if not managed:
                notes.append(f"{ref(tgb)}: target group {b.target_group_arn or tg_name} not described "
                             "(add `aws elbv2 describe-target-groups` output to check its health check)")
            continue
        jdoc, i, tg = found
        ctx["used_tgs"].add((jdoc.file, jdoc.index, i))
        why = unsupported(tg)
        if why:
            notes.append(f"{ref(tgb)}: target group {tg.get('TargetGroupName')}: {why} is not modelled")
            continue
        attrs = idx.tg_attributes(str(tg.get("TargetGroupArn")))
        lb = X.described_target_group(tg, attrs, **ctx["options"])
        origins = {f: Origin(jdoc, ("TargetGroups", i, key)) for f, key in TG_KEYS.items()}
        adoc = idx.attribute_docs.get(str(tg.get("TargetGroupArn")))
        if adoc is not None:
            keys = [dig(a, "Key") for a in X.items(adoc.obj.get("Attributes"))]
            for field, key in (("lb.deregistration_delay_s", "deregistration_delay.timeout_seconds"),
                               ("lb.slow_start_s", "slow_start.duration_seconds")):
                origins[field] = Origin(adoc, ("Attributes", keys.index(key)) if key in keys else ("Attributes",))
        defaults = [] if "deregistration_delay.timeout_seconds" in attrs else [
            f"deregistration_delay.timeout_seconds {lb.deregistration_delay_s} (no attributes described)"]
        if b.target_type and b.target_type != lb.target_type:
            notes.append(f"{ref(tgb)}: targetType {b.target_type} but the target group's is {lb.target_type}")
        out.append(LbSource(lb, f"{ref(tgb)} → target group {tg.get('TargetGroupName')}", origins,
                            {"service": svc, "binding": tgb, "target_group": jdoc}, defaults))
        replaces = replaces or managed
    return out, replaces


TG_KEYS = {"lb.health_check.interval_s": "HealthCheckIntervalSeconds",
           "lb.health_check.timeout_s": "HealthCheckTimeoutSeconds",
           "lb.health_check.healthy_threshold": "HealthyThresholdCount",
           "lb.health_check.unhealthy_threshold": "UnhealthyThresholdCount",
           "lb.target_type": "TargetType", "lb.protocol": "Protocol", "lb.attach_to_arn": "LoadBalancerArns"}


def unsupported(tg: dict[str, Any]) -> str:
    if tg.get("Protocol") not in ("HTTP", "HTTPS", "TCP", "TLS"):
        return f"protocol {tg.get('Protocol')}"
    if tg.get("TargetType") not in ("ip", "instance"):
        return f"target type {tg.get('TargetType')}"
    return ""
