"""A stateful test of the simulated rollout: hypothesis interleaves time passing, a rolling
update starting, and node-drain evictions through the eviction API, on Deployments whose
numbers satisfy the capacity rules. Whatever the interleaving, the available pods never fall
below the PDB minimum, and never to zero."""

from __future__ import annotations

import random

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from lockstep.timing.sim.engine import Counts, World
from lockstep.timing.sim.scenarios import DeploymentRollout
from lockstep.timing.sim.spec import ProbeSpec, ServiceSpec


def deployment(replicas: int, surge: int, keep: int, warmup: int) -> ServiceSpec:
    return ServiceSpec(
        name="svc", kind="Deployment", replicas=replicas, warmup=warmup, max_request=5, keepalive=None,
        catch_up=0, max_recovery=None, lb=None, startup=None,
        readiness=ProbeSpec(0, 5, 1, 1, 3), liveness=ProbeSpec(30, 10, 1, 1, 3),
        drain=0, finish=10, grace=30, node_budget=None, sidecar_drain=None,
        surge=surge, unavailable=0, min_ready=0, progress_deadline=600, pdb_keep=keep,
        gate="none", gate_poll=15, schedule=10, watchdog=None, heartbeat=())


class KeepReplicas:
    """The ReplicaSet before a rollout: replace whatever was deleted, at once."""

    def __init__(self, w: World) -> None:
        self.w = w

    def reconcile(self) -> None:
        live = [p for p in self.w.pods if p.term_at is None and not p.gone]
        for i in range(self.w.spec.replicas - len(live)):
            self.w.add_pod(f"svc-r{len(self.w.pods)}-{i}")


class RolloutWithEvictions(RuleBasedStateMachine):
    @initialize(replicas=st.integers(2, 5), surge=st.integers(1, 3), warmup=st.integers(0, 30),
                keep_gap=st.integers(1, 3), seed=st.integers(0, 2**16))
    def start(self, replicas, surge, warmup, keep_gap, seed):
        # pdb-allows-eviction and pdb-needs-replicas: 1 ≤ minAvailable ≤ replicas - 1.
        self.keep = max(1, replicas - keep_gap)
        self.w = World(deployment(replicas, surge, self.keep, warmup), random.Random(seed), 2.0,
                       Counts(), None)
        for i in range(replicas):
            self.w.add_pod(f"svc-{i}", steady=True)
        self.controller = KeepReplicas(self.w)
        self.w.on_change = self.controller.reconcile
        self.rolling = False
        self.w.run(1.0)

    def _reconcile(self):
        self.controller.reconcile()
        if getattr(self.controller, "done_at", None) is not None:
            KeepReplicas(self.w).reconcile()  # the new ReplicaSet keeps its count after the rollout

    @rule(seconds=st.floats(0.5, 40))
    def time_passes(self, seconds):
        self.w.stop_flag = False  # a finished rollout stops a scenario run; here time goes on
        self.w.run(self.w.t + seconds)

    @precondition(lambda self: not self.rolling)
    @rule()
    def rolling_update(self):
        live = [p for p in self.w.pods if p.term_at is None and not p.gone]
        self.controller = DeploymentRollout(self.w, live)
        self.w.on_change = self._reconcile
        self._reconcile()
        self.rolling = True

    @rule(pick=st.integers(0, 100))
    def node_drain_evicts_a_pod(self, pick):
        # The eviction API refuses when it would leave fewer healthy pods than the PDB keeps.
        w = self.w
        live = [p for p in w.pods if p.term_at is None and not p.gone]
        healthy = [p for p in live if p.ready]
        if not live or len(healthy) - self.keep < 1:
            return
        w.terminate(live[pick % len(live)], w.spec.grace)

    @invariant()
    def available_pods_never_fall_below_the_pdb_minimum(self):
        assert self.w.min_available >= self.keep

    @invariant()
    def available_pods_never_reach_zero(self):
        assert self.w.min_available >= 1


# Each step runs the simulation for up to 40 s: a modest budget keeps the suite fast.
RolloutWithEvictions.TestCase.settings = settings(RolloutWithEvictions.TestCase.settings,
                                                  max_examples=40, stateful_step_count=25)
TestRolloutWithEvictions = RolloutWithEvictions.TestCase
