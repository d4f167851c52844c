"""The load balancers in front of a Service, as the AWS Load Balancer Controller makes them.

An Ingress of the controller's class → an ALB target group from its annotations (the backend
Service's own `alb.ingress.kubernetes.io/*` annotations override the Ingress's, as the
controller merges them; `load-balancer-attributes` belong to the Ingress, or to its
IngressGroup); a LoadBalancer Service the controller reconciles → an NLB target group from
its annotations; a TargetGroupBinding → the target group resource it names. What each LB
field was set by is kept (`origins`), so a finding can point at the key that set it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lockstep.timing import extract as X
from lockstep.timing import limits as L
from lockstep.timing.bind.index import Index
from lockstep.timing.extract import traffic as T
from lockstep.timing.bind.resource import Resource, dig
from lockstep.timing.controllers import ALB_CONTROLLERS, AUTO_MODE, LBC, LEGACY_ALB_CLASS, NLB_CLASSES
from lockstep.timing.conventions import MANAGED_TGB_LABELS
from lockstep.timing.lbkinds import KINDS, PROTOCOLS
from lockstep.timing.model import LoadBalancer

ANN = ("metadata", "annotations")


@dataclass
class LbSource:
    lb: LoadBalancer
    via: str  # "Ingress web/edge → Service web/api"
    owner: Resource  # the resource that states the target group: its own resource, or the annotated one
    origins: dict[str, tuple[Resource, tuple[Any, ...] | None]] = field(default_factory=dict)
    binding: Resource | None = None
    defaults: list[str] = field(default_factory=list)

    @property
    def from_target_group(self) -> bool:
        return self.owner.kind == "TargetGroup"


def value_of(lb: LoadBalancer, dotted: str) -> Any:
    node: Any = lb
    for part in dotted.split(".")[1:]:
        node = getattr(node, part, None)
    return node


def ingress_class(ing: Resource) -> Any:
    return dig(ing.obj, "spec", "ingressClassName") or ing.meta("annotations").get("kubernetes.io/ingress.class")


def is_alb(ing: Resource, classes: dict[str, Any]) -> bool:
    """An Ingress the LBC or EKS Auto Mode makes an ALB for: its IngressClass names one of
    them; without an IngressClass in the input, the LBC's legacy class `alb` (or none, when
    the Ingress carries the LBC's annotations)."""
    cls = ingress_class(ing)
    if cls is None:
        return any(str(k).startswith(X.ALB_ANNOTATION) for k in ing.meta("annotations"))
    if cls in classes:
        return classes[cls] in ALB_CONTROLLERS
    return cls == LEGACY_ALB_CLASS


def controller_of(ing: Resource, classes: dict[str, Any]) -> str:
    return ALB_CONTROLLERS.get(classes.get(ingress_class(ing)), LBC)


def target_port(svc: Resource, port: Any, workload: Resource) -> int | None:
    """The pod port behind a Service port (named target ports resolved in the pod template);
    None when the Service does not say which (never a guessed port)."""
    ports = X.items(dig(svc.obj, "spec", "ports"))
    entry = next((p for p in ports if port is not None and port in (dig(p, "port"), dig(p, "name"))),
                 ports[0] if ports and port is None else None)
    if entry is None:
        return None
    tp = dig(entry, "targetPort") or dig(entry, "port")
    if isinstance(tp, str) and not tp.isdigit():
        named = [dig(p, "containerPort") for c in X.items(dig(workload.obj, "spec", "template", "spec", "containers"))
                 for p in X.items(dig(c, "ports")) if dig(p, "name") == tp]
        tp = named[0] if named else None
    try:
        return int(tp)
    except (TypeError, ValueError):
        return None


# Fields set through a stringMap annotation, by the attribute that sets them.
ATTRIBUTES = {"lb.deregistration_delay_s": "deregistration_delay.timeout_seconds",
              "lb.slow_start_s": "slow_start.duration_seconds",
              "lb.idle_timeout_s": "idle_timeout.timeout_seconds"}
REPORTED_DEFAULTS = ("lb.target_type", "lb.health_check.interval_s", "lb.health_check.timeout_s",
                     "lb.health_check.healthy_threshold", "lb.health_check.unhealthy_threshold",
                     "lb.deregistration_delay_s", "lb.idle_timeout_s")
