"""The engine's shortcuts and its determinism.

`World.run` serves requests between events without putting them on the heap. The reference
below is the plain discrete-event form (every arrival an event); both consume the random
stream in the same order, so every count and every timeline entry must be identical.
`Checkers._probe` and `Checkers._hc` leave out probe rounds and health checks that can change
nothing until `Lifecycle._wake` puts them back; the reference for those runs every one as an
event.
"""

from __future__ import annotations

import heapq
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lockstep.timing.config import read_stack_file
from lockstep.timing.scenario_names import DEFAULT_SCENARIOS, NODE_SCENARIOS
from lockstep.timing.sim import scenarios
from lockstep.timing.sim.engine import INF, World
from lockstep.timing.sim.spec import stack_specs
from lockstep.timing.simulate import applies, run_scenario, simulate_stack
from tests.timing.strategies import edit, varied_stacks

SCENARIOS = DEFAULT_SCENARIOS + NODE_SCENARIOS


class EventPerRequest(World):
    def run(self, until: float) -> None:
        rng = self.rng

        def arrive() -> None:
            self.request(self.t)
            nxt = self.t + rng.expovariate(self.rate)
            if self.fast and self.c.lost:
                self.stop_flag = True
            if nxt <= until:
                heapq.heappush(self.heap, (nxt, -1, arrive, ()))  # an arrival wins a tie

        first = self.t + rng.expovariate(self.rate) if self.rate > 0 else INF
        if first <= until:
            heapq.heappush(self.heap, (first, -1, arrive, ()))
        while not self.stop_flag and self.heap and self.heap[0][0] <= until:
            t, seq, fn, args = heapq.heappop(self.heap)
            self.t = t
            fn(*args)
            if seq >= 0 and self.fast and self.c.harmful:
                self.stop_flag = True
        self.heap = [e for e in self.heap if e[2] is not arrive]
        heapq.heapify(self.heap)
        self.t = max(self.t, until) if not self.stop_flag else self.t


@pytest.fixture(scope="module")
def example_specs():
    return stack_specs(read_stack_file(None))


@pytest.mark.parametrize("verdict", [False, True])  # a verdict alone stops at the first harm
@pytest.mark.parametrize("scenario", ["rollout", "replace", "crash", "quiet", "reload", "proxy-stop"])
def test_serving_requests_between_events_equals_one_event_per_request(example_specs, scenario, verdict,
                                                                       monkeypatch):
    # (between events, requests none of which can be lost are served in one loop that draws
    # what `request` draws: the counts, the in-flight ends that matter and the stream are the same)
    for spec in (s for s in example_specs if applies(s, scenario)):
        fast = run_scenario(spec, scenario, phases=2, seed=3, rate=15, timeline=True, fast=verdict)
        monkeypatch.setattr(scenarios, "World", EventPerRequest)
        slow = run_scenario(spec, scenario, phases=2, seed=3, rate=15, timeline=True, fast=verdict)
        monkeypatch.undo()
        assert fast.counts == slow.counts, spec.name
        assert fast.metrics == slow.metrics, spec.name
        assert fast.timeline == slow.timeline, spec.name


class Recorded(World):
    """A world that keeps its pods' states at each thing that happens to them (a timeline
    entry) and where it ended, and counts its probe rounds."""

    made: list[Recorded] = []
    rounds = checks = 0

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - World's own
        self.states: list = []
        super().__init__(*args, **kwargs)
        Recorded.made.append(self)

    def pod_states(self) -> list:
        # (all but the count of passed readiness rounds, which the rounds left out do not add
        # to: it counts only while the probe is not passing, see `Checkers._idle`)
        # (and of its target, all but the count of passed checks, for the same reason)
        return [(p.name, p.started, p.rd_pass, p.rd_fail, p.st_fail, p.lv_fail, p.ready, p.restarts, p.in_proxy,
                 p.target and (p.target.health, p.target.fail)) for p in self.pods]

    def note(self, text: str) -> None:
        self.states.append((round(self.t, 6), text, self.pod_states()))
        super().note(text)

    def _probe(self, pod, kind) -> None:  # noqa: ANN001
        Recorded.rounds += 1
        super()._probe(pod, kind)

    def _hc(self, g) -> None:  # noqa: ANN001
        Recorded.checks += 1
        super()._hc(g)


class EveryProbeRound(Recorded):
    """Every round of every probe and every health check an event, as the engine ran before it
    left idle ones out."""

    def _idle(self, pod, kind, t) -> bool:  # noqa: ANN001 - the engine's own signature
        return False

    def _check_idle(self, g, res) -> bool:  # noqa: ANN001
        return False


@contextmanager
def world(cls: type[World]) -> Iterator[None]:
    """`run_scenario` on worlds of `cls` (hypothesis runs many examples in one test call: no
    function-scoped monkeypatch)."""
    scenarios.World = cls
    try:
        yield
    finally:
        scenarios.World = World


def _runs(specs, scenario: str, seed: int, verdict: bool, cls: type[Recorded]) -> tuple[list, list, int, int]:
    """Each applicable service's report, its pods' states at each thing that happened and at
    the end of each world, and the probe rounds and health checks that were events."""
    Recorded.made, Recorded.rounds, Recorded.checks = [], 0, 0
    with world(cls):
        reports = [(s.name, r.counts, r.metrics, r.timeline) for s in specs if applies(s, scenario)
                   for r in [run_scenario(s, scenario, phases=1, seed=seed, rate=15, timeline=True, fast=verdict)]]
    pods = [(w.states, w.pod_states()) for w in Recorded.made]
    return reports, pods, Recorded.rounds, Recorded.checks


