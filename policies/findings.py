"""Which invariant is judged on which resources, and the findings each produces.

Nothing here decides a rule: every finding comes from the rule functions registered in
`timing.invariants.RULES`, called on model pieces `timing.extract` read from resources.
A rule id is decided either from one resource (`RESOURCE_RULES`: a target group, a Route 53
health check or one Deployment/StatefulSet says everything the rule needs) or from the
stack's resources together (`STACK_RULES`).
"""

from __future__ import annotations

from collections.abc import Sequence

from timing import extract as x
from timing.findings import Finding
from timing.invariants import BY_ID, RULES, Rule, Scene, walk

from policies.resources import (
    R53_CHECK, R53_RECORD, TARGET_GROUPS, WORKLOADS, Bound, Res, Unreadable, bound_services,
    heartbeat_configmaps, known, of_type, with_kind,
)
from policies.settings import Settings

Located = tuple[Finding, str | None]  # a finding and the URN it is reported against

# Which resource types decide a per-resource rule (`decided == "resource"` in the registry).
RESOURCE_TYPES: dict[str, tuple[str, ...]] = {
    "target group": TARGET_GROUPS, "Route 53 health check": (R53_CHECK,), "workload": WORKLOADS,
}
RESOURCE_RULES: dict[str, tuple[str, ...]] = {
    r.id: tuple(t for kind in r.reads.split(", ") for t in RESOURCE_TYPES[kind]) for r in RULES
    if r.decided == "resource"}
STACK_RULES: tuple[str, ...] = tuple(r.id for r in RULES if r.decided == "resources")
NOT_FROM_RESOURCES: dict[str, str] = {r.id: r.reads for r in RULES if r.decided == "config"}
HEARTBEAT_RULES = tuple(r.id for r in RULES if r.id in STACK_RULES and all(c.scope == "stack" for c in r.checks)
                        and not r.id.startswith("failover"))


def chosen(rule_id: str) -> tuple[Rule, ...]:
    return (BY_ID[rule_id],)


# ---- one resource -------------------------------------------------------------------------
def resource_findings(rule_id: str, res: Res, settings: Settings) -> list[Finding]:
    """Findings of a `RESOURCE_RULES` id on one resource ([] for other resource types)."""
    if res.type not in RESOURCE_RULES.get(rule_id, ()):
        return []
    ctx = settings.ctx
    if res.type in TARGET_GROUPS:
        try:
            lb = x.target_group(res.props, idle_timeout_s=settings.alb_idle_timeout_s)
        except x.ExtractError:
            return []  # a protocol the model does not cover (UDP, GENEVE, Lambda)
        return walk(Scene(), ctx, chosen(rule_id), ("lb",), lone=((res.name, lb),))
    if res.type == R53_CHECK:
        return walk(Scene(failover=x.failover(res.props, {}, None)), ctx, chosen(rule_id), ("stack",))
    svc = x.workload(with_kind(res))
    return walk(Scene(services=(svc,)), ctx, chosen(rule_id), ("lb", "service"))


# ---- the stack ------------------------------------------------------------------------------
def service_findings(rule_id: str, bounds: Sequence[Bound], settings: Settings) -> list[Located]:
    out: list[Located] = []
    for b in bounds:
        found = walk(Scene(services=(b.service,)), settings.ctx, chosen(rule_id), ("lb", "service"))
        out.extend((f, b.urn) for f in found)
    return out


