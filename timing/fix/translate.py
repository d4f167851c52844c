"""A finding's relation as a z3 constraint, from the expressions its terms were computed by.

`holds(finding, var)` is true exactly where the rule's verdict is "ok": the same relation and
margin as `findings.slack` (`left >= right + margin`, `left + margin <= right`, strict forms
one second apart), `in` an API range or a set. `var(leaf)` gives the solver's term for a
model field (a variable, or the number itself for a field the solver may not move).
"""

from __future__ import annotations

from typing import Callable

import z3

from lockstep.timing.expr import Expr
from lockstep.timing.findings import Finding

ARITHMETIC = (">=", ">", "<=", "<", "in")

Var = Callable[[Expr], z3.ArithRef]


def translatable(f: Finding) -> bool:
    """A relation the solver can move: arithmetic, both sides computed from known fields."""
    return (f.relation in ARITHMETIC and f.left.expr is not None and f.right.expr is not None
            and not f.left.unknown and not f.right.unknown)


def _smallest(xs: list[z3.ArithRef]) -> z3.ArithRef:
    out = xs[0]
    for x in xs[1:]:
        out = z3.If(x < out, x, out)  # pragma: no mutate -- `<=` picks an equal value on a tie
    return out


def _largest(xs: list[z3.ArithRef]) -> z3.ArithRef:
    out = xs[0]
    for x in xs[1:]:
        out = z3.If(x > out, x, out)  # pragma: no mutate -- `>=` picks an equal value on a tie
    return out


def term(e: Expr, var: Var) -> z3.ArithRef:
    """The solver's term for an expression, its leaves (fields and constants) from `var`. Divisions are of whole numbers by a positive
    divisor, where z3's integer division is the floor."""
    if e.op in ("field", "const"):  # `var` gives a constant too: the solver's own context holds it
        return var(e)
    xs = [term(a, var) for a in e.args]
    if e.op == "add":
        return z3.Sum(xs)
    if e.op == "sub":
        return xs[0] - xs[1]
    if e.op == "mul":
        return xs[0] * xs[1]
    if e.op == "min":
        return _smallest(xs)
    if e.op == "max":
        return _largest(xs)
    if e.op == "ceil_div":
        return (xs[0] + xs[1] - 1) / xs[1]
    if e.op == "floor_div":
        return xs[0] / xs[1]
    raise ValueError(f"no term for a {e.op!r} expression")


def holds(f: Finding, var: Var) -> z3.BoolRef:
    """The finding's relation, true where its verdict is "ok"."""
    assert f.left.expr is not None and f.right.expr is not None  # translatable(f)
    left = term(f.left.expr, var)
    if f.relation == "in":
        right = f.right.expr
        if right.op == "range":
            lo, hi = (a.value for a in right.args)
            return z3.And(left >= lo, left <= hi)
        if right.op == "choice":
            return z3.Or([left == a.value for a in right.args])
        raise ValueError(f"{f.id}: `in` needs a range or a choice, not {right.op!r}")
    right = term(f.right.expr, var)
    m = f.margin_s
    if f.relation == ">=":
        return left >= right + m
    if f.relation == ">":
        return left > right + m
    if f.relation == "<=":
        return left + m <= right
    if f.relation == "<":
        return left + m < right
    raise ValueError(f"{f.id}: no constraint for relation {f.relation!r}")


def pinned(e: Expr) -> z3.ArithRef:
    """Every field at its own number: `holds(f, pinned)` is the verdict on the model as it is."""
    return z3.IntVal(e.value)
