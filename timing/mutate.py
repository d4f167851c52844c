"""Config mutation (seed 003: "we changed each number to a wrong value and checked a test
catches it"), judged by the simulation rather than by hope.

Every integer of the stack (found by walking the validated model) is pushed to wrong values:
0, the ends of its range (read from the model's pydantic constraints, which come from
`timing.limits`), half, double, ×10, and ±1 around each rule boundary it takes part in (the
values where a finding of `evaluate` turns from ok to error, found by bisection). A value the
model rejects as invalid input is counted and skipped. Every other mutant gets the error rule
ids that reject it and the simulation's verdict (requests lost, false blocks, false watchdog
actions, failed deploys). A mutant no rule rejects but the simulation finds harmful is a gap.

The unmutated stack is judged once (`timing.mutate_judge.Baseline`); a mutant of one
service's number re-judges only that service's own findings and the stack-scope findings about
it, and re-simulates only that service, so judging a mutant does not grow with the stack.
Numbers are judged in worker processes (`jobs`), and the report is the same as a run in one
process.
"""

from __future__ import annotations

import resource
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from lockstep.timing.invariants import errors, evaluate
from lockstep.timing.model import Stack
from lockstep.timing.mutate_judge import RULE_INDEX, Baseline, Statuses, Variant, statuses
from lockstep.timing.mutate_model import Mutant, Path, build, field_range, numbers, with_value
from lockstep.timing.mutate_sim import SimCache, Simulation, reads_alike, told, unnamed
from lockstep.timing.sim.spec import ServiceSpec, stack_specs
from lockstep.timing.simulate import DEFAULT_SCENARIOS

__all__ = ["Baseline", "CATEGORIES", "MutationReport", "Mutant", "SimCache", "Verdict", "boundaries", "build",
           "candidates", "field_range", "judge", "mutate_stack", "numbers", "with_value"]
CATEGORIES = ("caught", "gap", "strict", "harmless", "outside", "rejected_by_model")


@dataclass
class Verdict:
    mutant: Mutant
    category: str
    rules: tuple[str, ...] = ()
    harm: tuple[str, ...] = ()  # what the simulation saw, e.g. "api rollout: 12 lost"
    simulated: bool = True
    problem: str = ""  # the model's own rejection

    def as_dict(self) -> dict[str, object]:
        m = self.mutant
        return {"field": m.where, "original": m.original, "value": m.value, "why": m.why,
                "category": self.category, "rules": list(self.rules), "harm": list(self.harm),
                "simulated": self.simulated, "problem": self.problem}


@dataclass
class MutationReport:
    verdicts: list[Verdict] = field(default_factory=list)
    numbers: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    phases: int = 0
    rate: float = 0.0
    jobs: int = 1
    baseline_harm: tuple[str, ...] = ()
    baseline_errors: tuple[str, ...] = ()

    def by(self, category: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.category == category]

    @property
    def counts(self) -> dict[str, int]:
        return {c: len(self.by(c)) for c in CATEGORIES}

    @property
    def failed(self) -> bool:
        return bool(self.by("gap"))


# ---- one number's mutants ------------------------------------------------------------------------
class Variants:
    """One number's variants, each built and judged once, and their statuses rule by rule."""

    def __init__(self, base: Baseline, path: Path) -> None:
        self.base, self.path = base, path
        self.made: dict[int, Variant | str] = {}
        self.by_rule: dict[tuple[int, int], Statuses | None] = {}

    def __call__(self, value: int) -> Variant | str:
        v = self.made.get(value)
        if v is None:
            v = self.made[value] = self.base.variant(self.path, value)
        return v

    def statuses(self, value: int, rule: int | None = None) -> Statuses | None:
        """The statuses at `value` (of one rule's findings, or all); None: the model refuses it."""
        v = self(value)
        if isinstance(v, str):
            return None
        if rule is None:
            return statuses(v.segments)
        key = (value, rule)
        if key not in self.by_rule:
            self.by_rule[key] = statuses(v.segments, (rule,))
        return self.by_rule[key]


