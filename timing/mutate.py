"""Config mutation (seed 003: "we changed each number to a wrong value and checked a test
catches it"), judged by the simulation rather than by hope.

Every integer of the stack (found by walking the validated model) is pushed to wrong values:
0, the ends of its range (read from the model's pydantic constraints, which come from
`timing.limits`), half, double, ×10, and ±1 around each rule boundary it takes part in (the
values where a finding of `evaluate` turns from ok to error, found by bisection). A value the
model rejects as invalid input is counted and skipped. Every other mutant gets the error rule
ids that reject it and the simulation's verdict (requests lost, false blocks, false watchdog
actions, failed deploys). A mutant no rule rejects but the simulation finds harmful is a gap.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator

from pydantic import ValidationError

from timing.invariants import evaluate
from timing.model import Stack
from timing.sim.spec import ServiceSpec, stack_specs
from timing.simulate import SCENARIOS, simulate_specs

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


# ---- rule boundaries -------------------------------------------------------------------------------
def build(data: dict[str, Any]) -> Stack:
    return Stack.model_validate(data, context={"skip_invariants": True})


def _statuses(data: dict[str, Any]) -> dict[tuple[str, str, int], bool] | None:
    """Error or not, per finding (rule id, subject, n-th of that pair); None: invalid input."""
    try:
        stack = build(data)
    except ValidationError:
        return None
    out: dict[tuple[str, str, int], bool] = {}
    seen: dict[tuple[str, str], int] = {}
    for f in evaluate(stack):
        k = (f.id, f.subject)
        seen[k] = seen.get(k, -1) + 1
        out[(f.id, f.subject, seen[k])] = f.status == "error"
    return out


def boundaries(data: dict[str, Any], path: Path, value: int, lo: int, hi: int,
               base: dict[tuple[str, str, int], bool]) -> dict[int, str]:
    """Values next to each point where a finding flips as this number moves from `value`
    towards either end of its range (bisection: rules are monotone in one number)."""
    found: dict[int, str] = {}
    cache: dict[int, dict | None] = {value: base}

    def at(x: int) -> dict | None:
        if x not in cache:
            cache[x] = _statuses(with_value(data, path, x))
        return cache[x]

    for end in (lo, hi):
        if end == value:
            continue
        far = at(end)
        if far is None:
            continue
        for key, status in base.items():
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


def candidates(data: dict[str, Any], path: Path, value: int,
               base: dict[tuple[str, str, int], bool]) -> list[Mutant]:
    lo, hi = field_range(path)
    plain = {0: "zero", lo: "min", hi: "max", value // 2: "half", value * 2: "double", value * 10: "x10"}
    plain.update({x: why for x, why in boundaries(data, path, value, lo, hi, base).items()
                  if x not in plain})
    return [Mutant(path, value, x, why) for x, why in sorted(plain.items()) if x != value]


# ---- judging -----------------------------------------------------------------------------------
class SimCache:
    """Simulation verdicts per service spec: a mutant re-simulates only what it changed."""

    def __init__(self, phases: int, seed: int, rate: float) -> None:
        self.phases, self.seed, self.rate = phases, seed, rate
        self.memo: dict[ServiceSpec, tuple[str, ...]] = {}

    def harm(self, spec: ServiceSpec) -> tuple[str, ...]:
        if spec not in self.memo:
            found = []
            for r in simulate_specs([spec], phases=self.phases, seed=self.seed, rate=self.rate,
                                    scenarios=SCENARIOS, fast=True):
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


def judge(data: dict[str, Any], mutant: Mutant, sims: SimCache,
          base_specs: tuple[ServiceSpec, ...]) -> Verdict:
    mutated = with_value(data, mutant.path, mutant.value)
    try:
        stack = build(mutated)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return Verdict(mutant, "rejected_by_model", simulated=False,
                       problem=f"{where}: {first['msg'].removeprefix('Value error, ')}")
    rules = tuple(sorted({f.id for f in evaluate(stack) if f.status == "error"}))
    specs = tuple(stack_specs(stack))
    changed = [s for s, b in zip(specs, base_specs) if s != b]
    if not changed:
        return Verdict(mutant, "outside", rules, simulated=False)
    harm = tuple(h for s in changed for h in sims.harm(s))
    if rules:
        category = "caught" if harm else "strict"
    else:
        category = "gap" if harm else "harmless"
    return Verdict(mutant, category, rules, harm)


def mutate_stack(stack: Stack, *, phases: int = 2, seed: int = 0, rate: float = 10.0,
                 only: str | None = None) -> MutationReport:
    """Every number of `stack` pushed to wrong values; `only`: a field-path prefix."""
    started, cpu = time.perf_counter(), time.process_time()
    data = stack.model_dump()
    sims = SimCache(phases, seed, rate)
    base_specs = tuple(stack_specs(stack))
    report = MutationReport(phases=phases, rate=rate)
    report.baseline_harm = tuple(h for s in base_specs for h in sims.harm(s))
    report.baseline_errors = tuple(sorted({f.id for f in evaluate(stack) if f.status == "error"}))
    base = _statuses(data)
    assert base is not None
    for path, value in numbers(data):
        where = ".".join(str(p) for p in path)
        if only is not None and not where.startswith(only):
            continue
        report.numbers += 1
        for mutant in candidates(data, path, value, base):
            report.verdicts.append(judge(data, mutant, sims, base_specs))
    report.wall_s = time.perf_counter() - started
    report.cpu_s = time.process_time() - cpu
    return report
