"""What decides how a load balancer lets go of a node or a target (issue 13): the Service's
`spec.externalTrafficPolicy` and the NLB target group's connection attributes.

One table names every key once, for the readers here (a Service, the LBC's
`target-group-attributes` annotation, `describe-target-group-attributes` output, a Pulumi
`aws:lb/targetGroup` resource) and for infra, which writes the same attributes and field
(`infra.target_group`, `infra.workload`): no key is typed twice between writer and reader.

Defaults are the model's (`LoadBalancer`'s field defaults), which are the upstream ones:
- externalTrafficPolicy: `Cluster` when the Service does not set it (Kubernetes Service API:
  the field is `Cluster` or `Local`, Cluster by default; `Local` only routes to node-local
  ready endpoints and the node answers its healthCheckNodePort by whether it has one).
- `target_health_state.unhealthy.connection_termination.enabled`: true (ELBv2 target group
  attributes, NLB only: the load balancer closes an unhealthy target's connections unless it
  is turned off; Pulumi's `TargetGroupTargetHealthState` documents the same default).
- `target_health_state.unhealthy.draining_interval_seconds`: 0, range 0–360000, settable only
  while the termination above is off (same sources).
- `deregistration_delay.connection_termination.enabled`: false (ELBv2 attributes; Pulumi's
  `connectionTermination` "Default is false").
Annotation values are strings (LBC Service annotations: booleans as "true"/"false", the
attributes a `k1=v1,k2=v2` stringMap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lockstep.timing import limits as L
from lockstep.timing.extract.values import ExtractError, get, items
from lockstep.timing.model import LoadBalancer

# ---- externalTrafficPolicy ---------------------------------------------------------------
ETP_PATH = ("spec", "externalTrafficPolicy")  # the Service field (Kubernetes Service API)
ETP_ARG = "external_traffic_policy"  # its pulumi_kubernetes `ServiceSpecArgs` argument, and the model field
ETP_VALUES = ("Cluster", "Local")
ETP_DEFAULT: str = LoadBalancer.model_fields[ETP_ARG].default
# Service types that have node ports, so a traffic policy (the API refuses it on ClusterIP)
NODE_PORT_TYPES = ("NodePort", "LoadBalancer")


def traffic_policy(service: Mapping[str, Any] | None) -> str | None:
    """The Service's stated externalTrafficPolicy (None: not stated, the default applies)."""
    raw = get(service, *ETP_PATH)
    if raw is None:
        return None
    if raw not in ETP_VALUES:
        raise ExtractError(f"{'.'.join(ETP_PATH)}: expected one of {', '.join(ETP_VALUES)}, got {raw!r}")
    return str(raw)


# ---- NLB target group connection attributes ----------------------------------------------
@dataclass(frozen=True)
class Attribute:
    """One connection attribute: the model field it sets, the ELBv2 key (annotation and
    describe output), where a Pulumi `aws:lb/targetGroup` holds it (an input path, `[0]` of
    `targetHealthStates` for the health-state ones) and the pulumi_aws argument infra writes."""

    field: str
    key: str
    path: tuple[Any, ...]
    arg: str
    seconds: L.Range | None = None  # None: a boolean

    @property
    def default(self) -> Any:
        return LoadBalancer.model_fields[self.field].default

    @property
    def allowed(self) -> str:
        return "true or false" if self.seconds is None else f"whole seconds {self.seconds.lo}–{self.seconds.hi}"


HEALTH_STATES = ("targetHealthStates", "target_health_states")  # Pulumi input, pulumi_aws argument
UNHEALTHY_TERMINATION = Attribute("unhealthy_connection_termination",
                                  "target_health_state.unhealthy.connection_termination.enabled",
                                  (HEALTH_STATES[0], 0, "enableUnhealthyConnectionTermination"),
                                  "enable_unhealthy_connection_termination")
UNHEALTHY_DRAINING = Attribute("unhealthy_draining_interval_s", "target_health_state.unhealthy.draining_interval_seconds",
                               (HEALTH_STATES[0], 0, "unhealthyDrainingInterval"), "unhealthy_draining_interval",
                               L.NLB_UNHEALTHY_DRAINING)
DEREGISTRATION_TERMINATION = Attribute("deregistration_connection_termination",
                                       "deregistration_delay.connection_termination.enabled",
                                       ("connectionTermination",), "connection_termination")
CONNECTION_ATTRIBUTES = (UNHEALTHY_TERMINATION, UNHEALTHY_DRAINING, DEREGISTRATION_TERMINATION)
BY_KEY = {a.key: a for a in CONNECTION_ATTRIBUTES}


def value(attr: Attribute, raw: Any, where: str) -> bool | int:
    """A stated value, as the API takes it: true/false, or whole seconds in the API's range.
    Anything else names `where`, the key and the allowed values."""
    if attr.seconds is None:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip()
        if text in ("true", "false"):
            return text == "true"
    else:
        # an int, a digit string or a whole float (protobuf); a bool's text is not digits
        text = str(int(raw) if isinstance(raw, float) and raw.is_integer() else raw).strip()
        number = int(text) if text.isdigit() else None
        if number is not None and attr.seconds.lo <= number <= attr.seconds.hi:
            return number
    raise ExtractError(f"{where} {attr.key}: expected {attr.allowed}, got {raw!r}")


def props_from_attributes(attributes: Mapping[str, Any], where: str) -> dict[str, Any]:
    """ELBv2 keys (`k=v` of the annotation, or `describe-target-group-attributes`) → the Pulumi
    inputs of a target group that hold them, each value checked."""
    out: dict[str, Any] = {}
    for attr in CONNECTION_ATTRIBUTES:
        if attr.key in attributes:
            put_path(out, attr.path, value(attr, attributes[attr.key], where))
    return out


def put_path(obj: dict[str, Any], path: tuple[Any, ...], v: Any) -> None:
    """Set `path` in `obj`, creating mappings, and a one-element list where the step is 0."""
    node: Any = obj
    for step, nxt in zip(path, path[1:]):
        if isinstance(nxt, int):
            node = node.setdefault(step, [{}])[nxt]
        elif isinstance(step, int):
            continue
        else:
            node = node.setdefault(step, {})
    node[path[-1]] = v


def at_path(props: Any, path: tuple[Any, ...]) -> Any:
    node = props
    for step in path:
        if isinstance(step, int):
            seq = items(node)
            node = seq[step] if len(seq) > step else None
        else:
            node = get(node, step)
    return node


def connection_fields(props: Mapping[str, Any]) -> dict[str, Any]:
    """The model fields a target group's Pulumi inputs state (absent: not in the result, so
    the model's default applies)."""
    out = {}
    for attr in CONNECTION_ATTRIBUTES:
        raw = at_path(props, attr.path)
        if raw is not None:
            out[attr.field] = value(attr, raw, ".".join(map(str, attr.path)))
    return out


def stated(props: Mapping[str, Any]) -> set[str]:
    """The connection attribute keys a target group's inputs state."""
    return {a.key for a in CONNECTION_ATTRIBUTES if at_path(props, a.path) is not None}