def boundaries(base: Baseline, path: Path, value: int, lo: int, hi: int,
               variants: Variants | None = None) -> dict[int, str]:
    """Values next to each point where a finding flips as this number moves from `value`
    towards either end of its range (bisection: rules are monotone in one number)."""
    at = variants or Variants(base, path)
    found: dict[int, str] = {}
    before = base.base_statuses(base.service_of(path))
    for end in (lo, hi):
        if end == value:
            continue
        far = at.statuses(end)
        if far is None:
            continue
        for key, status in before.items():
            if far.get(key, status) == status:
                continue
            rule = RULE_INDEX[key[0]]
            good, bad = value, end  # status flips somewhere in (good, bad]
            while abs(bad - good) > 1:
                mid = (good + bad) // 2
                probe = at.statuses(mid, rule)
                if probe is not None and probe.get(key, status) == status:
                    good = mid
                else:
                    bad = mid
            for x, k in ((good, "last same"), (bad, "first flipped"), (bad + (bad - good), "+1")):
                if lo <= x <= hi and x != value:
                    found.setdefault(x, f"{key[0]} boundary ({k})")
    return found


def candidates(base: Baseline, path: Path, value: int, variants: Variants | None = None) -> list[Mutant]:
    lo, hi = field_range(path)
    plain = {0: "zero", lo: "min", hi: "max", value // 2: "half", value * 2: "double", value * 10: "x10"}
    plain.update({x: why for x, why in boundaries(base, path, value, lo, hi, variants).items()
                  if x not in plain})
    return [Mutant(path, value, x, why) for x, why in sorted(plain.items()) if x != value]


# ---- judging -----------------------------------------------------------------------------------
@dataclass
class Judged:
    """A mutant as the rules judge it, and the service specs it changed (the simulation's
    part, told by name: each spec under the one name it is simulated by, `mutate_sim.unnamed`)."""

    mutant: Mutant
    rules: tuple[str, ...] = ()
    changed: tuple[tuple[str, ServiceSpec], ...] | None = None  # None: nothing to simulate
    problem: str | None = None  # the model's own rejection

    def verdict(self, harm: tuple[str, ...] = ()) -> Verdict:
        if self.problem is not None:
            return Verdict(self.mutant, "rejected_by_model", simulated=False, problem=self.problem)
        if self.changed is None:
            return Verdict(self.mutant, "outside", self.rules, simulated=False)
        if self.rules:
            return Verdict(self.mutant, "caught" if harm else "strict", self.rules, harm)
        return Verdict(self.mutant, "gap" if harm else "harmless", self.rules, harm)


def judged(base: Baseline, mutant: Mutant, variants: Variants | None = None) -> Judged:
    v = (variants or Variants(base, mutant.path))(mutant.value)
    if isinstance(v, str):
        return Judged(mutant, problem=v)
    changed = base.changed_specs(v)
    return Judged(mutant, base.error_rules(v), tuple((s.name, unnamed(s)) for s in changed) if changed else None)


def judge(base: Baseline, mutant: Mutant, sims: SimCache, variants: Variants | None = None) -> Verdict:
    """One mutant, judged by the rules and by the simulation (`sims`, in this process)."""
    j = judged(base, mutant, variants)
    return j.verdict(tuple(h for name, spec in j.changed or () for h in sims.harm(replace(spec, name=name))))


# ---- the run: spread over the machine's cores ------------------------------------------------
# A run has three steps, each a list of independent tasks (in this process, or spread over
# worker processes): every number's mutants judged by the rules; every unmutated spec
# simulated, noting what each scenario reads; every distinct (mutated spec, scenario) a
# mutant needs and its unmutated spec cannot answer, simulated once. Which runs are needed
# is decided here, from the first two steps' results alone, so the report is the same for
# any count of workers.
_base: Baseline | None = None  # a worker's own baseline, made once by `_start`
_sim: Simulation | None = None


def _start(stack: Stack | None, sim: Simulation) -> None:
    global _base, _sim
    _base, _sim = (Baseline(stack) if stack is not None else None), sim


def _number(task: tuple[Path, int]) -> list[Judged]:
    """Every wrong value of one number, judged by the rules."""
    assert _base is not None
    path, value = task
    variants = Variants(_base, path)
    return [judged(_base, m, variants) for m in candidates(_base, path, value, variants)]


def _noted(job: tuple[ServiceSpec, str]) -> tuple[frozenset[str], str | None]:
    assert _sim is not None
    return _sim.noted(*job)


def _run(job: tuple[ServiceSpec, str]) -> str | None:
    assert _sim is not None
    return _sim.run(*job)


def mutate_stack(stack: Stack, *, phases: int = 2, seed: int = 0, rate: float = 10.0,
                 only: str | None = None, jobs: int = 1,
                 scenarios: tuple[str, ...] = DEFAULT_SCENARIOS) -> MutationReport:
    """Every number of `stack` pushed to wrong values; `only`: a field-path prefix; `jobs`:
    worker processes (1: all in this process). The report is the same for any `jobs`: each
    number's mutants are judged on their own, the simulation is deterministic per spec and
    seed, and the results are put back in the walk's order. `scenarios`: what each mutant is
    simulated in (the node scenarios on request, as `lockstep simulate` runs them)."""
    started, cpu = time.perf_counter(), _cpu_s()
    sim = Simulation(phases, seed, rate, scenarios)
    base_specs = stack_specs(stack)
    tasks = [(path, value) for path, value in numbers(stack.model_dump())
             if only is None or ".".join(str(p) for p in path).startswith(only)]
    report = MutationReport(phases=phases, rate=rate, numbers=len(tasks), jobs=max(1, jobs))
    report.baseline_errors = tuple(sorted({f.id for f in errors(evaluate(stack))}))
    with _workers(jobs, stack, sim) as spread:
        bases = {s.name: unnamed(s) for s in base_specs}
        first = list(dict.fromkeys((b, sc) for b in bases.values() for sc in scenarios))
        # a number's cost varies by orders of magnitude (a wrong value of a day simulates a
        # day): small tasks, so a free worker takes the next one
        per_number = spread(_number, tasks, max(1, len(tasks) // (64 * jobs)))
        noted = dict(zip(first, spread(_noted, first, 1)))
        verdicts: dict[tuple[ServiceSpec, str], str | None] = {key: text for key, (_, text) in noted.items()}
        todo: dict[tuple[ServiceSpec, str], None] = {}
        for j in (j for js in per_number for j in js):
            for name, spec in j.changed or ():
                base = bases[name]
                for sc in scenarios:
                    key = (spec, sc)
                    if key in verdicts or key in todo:
                        continue
                    read, text = noted[(base, sc)]
                    if reads_alike(read, spec, base):
                        verdicts[key] = text
                    else:
                        todo[key] = None
        verdicts.update(zip(todo, spread(_run, list(todo), 1)))
    report.baseline_harm = tuple(h for s in base_specs for h in told(s.name, ((sc, verdicts[(bases[s.name], sc)])
                                                                             for sc in scenarios)))
    report.verdicts = [j.verdict(tuple(h for name, spec in j.changed or ()
                                       for h in told(name, ((sc, verdicts[(spec, sc)]) for sc in scenarios))))
                       for js in per_number for j in js]
    report.wall_s = time.perf_counter() - started
    report.cpu_s = _cpu_s() - cpu
    return report


@contextmanager
def _workers(jobs: int, stack: Stack, sim: Simulation) -> Iterator[Callable[..., list[Any]]]:
    """`spread(fn, tasks, chunk)`: fn over the tasks, in order, in this process or in `jobs`
    worker processes (each with its own baseline)."""
    if jobs <= 1:
        _start(stack, sim)
        try:
            yield lambda fn, tasks, chunk: [fn(t) for t in tasks]
        finally:
            _start(None, sim)
        return
    with ProcessPoolExecutor(max_workers=jobs, initializer=_start, initargs=(stack, sim)) as pool:
        yield lambda fn, tasks, chunk: list(pool.map(fn, tasks, chunksize=chunk))


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished worker processes."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
