"""Which invariant is judged on which resources, and the findings each produces.

Nothing here links or decides: the resources are adapted (`policies.resources`), linked by
`timing.bind.link` and judged by `timing.bind.judge` — the same steps `lockstep audit` takes —
and each policy reports the findings of its own rule id against the resource each belongs to.
A rule the registry declares decided by one resource (`decided == "resource"`) is a
per-resource policy, judged on that resource alone; one decided by the linked resources is a
stack policy; a rule only a stack config decides has no policy.
"""

from __future__ import annotations

from collections.abc import Sequence

from lockstep.timing.bind import judge, link
from lockstep.timing.bind.judge import Judgement
from lockstep.timing.bind.resource import R53_CHECK, TARGET_GROUP, WORKLOAD_TYPES, WORKLOADS, PULUMI_KINDS
from lockstep.timing.findings import Finding
from lockstep.timing.invariants import RULES

from lockstep.policies.resources import Res, resources_of
from lockstep.policies.settings import Settings

Located = tuple[Finding, str | None]  # a finding and the URN it is reported against

# The resource types a per-resource rule reads, by what the registry says it reads.
READS: dict[str, tuple[str, ...]] = {
    "target group": tuple(t for t, k in PULUMI_KINDS.items() if k == TARGET_GROUP),
    "Route 53 health check": tuple(t for t, k in PULUMI_KINDS.items() if k == R53_CHECK),
    "workload": tuple(WORKLOAD_TYPES[k] for k in WORKLOADS),
}
RESOURCE_RULES: dict[str, tuple[str, ...]] = {
    r.id: tuple(t for kind in r.reads.split(", ") for t in READS[kind]) for r in RULES if r.decided == "resource"}
STACK_RULES: tuple[str, ...] = tuple(r.id for r in RULES if r.decided == "resources")
NOT_FROM_RESOURCES: dict[str, str] = {r.id: r.reads for r in RULES if r.decided == "config"}

Problem = tuple[str, str]  # (URN, what the linker said about the resource)
_last: tuple[tuple[object, ...], list[Judgement], list[Problem], list[Problem]] | None = None


def linked_stack(resources: Sequence[Res], settings: Settings) -> tuple[list[Judgement], list[Problem], list[Problem]]:
    """Every finding of the linked resources, what could not be read, and the linker's
    warnings (links that lead nowhere: `Linked.warnings`, the audit's WARNING lines). The
    engine calls each stack policy with the same resources: an answer for equal resources is
    reused."""
    global _last
    neutral = resources_of(resources)
    key = (settings, *((r.kind, r.origin.id, r.deps, r.obj) for r in neutral))
    if _last is not None and _last[0] == key:
        return _last[1], _last[2], _last[3]
    linked = link.link(neutral, settings.link_options)
    found = judge.judge(linked, settings.ctx)
    unreadable = [(r.origin.id, why) for r, why in linked.unreadable + linked.not_judged]
    warnings = [(r.origin.id, why) for r, why in linked.warnings]
    _last = (key, found, unreadable, warnings)
    return found, unreadable, warnings


def judged(resources: Sequence[Res], settings: Settings) -> tuple[list[Judgement], list[Problem]]:
    """Every finding of the linked resources and what could not be read."""
    found, unreadable, _ = linked_stack(resources, settings)
    return found, unreadable


def stack_warnings(resources: Sequence[Res], settings: Settings) -> list[Problem]:
    """The linker's warnings on the stack's resources, each with the URN it is about, in the
    words the audit prints them."""
    return linked_stack(resources, settings)[2]


def resource_findings(rule_id: str, res: Res, settings: Settings) -> list[Finding]:
    """Findings of a per-resource rule on one resource alone ([] for other resource types)."""
    if res.type not in RESOURCE_RULES.get(rule_id, ()):
        return []
    linked = link.link(resources_of([res]), settings.link_options)
    return [j.finding for j in judge.judge(linked, settings.ctx) if j.finding.id == rule_id]


def stack_findings(rule_id: str, resources: Sequence[Res], settings: Settings) -> list[Located]:
    """Every finding of `rule_id` on the stack's linked resources, with the URN it belongs to."""
    found, _ = judged(resources, settings)
    return [(j.finding, j.owner.origin.id) for j in found if j.finding.id == rule_id]