# Model field → the key of a target group resource (Pulumi's inputs) that sets it.
TG_KEYS = {"lb.health_check.interval_s": ("healthCheck", "interval"),
           "lb.health_check.timeout_s": ("healthCheck", "timeout"),
           "lb.health_check.healthy_threshold": ("healthCheck", "healthyThreshold"),
           "lb.health_check.unhealthy_threshold": ("healthCheck", "unhealthyThreshold"),
           "lb.health_check.protocol": ("healthCheck", "protocol"), "lb.health_check.path": ("healthCheck", "path"),
           "lb.target_type": ("targetType",), "lb.protocol": ("protocol",), "lb.port": ("port",),
           "lb.deregistration_delay_s": ("deregistrationDelay",), "lb.slow_start_s": ("slowStart",),
           "lb.attach_to_arn": ("loadBalancerArns",)}
TG_KEYS.update({f"lb.{a.field}": a.path for a in T.CONNECTION_ATTRIBUTES})  # NLB connection attributes


def with_traffic_policy(src: LbSource, svc: Resource) -> LbSource:
    """Instance targets reach the pods through the Service's node ports, so its
    `externalTrafficPolicy` decides whether a node without a ready local pod still forwards
    (Cluster) or fails the LB's check of it (Local). Absent: Kubernetes' default, reported."""
    if src.lb.target_type != "instance" or dig(svc.obj, "spec", "type") not in T.NODE_PORT_TYPES:
        return src
    try:
        stated = T.traffic_policy(svc.obj)
    except X.ExtractError as err:
        raise X.ExtractError(f"{svc.ref} ({svc.origin.file}:{svc.origin.line(T.ETP_PATH) or svc.line}): {err}") from None
    policy = T.ETP_DEFAULT if stated is None else stated
    src.lb = src.lb.model_copy(update={T.ETP_ARG: policy})
    src.origins["lb." + T.ETP_ARG] = (svc, T.ETP_PATH if stated is not None else ("spec",))
    if stated is None:
        src.defaults.append(f"{T.ETP_PATH[-1]} {policy}")
    return src


def connection_defaults(lb: LoadBalancer, stated: set[str], unstated: str = "") -> list[str]:
    """The NLB connection attributes no input states: the ELBv2 defaults the LB then runs with."""
    if not KINDS[lb.kind].connection_termination:
        return []
    return [f"{a.key} {str(getattr(lb, a.field)).lower()}{unstated}" for a in T.CONNECTION_ATTRIBUTES
            if a.key not in stated]


def annotation_origins(lb: LoadBalancer, kind: str, sources: list[Resource], fallback: Resource,
                       prefix: str) -> tuple[dict[str, tuple[Resource, tuple[Any, ...] | None]], list[str]]:
    """Which resource set each LB field, and which timing fields took the controller's
    default (the report lists them: a default is a value nobody chose)."""
    origins: dict[str, tuple[Resource, tuple[Any, ...] | None]] = {}
    defaults: list[str] = []
    annotations = [(d, d.meta("annotations")) for d in sources]
    for fld, keys in KINDS[kind].annotations.items():
        key = keys[0]
        found = [(d, prefix + k) for k in keys for d, ann in annotations
                 if prefix + k in ann and ATTRIBUTES.get(fld, "") in str(ann[prefix + k])]
        if found:
            origins[fld] = (found[0][0], (*ANN, found[0][1]))
            continue
        origins[fld] = (fallback, None)
        if fld in REPORTED_DEFAULTS:
            defaults.append(f"{ATTRIBUTES.get(fld, key)} {value_of(lb, fld)}")
    return origins, sorted(set(defaults))


def alb_sources(svc: Resource, workload: Resource, idx: Index, ctx: dict[str, Any],
                notes: list[str]) -> list[LbSource]:
    out = []
    for ing, port in idx.backends.get((svc.namespace, svc.name), []):
        if not is_alb(ing, ctx["classes"]):
            continue
        src = alb_source(ing, svc, port, workload, ctx, notes)
        out += [src] if src is not None else []
    return out


