"""The simulation's side of `lockstep mutate`: a verdict per mutated service spec, simulating
only what the mutant can have changed.

A scenario's run is a function of its seed and of what it reads of the spec (the simulation
is deterministic, and reads its numbers nowhere else). The unmutated spec of each service is
run once on a copy that notes which of its fields each scenario reads; a mutant that leaves
all of those fields as they were gets that scenario's verdict without running it. Every other
(spec, scenario) is run once and remembered.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, Iterable

from lockstep.timing.sim.spec import ServiceSpec
from lockstep.timing.simulate import DEFAULT_SCENARIOS, ScenarioReport, simulate_specs

_READ: set[str] = set()
_FIELDS = tuple(f.name for f in fields(ServiceSpec))
EVERYTHING = "*"  # a read that bypasses the fields (a copy, a comparison): no reuse


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
        (c.watchdog_actions, "watchdog action"), (c.deploy_failed, "deploy failed"),
        (c.zero_capacity, "no pod available")) if n]
    return f"{', '.join(kinds)} ({r.harmful_phases}/{r.phases} phases)"


class SimCache:
    """Simulation verdicts per service spec and scenario; `baseline`: the unmutated specs,
    whose reads decide which of a mutant's scenarios need running."""

    def __init__(self, phases: int, seed: int, rate: float,
                 scenarios: tuple[str, ...] = DEFAULT_SCENARIOS, baseline: Iterable[ServiceSpec] = ()) -> None:
        self.phases, self.seed, self.rate, self.scenarios = phases, seed, rate, scenarios
        self.base = {s.name: s for s in baseline}
        self.memo: dict[tuple[ServiceSpec, str], str | None] = {}  # harm (None: none) per spec and scenario
        self.reads: dict[tuple[ServiceSpec, str], frozenset[str]] = {}
        self.runs = 0  # scenarios simulated (the rest reused)

    def harm(self, spec: ServiceSpec) -> tuple[str, ...]:
        """What the simulation saw go wrong, per scenario (nothing: harmless)."""
        found = []
        for scenario in self.scenarios:
            text = self._verdict(spec, scenario)
            if text is not None:
                found.append(f"{spec.name} {scenario}: {text}")
        return tuple(found)

    def _verdict(self, spec: ServiceSpec, scenario: str) -> str | None:
        key = (spec, scenario)
        if key in self.memo:
            return self.memo[key]
        base = self.base.get(spec.name)
        if base is not None and base != spec:
            if (base, scenario) not in self.reads:
                self._verdict(base, scenario)
            read = self.reads[(base, scenario)]
            if EVERYTHING not in read and all(getattr(spec, f) == getattr(base, f) for f in read):
                self.memo[key] = self.memo[(base, scenario)]
                return self.memo[key]
        noted = base is not None and base == spec
        if noted:
            _READ.clear()
            spec = _ReadSpec(*(getattr(spec, f) for f in _FIELDS))
        self.runs += 1
        found = simulate_specs([spec], phases=self.phases, seed=self.seed, rate=self.rate,
                               scenarios=(scenario,), fast=True)
        text = next((_text(r) for r in found if r.counts.harmful), None)
        if noted:
            seen = set(_READ)
            self.reads[key] = frozenset({EVERYTHING} if any(n.startswith("_") for n in seen)
                                        else seen & set(_FIELDS))
        self.memo[key] = text
        return text
