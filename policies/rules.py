"""The lockstep CrossGuard policies, importable without starting the policy server.

One policy per invariant id, named by the id. Error-level ids are mandatory and report the
findings whose status is `error`; warning-level ids are advisory. An id that is an error in
one case and a warning in another (`readiness-before-liveness`, `rollout-keeps-capacity`)
has both: `<id>` (mandatory, errors) and `<id>-advisory` (warnings). Findings a workload
accepts (`lockstep.dev/accept`) go to the advisory `lockstep-accepted` policy instead; the
advisory `lockstep-readable` policy names resources the pack could not read, and the advisory
`lockstep-linked` policy reports the linker's warnings (an Ingress backend naming a Service
the stack lacks) in the words `lockstep audit` prints after WARNING. Every finding's message
is `Finding.render()`, the same line `lockstep check` prints.

`policies/__main__.py` builds the `PolicyPack` from `all_policies()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pulumi_policy import (
    EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy,
    StackValidationArgs, StackValidationPolicy,
)

from lockstep.timing.invariants import RULES

from lockstep.policies.findings import (RESOURCE_RULES, STACK_RULES, judged, resource_findings, stack_findings,
                                        stack_warnings)
from lockstep.policies.resources import Res, from_policy_resources
from lockstep.policies.settings import SCHEMA, settings

ACCEPTED = "lockstep-accepted"
READABLE = "lockstep-readable"
LINKED = "lockstep-linked"
LINKED_DESCRIPTION = "links that lead nowhere (a backend Service the stack lacks): likely a mistake"
ENFORCED = (*RESOURCE_RULES, *STACK_RULES)


def severities(rule_id: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for r in RULES if r.id == rule_id for s in r.severity.split("|")))


def report(found: Sequence[tuple[object, str | None]], status: str, report_violation: ReportViolation) -> None:
    for finding, urn in found:
        if finding.status == status:  # type: ignore[attr-defined]
            report_violation(finding.render(), urn)  # type: ignore[attr-defined]


def resource_validator(rule_id: str, status: str) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        res = Res(args.resource_type, args.props, args.urn, args.name)
        found = resource_findings(rule_id, res, settings(args.get_config()))
        report([(f, None) for f in found], status, report_violation)
    return validate


def stack_validator(rule_id: str, status: str) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        found = stack_findings(rule_id, from_policy_resources(args.resources), settings(args.get_config()))
        report(found, status, report_violation)
    return validate


def policy(rule_id: str, status: str) -> ResourceValidationPolicy | StackValidationPolicy:
    name = rule_id if status == "error" or "error" not in severities(rule_id) else f"{rule_id}-advisory"
    level = EnforcementLevel.MANDATORY if status == "error" else EnforcementLevel.ADVISORY
    # The engine prints the description above every violation message.
    description = f"lockstep timing invariant {rule_id}, {status} case (docs/INVARIANTS.md)"
    if rule_id in RESOURCE_RULES:
        return ResourceValidationPolicy(name=name, description=description, enforcement_level=level,
                                        config_schema=SCHEMA, validate=resource_validator(rule_id, status))
    return StackValidationPolicy(name=name, description=description, enforcement_level=level,
                                 config_schema=SCHEMA, validate=stack_validator(rule_id, status))


def validate_accepted(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """The accepted findings of every enforced rule, rule by rule in `ENFORCED`'s order (the
    stack judged once: asking `stack_findings` rule by rule compared the resources each time)."""
    found, _ = judged(from_policy_resources(args.resources), settings(args.get_config()))
    by_rule: dict[str, list[tuple[object, str | None]]] = {rule_id: [] for rule_id in ENFORCED}
    for j in found:
        if j.finding.id in by_rule:
            by_rule[j.finding.id].append((j.finding, j.owner.origin.id))
    for located in by_rule.values():
        report(located, "accepted", report_violation)


def validate_readable(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    _, problems = judged(from_policy_resources(args.resources), settings(args.get_config()))
    for urn, problem in dict.fromkeys(problems):
        report_violation(f"lockstep cannot judge this resource: {problem}", urn)


def validate_linked(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for urn, warning in stack_warnings(from_policy_resources(args.resources), settings(args.get_config())):
        report_violation(warning, urn)


def all_policies() -> list[ResourceValidationPolicy | StackValidationPolicy]:
    """Every policy of the pack (built on call, not at import)."""
    out = [policy(rule_id, status) for rule_id in ENFORCED for status in ("error", "warning")
           if status in severities(rule_id)]
    out.append(StackValidationPolicy(
        name=ACCEPTED, description="findings a workload accepts (lockstep.dev/accept), reported, never dropped",
        enforcement_level=EnforcementLevel.ADVISORY, config_schema=SCHEMA, validate=validate_accepted))
    out.append(StackValidationPolicy(
        name=READABLE, description="resources lockstep could not read, so no invariant judged them",
        enforcement_level=EnforcementLevel.ADVISORY, config_schema=SCHEMA, validate=validate_readable))
    out.append(StackValidationPolicy(
        name=LINKED, description=LINKED_DESCRIPTION,
        enforcement_level=EnforcementLevel.ADVISORY, config_schema=SCHEMA, validate=validate_linked))
    return out