def alb_source(ing: Resource, svc: Resource, port: Any, workload: Resource, ctx: dict[str, Any],
               notes: list[str]) -> LbSource | None:
    """The ALB target group an Ingress makes for one backend Service port."""
    pod_port = target_port(svc, port, workload)
    if pod_port is None:
        notes.append(f"{ing.ref} → {svc.ref}: port {port!r} resolves to no container port: "
                     "its load balancer is not judged")
        return None
    ann = X.alb_annotations(ing.meta("annotations"), svc.meta("annotations"))
    attrs_from = ing
    if X.ALB_ANNOTATION + "load-balancer-attributes" not in ing.meta("annotations"):
        group = ing.meta("annotations").get(X.ALB_ANNOTATION + "group.name")
        attrs_from = ctx["groups"].get(group, ing)
    ann.pop("load-balancer-attributes", None)  # an Ingress (group) attribute, not a Service one
    lb_attrs = attrs_from.meta("annotations").get(X.ALB_ANNOTATION + "load-balancer-attributes")
    params = ctx["class_params"].get(ingress_class(ing))
    if lb_attrs is None and params is not None and params[1]:
        lb_attrs = params[1]  # the IngressClassParams' loadBalancerAttributes (Auto Mode keeps them there)
        attrs_from = params[0]
    if lb_attrs is not None:
        ann["load-balancer-attributes"] = lb_attrs
    lb = X.lbc_target_group(ann, "alb", port=pod_port, **ctx["options"])
    origins, defaults = annotation_origins(lb, "alb", [svc, ing, attrs_from], ing, X.ALB_ANNOTATION)
    if attrs_from.kind == "IngressClassParams" and "idle_timeout.timeout_seconds" in lb_attrs:
        origins["lb.idle_timeout_s"] = (attrs_from, ("spec", "loadBalancerAttributes"))
        defaults = [x for x in defaults if not x.startswith("idle_timeout.timeout_seconds")]
    controller = controller_of(ing, ctx["classes"])
    via = f"{ing.ref} → {svc.ref}" + (f" ({controller})" if controller != LBC else "")
    return with_traffic_policy(LbSource(lb, via, ing, origins, None, defaults), svc)


def argo_alb_sources(workload: Resource, idx: Index, ctx: dict[str, Any], notes: list[str]) -> list[LbSource]:
    """A canary Rollout routed by the ALB: the Ingress it names forwards (by the action Argo
    writes) to the stable and canary Services' target groups on `servicePort`; the stable
    Service's target group stands for both (the same pods, the same annotations)."""
    routing = X.alb_routing(workload.obj)
    if routing is None:
        return []
    name, root, port = routing
    ing = next((i for i in idx.of("Ingress", workload.namespace) if i.name == name), None)
    stable = dig(workload.obj, "spec", "strategy", "canary", "stableService")
    svc = next((s for s in idx.of("Service", workload.namespace) if s.name == stable), None)
    if ing is None or svc is None:
        missing = f"Ingress {workload.namespace}/{name}" if ing is None else f"Service {workload.namespace}/{stable}"
        notes.append(f"{workload.ref}: trafficRouting.alb names {missing}, not in the input: its load balancer "
                     "is not judged")
        return []
    ctx["used_services"].add(id(svc))
    src = alb_source(ing, svc, port, workload, ctx, notes)
    return [src] if src is not None else []


def nlb_managed(svc: Resource, ctx: dict[str, Any]) -> bool:
    """A LoadBalancer Service the LBC or Auto Mode reconciles; with `--assume-lbc-services`,
    also one without a class (the LBC's webhook gives new ones its class)."""
    spec = dig(svc.obj, "spec") or {}
    cls = dig(spec, "loadBalancerClass")
    if X.nlb_managed(svc.meta("annotations"), cls):
        return True
    return bool(ctx["assume_lbc_services"]) and cls is None and \
        svc.meta("annotations").get(X.NLB_ANNOTATION + "type") is None


def nlb_source(svc: Resource, workload: Resource, ctx: dict[str, Any], notes: list[str]) -> LbSource | None:
    ann = svc.meta("annotations")
    spec = dig(svc.obj, "spec") or {}
    if dig(spec, "type") != "LoadBalancer" or not nlb_managed(svc, ctx):
        return None
    pod_port = target_port(svc, None, workload)
    if pod_port is None:
        notes.append(f"{svc.ref} (NLB): no port resolves to a container port: its load balancer is not judged")
        return None
    attrs_key = X.NLB_ANNOTATION + X.LBC_ANNOTATIONS["nlb"]["lb.deregistration_delay_s"]
    try:  # a bad connection attribute is the Service's line, not the workload's
        T.props_from_attributes(X.string_map(ann.get(attrs_key) or "", attrs_key), attrs_key)
    except X.ExtractError as err:
        raise X.ExtractError(f"{svc.ref} ({svc.origin.file}:{svc.origin.line((*ANN, attrs_key)) or svc.line}): "
                             f"{err}") from None
    lb = X.lbc_target_group(X.prefixed(ann, X.NLB_ANNOTATION), "nlb", port=pod_port, **ctx["options"])
    origins, defaults = annotation_origins(lb, "nlb", [svc], svc, X.NLB_ANNOTATION)
    cls = dig(spec, "loadBalancerClass")
    controller = NLB_CLASSES.get(cls, LBC)
    if cls is None and not X.nlb_managed(ann, cls):
        controller = LBC + ", assumed: --assume-lbc-services"
    label = "NLB" if controller == LBC else f"NLB, {controller}"
    stated = set(X.string_map(ann.get(attrs_key) or "", attrs_key)) & set(T.BY_KEY)
    for a in T.CONNECTION_ATTRIBUTES:
        origins["lb." + a.field] = (svc, (*ANN, attrs_key) if a.key in stated else None)
    defaults = sorted(set(defaults) | set(connection_defaults(lb, stated)))
    return with_traffic_policy(LbSource(lb, f"{svc.ref} ({label})", svc, origins, None, defaults), svc)


