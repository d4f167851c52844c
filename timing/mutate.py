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

import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from lockstep.timing.model import Stack
from lockstep.timing.mutate_judge import (Baseline, Mutant, Path, Variants, boundaries, build,
                                          candidates, field_range, numbers, with_value)
from lockstep.timing.mutate_sim import SimCache
from lockstep.timing.sim.spec import ServiceSpec
from lockstep.timing.simulate import DEFAULT_SCENARIOS

__all__ = ["Baseline", "CATEGORIES", "MutationReport", "Mutant", "SimCache", "Verdict", "boundaries", "build",
           "candidates", "default_jobs", "field_range", "judge", "mutate_stack", "numbers", "with_value"]
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


# ---- judging -----------------------------------------------------------------------------------
def judge(base: Baseline, mutant: Mutant, sims: SimCache, variants: Variants | None = None) -> Verdict:
    v = (variants or Variants(base, mutant.path))(mutant.value)
    if isinstance(v, str):
        return Verdict(mutant, "rejected_by_model", simulated=False, problem=v)
    rules = base.error_rules(v)
    changed = base.changed_specs(v)
    if not changed:
        return Verdict(mutant, "outside", rules, simulated=False)
    harm = tuple(h for s in changed for h in sims.harm(s))
    if rules:
        category = "caught" if harm else "strict"
    else:
        category = "gap" if harm else "harmless"
    return Verdict(mutant, category, rules, harm)


# ---- the run: one number per task, spread over the machine's cores ---------------------------
class Run:
    """One process's share of a mutation run: the baseline and its own simulation cache."""

    def __init__(self, stack: Stack, phases: int, seed: int, rate: float,
                 scenarios: tuple[str, ...] = DEFAULT_SCENARIOS) -> None:
        self.base = Baseline(stack)
        self.sims = SimCache(phases, seed, rate, scenarios, self.base.specs)

    def number(self, task: tuple[Path, int]) -> list[Verdict]:
        """Every wrong value of one number, judged."""
        path, value = task
        variants = Variants(self.base, path)
        return [judge(self.base, m, self.sims, variants) for m in candidates(self.base, path, value, variants)]

    def harm(self, spec: ServiceSpec) -> tuple[str, ...]:
        return self.sims.harm(spec)


_run: Run | None = None  # a worker process's own `Run`, made once by `_start`


def _start(stack: Stack, phases: int, seed: int, rate: float, scenarios: tuple[str, ...]) -> None:
    global _run
    _run = Run(stack, phases, seed, rate, scenarios)


def _number(task: tuple[Path, int]) -> list[Verdict]:
    assert _run is not None
    return _run.number(task)


def _harm(spec: ServiceSpec) -> tuple[str, ...]:
    assert _run is not None
    return _run.harm(spec)


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def mutate_stack(stack: Stack, *, phases: int = 2, seed: int = 0, rate: float = 10.0,
                 only: str | None = None, jobs: int = 1,
                 scenarios: tuple[str, ...] = DEFAULT_SCENARIOS) -> MutationReport:
    """Every number of `stack` pushed to wrong values; `only`: a field-path prefix; `jobs`:
    worker processes (1: all in this process). The report is the same for any `jobs`: each
    number's mutants are judged on their own, the simulation is deterministic per spec and
    seed, and the results are put back in the walk's order. `scenarios`: what each mutant is
    simulated in (the node scenarios on request, as `lockstep simulate` runs them)."""
    started, cpu = time.perf_counter(), _cpu_s()
    run = Run(stack, phases, seed, rate, scenarios)
    tasks = [(path, value) for path, value in numbers(run.base.data)
             if only is None or ".".join(str(p) for p in path).startswith(only)]
    report = MutationReport(phases=phases, rate=rate, numbers=len(tasks), jobs=max(1, jobs))
    report.baseline_errors = run.base.errors
    if jobs <= 1:
        harms = [run.harm(s) for s in run.base.specs]
        per_number = [run.number(t) for t in tasks]
    else:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_start,
                                 initargs=(stack, phases, seed, rate, scenarios)) as pool:
            harms = list(pool.map(_harm, run.base.specs))
            # One number per task: a number's cost varies by orders of magnitude (a wrong
            # value of a day simulates a day), so a free worker takes the next one.
            per_number = list(pool.map(_number, tasks))
    report.baseline_harm = tuple(h for hs in harms for h in hs)
    report.verdicts = [v for vs in per_number for v in vs]
    report.wall_s = time.perf_counter() - started
    report.cpu_s = _cpu_s() - cpu
    return report


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished worker processes."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
