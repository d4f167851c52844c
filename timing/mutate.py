"""Config mutation (seed 003: "we changed each number to a wrong value and checked a test
catches it"), judged by the simulation rather than by hope.

Every integer of the stack (found by walking the validated model) is pushed to wrong values:
0, the ends of its range (read from the model's pydantic constraints, which come from
`timing.limits`), half, double, ×10, and ±1 around each rule boundary it takes part in (the
values where a finding of `evaluate` turns from ok to error, found by bisection). A value the
model rejects as invalid input is counted and skipped. Every other mutant gets the error rule
ids that reject it and the simulation's verdict (requests lost, false blocks, false watchdog
actions, failed deploys). A mutant no rule rejects but the simulation finds harmful is a gap.

The unmutated stack is judged once (`Baseline`); a mutant of one service's number re-judges
and re-simulates only that service and re-runs the stack-scope rules, so a run grows with the
count of numbers, not with its square. Numbers are judged in worker processes (`jobs`), and
the report is the same as a run in one process.

The module is long because the baseline (what one number can reach) and the mutants it judges
share the finding keys and the value ranges; splitting them is left for the simulation-speed
work the mutate benchmark asks for.
"""

from __future__ import annotations

import os
import resource
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator

from pydantic import ValidationError

from lockstep.timing.findings import Finding
from lockstep.timing.invariants import RULES, Ctx, Scene, context, walk
from lockstep.timing.model import Service, Stack
from lockstep.timing.references import reference_errors
from lockstep.timing.sim.spec import ServiceSpec, service_spec, stack_specs
from lockstep.timing.simulate import DEFAULT_SCENARIOS, simulate_specs

Path = tuple[str | int, ...]
CATEGORIES = ("caught", "gap", "strict", "harmless", "outside", "rejected_by_model")


@dataclass(frozen=True)
class Mutant:
    path: Path
    original: int
    value: int
    why: str  # zero | min | max | half | double | x10 | "<rule-id> boundary±k"

    @property
    def where(self) -> str:
        return ".".join(str(p) for p in self.path)


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


# ---- walking the model -----------------------------------------------------------------------
def numbers(data: Any, path: Path = ()) -> Iterator[tuple[Path, int]]:
    """Every integer in a dumped stack (booleans are not numbers)."""
    if isinstance(data, bool):
        return
    if isinstance(data, int):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield from numbers(value, path + (key,))
    elif isinstance(data, (list, tuple)):
        for i, value in enumerate(data):
            yield from numbers(value, path + (i,))


def with_value(data: dict[str, Any], path: Path, value: int) -> dict[str, Any]:
    """A copy of `data` with one number changed; only the containers on the path are copied
    (the rest is shared, and never modified)."""
    if not path:
        return value  # type: ignore[return-value]
    key, rest = path[0], path[1:]
    if isinstance(data, dict):
        out: Any = dict(data)
    else:
        out = list(data)
    out[key] = with_value(out[key], rest, value) if rest else value
    return out


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return Stack.model_json_schema()


