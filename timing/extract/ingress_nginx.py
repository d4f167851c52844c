"""ingress-nginx as its resources state it: the controller (its container's flags, its pod's
grace), its ConfigMap, and the per-Ingress annotations, read into the fields of the
`ingress-nginx` hop (`timing.hopkinds.INGRESS_NGINX`, whose upstream names are the ConfigMap
keys and flags read here). `timing.bind.nginx` finds which resources belong together.

From the controller's code (kubernetes/ingress-nginx): `--controller-class` defaults to
`k8s.io/ingress-nginx` and `--ingress-class` to `nginx` (internal/ingress/controller/
ingressclass: DefaultControllerName, DefaultAnnotationValue); `--configmap` names the ConfigMap
as `namespace/name` (the chart passes `$(POD_NAMESPACE)/<release>-controller`). The ConfigMap's
`keep-alive`, `upstream-keepalive-timeout` and `proxy-read-timeout` are whole seconds;
`worker-shutdown-timeout` is an nginx time ("240s"). The `nginx.ingress.kubernetes.io/
proxy-read-timeout` annotation is whole seconds: the annotation parser takes integers only and
the controller falls back to the ConfigMap's value for anything else (internal/ingress/
annotations/proxy/main.go), so such a value is a note here, not an error.

The controller keeps accepting until its preStop hook has run and `--shutdown-grace-period`
has passed: the chart's hook is `/wait-shutdown` (the image's helper, which sends the
controller SIGTERM and waits for it to exit, cmd/waitshutdown), adding nothing; a `sleep N`
before it (or as the hook) adds N, and counts in the hop's shutdown delay. Another command
takes as long as it does: unknown unless `lockstep.dev/drain-seconds` states it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any, Final

from lockstep.timing.extract.kube import prestop
from lockstep.timing.extract.nodes import duration_s, whole_s
from lockstep.timing.extract.values import ExtractError, get, items
from lockstep.timing.hopkinds import INGRESS_NGINX

CONTROLLER_IMAGE: Final = "/ingress-nginx/controller"  # registry.k8s.io/ingress-nginx/controller[:tag][@digest]
CONTROLLER_CLASS: Final = "k8s.io/ingress-nginx"
INGRESS_CLASS: Final = "nginx"
ANNOTATION: Final = "nginx.ingress.kubernetes.io/"
NAMES: Final = INGRESS_NGINX.upstream  # model field → ConfigMap key, flag or pod field
# The fields the controller's ConfigMap sets, and the one an Ingress annotation overrides.
CONFIGMAP_FIELDS: Final = ("client_idle_s", "upstream_idle_s", "request_timeout_s", "worker_shutdown_s")
READ_TIMEOUT_ANNOTATION: Final = ANNOTATION + NAMES["request_timeout_s"]
SHUTDOWN_FLAG: Final = NAMES["shutdown_delay_s"]
WAIT_SHUTDOWN: Final = "/wait-shutdown"
_FLAG = re.compile(r"^(--[a-z0-9-]+)(?:=(.*))?$")


def controller_container(workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ingress-nginx controller container of a Deployment or DaemonSet, by its image."""
    for c in items(get(workload, "spec", "template", "spec", "containers")):
        if CONTROLLER_IMAGE in str(get(c, "image")):
            return c
    return None


def flags(container: Mapping[str, Any]) -> dict[str, str]:
    """`--name=value` arguments (a bare `--name` is "true"), the last one winning."""
    out = {}
    for arg in items(get(container, "args")):
        m = _FLAG.match(str(arg))
        if m:
            out[m.group(1)] = "true" if m.group(2) is None else m.group(2)
    return out


def configmap_ref(given: Mapping[str, str], namespace: str) -> tuple[str, str] | None:
    """(namespace, name) of the controller's ConfigMap; None: it reads none."""
    raw = given.get("--configmap")
    if not raw:
        return None
    ns, _, name = raw.rpartition("/")
    return ((namespace if ns in ("", "$(POD_NAMESPACE)") else ns), name)


