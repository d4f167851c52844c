"""Type checks of the fields `audit` reads, before anything is translated.

A manifest with `spec: 5` or `replicas: "x"` is invalid input: it is named with its file,
line and field (exit 2), never passed on to fail somewhere deeper. Only the fields the
audit and `timing.extract` read are checked; anything else may hold whatever it likes.
"""

from __future__ import annotations

from typing import Any, Callable

from lockstep.timing.audit.reader import Doc, line_of

Check = tuple[str, Callable[[Any], bool], str]


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int_or_str(v: Any) -> bool:
    return _int(v) or isinstance(v, str)


def _str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())


def _maps(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, dict) for x in v)


def _exprs(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(e, dict) and isinstance(e.get("key"), str) and isinstance(e.get("operator"), str)
        and (e.get("values") is None or (isinstance(e["values"], list)
                                         and all(isinstance(x, str) for x in e["values"])))
        for e in v)


def _map(v: Any) -> bool:
    return isinstance(v, dict)


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, (str, int, float)) for x in v)


MAP = (_map, "a mapping")
STR = (_str, "a string")
INT = (_int, "an integer")
INTSTR = (_int_or_str, "an integer or a percentage string")
STRMAP = (_str_map, "a mapping of strings to strings")
MAPS = (_maps, "a list of mappings")

METADATA = [("metadata", *MAP), ("metadata.name", *STR), ("metadata.namespace", *STR),
            ("metadata.labels", *STRMAP), ("metadata.annotations", *STRMAP)]
SELECTOR = [("matchLabels", *STRMAP),
            ("matchExpressions", _exprs, "a list of {key, operator, values: [strings]}")]
POD = [("spec.template", *MAP), ("spec.template.metadata", *MAP),
       ("spec.template.metadata.labels", *STRMAP), ("spec.template.metadata.annotations", *STRMAP),
       ("spec.template.spec", *MAP), ("spec.template.spec.containers", *MAPS),
       ("spec.template.spec.terminationGracePeriodSeconds", *INT),
       ("spec.template.spec.readinessGates", *MAPS)]
WORKLOAD = [("spec", *MAP), ("spec.replicas", *INT), ("spec.selector", *MAP),
            *[("spec.selector." + p, f, t) for p, f, t in SELECTOR], ("spec.minReadySeconds", *INT), *POD]
SHAPES: dict[str, list[Check]] = {
    "Deployment": [*WORKLOAD, ("spec.strategy", *MAP), ("spec.strategy.type", *STR),
                   ("spec.strategy.rollingUpdate", *MAP), ("spec.strategy.rollingUpdate.maxSurge", *INTSTR),
                   ("spec.strategy.rollingUpdate.maxUnavailable", *INTSTR),
                   ("spec.progressDeadlineSeconds", *INT)],
    "StatefulSet": [*WORKLOAD, ("spec.updateStrategy", *MAP)],
    "DaemonSet": [*WORKLOAD, ("spec.updateStrategy", *MAP), ("spec.updateStrategy.type", *STR),
                  ("spec.updateStrategy.rollingUpdate", *MAP),
                  ("spec.updateStrategy.rollingUpdate.maxSurge", *INTSTR),
                  ("spec.updateStrategy.rollingUpdate.maxUnavailable", *INTSTR)],
    # Argo Rollouts: the pod template may come from a `workloadRef`'d Deployment instead.
    "Rollout": [*WORKLOAD, ("spec.progressDeadlineSeconds", *INT), ("spec.workloadRef", *MAP),
                ("spec.workloadRef.name", *STR), ("spec.workloadRef.kind", *STR), ("spec.strategy", *MAP),
                *[(f"spec.strategy.{s}", *MAP) for s in ("blueGreen", "canary")],
                *[(f"spec.strategy.{s}.{k}", *INT) for s in ("blueGreen", "canary")
                  for k in ("scaleDownDelaySeconds", "abortScaleDownDelaySeconds")],
                ("spec.strategy.canary.maxSurge", *INTSTR), ("spec.strategy.canary.maxUnavailable", *INTSTR),
                ("spec.strategy.canary.stableService", *STR), ("spec.strategy.canary.trafficRouting", *MAP),
                ("spec.strategy.canary.trafficRouting.alb", *MAP),
                ("spec.strategy.canary.trafficRouting.alb.ingress", *STR),
                ("spec.strategy.canary.trafficRouting.alb.rootService", *STR),
                ("spec.strategy.canary.trafficRouting.alb.servicePort", *INT)],
    "IngressClassParams": [("spec", *MAP), ("spec.loadBalancerAttributes", *MAPS)],
    "Service": [("spec", *MAP), ("spec.type", *STR), ("spec.selector", *STRMAP), ("spec.ports", *MAPS),
                ("spec.loadBalancerClass", *STR)],
    "Ingress": [("spec", *MAP), ("spec.ingressClassName", *STR), ("spec.rules", *MAPS),
                ("spec.defaultBackend", *MAP), ("spec.backend", *MAP)],
    "IngressClass": [("spec", *MAP), ("spec.controller", *STR)],
    "PodDisruptionBudget": [("spec", *MAP), ("spec.minAvailable", *INTSTR), ("spec.maxUnavailable", *INTSTR),
                            ("spec.selector", *MAP),
                            *[("spec.selector." + p, f, t) for p, f, t in SELECTOR]],
    "HorizontalPodAutoscaler": [("spec", *MAP), ("spec.scaleTargetRef", *MAP),
                                ("spec.scaleTargetRef.kind", *STR), ("spec.scaleTargetRef.name", *STR),
                                ("spec.minReplicas", *INT), ("spec.maxReplicas", *INT), ("spec.metrics", *MAPS)],
    "TargetGroupBinding": [("spec", *MAP), ("spec.serviceRef", *MAP), ("spec.serviceRef.name", *STR),
                           ("spec.targetGroupARN", *STR), ("spec.targetGroupName", *STR),
                           ("spec.targetType", *STR)],
    "Namespace": [],
    # The API's ConfigMap.data is a map of strings to strings (the ingress-nginx controller's,
    # the mesh's and the heartbeat's settings are read from it).
    "ConfigMap": [("data", *STRMAP)],
}
CONTAINER = [("name", *STR), ("ports", *MAPS), ("readinessProbe", *MAP), ("livenessProbe", *MAP),
             ("startupProbe", *MAP), ("lifecycle", *MAP), ("lifecycle.preStop", *MAP)]