def _deref(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _schema()["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _options(node: dict[str, Any]) -> list[dict[str, Any]]:
    node = _deref(node)
    alts = node.get("anyOf") or node.get("oneOf")
    return [o for alt in alts for o in _options(alt)] if alts else [node]


def field_range(path: Path) -> tuple[int, int]:
    """The integer range the model accepts at `path`, from its pydantic constraints."""
    nodes = [_schema()]
    for key in path:
        nxt = []
        for node in (o for n in nodes for o in _options(n)):
            if isinstance(key, int) and node.get("type") == "array":
                items = node.get("items") or {}
                prefix = node.get("prefixItems")
                nxt.append(prefix[key] if prefix and key < len(prefix) else items)
            elif isinstance(key, str) and key in node.get("properties", {}):
                nxt.append(node["properties"][key])
            elif isinstance(key, str) and isinstance(node.get("additionalProperties"), dict):
                nxt.append(node["additionalProperties"])
        nodes = nxt
    lo, hi = None, None
    for node in (o for n in nodes for o in _options(n)):
        if node.get("type") == "integer":
            a = node.get("minimum", node.get("exclusiveMinimum", -(2**31)) + ("exclusiveMinimum" in node))
            b = node.get("maximum", node.get("exclusiveMaximum", 2**31) - ("exclusiveMaximum" in node))
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    return (lo if lo is not None else 0, hi if hi is not None else 2**31 - 1)


# ---- the unmutated stack, split by what one number can reach ----------------------------------
# A finding's identity across mutants: (rule id, segment, subject, n-th of that triple). The
# segment is the service index for service- and lb-scope findings, "stack" for stack-scope ones.
Key = tuple[str, object, str, int]
Statuses = dict[Key, bool]
Segment = tuple[object, list[list[Finding]]]  # (segment, findings per rule of RULES, in order)
STACK = "stack"


def build(data: dict[str, Any]) -> Stack:
    return Stack.model_validate(data)


def _problem(err: ValidationError, prefix: Path = ()) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in prefix + tuple(first["loc"]))
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"


def _statuses(segments: list[Segment]) -> Statuses:
    """Error or not, per finding, in the order `evaluate` reports them (rule, then service)."""
    out: Statuses = {}
    seen: dict[tuple[str, object, str], int] = {}
    for i in range(len(RULES)):
        for seg, per_rule in segments:
            for f in per_rule[i]:
                k = (f.id, seg, f.subject)
                seen[k] = seen.get(k, -1) + 1
                out[(f.id, seg, f.subject, seen[k])] = f.status == "error"
    return out


def _error_ids(segments: list[Segment]) -> set[str]:
    return {f.id for _, per_rule in segments for fs in per_rule for f in fs if f.status == "error"}


@dataclass
class Variant:
    """The stack with one number changed, and the parts of it that had to be judged again."""

    stack: Stack
    index: int | None  # the service whose number changed; None: a stack-level number
    segments: list[Segment]


class Baseline:
    """The unmutated stack, judged once, split by what a mutant of one number can reach.

    A service's number reaches that service's own (service- and lb-scope) findings, its own
    simulation spec, and the stack-scope rules (they read services through the stack); every
    other service's findings and spec stay the baseline's. References between a stack's parts
    are names, never numbers, so a mutated service is validated alone and put in the place of
    the original. A stack-level number (margin, watchdog, heartbeat, failover) re-judges all.
    """

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.data = stack.model_dump()
        self.ctx = context(stack)
        self.segments: list[Segment] = [(i, self._service_findings(svc, self.ctx))
                                        for i, svc in enumerate(stack.services)]
        self.stack_segment: Segment = (STACK, self._stack_findings(stack, self.ctx))
        self.specs = tuple(stack_specs(stack))
        self.errors = tuple(sorted(_error_ids(self.all_segments)))
        self._error_counts = Counter(f.id for _, per_rule in self.segments for fs in per_rule
                                     for f in fs if f.status == "error")
        self._statuses: dict[int | None, Statuses] = {}

    @property
    def all_segments(self) -> list[Segment]:
        return [*self.segments, self.stack_segment]

    def _service_findings(self, svc: Service, ctx: Ctx) -> list[list[Finding]]:
        scene = Scene(services=(svc,))
        return [walk(scene, ctx, (rule,), ("lb", "service")) for rule in RULES]

    def _stack_findings(self, stack: Stack, ctx: Ctx) -> list[list[Finding]]:
        scene = Scene.of(stack)
        return [walk(scene, ctx, (rule,), ("stack",)) for rule in RULES]

    @staticmethod
    def service_of(path: Path) -> int | None:
        return path[1] if path[0] == "services" else None  # type: ignore[return-value]

    def variant(self, path: Path, value: int) -> Variant | str:
        """The stack with `path` set to `value`, or the model's reason to reject it."""
        k = self.service_of(path)
        if k is None:
            try:
                stack = build(with_value(self.data, path, value))
            except ValidationError as err:
                return _problem(err)
            ctx = context(stack)
            segments = [(i, self._service_findings(svc, ctx)) for i, svc in enumerate(stack.services)]
            return Variant(stack, None, [*segments, (STACK, self._stack_findings(stack, ctx))])
        try:
            svc = Service.model_validate(with_value(self.data["services"][k], path[2:], value))
        except ValidationError as err:
            return _problem(err, path[:2])
        services = self.stack.services
        stack = self.stack.model_copy(update={"services": (*services[:k], svc, *services[k + 1:])})
        # What the stack's own validator checks across a service (e.g. a blue-green Rollout's
        # surge), which validating the service alone does not: as the whole stack would refuse it.
        problems = reference_errors(stack)
        if problems:
            return ": " + "; ".join(problems)
        return Variant(stack, k, [(k, self._service_findings(svc, self.ctx)),
                                  (STACK, self._stack_findings(stack, self.ctx))])

    def base_statuses(self, k: int | None) -> Statuses:
        """The baseline's statuses of the findings a mutant of service `k` (None: of a
        stack-level number) is judged on."""
        if k not in self._statuses:
            segs = self.all_segments if k is None else [self.segments[k], self.stack_segment]
            self._statuses[k] = _statuses(segs)
        return self._statuses[k]

    def error_rules(self, v: Variant) -> tuple[str, ...]:
        """Every error rule id of the whole mutated stack."""
        ids = _error_ids(v.segments)
        if v.index is not None:
            own = Counter(f.id for fs in self.segments[v.index][1] for f in fs if f.status == "error")
            ids |= {i for i, n in self._error_counts.items() if n > own[i]}
        return tuple(sorted(ids))

    def changed_specs(self, v: Variant) -> list[ServiceSpec]:
        if v.index is None:
            return [s for s, b in zip(stack_specs(v.stack), self.specs) if s != b]
        spec = service_spec(v.stack, v.stack.services[v.index])
        return [spec] if spec != self.specs[v.index] else []


# ---- rule boundaries -------------------------------------------------------------------------------
def boundaries(base: Baseline, path: Path, value: int, lo: int, hi: int) -> dict[int, str]:
    """Values next to each point where a finding flips as this number moves from `value`
    towards either end of its range (bisection: rules are monotone in one number)."""
    found: dict[int, str] = {}
    before = base.base_statuses(base.service_of(path))
    cache: dict[int, Statuses | None] = {value: before}

    def at(x: int) -> Statuses | None:
        if x not in cache:
            v = base.variant(path, x)
            cache[x] = None if isinstance(v, str) else _statuses(v.segments)
        return cache[x]

    for end in (lo, hi):
        if end == value:
            continue
        far = at(end)
        if far is None:
            continue
        for key, status in before.items():
            if far.get(key, status) == status:
                continue
            good, bad = value, end  # status flips somewhere in (good, bad]
            while abs(bad - good) > 1:
                mid = (good + bad) // 2
                probe = at(mid)
                if probe is not None and probe.get(key, status) == status:
                    good = mid
                else:
                    bad = mid
            for x, k in ((good, "last same"), (bad, "first flipped"), (bad + (bad - good), "+1")):
                if lo <= x <= hi and x != value:
                    found.setdefault(x, f"{key[0]} boundary ({k})")
    return found


def candidates(base: Baseline, path: Path, value: int) -> list[Mutant]:
    lo, hi = field_range(path)
    plain = {0: "zero", lo: "min", hi: "max", value // 2: "half", value * 2: "double", value * 10: "x10"}
    plain.update({x: why for x, why in boundaries(base, path, value, lo, hi).items()
                  if x not in plain})
    return [Mutant(path, value, x, why) for x, why in sorted(plain.items()) if x != value]


# ---- judging -----------------------------------------------------------------------------------
class SimCache:
    """Simulation verdicts per service spec: a mutant re-simulates only what it changed."""

    def __init__(self, phases: int, seed: int, rate: float,
                 scenarios: tuple[str, ...] = DEFAULT_SCENARIOS) -> None:
        self.phases, self.seed, self.rate, self.scenarios = phases, seed, rate, scenarios
        self.memo: dict[ServiceSpec, tuple[str, ...]] = {}

    def harm(self, spec: ServiceSpec) -> tuple[str, ...]:
        if spec not in self.memo:
            found = []
            for r in simulate_specs([spec], phases=self.phases, seed=self.seed, rate=self.rate,
                                    scenarios=self.scenarios, fast=True):
                c = r.counts
                if not c.harmful:
                    continue
                # Each run stops at its first harm (a verdict, not a count): name the kinds.
                kinds = [label for n, label in (
                    (c.lost, "requests lost"), (c.false_blocks, "false heartbeat block"),
                    (c.premature_unblocks, "early unblock"),
                    (c.watchdog_actions, "watchdog action"), (c.deploy_failed, "deploy failed"),
                    (c.zero_capacity, "no pod available")) if n]
                found.append(f"{spec.name} {r.scenario}: {', '.join(kinds)} "
                             f"({r.harmful_phases}/{r.phases} phases)")
            self.memo[spec] = tuple(found)
        return self.memo[spec]


def judge(base: Baseline, mutant: Mutant, sims: SimCache) -> Verdict:
    v = base.variant(mutant.path, mutant.value)
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
        self.sims = SimCache(phases, seed, rate, scenarios)

    def number(self, task: tuple[Path, int]) -> list[Verdict]:
        """Every wrong value of one number, judged."""
        path, value = task
        return [judge(self.base, m, self.sims) for m in candidates(self.base, path, value)]

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
