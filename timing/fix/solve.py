"""The nearest consistent numbers: every finding's relation as a constraint, one optimization.

Variables are the model's whole-number fields that some relation reads, each inside the range
the model gives it (`timing.model`: the API ranges of `timing.limits`). Constraints are the
findings' own expressions (`translate`): error rules hard, warnings preferred. The objective,
in order: (1) break no warning that can be kept or mended, (2) change the fewest fields,
weighted by kind (`WEIGHTS`), (3) the smallest change relative to each field's number.

A rule whose relation depends on which branch a number falls in (a percentage that rounds
to 0 pods, the faster of two removal paths) is judged again on the answer: any finding the new
numbers bring that the first round did not see joins the constraints and the solve runs again
(`MAX_ROUNDS`), so the answer is always what `lockstep check` says of it.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import z3
from pydantic import BaseModel

from lockstep.timing.config import ConfigError, stack_from_config
from lockstep.timing.expr import Expr, leaves
from lockstep.timing.findings import PRETTY, Finding
from lockstep.timing.fix.knobs import Knob, Path, keep_matches, knobs, set_path
from lockstep.timing.fix.translate import holds, translatable
from lockstep.timing.invariants import evaluate
from lockstep.timing.model import Stack

MAX_ROUNDS = 8
ARITH_SOLVER = 2  # z3's `smt.arith.solver` for every solve (`_Problem`)
# The weight of a `heavy` field: more than any stack's other fields together (a service has a few dozen).
HEAVY = 1000
# How `--keep` names the fields, for the message when a pattern names none ("": no message).
KEEP_HINT = "of the stack (fields are named like services.api.lb.idle_timeout_s or watchdog.period_s; * and ? match)"


@dataclass(frozen=True, slots=True)
class Change:
    knob: Knob
    new: int
    rules: tuple[str, ...]  # the rules that need it


@dataclass(frozen=True, slots=True)
class Conflict:
    """One member of an unsatisfiable core: a rule's relation, or a pinned field."""

    kind: str  # "rule" | "keep"
    text: str
    formula: z3.BoolRef | None = field(default=None, compare=False, repr=False)  # what the solver was given


@dataclass
class Result:
    changes: list[Change] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)  # `fix`: the config's values with the changes
    model: Any = None  # the model with the changes
    findings: list[Finding] = field(default_factory=list)  # `check` on the answer
    conflict: list[Conflict] = field(default_factory=list)  # non-empty: no answer exists
    ranges: list[z3.BoolRef] = field(default_factory=list)  # the conflict's fields within their ranges
    unmovable: list[Finding] = field(default_factory=list)  # broken, and no number decides them
    rounds: int = 0

    @property
    def ok(self) -> bool:
        return not self.conflict and not self.unmovable and not any(f.status == "error" for f in self.findings)


@dataclass(frozen=True, slots=True)
class _Constraint:
    finding: Finding
    index: Mapping[tuple[int, str], Knob]  # the knobs of the stack the finding was judged on
    paths: tuple[Path, ...]
    hard: bool

    @property
    def text(self) -> str:
        """The relation in words: each side by its label and its formula over the fields'
        names (a fact, which no fix moves, shown by its number)."""
        f = self.finding
        assert f.left.expr is not None and f.right.expr is not None
        margin = f" + margin {f.margin_s}s" if f.margin_s else ""
        rel = PRETTY[f.relation]
        left, right = (show(t, self.index).removeprefix("(").removesuffix(")") if t.op in _SYMBOL
                       else show(t, self.index) for t in (f.left.expr, f.right.expr))
        lhs = f.left.label if left == f.left.label else f"{f.left.label} ({left})"
        rhs = f.right.label if right == f.right.label else f"{f.right.label} ({right})"
        if f.relation in ("<=", "<"):
            return f"{f.id} ({f.subject}): {lhs}{margin} {rel} {rhs}"
        return f"{f.id} ({f.subject}): {lhs} {rel} {rhs}{margin}"


_SYMBOL = {"add": " + ", "sub": " - ", "mul": " × "}