def heartbeat_findings(rule_id: str, resources: Sequence[Res], bounds: Sequence[Bound],
                       settings: Settings, unreadable: Unreadable) -> list[Located]:
    out: list[Located] = []
    for cm in heartbeat_configmaps(resources):
        try:
            config = x.heartbeat_config(cm.props)
            deployment = next((w for w in of_type(resources, *WORKLOADS) if w.meta_name == config.service
                               and w.namespace == config.lease.namespace), None)
            hb = x.heartbeat_service(config, deployment.props if deployment is not None else None)
        except x.ExtractError as err:
            unreadable.problems.append((cm.urn, str(err)))
            continue
        watched = {(b.namespace, b.service.name): b for b in bounds}
        pairs = [(spec, watched[(c.workload.namespace, c.workload.name)])
                 for spec, c in zip(x.heartbeat_specs(config), config.specs)
                 if (c.workload.namespace, c.workload.name) in watched]
        services = {b.service.name: b for _, b in pairs}
        scene = Scene(heartbeat=hb, heartbeat_specs=tuple(s for s, _ in pairs),
                      services=tuple(b.service for b in services.values()))
        found = walk(scene, settings.ctx, chosen(rule_id), ("stack",))
        own = deployment.urn if deployment is not None else cm.urn
        out.extend((f, services[f.service].urn if f.service in services else own) for f in found)
    return out


def entry_service(bounds: Sequence[Bound], settings: Settings) -> Bound | None:
    """The configured entry workload, else the only one behind an HTTP(S) target group."""
    if settings.entry_service is not None:
        return next((b for b in bounds if b.service.name == settings.entry_service), None)
    http = [b for b in bounds if b.service.lb is not None and b.service.lb.kind == "alb"]
    return http[0] if len(http) == 1 else None


def checked_record(resources: Sequence[Res]) -> tuple[Res, Res] | None:
    """(health check, record) of the failover pair; the primary's when there is one."""
    checks = of_type(resources, R53_CHECK)
    pairs = [(c, r) for r in of_type(resources, R53_RECORD) for c in checks if guards(c, r)]
    primary = [p for p in pairs if any(x.get(f, "type") == "PRIMARY"
                                       for f in x.items(x.get(p[1].props, "failoverRoutingPolicies")))]
    return (primary or pairs or [None])[0]


def guards(check: Res, record: Res) -> bool:
    """The record names the health check by id (when known) or depends on it."""
    check_id = known(check.props, "id")
    return check.urn in record.deps or (check_id is not None and known(record.props, "healthCheckId") == check_id)


def failover_findings(rule_id: str, resources: Sequence[Res], bounds: Sequence[Bound],
                      settings: Settings, unreadable: Unreadable) -> list[Located]:
    pair = checked_record(resources)
    if pair is None:
        return []
    entry = entry_service(bounds, settings)
    if entry is None:
        unreadable.problems.append((pair[0].urn, "cannot tell the regional entry workload: "
                                    "set the policy config key entry_service"))
        return []
    fo = x.failover(pair[0].props, pair[1].props, entry.service.name)
    found = walk(Scene(services=(entry.service,), failover=fo), settings.ctx, chosen(rule_id), ("stack",))
    return [(f, pair[0].urn) for f in found]


def stack_findings(rule_id: str, resources: Sequence[Res], settings: Settings,
                   unreadable: Unreadable | None = None) -> list[Located]:
    """Every finding of `rule_id` on the stack's resources (resource rules on each resource)."""
    unreadable = unreadable if unreadable is not None else Unreadable()
    if rule_id in RESOURCE_RULES:
        return [(f, r.urn) for r in resources for f in readable(rule_id, r, settings, unreadable)]
    bounds = bound_services(resources, settings, unreadable)
    if all(c.scope != "stack" for c in BY_ID[rule_id].checks):
        return service_findings(rule_id, bounds, settings)
    if rule_id in HEARTBEAT_RULES:
        return heartbeat_findings(rule_id, resources, bounds, settings, unreadable)
    return failover_findings(rule_id, resources, bounds, settings, unreadable)


def readable(rule_id: str, res: Res, settings: Settings, unreadable: Unreadable) -> list[Finding]:
    try:
        return resource_findings(rule_id, res, settings)
    except x.ExtractError as err:
        unreadable.problems.append((res.urn, str(err)))
        return []
