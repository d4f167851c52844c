"""The rules of INVARIANTS.md and the one walk over them.

`registry` declares every rule once (id, severities, what decides it, its checks); the
family modules hold the rule bodies. `walk` runs the declared checks over a `Scene`, stamps
id and severity, and applies the `accept` lists: `lockstep check` (via `evaluate`), the audit
and the policy pack all judge through it. Validation is a call (`validate`), not a model hook:
the model imports nothing from here.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from lockstep.timing.context import Ctx, Scene, context, parse_version
from lockstep.timing.findings import Finding
from lockstep.timing.invariants.registry import BY_ID, RULE_IDS, RULES, Check, Rule, Scope, stamp
from lockstep.timing.model import LoadBalancer, Stack

__all__ = ["BY_ID", "RULES", "RULE_IDS", "Ctx", "InvariantErrors", "Rule", "Scene", "apply_accepts", "context",
           "errors", "evaluate", "parse_version", "raise_errors", "validate", "walk"]

ALL_SCOPES: tuple[Scope, ...] = ("lb", "service", "stack")


class InvariantErrors(ValueError):
    """Every error-level finding at once (`raise_errors`, `validate`)."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        super().__init__("\n".join(f.render() for f in findings))


def run_check(rule: Rule, check: Check, scene: Scene, ctx: Ctx,
              lone: Sequence[tuple[str, LoadBalancer]] = ()) -> list[Finding]:
    """One declared check over the scene: once for a stack check, per service otherwise (a
    service's findings are its own), and per lone target group (`lone`) for an lb check."""
    if check.scope == "stack":
        return [stamp(rule, v) for v in check.body(scene, ctx)]
    found = []
    for svc in scene.services:
        if check.scope == "service":
            verdicts = check.body(svc, ctx)
        elif svc.lb is not None:
            verdicts = check.body(svc.name, svc.lb)  # lb-scope rules read the target group alone
        else:
            verdicts = []
        found.extend(stamp(rule, v, svc.name) for v in verdicts)
    if check.scope == "lb":
        found.extend(stamp(rule, v) for name, lb in lone for v in check.body(name, lb))
    return found


def apply_accepts(findings: Iterable[Finding], scene: Scene) -> list[Finding]:
    """A failed finding acknowledged where it belongs is reported as accepted, never dropped:
    a service's finding by that service's `accept` list, any other by the stack's own."""
    by_service = {s.name: {a.id: a.reason for a in s.accept} for s in scene.services}
    own = {a.id: a.reason for a in scene.accept}
    out = []
    for f in findings:
        reason = (by_service.get(f.service, {}) if f.service else own).get(f.id)
        out.append(f.accepted(reason) if reason is not None and f.failed else f)
    return out


def walk(scene: Scene, ctx: Ctx, rules: Sequence[Rule] = RULES, scopes: Sequence[Scope] = ALL_SCOPES,
         lone: Sequence[tuple[str, LoadBalancer]] = ()) -> list[Finding]:
    """Every declared check of `rules` at `scopes`, in registry order, accepts applied."""
    found = [f for r in rules for c in r.checks if c.scope in scopes for f in run_check(r, c, scene, ctx, lone)]
    return apply_accepts(found, scene)


def evaluate(stack: Stack) -> list[Finding]:
    """Every rule over the whole stack: passing, failing, skipped and accepted findings."""
    return walk(Scene.of(stack), context(stack))


def errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.status == "error"]


def raise_errors(stack: Stack) -> None:
    broken = errors(evaluate(stack))
    if broken:
        raise InvariantErrors(broken)


def validate(data: Any) -> Stack:
    """A stack from plain data, and then its invariants: `pydantic.ValidationError` for a
    value the model refuses, `InvariantErrors` (every error at once) for numbers that disagree."""
    stack = Stack.model_validate(data)
    raise_errors(stack)
    return stack