def show(e: Expr, index: Mapping[tuple[int, str], Knob]) -> str:
    """An expression over the fields' names (`knobs`), facts and constants by their numbers."""
    if e.op == "field":
        knob = index.get((id(e.owner), e.name))
        return knob.name if knob is not None else f"{e.name} {e.value}"
    if e.op == "const":
        return str(e.value)
    parts = [show(a, index) for a in e.args]
    if e.op in _SYMBOL:
        return "(" + _SYMBOL[e.op].join(parts) + ")" if len(parts) > 1 else parts[0]
    if e.op == "range":
        return f"{parts[0]}–{parts[1]}"
    if e.op == "choice":
        return " or ".join(parts)
    name = {"ceil_div": "ceil", "floor_div": "floor"}.get(e.op)
    if name is not None:
        return f"{name}({parts[0]} / {parts[1]})"
    return f"{e.op}({', '.join(parts)})"


def _key(f: Finding, paths: tuple[Path, ...]) -> tuple[Any, ...]:
    return (f.id, f.subject, f.left.label, f.relation, f.right.label, f.margin_s, paths)


def _leaf_paths(f: Finding, by_leaf: Mapping[tuple[int, str], Knob]) -> tuple[Path, ...]:
    assert f.left.expr is not None and f.right.expr is not None
    out = []
    for leaf in (*leaves(f.left.expr), *leaves(f.right.expr)):
        knob = by_leaf.get((id(leaf.owner), leaf.name))
        if knob is not None:
            out.append(knob.path)
    return tuple(dict.fromkeys(out))


class _Problem:
    """The constraints seen so far, over variables named by config path."""

    def __init__(self, names: Mapping[str, Knob], keep: set[str], heavy: set[str] = frozenset()) -> None:
        self.names = names
        self.heavy = heavy
        self.by_path = {k.path: k for k in names.values()}
        self.keep = keep
        self.constraints: dict[tuple[Any, ...], _Constraint] = {}
        self.vars: dict[Path, z3.ArithRef] = {}
        # A context of its own: z3's answers among equal optima depend on what its context has
        # seen, so one shared by every solve would make the same input give different fixes.
        # z3's older arithmetic solver (`smt.arith.solver` 2; the default is 6): on these products
        # of two fields (interval × threshold) it answers the seed's largest group in 0.4–0.7 s
        # instead of 2.3–4 s, the same answer (bench/bench_fix.py). A global parameter, read when
        # a context is made (z3 4.x takes no `smt.*` parameter on an optimizer).
        z3.set_param("smt.arith.solver", ARITH_SOLVER)
        self.ctx = z3.Context()

    def optimizer(self) -> z3.Optimize:
        return z3.Optimize(ctx=self.ctx)

    def weight(self, path: Path) -> int:
        """A field's cost of changing: its kind's (`WEIGHTS`), or above every other field's
        together when it is `heavy` (changed only when nothing else can be)."""
        knob = self.by_path[path]
        if knob.name in self.heavy:
            return HEAVY
        return knob.weight

    def var(self, path: Path) -> z3.ArithRef:
        if path not in self.vars:
            self.vars[path] = z3.Int(self.by_path[path].name, self.ctx)
        return self.vars[path]

    def add(self, findings: list[Finding], by_leaf: Mapping[tuple[int, str], Knob]) -> list[Finding]:
        """Join the findings' relations; return the broken ones no number decides."""
        unmovable = []
        for f in findings:
            if f.status in ("skipped", "accepted"):
                continue
            if not translatable(f):
                if f.failed:
                    unmovable.append(f)
                continue
            paths = _leaf_paths(f, by_leaf)
            key = _key(f, paths)
            if key not in self.constraints:
                self.constraints[key] = _Constraint(f, by_leaf, paths, f.severity == "error")
        return unmovable

    def formula(self, c: _Constraint) -> z3.BoolRef:
        """The constraint over the variables: a field with no range stays its number."""
        def var(leaf: Expr) -> z3.ArithRef:
            knob = c.index.get((id(leaf.owner), leaf.name))
            return z3.IntVal(leaf.value, self.ctx) if knob is None else self.var(knob.path)

        return holds(c.finding, var)

    def domains(self, paths: tuple[Path, ...] | None = None) -> list[z3.BoolRef]:
        chosen = self.vars if paths is None else paths
        return [z3.And(self.var(p) >= self.by_path[p].lo, self.var(p) <= self.by_path[p].hi) for p in chosen]


def _abs(x: z3.ArithRef) -> z3.ArithRef:
    return z3.If(x >= 0, x, -x)


