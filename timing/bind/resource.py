"""The neutral resource the linker works on, whatever read it.

The audit adapts documents (a file, a position in it, line marks), the policy pack adapts
`PolicyResource`s (a URN, the URNs it depends on, values a preview cannot know yet). Both
become a `Resource`: a kind, the object as Kubernetes spells it (AWS resources as Pulumi
inputs: `healthCheck.interval`, `deregistrationDelay`), where it came from, and its
dependencies. A value not known yet is `UNKNOWN`, never a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable


class _Unknown:
    """A value a preview cannot know yet (a new resource's ARN)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown during preview>"


UNKNOWN: Any = _Unknown()

# Neutral kinds of the AWS resources (Kubernetes objects keep their `kind`).
TARGET_GROUP = "TargetGroup"
LISTENER = "Listener"
LISTENER_RULE = "ListenerRule"
R53_CHECK = "Route53HealthCheck"
R53_RECORD = "Route53Record"
AWS_KINDS = (TARGET_GROUP, LISTENER, LISTENER_RULE, R53_CHECK, R53_RECORD)
WORKLOADS = ("Deployment", "StatefulSet", "Rollout", "DaemonSet")  # the kinds the model judges (a Rollout: Argo's)
# Their Pulumi type tokens (an Argo Rollout is a custom resource of its API group).
WORKLOAD_TYPES = {"Deployment": "kubernetes:apps/v1:Deployment", "StatefulSet": "kubernetes:apps/v1:StatefulSet",
                  "Rollout": "kubernetes:argoproj.io/v1alpha1:Rollout",
                  "DaemonSet": "kubernetes:apps/v1:DaemonSet"}
# Kinds that run pods the model does not hold: each is listed with its reason, never dropped silently.
OTHER_WORKLOADS = {
    "ReplicaSet": "a bare ReplicaSet never rolls (its Deployment or Rollout is what is judged)",
    "Pod": "a bare Pod is never replaced by a controller",
    "Job": "a Job runs to completion and is not load balanced",
    "CronJob": "a CronJob's Jobs run to completion and are not load balanced",
}

# Pulumi type tokens of the AWS resources the linker reads (both providers' module names).
PULUMI_KINDS = {
    "aws:lb/targetGroup:TargetGroup": TARGET_GROUP, "aws:alb/targetGroup:TargetGroup": TARGET_GROUP,
    "aws:lb/listener:Listener": LISTENER, "aws:alb/listener:Listener": LISTENER,
    "aws:lb/listenerRule:ListenerRule": LISTENER_RULE, "aws:alb/listenerRule:ListenerRule": LISTENER_RULE,
    "aws:route53/healthCheck:HealthCheck": R53_CHECK, "aws:route53/record:Record": R53_RECORD,
}


def pulumi_kind(type_token: str) -> str | None:
    """The neutral kind of a Pulumi resource type: a Kubernetes kind (`kubernetes:apps/v1:Deployment`
    → Deployment), an AWS kind above, or None for a type the linker does not read."""
    if type_token.startswith("kubernetes:") and not type_token.startswith("kubernetes:helm"):
        return type_token.rsplit(":", 1)[-1]
    return PULUMI_KINDS.get(type_token)


@dataclass(frozen=True)
class Origin:
    """Where a resource was read: `id` (a URN, or file#index) names it; `locate` gives the
    file and line of a key path of the neutral object (None: the source has no lines)."""

    id: str
    file: str = ""
    locate_path: Callable[[tuple[Any, ...]], tuple[str, int]] | None = None

    def locate(self, path: tuple[Any, ...] = ()) -> tuple[str, int]:
        if self.locate_path is None:
            return self.file or self.id, 0
        return self.locate_path(path)

    def line(self, path: tuple[Any, ...] = ()) -> int:
        return self.locate(path)[1]


@dataclass(frozen=True, eq=False, slots=True)
class Resource:
    """`name`, `namespace` and where it is (`home`) are worked out once each, on first use: the
    linker, the judging step and the report ask them tens of thousands of times on 4,000
    documents (the object is not changed once read)."""

    kind: str
    obj: Mapping[str, Any]
    origin: Origin
    deps: frozenset[str] | None = None  # URNs it depends on; None: the source records no order
    _name: str | None = field(default=None, init=False, repr=False)
    _namespace: str | None = field(default=None, init=False, repr=False)
    _home: tuple[str, int] | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        if self._name is None:
            object.__setattr__(self, "_name", str(dig(self.obj, "metadata", "name") or dig(self.obj, "name") or ""))
        return self._name  # type: ignore[return-value]

    @property
    def namespace(self) -> str:
        if self._namespace is None:
            object.__setattr__(self, "_namespace", str(dig(self.obj, "metadata", "namespace") or "default"))
        return self._namespace  # type: ignore[return-value]

    @property
    def ref(self) -> str:
        if self.kind in AWS_KINDS:
            return f"{self.kind} {self.name}"
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def home(self) -> tuple[str, int]:
        """(file, line) of the resource itself: `origin.locate(())`."""
        if self._home is None:
            object.__setattr__(self, "_home", self.origin.locate(()))
        return self._home  # type: ignore[return-value]

    @property
    def line(self) -> int:
        return self.home[1] or 1

    @property
    def where(self) -> str:
        return f"{self.origin.file}:{self.line}" if self.origin.file else self.origin.id

    def meta(self, key: str) -> dict[str, Any]:
        value = dig(self.obj, "metadata", key)
        return value if isinstance(value, Mapping) else {}

    def depends_on(self, other: Resource) -> bool | None:
        """Whether this resource is created after `other` (None: the source does not say)."""
        return None if self.deps is None else other.origin.id in self.deps


def dig(obj: Any, *path: Any) -> Any:
    """`obj[a][b]...`, or None as soon as a step is missing or not a mapping."""
    for key in path:
        if not isinstance(obj, dict):  # adapters hand plain dicts: no ABC check on the hot path
            return None
        obj = obj.get(key)
    return obj


def known(value: Any) -> Any:
    """The value, or None while a preview cannot know it."""
    return None if value is UNKNOWN else value


def pod_labels(r: Resource) -> dict[str, Any]:
    labels = dig(r.obj, "spec", "template", "metadata", "labels")
    return labels if isinstance(labels, dict) else {}


def selects_pods(svc: Resource, labels: dict[str, Any]) -> bool:
    """A Service selector (a plain map) selects pods carrying all its labels; none selects nothing."""
    selector = dig(svc.obj, "spec", "selector")
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())