PROBE_NUMBERS = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "successThreshold",
                 "failureThreshold")
AWS_TG = [("TargetGroupArn", *STR), ("TargetGroupName", *STR), ("Protocol", *STR), ("TargetType", *STR),
          ("HealthCheckIntervalSeconds", *INT), ("HealthCheckTimeoutSeconds", *INT),
          ("HealthyThresholdCount", *INT), ("UnhealthyThresholdCount", *INT),
          ("HealthCheckPath", *STR), ("HealthCheckProtocol", *STR), ("Port", *INT),
          ("LoadBalancerArns", _strs, "a list of ARNs"), ("Matcher", *MAP)]


PROBE_CHECKS = [(f"{name}.{n}", *INT) for name in ("readinessProbe", "livenessProbe", "startupProbe")
                for n in PROBE_NUMBERS]  # built once, not per container
SERVICE_PORT = [("port", *INT), ("targetPort", *INTSTR), ("name", *STR)]
BACKEND = [("service", *MAP), ("service.name", *STR), ("service.port", *MAP), ("service.port.number", *INT),
           ("service.port.name", *STR), ("serviceName", *STR), ("servicePort", *INTSTR)]


def ingress_backends(obj: Any) -> list[tuple[str, str]]:
    """The backends of an Ingress (default, v1beta1 `backend`, every rule path's)."""
    found = problems(obj, [(f"spec.{b}.{p}", f, t) for b in ("defaultBackend", "backend") for p, f, t in BACKEND])
    _, rules = lookup(obj, "spec.rules")
    for i, rule in enumerate(rules or []):
        found += problems(rule, [("http", *MAP), ("http.paths", *MAPS)], f"spec.rules.{i}.")
        _, paths = lookup(rule, "http.paths")
        if _maps(paths):
            for j, path in enumerate(paths):
                found += problems(path, [("backend", *MAP)] + [(f"backend.{p}", f, t) for p, f, t in BACKEND],
                                  f"spec.rules.{i}.http.paths.{j}.")
    return found


_SPLIT: dict[str, list[str]] = {}


def lookup(obj: Any, dotted: str) -> tuple[bool, Any]:
    keys = _SPLIT.get(dotted)
    if keys is None:
        keys = _SPLIT[dotted] = dotted.split(".")
    node = obj
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return False, None
        node = node[key]
    return True, node


def problems(obj: Any, checks: list[Check], prefix: str = "") -> list[tuple[str, str]]:
    """(field path, what was expected) for each present field of the wrong type. A parent of
    the wrong type hides its children (one message per root cause)."""
    out: list[tuple[str, str]] = []
    bad: list[str] = []
    for path, ok, expected in checks:
        if bad and any(path.startswith(b + ".") for b in bad):
            continue
        present, value = lookup(obj, path)
        if present and value is not None and not ok(value):
            bad.append(path)
            out.append((prefix + path, f"expected {expected}, got {_shown(value)}"))
    return out


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---- the common case: nothing wrong -------------------------------------------------------
# `problems` returns nothing exactly when every check it makes passes (a failing check is
# only passed over below a failing parent, which is itself reported). `passes` answers that
# in one walk of a tree of the checks, each key looked up once; only a document that fails
# it goes the long way, which words the messages.
Tree = dict[str, tuple[list[Callable[[Any], bool]], "Tree"]]


