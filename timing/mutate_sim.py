"""The simulation's side of `lockstep mutate`: a verdict per mutated service spec, simulating
only what the mutant can have changed.

A scenario's run is a function of its seed and of what it reads of the spec (the simulation
is deterministic, and reads its numbers nowhere else). Every service is simulated under one
name (`SAME_NAME`), so its runs are seeded by the seed, the scenario and the phase alone: a
verdict is a function of the service's numbers, and services with the same numbers (a stack
of copies) share their runs; the verdict is then told under the service's own name.

The unmutated spec of each service is run once on a copy that notes which of its fields each
scenario reads; a mutant that leaves all of those fields as they were gets that scenario's
verdict without running it. Every other (spec, scenario) is run once and remembered.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Iterable

from lockstep.timing.sim.spec import ServiceSpec
from lockstep.timing.simulate import DEFAULT_SCENARIOS, ScenarioReport, simulate_specs

_READ: set[str] = set()
_FIELDS = tuple(f.name for f in fields(ServiceSpec))
EVERYTHING = "*"  # a read that bypasses the fields (a copy, a comparison): no reuse
SAME_NAME = "service"  # every spec is simulated under it: its numbers alone decide its verdict


class _ReadSpec(ServiceSpec):
    """A spec that notes which of its fields are read."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        _READ.add(name)
        return object.__getattribute__(self, name)


def _text(r: ScenarioReport) -> str:
    c = r.counts
    # Each run stops at its first harm (a verdict, not a count): name the kinds.
    kinds = [label for n, label in (
        (c.lost, "requests lost"), (c.false_blocks, "false heartbeat block"),
        (c.premature_unblocks, "early unblock"),
        (c.watchdog_actions, "watchdog action"), (c.restarts, "kubelet restart"),
        (c.deploy_failed, "deploy failed"), (c.zero_capacity, "no pod available")) if n]
    return f"{', '.join(kinds)} ({r.harmful_phases}/{r.phases} phases)"


@dataclass(frozen=True)
class Simulation:
    """How each mutant is simulated: random phases per scenario, requests per second, the
    seed, and the scenarios."""

    phases: int
    seed: int
    rate: float
    scenarios: tuple[str, ...] = DEFAULT_SCENARIOS

    def run(self, spec: ServiceSpec, scenario: str) -> str | None:
        """What went wrong in one scenario (None: nothing, or the scenario cannot happen to it)."""
        found = simulate_specs([spec], phases=self.phases, seed=self.seed, rate=self.rate,
                               scenarios=(scenario,), fast=True)
        return next((_text(r) for r in found if r.counts.harmful), None)

    def noted(self, base: ServiceSpec, scenario: str) -> tuple[frozenset[str], str | None]:
        """`run` on a copy of `base` that notes the fields read: (the fields, the verdict)."""
        _READ.clear()
        text = self.run(_ReadSpec(*(getattr(base, f) for f in _FIELDS)), scenario)
        seen = set(_READ)
        return frozenset({EVERYTHING} if any(n.startswith("_") for n in seen) else seen & set(_FIELDS)), text


def unnamed(spec: ServiceSpec) -> ServiceSpec:
    return replace(spec, name=SAME_NAME)


def reads_alike(read: frozenset[str], spec: ServiceSpec, base: ServiceSpec) -> bool:
    """Whether a scenario that read `read` of `base` runs alike on `spec` (same reads, same run)."""
    return spec == base or (EVERYTHING not in read and all(getattr(spec, f) == getattr(base, f) for f in read))


def told(name: str, verdicts: Iterable[tuple[str, str | None]]) -> tuple[str, ...]:
    """(scenario, verdict) pairs as the report tells them, under the service's own name."""
    return tuple(f"{name} {scenario}: {text}" for scenario, text in verdicts if text is not None)


class SimCache:
    """Simulation verdicts per service spec and scenario, in this process; `baseline`: the
    unmutated specs, whose reads decide which of a mutant's scenarios need running."""

    def __init__(self, phases: int, seed: int, rate: float,
                 scenarios: tuple[str, ...] = DEFAULT_SCENARIOS, baseline: Iterable[ServiceSpec] = ()) -> None:
        self.sim = Simulation(phases, seed, rate, scenarios)
        self.base = {s.name: unnamed(s) for s in baseline}
        self.memo: dict[tuple[ServiceSpec, str], str | None] = {}  # harm (None: none) per spec and scenario
        self.reads: dict[tuple[ServiceSpec, str], frozenset[str]] = {}
        self.runs = 0  # scenarios simulated (the rest reused)

    def harm(self, spec: ServiceSpec) -> tuple[str, ...]:
        """What the simulation saw go wrong, per scenario (nothing: harmless)."""
        plain, base = unnamed(spec), self.base.get(spec.name)
        return told(spec.name, ((sc, self._verdict(plain, base, sc)) for sc in self.sim.scenarios))

    def _verdict(self, spec: ServiceSpec, base: ServiceSpec | None, scenario: str) -> str | None:
        key = (spec, scenario)
        if key not in self.memo:
            if base is not None and (base, scenario) not in self.reads:
                self.runs += 1
                self.reads[(base, scenario)], self.memo[(base, scenario)] = self.sim.noted(base, scenario)
            if base is not None and reads_alike(self.reads[(base, scenario)], spec, base):
                self.memo[key] = self.memo[(base, scenario)]
            else:
                self.runs += 1
                self.memo[key] = self.sim.run(spec, scenario)
        return self.memo[key]
