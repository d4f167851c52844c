"""Derived times as expressions: one definition, evaluated by `check`, translated by `lockstep fix`.

A rule's relation compares two `Term`s; a term built from model fields carries the `Expr` its
number was computed by. Each node holds its value, computed here as it is built, so the
number a finding prints is the expression's evaluation and never a second computation. The
leaves are the model's own fields (the object and the attribute), constants (a Kubernetes or
AWS fixed value, a count a rule requires), and the inner nodes are the arithmetic derived times
use: sums, differences, products, min/max and integer divisions. `timing.fix` translates the
same tree for a solver; nothing here imports one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Literal

from lockstep.timing.frozen import quick_init

Op = Literal["field", "const", "add", "sub", "mul", "min", "max", "ceil_div", "floor_div", "range", "choice"]


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@quick_init  # (105,000 of them judging 1,000 workloads)
@dataclass(frozen=True, slots=True, eq=False)
class Expr:
    """One node; `value` is its number on the model it was built from."""

    op: Op
    args: tuple[Expr, ...]
    value: int
    owner: object = None  # "field": the model object holding the number
    name: str = ""  # "field": its attribute


def leaf(owner: object, name: str) -> Expr:
    """A model field holding a whole number (a flag or an unknown is not one)."""
    value = getattr(owner, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{type(owner).__name__}.{name} is not a whole number: {value!r}")
    return Expr("field", (), value, owner, name)


def const(value: int) -> Expr:
    return Expr("const", (), value)


def add(*parts: Expr) -> Expr:
    return Expr("add", parts, sum(p.value for p in parts))


def sub(a: Expr, b: Expr) -> Expr:
    return Expr("sub", (a, b), a.value - b.value)


def mul(a: Expr, b: Expr) -> Expr:
    return Expr("mul", (a, b), a.value * b.value)


def smallest(*parts: Expr) -> Expr:
    return Expr("min", parts, min(p.value for p in parts))


def largest(*parts: Expr) -> Expr:
    return Expr("max", parts, max(p.value for p in parts))


def up_div(a: Expr, b: Expr) -> Expr:
    """⌈a / b⌉ of whole numbers, b > 0."""
    return Expr("ceil_div", (a, b), ceil_div(a.value, b.value))


def down_div(a: Expr, b: Expr) -> Expr:
    """⌊a / b⌋ of whole numbers, b > 0."""
    return Expr("floor_div", (a, b), a.value // b.value)


def span(lo: int, hi: int) -> Expr:
    """An API range lo–hi, the right side of an `in` relation (its value is the low end)."""
    return Expr("range", (const(lo), const(hi)), lo)


def choice(*values: int) -> Expr:
    """A set of allowed values, the right side of an `in` relation (its value is the first)."""
    return Expr("choice", tuple(const(v) for v in values), values[0])


def leaves(e: Expr) -> Iterator[Expr]:
    """The field leaves of an expression, depth first, left to right."""
    if e.op == "field":
        yield e
    for a in e.args:
        yield from leaves(a)