def tree(checks: list[Check]) -> Tree:
    root: Tree = {}
    for path, ok, _ in checks:
        node = root
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, ([], {}))[1]
        node.setdefault(last, ([], {}))[0].append(ok)
    return root


def passes(obj: Any, checks: Tree) -> bool:
    """Every check of the tree holds on `obj`, a dict (a field absent or null holds). The
    object's keys are walked, not the tree's: a manifest sets few of the fields checked."""
    for key, value in obj.items():
        entry = checks.get(key)
        if entry is None or value is None:
            continue
        oks, below = entry
        for ok in oks:
            if not ok(value):
                return False
        if below and isinstance(value, dict) and not passes(value, below):
            return False
    return True


KIND_TREES = {kind: tree(METADATA + checks) for kind, checks in SHAPES.items()}
CONTAINER_TREE = tree(CONTAINER + PROBE_CHECKS)
SERVICE_PORT_TREE = tree(SERVICE_PORT)
PATH_TREE = tree([("backend", *MAP)] + [(f"backend.{p}", f, t) for p, f, t in BACKEND])
RULE_TREE = tree([("http", *MAP), ("http.paths", *MAPS)])
INGRESS_BACKENDS_TREE = tree([(f"spec.{b}.{p}", f, t) for b in ("defaultBackend", "backend") for p, f, t in BACKEND])


def fine(obj: dict[str, Any], kind: str) -> bool:
    """`doc_problems` of a Kubernetes object of a kind in SHAPES would find nothing."""
    if not passes(obj, KIND_TREES[kind]):
        return False
    spec = obj.get("spec")
    if kind in ("Deployment", "StatefulSet", "Rollout", "DaemonSet"):
        _, containers = lookup(obj, "spec.template.spec.containers")
        return all(passes(c, CONTAINER_TREE) for c in containers or [])
    if kind == "Service":
        ports = spec.get("ports") if isinstance(spec, dict) else None
        return all(passes(p, SERVICE_PORT_TREE) for p in ports or [])
    if kind == "Ingress":
        if not passes(obj, INGRESS_BACKENDS_TREE):
            return False
        for rule in (spec.get("rules") if isinstance(spec, dict) else None) or []:
            if not passes(rule, RULE_TREE):
                return False
            paths = rule.get("http", {}).get("paths") if isinstance(rule.get("http"), dict) else None
            if not all(passes(p, PATH_TREE) for p in paths or []):
                return False
    return True


def doc_problems(doc: Doc) -> list[str]:
    """One line per wrongly typed field of a document (empty: fine)."""
    if doc.kind in SHAPES and fine(doc.obj, doc.kind):
        return []
    return worded_problems(doc)


def worded_problems(doc: Doc) -> list[str]:
    """`doc_problems` the long way: every check in order, each failure worded."""
    obj, kind = doc.obj, doc.kind
    found: list[tuple[str, str]] = []
    if kind in SHAPES:
        found += problems(obj, METADATA + SHAPES[kind])
        if kind in ("Deployment", "StatefulSet", "Rollout", "DaemonSet") and not found:
            _, containers = lookup(obj, "spec.template.spec.containers")
            for i, c in enumerate(containers or []):
                pre = f"spec.template.spec.containers.{i}."
                found += problems(c, CONTAINER, pre)
                found += problems(c, PROBE_CHECKS, pre)
        if kind == "Service" and not found:
            _, ports = lookup(obj, "spec.ports")
            for i, port in enumerate(ports or []):
                found += problems(port, SERVICE_PORT, f"spec.ports.{i}.")
        if kind == "Ingress" and not found:
            found += ingress_backends(obj)
    elif "TargetGroups" in obj:
        groups = obj["TargetGroups"]
        if not _maps(groups):
            found.append(("TargetGroups", "expected a list of target groups"))
        else:
            for i, tg in enumerate(groups):
                found += problems(tg, AWS_TG, f"TargetGroups.{i}.")
    out = []
    for path, what in found:
        keys = [int(k) if k.isdigit() else k for k in path.split(".")]
        out.append(f"{doc.file}:{line_of(obj, keys) or doc.line}: {describe(doc)}: {path}: {what}")
    return out


def describe(doc: Doc) -> str:
    """`Kind namespace/name` of a Kubernetes object, or what an AWS document is."""
    obj = doc.obj
    if doc.kind:
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        name = meta.get("name", "?")
        ns = meta.get("namespace")
        return f"{doc.kind} {ns}/{name}" if isinstance(ns, str) else f"{doc.kind} {name}"
    if "TargetGroups" in obj:
        return "describe-target-groups output"
    if "Attributes" in obj:
        return "describe-target-group-attributes output"
    return "document"
