"""A discrete-event simulation of drains, rollouts and crashes: the oracle for the rules.

`timing.invariants` states the timing rules as arithmetic; this module checks them against
an independent model of what happens (`timing.sim`): clients over keep-alive connections,
an ALB or NLB health-checking its targets at a random phase, (de)registration and kube-proxy
propagation, pods that warm up, drain, stop accepting, finish and get killed at grace,
kubelet probes, rollout controllers, the heartbeat observer and a host watchdog. It reads
the model's raw fields only (`timing.sim.spec`) and never calls the rules or
`timing.derived`: an agreement between the two is evidence, not a tautology.

Everything is deterministic for a seed: each (service, scenario, phase) draws from its own
`random.Random`, seeded from a string.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields
from typing import Callable, Iterable

from lockstep.timing.model import Stack
from lockstep.timing.scenario_names import DEFAULT_SCENARIOS, NODE_SCENARIOS
from lockstep.timing.sim.engine import INF, Counts
from lockstep.timing.sim.nodes import consolidation, etp_local, node_drain, node_shutdown, spot_interruption
from lockstep.timing.sim.scenarios import Outcome, crash, proxy_stop, quiet, reload, replace, rollout
from lockstep.timing.sim.spec import ServiceSpec, keepalive_can_race, stack_specs

Scenario = Callable[[ServiceSpec, random.Random, float, bool, bool], Outcome]
SCENARIOS: dict[str, Scenario] = dict(zip(
    DEFAULT_SCENARIOS + NODE_SCENARIOS,
    (rollout, replace, crash, quiet, reload, proxy_stop, node_drain, consolidation, spot_interruption, node_shutdown, etp_local),
    strict=True))
# Every scenario but a crash is planned: any loss or block in one is a failure.
PLANNED = tuple(name for name in SCENARIOS if name != "crash")


def applies(spec: ServiceSpec, scenario: str) -> bool:
    """Whether a scenario can happen to this service: quiet hours matter only where keep-alive
    timeouts can race; a consolidation needs a Karpenter NodePool, a spot interruption spot
    capacity, a node shutdown nodes that may shut down undrained under the kubelet's graceful
    shutdown (`Nodes.undrained_shutdowns`; undrained spot is the spot interruption), and the etp-local
    drain a Service with externalTrafficPolicy Local on instance targets."""
    # (each case reads only what it needs: `timing.mutate_sim` reuses a verdict for a spec whose
    # changed fields its scenario never read)
    check = _APPLIES.get(scenario)
    return True if check is None else check(spec)


_APPLIES: dict[str, Callable[[ServiceSpec], bool]] = {
    "quiet": keepalive_can_race,
    "reload": lambda spec: bool(spec.path.reloads),
    "proxy-stop": lambda spec: bool(spec.path.stops),
    "consolidation": lambda spec: spec.nodes is not None and bool(spec.nodes.pool_budgets),
    "spot-interruption": lambda spec: spec.nodes is not None and spec.nodes.spot,
    "node-shutdown": lambda spec: spec.nodes is not None and spec.nodes.undrained and spec.nodes.kubelet > 0,
    "etp-local": lambda spec: spec.lb is not None and spec.lb.node_check,
}
DEFAULT_RATE = 20.0  # requests per second across the service
# Bounds on what a caller may ask for: each phase is a full run of every scenario, so the work
# grows with phases × rate. Simulated time itself is bounded by the scenarios (a rollout is
# followed for at most `timing.sim.scenarios.MAX_ROLLOUT` seconds) and the model's ranges.
MAX_PHASES = 1000
MAX_RATE = 10000.0  # requests per second
COUNTERS = tuple(f.name for f in fields(Counts) if f.name not in ("notes", "by_hop"))


@dataclass
class ScenarioReport:
    service: str
    scenario: str
    phases: int
    counts: Counts
    metrics: dict[str, float] = field(default_factory=dict)
    harmful_phases: int = 0
    timeline: list[tuple[float, str]] = field(default_factory=list)

    @property
    def planned(self) -> bool:
        return self.scenario in PLANNED

    @property
    def harmful(self) -> bool:
        return self.counts.harmful

    def as_dict(self) -> dict[str, object]:
        c = self.counts
        return {"service": self.service, "scenario": self.scenario, "phases": self.phases,
                "harmful": self.harmful, "harmful_phases": self.harmful_phases,
                "lost": c.lost, **{k: getattr(c, k) for k in COUNTERS}, "by_hop": c.by_hop, "notes": c.notes,
                "metrics": {k: (None if v == INF else round(v, 2)) for k, v in self.metrics.items()},
                "timeline": [[t, text] for t, text in self.timeline]}


@dataclass
class StackReport:
    seed: int
    phases: int
    rate: float
    scenarios: list[ScenarioReport]

    @property
    def failed(self) -> bool:
        return any(s.harmful for s in self.scenarios)

    def as_dict(self) -> dict[str, object]:
        return {"seed": self.seed, "phases": self.phases, "rate_per_s": self.rate,
                "ok": not self.failed, "scenarios": [s.as_dict() for s in self.scenarios]}


def _merge(into: Counts, more: Counts) -> None:
    for name in COUNTERS:
        setattr(into, name, getattr(into, name) + getattr(more, name))
    into.notes.extend(n for n in more.notes if n not in into.notes)
    for what, n in more.by_hop.items():
        into.at_hop(what, n)


def run_scenario(spec: ServiceSpec, scenario: str, *, phases: int, seed: int, rate: float,
                 timeline: bool = False, fast: bool = False) -> ScenarioReport:
    """One scenario over `phases` random phases: counts summed, metrics at their worst; the
    timeline is the first harmful phase's (or phase 0's)."""
    fn = SCENARIOS[scenario]
    report = ScenarioReport(spec.name, scenario, phases, Counts())
    witness: int | None = None
    for phase in range(phases):
        rng = random.Random(f"{seed}:{spec.name}:{scenario}:{phase}")
        out = fn(spec, rng, rate, False, fast)
        _merge(report.counts, out.counts)
        for key, value in out.metrics.items():
            report.metrics[key] = max(report.metrics.get(key, value), value)
        if out.counts.harmful:
            report.harmful_phases += 1
            witness = phase if witness is None else witness
    if timeline and phases:
        phase = witness if witness is not None else 0
        rng = random.Random(f"{seed}:{spec.name}:{scenario}:{phase}")
        report.timeline = fn(spec, rng, rate, True, False).timeline or []
    return report


def simulate_specs(specs: Iterable[ServiceSpec], *, phases: int = 20, seed: int = 0,
                   rate: float = DEFAULT_RATE, timeline: bool = False,
                   scenarios: Iterable[str] = DEFAULT_SCENARIOS, fast: bool = False
                   ) -> list[ScenarioReport]:
    """`fast`: stop each run at its first harm (a verdict, not a count)."""
    names = tuple(scenarios)
    # A crash can only go wrong through the heartbeat (requests lost in it are unavoidable):
    # a verdict without heartbeat specs does not need it.
    # Quiet hours matter only where keep-alive timeouts can race.
    return [run_scenario(spec, name, phases=phases, seed=seed, rate=rate, timeline=timeline,
                         fast=fast)
            for spec in specs for name in names
            if not (fast and name == "crash" and not spec.heartbeat)
            and applies(spec, name)]


# Below this many services one process is faster than starting a pool.
PARALLEL_FROM = 8


def _simulate_one(job: tuple[ServiceSpec, int, int, float, bool, tuple[str, ...]]) -> list[ScenarioReport]:
    spec, phases, seed, rate, timeline, scenarios = job
    return simulate_specs([spec], phases=phases, seed=seed, rate=rate, timeline=timeline, scenarios=scenarios)


def simulate_stack(stack: Stack, *, phases: int = 20, seed: int = 0, rate: float = DEFAULT_RATE,
                   timeline: bool = False, scenarios: Iterable[str] = DEFAULT_SCENARIOS,
                   jobs: int = 1) -> StackReport:
    """Every service of the stack through a rollout, one pod replaced, and a crash (and the
    node scenarios asked for). `jobs` > 1 spreads the services over that many processes (from
    `PARALLEL_FROM` services): each (service, scenario, phase) draws from its own seeded
    generator, so the report is the serial one, in the same order."""
    specs = stack_specs(stack)
    names = tuple(scenarios)
    if jobs > 1 and len(specs) >= PARALLEL_FROM:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, len(specs))) as pool:
            parts = pool.map(_simulate_one, [(s, phases, seed, rate, timeline, names) for s in specs],
                             chunksize=max(1, len(specs) // (4 * jobs)))
            reports = [r for part in parts for r in part]
    else:
        reports = simulate_specs(specs, phases=phases, seed=seed, rate=rate, timeline=timeline, scenarios=names)
    return StackReport(seed, phases, rate, reports)