# `--watch-ingress-without-class` is false unless set (pkg/flags/flags.go): an Ingress with no
# class and no legacy annotation is then not this controller's. The flag is a Go bool, which
# `strconv.ParseBool` reads: "1", "t", "T", "true", "TRUE" and "True" are true.
WATCH_CLASSLESS_FLAG: Final = "--watch-ingress-without-class"
GO_TRUE: Final = frozenset({"1", "t", "T", "true", "TRUE", "True"})
# An IngressClass with this annotation "true" is the cluster's default: the DefaultIngressClass
# admission plugin gives it to a new Ingress that names no class (Kubernetes Ingress docs,
# "Default IngressClass"; with two defaults, such an Ingress is refused).
DEFAULT_CLASS_ANNOTATION: Final = "ingressclass.kubernetes.io/is-default-class"


def watches_classless(given: Mapping[str, str]) -> bool:
    """Whether the controller also serves Ingresses that name no class."""
    return given.get(WATCH_CLASSLESS_FLAG) in GO_TRUE  # absent: None, never true


def classes(given: Mapping[str, str]) -> tuple[str, str]:
    """(the IngressClass controller it serves, the class name it takes without an IngressClass)."""
    return given.get("--controller-class", CONTROLLER_CLASS), given.get("--ingress-class", INGRESS_CLASS)


def _time(raw: Any, where: str) -> int:
    """An nginx time: whole seconds, or with units ("240s", "4m")."""
    text = str(raw).strip()
    return int(text) if text.isdigit() else duration_s(text, where)


def configmap_values(configmap: Mapping[str, Any]) -> dict[str, int]:
    """The hop fields the controller's ConfigMap states (whole seconds; worker-shutdown-timeout
    an nginx time such as "240s")."""
    data = get(configmap, "data") or {}
    if not isinstance(data, Mapping):  # (the audit's shape check names it first; the pack gets it here)
        raise ExtractError(f"data: expected a mapping of strings to strings, got {data!r}")
    out = {}
    for f in CONFIGMAP_FIELDS:
        key = NAMES[f]
        if data.get(key) is not None:
            out[f] = (_time if f == "worker_shutdown_s" else whole_s)(data[key], f"data.{key}")
    return out


def controller_values(workload: Mapping[str, Any], given: Mapping[str, str]) -> dict[str, int]:
    """The hop fields the controller's own pod states: `--shutdown-grace-period` and the grace."""
    out = {}
    if SHUTDOWN_FLAG in given:
        out["shutdown_delay_s"] = whole_s(given[SHUTDOWN_FLAG], f"args {SHUTDOWN_FLAG}")
    grace = get(workload, "spec", "template", "spec", "terminationGracePeriodSeconds")
    if grace is not None:
        out["grace_s"] = whole_s(grace, "spec.template.spec.terminationGracePeriodSeconds")
    return out


def prestop_wait(container: Mapping[str, Any], stated: int | None) -> int | None:
    """How long the controller's preStop hook keeps it accepting before it is told to stop
    (None: a command whose length nothing states)."""
    action, seconds = prestop(container, stated)
    if action == "command" and seconds is None:
        words = " ".join(str(c) for c in items(get(container, "lifecycle", "preStop", "exec", "command"))).split()
        if words[:2] in (["sh", "-c"], ["/bin/sh", "-c"]):
            words = words[2:]
        return 0 if len(words) == 1 and posixpath.basename(words[0]) == posixpath.basename(WAIT_SHUTDOWN) else None
    return seconds


def read_timeout(annotations: Mapping[str, Any]) -> tuple[int | None, str]:
    """An Ingress's proxy-read-timeout annotation: (whole seconds or None, a note when the
    controller ignores its value)."""
    raw = annotations.get(READ_TIMEOUT_ANNOTATION)
    if raw is None:
        return None, ""
    text = str(raw).strip()
    if not text.isdigit():
        return None, (f"{READ_TIMEOUT_ANNOTATION}: {raw!r} is not whole seconds: the controller ignores it "
                      "and uses its ConfigMap's value")
    return int(text), ""