def unsupported(tg: Resource) -> str:
    protocol, target = dig(tg.obj, "protocol"), dig(tg.obj, "targetType") or "instance"
    if protocol not in PROTOCOLS:
        return f"protocol {protocol}"
    if target not in ("ip", "instance"):
        return f"target type {target}"
    return ""


def target_group_lb(tg: Resource, idx: Index, options: dict[str, Any]) -> LoadBalancer:
    """A target group's LB, with its listener rule's path patterns and priority (`bind.entry`)."""
    rule = idx.forwarding(tg)
    return X.target_group(tg.obj, attach_to_arn=idx.attached(tg), **options,
                          **(X.rule_routing(rule.obj) if rule is not None else {}))


def tgb_sources(svc: Resource, workload: Resource, idx: Index, ctx: dict[str, Any],
                notes: list[str]) -> tuple[list[LbSource], bool]:
    """The target groups bound to this Service; True when one replaces the annotations (a
    controller-managed binding: the target group holds what the controller actually made)."""
    out, replaces = [], False
    for tgb in idx.bindings.get((svc.namespace, svc.name), []):
        managed = any(label in tgb.meta("labels") for label in MANAGED_TGB_LABELS)
        tg = idx.target_group(tgb)
        if tg is None:
            if not managed:  # a managed binding's group is the one its Ingress or Service annotations describe
                src = unbound_source(tgb, svc, workload, ctx, notes)
                out += [src] if src is not None else []
            continue
        ctx["used_tgs"].add(id(tg))
        why = unsupported(tg)
        if why:
            notes.append(f"{tgb.ref}: target group {tg.name}: {why} is not modelled")
            continue
        lb = target_group_lb(tg, idx, ctx["tg_options"])
        origins = {f: (tg, key) for f, key in TG_KEYS.items()}
        defaults = [] if dig(tg.obj, "deregistrationDelay") is not None else [
            f"deregistration_delay.timeout_seconds {lb.deregistration_delay_s} (not stated: add the target group's "
            "describe-target-group-attributes output)"]
        target_type = dig(tgb.obj, "spec", "targetType")
        if target_type and target_type != lb.target_type:
            notes.append(f"{tgb.ref}: targetType {target_type} but the target group's is {lb.target_type}")
        defaults += connection_defaults(lb, T.stated(tg.obj), " (not stated: add the target group's "
                                        "describe-target-group-attributes output)")
        src = LbSource(lb, f"{tgb.ref} → target group {tg.name}", tg, origins, tgb, defaults)
        out.append(with_traffic_policy(src, svc))
        replaces = replaces or managed
    return out, replaces


# ---- a binding whose target group the input lacks ------------------------------------------------
# What decides each load-balancer field then: the target group's keys in `aws elbv2
# describe-target-groups` output and its attributes, or the LB kind its protocol makes (ALB or
# NLB: propagation delays and idle timeouts differ by kind).
DESCRIBED = "aws elbv2 describe-target-groups"
TG_JSON = f"`{DESCRIBED}` output"
ATTR_JSON = "`aws elbv2 describe-target-group-attributes` output"
KIND_OF = f"the LB kind, ALB or NLB: Protocol in {TG_JSON}"
UNSTATED: dict[str, str] = {
    "lb.protocol": f"Protocol in {TG_JSON}",
    "lb.health_check.interval_s": f"HealthCheckIntervalSeconds in {TG_JSON}",
    "lb.health_check.timeout_s": f"HealthCheckTimeoutSeconds in {TG_JSON}",
    "lb.health_check.healthy_threshold": f"HealthyThresholdCount in {TG_JSON}",
    "lb.health_check.unhealthy_threshold": f"UnhealthyThresholdCount in {TG_JSON}",
    "lb.attach_to_arn": f"LoadBalancerArns in {TG_JSON}",
    "lb.deregistration_delay_s": f"deregistration_delay.timeout_seconds in {ATTR_JSON}",
    "lb.slow_start_s": f"slow_start.duration_seconds in {ATTR_JSON}",
    "lb.idle_timeout_s": f"its load balancer's idle timeout, by {KIND_OF}",
    "lb.deregistration_propagation_s": f"{KIND_OF}; or the deregistration propagation option",
    "lb.registration_propagation_s": f"{KIND_OF}; or the registration propagation option",
}


