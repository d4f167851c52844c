"""The engine's shortcut and its determinism.

`World.run` serves requests between events without putting them on the heap. The reference
below is the plain discrete-event form (every arrival an event); both consume the random
stream in the same order, so every count and every timeline entry must be identical.
"""

from __future__ import annotations

import heapq

import pytest

from lockstep.timing.config import read_stack_file
from lockstep.timing.sim import scenarios
from lockstep.timing.sim.engine import INF, World
from lockstep.timing.sim.spec import stack_specs
from lockstep.timing.simulate import applies, run_scenario, simulate_stack


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