def fix(values: Mapping[str, Any], keep: tuple[str, ...] = ()) -> Result:
    """The nearest values (of the `lockstep:` namespace) every error rule accepts; or the
    smallest set of rules and pinned fields that cannot hold together."""
    def rebuild(changes: list[tuple[Path, int]]) -> Stack:
        new_values: dict[str, Any] = dict(values)
        for path, value in changes:
            new_values = set_path(new_values, path, value)
        try:
            return stack_from_config(new_values)
        except ConfigError as err:  # a model rule the findings do not state (none is known): say so
            raise ConfigError([f"lockstep fix: the answer breaks a model rule: {line}" for line in err.lines]) from None

    result = solve(stack_from_config(values), evaluate, rebuild, keep)
    result.values = dict(values)
    for c in result.changes:
        result.values = set_path(result.values, c.knob.path, c.new)
    return result


def solve(model: BaseModel, judge: Callable[[Any], list[Finding]], rebuild: Callable[[list[tuple[Path, int]]], Any],
          keep: tuple[str, ...] = (), keep_hint: str = KEEP_HINT, heavy: tuple[str, ...] = ()) -> Result:
    """The nearest numbers of `model`'s fields that `judge` finds no error in. `rebuild` makes
    the model with some fields changed (the fields by their `knobs` path); `keep` pins fields by
    name (patterns); `heavy` fields (patterns) move only when no other change can do. The same loop serves a stack config (`fix`) and an audited workload."""
    by_leaf, names = knobs(model)
    pinned = _match_keep(keep, names, keep_hint)
    problem = _Problem(names, pinned, {n for n in names if any(fnmatch.fnmatchcase(n, p) for p in heavy)})
    findings = judge(model)
    result = Result(findings=findings, model=model)
    result.unmovable = problem.add(findings, by_leaf)
    if not any(f.status == "error" or (f.status == "warning" and translatable(f)) for f in findings):
        return result  # nothing to mend
    for rounds in range(1, MAX_ROUNDS + 1):
        result.rounds = rounds
        solved = _optimize(problem)
        if solved is None:
            result.conflict = _core(problem)
            result.ranges = problem.domains()
            return result
        changes = [(problem.by_path[path], value) for path, value in solved.items()
                   if value != problem.by_path[path].value]
        new_model = rebuild([(k.path, v) for k, v in changes])
        new_findings = judge(new_model)
        before = len(problem.constraints)
        unmovable = problem.add(new_findings, knobs(new_model)[0])
        result.model, result.findings, result.unmovable = new_model, new_findings, unmovable
        result.changes = [Change(k, v, _needs(problem, solved, k)) for k, v in changes]
        if not any(f.status == "error" for f in new_findings) or len(problem.constraints) == before:
            return result  # accepted, or no new relation to learn: `ok` tells which
    return result


def _match_keep(patterns: tuple[str, ...], names: Mapping[str, Knob], hint: str) -> set[str]:
    out: set[str] = set()
    for pattern in patterns:
        hits = [n for n in names if keep_matches(n, pattern)]
        if not hits and hint:
            raise ConfigError([f"--keep {pattern}: names no whole-number field {hint}"])
        out.update(hits)
    return out


