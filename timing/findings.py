"""Findings: what every rule returns, and how one is printed.

A finding names both sides of a relation with their values and the fields they come
from, the slack (seconds to spare; negative = broken), and the direction of the fix.
Rules return a finding for every evaluation, passing ones included, so reviewers see how
close a change came.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from lockstep.timing.frozen import pickled_by_fields, quick_init

if TYPE_CHECKING:
    from lockstep.timing.expr import Expr  # pragma: no mutate

Severity = Literal["error", "warning"]
Status = Literal["ok", "error", "warning", "skipped", "accepted"]

# The relation a rule requires, and how it reads when broken.
NEGATION = {">=": "<", ">": "<=", "<=": ">", "<": ">=", "==": "!=", "in": "not in"}
PRETTY = {">=": "≥", ">": ">", "<=": "≤", "<": "<", "==": "=", "!=": "≠", "in": "in", "not in": "not in"}


@pickled_by_fields  # the audit sends findings between processes
@quick_init
@dataclass(frozen=True, slots=True)
class Term:
    """One side of a relation: a name, its value, and where the value comes from."""

    label: str
    value: int | str
    source: str
    # Inputs not known, each counted in `value` at its lower bound: 0, or the least value its
    # range allows (a load balancer's field no input states: `derived.lb_field`). `value` is then
    # a bound the true value is at or above, so `judge` decides wherever the bound does.
    unknown: tuple[str, ...] = ()
    unit: str = "s"  # "" for counts (replicas, thresholds)
    fields: tuple[str, ...] = ()  # the model fields the value is computed from (locating a finding reads them)
    # How `value` was computed from the model's fields (`timing.expr`): `value` is its evaluation.
    # None where no arithmetic of known fields gives it (an unknown, a label): `lockstep fix` then
    # cannot move the relation. Not compared: two terms with equal numbers are equal findings.
    expr: Expr | None = field(default=None, compare=False, repr=False)  # pragma: no mutate

    def render(self) -> str:
        if self.source in self.unknown:
            shown = f"unknown, ≥{self.value}{self.unit}" if self.value else "unknown"
        elif self.unknown:
            shown = f"≥{self.value}{self.unit}"
        else:
            shown = f"{self.value}{self.unit}" if isinstance(self.value, int) else str(self.value)
        return f"{self.label} {shown} ({self.source})" if self.source != "" else f"{self.label} {shown}"


@pickled_by_fields
@quick_init
@dataclass(frozen=True, slots=True)
class Finding:
    id: str
    severity: Severity
    status: Status
    subject: str
    left: Term
    relation: str
    right: Term
    margin_s: int
    slack_s: int | None
    fix: str
    needs: tuple[str, ...] = field(default=())
    reason: str = ""
    service: str = ""  # the service whose `accept` list applies

    @property
    def failed(self) -> bool:
        return self.status in ("error", "warning")

    def accepted(self, reason: str) -> Finding:
        return replace(self, status="accepted", reason=reason)

    def render(self) -> str:
        # An accepted finding is still broken: print the relation that actually holds.
        rel = NEGATION[self.relation] if self.failed or self.status == "accepted" else self.relation
        margin = f" + margin {self.margin_s}s" if self.margin_s else ""
        lhs, rhs = self.left.render(), self.right.render()
        if self.relation in ("<=", "<"):
            lhs += margin
        else:
            rhs += margin
        slack = "" if self.slack_s is None else f"  slack {self.slack_s}{self.left.unit}"
        line = f"{self.status.upper()} {self.id}  {self.subject}: {lhs} {PRETTY[rel]} {rhs}{slack}"
        if self.status == "skipped":
            return f"{line} → needs {', '.join(self.needs)}"
        if self.status == "accepted":
            return f"{line} → accepted: {self.reason}"
        return f"{line} → {self.fix}" if self.failed else line

    def as_dict(self) -> dict[str, object]:
        return {
            "id": self.id, "severity": self.severity, "status": self.status,
            "subject": self.subject, "relation": self.relation,
            "left": {"label": self.left.label, "value": self.left.value, "source": self.left.source,
                     "fields": list(self.left.fields)},
            "right": {"label": self.right.label, "value": self.right.value, "source": self.right.source,
                      "fields": list(self.right.fields)},
            "margin_s": self.margin_s, "slack_s": self.slack_s, "fix": self.fix,
            "needs": list(self.needs), "reason": self.reason, "message": self.render(),
        }


def slack(left: int, relation: str, right: int, margin: int = 0) -> int:
    """Seconds to spare over whole seconds: 0 still holds, -1 is the first broken value.
    The margin is added to the side that must stay smaller: `left >= right + margin`,
    `left + margin <= right`."""
    if relation == ">=":
        return left - right - margin
    if relation == ">":
        return left - right - margin - 1
    if relation == "<=":
        return right - left - margin
    if relation == "<":
        return right - left - margin - 1
    raise ValueError(f"unknown relation {relation!r}")


Outcome = Literal["ok", "broken", "skipped"]


@quick_init
@dataclass(frozen=True, slots=True)
class Verdict:
    """What a rule body returns: the relation it judged, both sides and the fix. A rule's
    identity (id, severity) is not here: the registry declares it once and stamps it
    (`timing.invariants.registry.stamp`). `case` names the severity where a rule declares two."""

    subject: str
    left: Term
    relation: str
    right: Term
    margin_s: int
    slack_s: int | None
    fix: str
    outcome: Outcome
    needs: tuple[str, ...] = ()
    service: str = ""  # the service whose `accept` list applies ("" = the stack's)
    case: Severity | None = None


def judge(subject: str, left: Term, relation: str, right: Term, fix: str, margin: int = 0,
          service: str = "", case: Severity | None = None) -> Verdict:
    """Evaluate `left REL right` with the margin (see `slack`). Unknown inputs count at their lower bound (0
    unless a range bounds them), and every term grows with its inputs, so each side's true value is at or
    above its bound: a verdict that could flip for some value of them is reported as skipped, naming what
    would decide it; one that holds, or breaks, whatever they are is decided."""
    assert isinstance(left.value, int) and isinstance(right.value, int)
    s = slack(left.value, relation, right.value, margin)
    # For >=/> a larger left helps and a larger right hurts; for <=/< the reverse.
    helps, hurts = (left, right) if relation in (">=", ">") else (right, left)
    if (s >= 0 and hurts.unknown) or (s < 0 and helps.unknown):
        needs = tuple(dict.fromkeys(left.unknown + right.unknown))
        return Verdict(subject, left, relation, right, margin, s, fix, "skipped", needs, service, case)
    return Verdict(subject, left, relation, right, margin, s, fix, "ok" if s >= 0 else "broken",
                   service=service, case=case)


def holds(subject: str, ok: bool, left: Term, relation: str, right: Term, fix: str, service: str = "",
          case: Severity | None = None) -> Verdict:
    """A relation that is not arithmetic (a label match, a flag that must be set)."""
    if not isinstance(ok, bool):  # a verdict is a bool: None must not read as "broken" or "ok"
        raise TypeError(f"holds() needs a bool verdict, got {ok!r}")
    return Verdict(subject, left, relation, right, 0, None, fix, "ok" if ok else "broken", service=service,
                   case=case)


def unknown(subject: str, left: Term, relation: str, right: Term, fix: str, needs: tuple[str, ...]) -> Verdict:
    """A relation that is not arithmetic and cannot be decided: `needs` names what would decide it."""
    return Verdict(subject, left, relation, right, 0, None, fix, "skipped", needs)


def in_range(subject: str, label: str, source: str, value: int, lo: int, hi: int, unit: str,
             fix: str, expr: Expr | None = None) -> Verdict:  # pragma: no mutate
    """`value` within the API range lo–hi; the slack is the distance to the nearer bound.
    `expr`: the field the value is (`lockstep fix` then keeps it in the range)."""  # pragma: no mutate
    from lockstep.timing.expr import span  # pragma: no mutate

    s = min(value - lo, hi - value)
    return Verdict(subject, Term(label, value, source, (), unit, (source,), expr), "in",  # pragma: no mutate
                   Term("API range", f"{lo}–{hi}{unit}", "", expr=span(lo, hi)), 0, s, fix, "ok" if s >= 0 else "broken")  # pragma: no mutate