# The example, and bundled broken stacks where more happens to a pod while its probes run: a
# target removed by failing its health check (readiness fails while it drains), a mesh sidecar
# that exits before the app (there with checkout's Linkerd proxy waiting 7 s before it exits,
# so that the app's readiness has passed a round between the SIGTERM and its network going),
# an NLB resetting an unhealthy target, the NLB's node check (externalTrafficPolicy Local:
# kube-proxy answers it), and api killed at its grace period while it still drains (its pod goes
# while it answers every check).
STACKS = ((None, {}), ("examples/Pulumi.seed003.yaml", {}), ("examples/Pulumi.nodes-nlb-reset.yaml", {}),
          ("examples/Pulumi.path-linkerd-drain.yaml", {"services.5.path.0.drain_s": 7}),
          ("examples/Pulumi.nodes-etp-local.yaml", {}),
          (None, {"services.0.shutdown.drain_s": 40, "services.0.shutdown.grace_s": 30}))


@pytest.fixture(scope="module", params=STACKS, ids=lambda p: " ".join([p[0] or "example", *map(str, p[1].values())]))
def bundled_specs(request):
    from lockstep.timing.config import read_stack_values, stack_from_config

    name, changes = request.param
    values, _ = read_stack_values(None if name is None else Path(__file__).resolve().parents[2] / name)
    return stack_specs(stack_from_config(edit(values, changes)))


@pytest.mark.parametrize("verdict", [False, True])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_leaving_out_idle_probe_rounds_changes_nothing_a_run_reports_on_bundled_stacks(bundled_specs, scenario,
                                                                                       verdict):
    every = _runs(bundled_specs, scenario, 3, verdict, EveryProbeRound)
    assert _runs(bundled_specs, scenario, 3, verdict, Recorded)[:2] == every[:2]


# The example with its numbers turned (rules broken anywhere, node shutdowns drained or not): the
# runs that lose requests, restart pods, block falsely or stall, where probes matter most.
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(varied_stacks(), st.sampled_from(SCENARIOS), st.booleans(), st.integers(0, 999))
def test_leaving_out_idle_probe_rounds_changes_nothing_a_run_reports(stack, scenario, verdict, seed):
    specs = stack_specs(stack)
    every = _runs(specs, scenario, seed, verdict, EveryProbeRound)
    assert _runs(specs, scenario, seed, verdict, Recorded)[:2] == every[:2]


def _serving_pod(example_specs):
    import random

    from lockstep.timing.sim.state import Counts

    [api] = [s for s in example_specs if s.name == "api"]  # (startup, readiness and liveness probes)
    w = World(api, random.Random(0), 0.0, Counts(), None)
    return w, w.add_pod("api-1", steady=True)


def test_a_serving_pods_probe_rounds_and_health_checks_are_idle(example_specs):
    w, pod = _serving_pod(example_specs)
    assert [w._idle(pod, kind, 0.0) for kind in ("startup", "readiness", "liveness")] == [True, True, True]
    assert w._check_idle(pod.target, "ok")


@pytest.mark.parametrize("res, state", [("503", {}), ("timeout", {}), ("refused", {}), ("ok", {"fail": 1}),
                                        ("ok", {"health": "unhealthy"}), ("ok", {"health": "initial"})])
def test_a_health_check_that_can_change_something_is_never_idle(example_specs, res, state):
    w, pod = _serving_pod(example_specs)
    for field, value in state.items():
        setattr(pod.target, field, value)
    assert not w._check_idle(pod.target, res)


@pytest.mark.parametrize("kind, state", [
    ("startup", {"started": False}),
    ("readiness", {"started": False}),  # its rounds wait for the startup probe, no wake-up call
    ("liveness", {"started": False}),
    ("readiness", {"rd_fail": 1}),  # a pass now clears a counted failure
    ("liveness", {"lv_fail": 1}),
    ("readiness", {"rd_pass": False}),
    ("readiness", {"stop_at": 0.0}), ("liveness", {"stop_at": 0.0}),
    ("readiness", {"net_down": True}), ("liveness", {"crashed": True}),
    ("readiness", {"listen_at": 5.0}),  # not yet listening
])
def test_a_round_that_can_change_something_is_never_idle(example_specs, kind, state):
    w, pod = _serving_pod(example_specs)
    for field, value in state.items():
        setattr(pod, field, value)
    assert not w._idle(pod, kind, 0.0)


def test_most_probe_rounds_and_health_checks_of_serving_pods_are_left_out(example_specs):
    # (the reason for the shortcut: a pod that serves answers every round the same)
    every = _runs(example_specs, "rollout", 0, False, EveryProbeRound)[2:]
    left = _runs(example_specs, "rollout", 0, False, Recorded)[2:]
    assert 0 < left[0] < every[0] / 3 and 0 < left[1] < every[1] / 2


def test_the_same_seed_gives_the_same_report():
    stack = read_stack_file(None)
    one = simulate_stack(stack, phases=2, seed=7, rate=5).as_dict()
    two = simulate_stack(stack, phases=2, seed=7, rate=5).as_dict()
    assert one == two


def test_another_seed_draws_other_phases():
    stack = read_stack_file(None)
    one = simulate_stack(stack, phases=1, seed=1, rate=5).as_dict()
    two = simulate_stack(stack, phases=1, seed=2, rate=5).as_dict()
    assert [s["requests"] for s in one["scenarios"]] != [s["requests"] for s in two["scenarios"]]


def test_the_simulation_never_imports_the_rules_it_checks():
    import ast
    from pathlib import Path

    from lockstep import timing

    root = Path(timing.__file__).parent
    for path in [root / "simulate.py", *sorted((root / "sim").glob("*.py"))]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not {m for m in names if m.startswith(("lockstep.timing.invariants", "lockstep.timing.derived"))}, path
