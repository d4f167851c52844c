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
import json
from collections.abc import Callable, Sequence
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
# While the served pack answers an AnalyzeStack or an Analyze: each resource's properties as
# pulumi-policy's `json_format.MessageToDict` converted them, as JSON text, by their bytes.
CONVERTED: ContextVar[dict[bytes, str] | None] = ContextVar("lockstep_converted_properties", default=None)
# While it answers an Analyze (one resource, every resource policy in turn): the resource's
# findings, judged by the first policy, by (settings, type, URN): one request, one resource.
JUDGED: ContextVar[dict[tuple[object, ...], list[Finding]] | None] = ContextVar("lockstep_judged", default=None)


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


class ConvertOnce:
    """pulumi-policy's `json_format` module, except that `MessageToDict` converts a message once
    per request: pulumi-policy converts every resource's properties again for each stack policy
    (AnalyzeStack) and an Analyze's resource again for each resource policy (pure-Python
    protobuf printing, most of the pack's time on a stack of a few dozen resources). A later
    conversion of equal bytes is the first one's result read back from JSON (a new structure
    each time, so no policy sees another's objects; MessageToDict gives only JSON values).
    Outside a request, or with options, it is MessageToDict itself."""

    def __init__(self, json_format: object) -> None:
        self.json_format = json_format

    def __getattr__(self, name: str) -> object:
        return getattr(self.json_format, name)

    def MessageToDict(self, message: object, *args: object, **kwargs: object) -> object:  # noqa: N802 (its name)
        memo = CONVERTED.get()
        convert = self.json_format.MessageToDict  # type: ignore[attr-defined]
        if memo is None or args or kwargs:
            return convert(message, *args, **kwargs)
        key = message.SerializeToString(deterministic=True)  # type: ignore[attr-defined]
        text = memo.get(key)
        if text is not None:
            return json.loads(text)
        value = convert(message)
        memo[key] = json.dumps(value)
        return value


def serve_requests(servicer: type) -> bool:
    """Make `servicer` (pulumi-policy's analyzer servicer class) set `REQUEST` while it answers
    an AnalyzeStack, and convert each resource's properties once per AnalyzeStack or Analyze
    (`ConvertOnce`, in place of the `json_format` they read). False, and nothing changed, when it
    has no AnalyzeStack to wrap."""
    answer = getattr(servicer, "AnalyzeStack", None)
    if answer is None or getattr(answer, "sets_lockstep_request", False):
        return answer is not None
    for method in ("AnalyzeStack", "Analyze"):
        ordinary = getattr(servicer, method, None)
        if ordinary is None:
            continue
        names = getattr(ordinary, "__globals__", {})
        if "json_format" in names and not isinstance(names["json_format"], ConvertOnce):
            names["json_format"] = ConvertOnce(names["json_format"])
        setattr(servicer, method, _once_per_request(ordinary, sets_request=method == "AnalyzeStack"))
    return True


def _once_per_request(answer: Callable[..., object], sets_request: bool) -> Callable[..., object]:
    @functools.wraps(answer)
    def answering(self: object, request: object, context: object) -> object:
        token = REQUEST.set(request) if sets_request else None
        converted, resource = CONVERTED.set({}), JUDGED.set({})
        try:
            return answer(self, request, context)
        finally:
            JUDGED.reset(resource)
            CONVERTED.reset(converted)
            if token is not None:
                REQUEST.reset(token)

    answering.sets_lockstep_request = True  # type: ignore[attr-defined]
    return answering


def judged(resources: Sequence[Res], settings: Settings) -> tuple[list[Judgement], list[Problem]]:
    """Every finding of the linked resources and what could not be read."""
    found, unreadable, _ = linked_stack(resources, settings)
    return found, unreadable


def stack_warnings(resources: Sequence[Res], settings: Settings) -> list[Problem]:
    """The linker's warnings on the stack's resources, each with the URN it is about, in the
    words the audit prints them."""
    return linked_stack(resources, settings)[2]


def resource_findings(rule_id: str, res: Res, settings: Settings) -> list[Finding]:
    """Findings of a per-resource rule on one resource alone ([] for other resource types).
    Served, the resource is linked and judged once per Analyze (`JUDGED`), not once per policy."""
    if res.type not in RESOURCE_RULES.get(rule_id, ()):
        return []
    memo, key = JUDGED.get(), (settings, res.type, res.urn)
    found = memo.get(key) if memo is not None else None
    if found is None:
        linked = link.link(resources_of([res]), settings.link_options)
        found = [j.finding for j in judge.judge(linked, settings.ctx)]
        if memo is not None:
            memo[key] = found
    return [f for f in found if f.id == rule_id]


def stack_findings(rule_id: str, resources: Sequence[Res], settings: Settings) -> list[Located]:
    """Every finding of `rule_id` on the stack's linked resources, with the URN it belongs to."""
    found, _ = judged(resources, settings)
    return [(j.finding, j.owner.origin.id) for j in found if j.finding.id == rule_id]