def _relative(problem: _Problem, paths: tuple[Path, ...]) -> z3.ArithRef:
    """Σ weight × |new − old| / old, per mille (a whole-number coefficient per field)."""
    terms = []
    for path in paths:
        v, k = problem.var(path), problem.by_path[path]
        terms.append(_abs(v - k.value) * (1000 * problem.weight(path) // max(abs(k.value), 1) + 1))
    return z3.Sum(terms) if terms else z3.IntVal(0, problem.ctx)


def components(constraints: list[_Constraint]) -> list[list[_Constraint]]:
    """The constraints in groups that share no field. The objective is a sum over fields and
    constraints, so minimizing each group on its own minimizes the whole, in the same order."""
    parent: dict[Path, Path] = {}

    def root(p: Path) -> Path:
        while parent.setdefault(p, p) != p:
            p = parent[p]
        return p

    for c in constraints:
        for p in c.paths[1:]:
            parent[root(p)] = root(c.paths[0])
    groups: dict[Any, list[_Constraint]] = {}
    for i, c in enumerate(constraints):
        groups.setdefault(root(c.paths[0]) if c.paths else ("fixed", i), []).append(c)
    return list(groups.values())


def _optimize(problem: _Problem) -> dict[Path, int] | None:
    """Every field's answer; None when the hard constraints cannot all hold. A group whose
    constraints all hold at the current numbers keeps them (nothing is cheaper)."""
    out = {p: problem.by_path[p].value for c in problem.constraints.values() for p in c.paths}
    for group in components(list(problem.constraints.values())):
        if all(z3.is_true(z3.simplify(_at(problem, c, {}))) for c in group):
            continue
        solved = _optimize_group(problem, group)
        if solved is None:
            return None
        out.update(solved)
    return out


def _optimize_group(problem: _Problem, group: list[_Constraint]) -> dict[Path, int] | None:
    """Two solves. First the fewest fields, by weight, as weighted MaxSMT (each field kept at its
    number is a soft constraint of its weight; each warning kept, one heavier than every field
    together, so a warning counts before any field). Then, with the fields that stage chose and
    every other one pinned, the smallest change relative to each number (per mille, by weight)."""
    paths = tuple(dict.fromkeys(p for c in group for p in c.paths))
    hard = [problem.formula(c) for c in group if c.hard]
    pins = [problem.var(problem.names[n].path) == problem.names[n].value
            for n in problem.keep if problem.names[n].path in paths]
    o = problem.optimizer()
    o.add(*hard, *problem.domains(paths), *pins)
    heavier = 1 + sum(problem.weight(p) for p in paths)
    for c in group:
        if not c.hard:
            o.add_soft(problem.formula(c), heavier)
    for p in paths:
        o.add_soft(problem.var(p) == problem.by_path[p].value, problem.weight(p))
    first = _answer(o, paths, problem)
    if first is None:
        return None
    moved = tuple(p for p in paths if first[p] != problem.by_path[p].value)
    o = problem.optimizer()
    o.add(*hard, *problem.domains(paths), *pins)
    o.add(*[problem.var(p) == v for p, v in first.items() if p not in moved])
    for c in group:  # the warnings the first stage kept stay kept
        if not c.hard and z3.is_true(z3.simplify(_at(problem, c, first))):
            o.add(problem.formula(c))
    o.minimize(_relative(problem, moved))
    return _answer(o, paths, problem)


def _answer(o: z3.Optimize, paths: tuple[Path, ...], problem: _Problem) -> dict[Path, int] | None:
    verdict = o.check()
    if verdict == z3.unsat:
        return None
    if verdict != z3.sat:
        raise RuntimeError(f"the solver gave no answer ({o.reason_unknown()})")
    m = o.model()
    return {p: m.eval(problem.var(p), model_completion=True).as_long() for p in paths}


def _at(problem: _Problem, c: _Constraint, values: Mapping[Path, int]) -> z3.BoolRef:
    """The constraint with every field at `values` (else its current number)."""
    f = problem.formula(c)
    pairs = [(problem.var(p), z3.IntVal(values.get(p, problem.by_path[p].value), problem.ctx)) for p in c.paths]
    return z3.substitute(f, *pairs) if pairs else f


def _needs(problem: _Problem, solved: Mapping[Path, int], knob: Knob) -> tuple[str, ...]:
    """The rules that break when this one field alone goes back to its number."""
    back = {**solved, knob.path: knob.value}
    out = [c.finding.id for c in problem.constraints.values()
           if knob.path in c.paths and z3.is_false(z3.simplify(_at(problem, c, back)))]
    return tuple(dict.fromkeys(out))


def _core(problem: _Problem) -> list[Conflict]:
    """A smallest set of hard rules and pinned fields that cannot all hold (each member needed:
    without any one of them the rest can)."""
    members: list[tuple[Conflict, z3.BoolRef]] = []
    for c in problem.constraints.values():
        if c.hard:
            f = problem.formula(c)
            members.append((Conflict("rule", c.text, f), f))
    for name in sorted(problem.keep):
        k = problem.names[name]
        if k.path in problem.vars:
            pin = problem.vars[k.path] == k.value
            members.append((Conflict("keep", f"--keep {name} (= {k.value})", pin), pin))
    base = problem.domains()

    def sat(subset: list[int]) -> bool:
        s = z3.Solver(ctx=problem.ctx)
        s.add(base)
        s.add([members[i][1] for i in subset])
        return s.check() == z3.sat

    s = z3.Solver(ctx=problem.ctx)
    s.add(base)
    marks = [z3.Bool(f"m{i}", problem.ctx) for i in range(len(members))]
    for mark, (_, formula) in zip(marks, members):
        s.assert_and_track(formula, mark)
    s.check()
    core = sorted(int(str(m)[1:]) for m in s.unsat_core())
    for i in list(core):  # deletion: keep only members the conflict needs
        rest = [j for j in core if j != i]
        if not sat(rest):
            core = rest
    return [members[i][0] for i in core]