def unstated_needs(field: str) -> str:
    """What a skipped finding needs, for a field of a target group the input lacks."""
    return f"{field} ({UNSTATED[field]})"


def target_type_of(tgb: Resource, svc: Resource) -> str | None:
    """A binding's target type: its `targetType`, else what the Service allows. The field is
    optional ("automatically inferred" from the target group, LBC TargetGroupBinding spec);
    instance targets reach pods through a node port, so a ClusterIP Service can only be
    bound with IP targets (LBC issue #1695: instance mode needs at least a NodePort Service).
    None: the input does not say."""
    stated = dig(tgb.obj, "spec", "targetType")
    if stated in ("ip", "instance"):
        return str(stated)
    kind = dig(svc.obj, "spec", "type") or "ClusterIP"  # the Service API's default type
    return "ip" if kind == "ClusterIP" else None


def unbound_lb(target_type: str, port: int, options: dict[str, Any]) -> LoadBalancer:
    """The load balancer of a target group no input describes: every field the group decides
    is unknown (`LoadBalancer.unknown`) and holds the least value its API range allows, over
    every kind the group may be (ALB or NLB), so rules decide only where that bound does."""
    lows = {k: min(v[k] for v in (kind.propagation for kind in KINDS.values()))
            for k in ("deregistration_propagation_s", "registration_propagation_s")}
    given = {k: options[k] for k in lows if options.get(k) is not None}
    idle_low = min(r.lo for kind in KINDS.values() for r in kind.idle_timeout.values())
    lb = LoadBalancer.model_validate({
        "kind": "alb", "protocol": "HTTP", "target_type": target_type, "port": port,
        "health_check": {"protocol": "HTTP", "path": "/", "interval_s": L.HC_INTERVAL.lo,
                         "timeout_s": L.HC_TIMEOUT.lo, "healthy_threshold": L.HC_THRESHOLD.lo,
                         "unhealthy_threshold": L.HC_THRESHOLD.lo},
        "deregistration_delay_s": L.DEREGISTRATION_DELAY.lo, "idle_timeout_s": idle_low,
        **lows, **given})
    lb._unknown = frozenset(f for f in UNSTATED if f.removeprefix("lb.") not in given)
    return lb


def unbound_source(tgb: Resource, svc: Resource, workload: Resource, ctx: dict[str, Any],
                   notes: list[str]) -> LbSource | None:
    named = dig(tgb.obj, "spec", "targetGroupARN") or dig(tgb.obj, "spec", "targetGroupName")
    target_type = target_type_of(tgb, svc)
    port = target_port(svc, dig(tgb.obj, "spec", "serviceRef", "port"), workload)
    if target_type is None or port is None:
        why = ("no targetType and a NodePort/LoadBalancer Service: ip or instance is the target group's"
               if target_type is None else "its serviceRef port resolves to no container port")
        notes.append(f"{tgb.ref}: target group {named} not in the input, {why}: its load balancer is not "
                     f"judged (add `{DESCRIBED}` output)")
        return None
    lb = unbound_lb(target_type, port, ctx["options"])
    notes.append(f"{tgb.ref}: target group {named} not in the input: its health check, attributes and kind "
                 f"are unknown; judged at the least values the API allows, skipped where those do not decide "
                 f"(add `{DESCRIBED}` output)")
    origins: dict[str, tuple[Resource, tuple[Any, ...] | None]] = {
        f: (tgb, ("spec", "targetGroupARN" if dig(tgb.obj, "spec", "targetGroupARN") else "targetGroupName"))
        for f in UNSTATED}
    return with_traffic_policy(LbSource(lb, f"{tgb.ref} → target group {named} (not in the input)", tgb, origins,
                                        tgb, []), svc)


def class_params(idx: Index) -> dict[str, tuple[Resource, str]]:
    """IngressClass name → (its IngressClassParams, their loadBalancerAttributes as the
    annotation's `k=v,...`); cluster-scoped, so looked up by name alone."""
    params = {p.name: p for p in idx.all("IngressClassParams")}
    out = {}
    for cls in idx.all("IngressClass"):
        ref = dig(cls.obj, "spec", "parameters")
        p = params.get(str(dig(ref, "name"))) if dig(ref, "kind") == "IngressClassParams" else None
        if p is not None:
            attrs = [f"{dig(a, 'key')}={dig(a, 'value')}" for a in X.items(dig(p.obj, "spec", "loadBalancerAttributes"))]
            out[cls.name] = (p, ",".join(attrs))
    return out
