"""Resources by kind and namespace, and the lookup tables that keep linking linear.

Services and PDBs are indexed by one of their selector's labels, Ingress backends, bindings
and HPAs by name, target groups by ARN and name, listeners by the target groups they
forward to.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from lockstep.timing import extract as X
from lockstep.timing.bind.resource import LISTENER, LISTENER_RULE, R53_CHECK, R53_RECORD, TARGET_GROUP, Resource, dig, known


def backends(ing: Resource) -> list[tuple[str, Any]]:
    """(service name, service port) of every backend (networking.k8s.io/v1 and v1beta1). A
    port that is neither a number nor a name is no backend the controller could follow."""
    spec = dig(ing.obj, "spec") or {}
    found = [dig(spec, "defaultBackend"), dig(spec, "backend")]
    for rule in X.items(dig(spec, "rules")):
        found += [dig(p, "backend") for p in X.items(dig(rule, "http", "paths"))]
    out = []
    for b in found:
        svc = dig(b, "service", "name") or dig(b, "serviceName")
        port = dig(b, "service", "port", "number") or dig(b, "service", "port", "name") or dig(b, "servicePort")
        if isinstance(svc, str) and isinstance(port, (int, str, type(None))) and port != "use-annotation":
            out.append((svc, port))
    return list(dict.fromkeys(out))


class Index:
    def __init__(self, resources: list[Resource]) -> None:
        self.kinds: dict[str, dict[str, list[Resource]]] = defaultdict(lambda: defaultdict(list))
        self.namespaces: dict[str, Resource] = {}
        for r in resources:
            if r.kind == "Namespace":
                self.namespaces[r.name] = r
            else:
                self.kinds[r.kind][r.namespace].append(r)
        self.by_label: dict[tuple[str, str, str, Any], list[Resource]] = defaultdict(list)
        self.unlabelled: dict[tuple[str, str], list[Resource]] = defaultdict(list)
        for kind, path in (("Service", ("spec", "selector")),
                           ("PodDisruptionBudget", ("spec", "selector", "matchLabels"))):
            for r in self.all(kind):
                labels = dig(r.obj, *path) or {}
                if labels:
                    k, v = next(iter(labels.items()))
                    self.by_label[(kind, r.namespace, k, v)].append(r)
                else:
                    self.unlabelled[(kind, r.namespace)].append(r)
        self.backends: dict[tuple[str, str], list[tuple[Resource, Any]]] = defaultdict(list)
        for ing in self.all("Ingress"):
            for svc, port in backends(ing):
                self.backends[(ing.namespace, svc)].append((ing, port))
        self.bindings: dict[tuple[str, str], list[Resource]] = defaultdict(list)
        for tgb in self.all("TargetGroupBinding"):
            self.bindings[(tgb.namespace, str(dig(tgb.obj, "spec", "serviceRef", "name")))].append(tgb)
        self.scalers: dict[tuple[str, str, str], list[Resource]] = defaultdict(list)
        for hpa in self.all("HorizontalPodAutoscaler"):
            self.scalers[(hpa.namespace, *X.hpa_target(hpa.obj))].append(hpa)
        self.target_groups = self.all(TARGET_GROUP)
        self.tg_by_arn = {known(dig(t.obj, "arn")): t for t in self.target_groups if known(dig(t.obj, "arn"))}
        self.tg_by_name = {str(dig(t.obj, "name")): t for t in self.target_groups if dig(t.obj, "name")}
        self.listeners = self.all(LISTENER) + self.all(LISTENER_RULE)
        self.checks = self.all(R53_CHECK)
        self.records = self.all(R53_RECORD)

    def candidates(self, kind: str, ns: str, labels: dict[str, Any]) -> list[Resource]:
        """Services or PDBs that may select pods with `labels` (callers check the whole selector)."""
        found = list(self.unlabelled.get((kind, ns), []))
        for k, v in labels.items():
            found += self.by_label.get((kind, ns, k, v), [])
        return list({id(d): d for d in found}.values())

    def of(self, kind: str, ns: str) -> list[Resource]:
        return self.kinds.get(kind, {}).get(ns, [])

    def all(self, kind: str) -> list[Resource]:
        return [d for docs in self.kinds.get(kind, {}).values() for d in docs]

    def target_group(self, binding: Resource) -> Resource | None:
        """The target group a binding names: by ARN when known, else the one it depends on
        (a preview does not know a new group's ARN yet), else by `targetGroupName`."""
        arn = known(dig(binding.obj, "spec", "targetGroupARN"))
        if arn is not None and arn in self.tg_by_arn:
            return self.tg_by_arn[arn]
        for tg in self.target_groups:
            if binding.depends_on(tg):
                return tg
        name = dig(binding.obj, "spec", "targetGroupName")
        return self.tg_by_name.get(str(name)) if name else None

    def forwarding(self, tg: Resource) -> Resource | None:
        """The listener (or listener rule) forwarding to a target group, by ARN or by dependency."""
        arn = known(dig(tg.obj, "arn"))
        for lis in self.listeners:
            actions = X.items(dig(lis.obj, "actions")) + X.items(dig(lis.obj, "defaultActions"))
            for a in actions:
                target = known(dig(a, "targetGroupArn"))
                if (arn is not None and target == arn) or (target is None and lis.depends_on(tg)):
                    return lis
        return None

    def attached(self, tg: Resource) -> str | None:
        """What a target group is attached to: the load balancers it reports, else the
        listener (or listener rule) forwarding to it; None: nothing."""
        arns = [a for a in X.items(dig(tg.obj, "loadBalancerArns")) if known(a)]
        if arns:
            return str(arns[0])
        lis = self.forwarding(tg)
        if lis is None:
            return None
        return known(dig(lis.obj, "listenerArn")) or known(dig(lis.obj, "loadBalancerArn")) or lis.origin.id
