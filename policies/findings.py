"""Which invariant is judged on which resources, and the findings each produces.

Nothing here links or decides: the resources are adapted (`policies.resources`), linked by
`timing.bind.link` and judged by `timing.bind.judge` — the same steps `lockstep audit` takes —
and each policy reports the findings of its own rule id against the resource each belongs to.
A rule the registry declares decided by one resource (`decided == "resource"`) is a
per-resource policy, judged on that resource alone; one decided by the linked resources is a
stack policy; a rule only a stack config decides has no policy.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextvars import ContextVar

from lockstep.timing.bind import judge, link
from lockstep.timing.bind.judge import Judgement
from lockstep.timing.bind.resource import PULUMI_KINDS, R53_CHECK, TARGET_GROUP, WORKLOAD_TYPES, WORKLOADS, Resource
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
# The engine's AnalyzeStackRequest being answered, while the served pack answers one
# (`serve_requests`). Every stack policy of one request is handed the same resources, built
# again from it for each policy: the request, not the resources, is then the cache's key.
REQUEST: ContextVar[object | None] = ContextVar("lockstep_analyze_stack_request", default=None)


def linked_stack(resources: Sequence[Res], settings: Settings) -> tuple[list[Judgement], list[Problem], list[Problem]]:
    """Every finding of the linked resources, what could not be read, and the linker's
    warnings (links that lead nowhere: `Linked.warnings`, the audit's WARNING lines). The
    engine calls each stack policy with the same resources: an answer for an equal request
    (served) or equal resources (called in-process) with equal settings is reused."""
    global _last
    neutral: list[Resource] | None = None
    request = REQUEST.get()
    if request is not None:  # (a protobuf message: equal when its contents are)
        key: tuple[object, ...] = ("request", settings, request)
    else:
        neutral = resources_of(resources)
        key = ("resources", settings, *((r.kind, r.origin.id, r.deps, r.obj) for r in neutral))
    last = _last  # (once: the server answers requests on several threads)
    if last is not None and last[0] == key:
        return last[1], last[2], last[3]
    linked = link.link(resources_of(resources) if neutral is None else neutral, settings.link_options)
    found = judge.judge(linked, settings.ctx)
    unreadable = [(r.origin.id, why) for r, why in linked.unreadable + linked.not_judged]
    warnings = [(r.origin.id, why) for r, why in linked.warnings]
    _last = (key, found, unreadable, warnings)
    return found, unreadable, warnings


def serve_requests(servicer: type) -> bool:
    """Make `servicer` (pulumi-policy's analyzer servicer class) set `REQUEST` while it answers
    an AnalyzeStack. False, and nothing changed, when it has no AnalyzeStack to wrap."""
    answer = getattr(servicer, "AnalyzeStack", None)
    if answer is None or getattr(answer, "sets_lockstep_request", False):
        return answer is not None

    @functools.wraps(answer)
    def analyze_stack(self: object, request: object, context: object) -> object:
        token = REQUEST.set(request)
        try:
            return answer(self, request, context)
        finally:
            REQUEST.reset(token)

    analyze_stack.sets_lockstep_request = True  # type: ignore[attr-defined]
    servicer.AnalyzeStack = analyze_stack  # type: ignore[attr-defined]
    return True


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
