"""The decision logic against the timing model, as a process: a hypothesis state machine
drives a simulated cluster (the example stack's football and basketball feeds) through
rolling updates, StatefulSet restarts, rescales, PDB-honouring evictions, failures and API
errors, observes it every `observe_interval_s` through the real parser and judgement, and
checks after every step:

- only a deliberately failing workload is ever judged unhealthy: a rolling update (surge),
  a StatefulSet restart, a rescale (HPA/KEDA) or an eviction the PDB allows never is;
- a scope is blocked exactly when its workload has been seen failing continuously for
  `loss_time` (never earlier), and unblocked exactly after `recovery_time` of continuous
  health (never earlier); other scopes are untouched (football never blocks basketball);
- a failed observation (the observer's API access) silences the service and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import event, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from lockstep.heartbeat.core import Core
from lockstep.heartbeat.observe import needs_pods, pod_from_k8s, snapshot_from_k8s
from tests.heartbeat import k8s
from lockstep.timing.config import read_stack_file
from lockstep.timing.derived import scaled
from lockstep.timing.heartbeat_config import RuntimeConfig, runtime_config

EXAMPLE = runtime_config(read_stack_file(None))
PDBS = {
    "Deployment": [{"pdb_min_available": 1}, {}, {"pdb_max_unavailable": "50%"}, {"pdb_min_available": "50%"}],
    "StatefulSet": [{"pdb_max_unavailable": 1}, {}, {"pdb_min_available": "60%"}],
}


@dataclass
class Sim:
    """One workload as the cluster would report it; disruptions advance one phase per
    observation (each phase well within the rules: no step stalls)."""

    kind: str
    name: str
    expected: int
    pdb: dict[str, Any]
    generation: int = 1
    observed: int = 1
    total: int = 0
    ready: int = 0
    updated: int = 0
    revision: str = "rev-0"
    update_revision: str = "rev-0"
    failing: bool = False
    script: list[dict[str, Any]] = field(default_factory=list)
    stale_pods: int | None = None
    rescaling: bool = False

    def __post_init__(self) -> None:
        self.total = self.ready = self.updated = self.expected

    @property
    def busy(self) -> bool:
        return bool(self.script) or self.failing

    def k8s_minimum(self) -> int:
        """The PDB minimum as Kubernetes computes it (no clamping)."""
        if "pdb_min_available" in self.pdb:
            return scaled(self.pdb["pdb_min_available"], self.expected, round_up=True)
        if "pdb_max_unavailable" in self.pdb:
            return self.expected - scaled(self.pdb["pdb_max_unavailable"], self.expected, round_up=True)
        return self.expected

    def advance(self) -> None:
        if self.script:
            phase = self.script.pop(0)
            self.stale_pods = phase.pop("stale_pods", None)
            for k, v in phase.items():
                setattr(self, k, v)
            if not self.script:
                self.revision = self.update_revision
                self.observed = self.generation
                self.stale_pods = None
                self.rescaling = False

    def objects(self) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        ready = 0 if self.failing else self.ready
        obj = k8s.workload(self.kind, self.name, expected=self.expected, generation=self.generation,
                           observed=self.observed, total=self.total, ready=ready, available=ready,
                           updated=self.updated, current_revision=self.revision,
                           update_revision=self.update_revision)
        pods = None
        if self.stale_pods is not None:
            pods = [k8s.pod(f"{self.name}-{i}", self.name, ready=not self.failing) for i in range(self.stale_pods)]
        return obj, pods

    # -- disruptions within the rules ------------------------------------------------------
    def rolling_update(self) -> None:  # Deployment, maxSurge 1, maxUnavailable 0
        e = self.expected
        self.generation += 1
        script: list[dict[str, Any]] = [{"stale_pods": e}]
        for i in range(1, e + 1):
            script += [{"observed": self.generation, "total": e + 1, "ready": e, "updated": i},
                       {"total": e + 1, "ready": e + 1, "updated": i},
                       {"total": e, "ready": e, "updated": i}]
        self.updated = 0
        self.script = script

    def sts_restart(self) -> None:  # OrderedReady, one ordinal at a time, highest first
        e = self.expected
        self.generation += 1
        self.update_revision = f"rev-{self.generation}"
        script: list[dict[str, Any]] = [{"stale_pods": e}]
        for i in range(1, e + 1):
            script += [{"observed": self.generation, "total": e - 1, "ready": e - 1, "updated": i - 1},
                       {"total": e, "ready": e - 1, "updated": i},
                       {"total": e, "ready": e, "updated": i}]
        self.script = script

    def rescale(self, to: int) -> None:
        n = self.expected
        self.generation += 1
        self.expected = to
        self.rescaling = True
        script: list[dict[str, Any]] = [{"stale_pods": n}]
        if to > n:
            script += [{"observed": self.generation, "total": k, "ready": k, "updated": k}
                       for k in range(n, to + 1)]
        else:
            script += [{"observed": self.generation, "total": to, "ready": to, "updated": to}]
        self.script = script

    def evict(self) -> None:  # a node drain the PDB allows; the pod is back two observations later
        e = self.expected
        self.script = [{"total": e - 1, "ready": e - 1, "updated": e - 1},
                       {"total": e, "ready": e - 1, "updated": e},
                       {"total": e, "ready": e, "updated": e}]


class HeartbeatMachine(RuleBasedStateMachine):
    @initialize(data=st.data())
    def setup(self, data: st.DataObject) -> None:
        doc = EXAMPLE.model_dump(mode="json")
        self.sims: dict[str, Sim] = {}
        for spec in doc["specs"]:
            w = spec["workload"]
            spec["loss_time_s"] = data.draw(st.integers(2 * doc["observe_interval_s"], 150), label=f"{spec['name']} loss")
            spec["recovery_time_s"] = data.draw(st.integers(0, 120), label=f"{spec['name']} recovery")
            pdb = data.draw(st.sampled_from(PDBS[w["kind"]]), label=f"{w['name']} pdb")
            w["pdb_min_available"] = pdb.get("pdb_min_available")
            w["pdb_max_unavailable"] = pdb.get("pdb_max_unavailable")
            self.sims[spec["name"]] = Sim(w["kind"], w["name"], data.draw(st.integers(2, 4)), pdb)
        self.cfg = RuntimeConfig.model_validate(doc)
        self.core = Core(self.cfg)
        self.now = 0.0
        self.prev_blocked = {s.name: False for s in self.cfg.specs}
        # The current run of identical truth (failing or not) among successful observations.
        self.run: dict[str, tuple[bool, float]] = {}
        self.observe_ok = False  # nothing observed yet: nothing can be promised
        self.last_seen = 0.0

    # -- time and observation --------------------------------------------------------------
    def _observe(self, api_error: bool = False) -> None:
        self.now += self.cfg.observe_interval_s
        for sim in self.sims.values():
            sim.advance()
        self.prev_blocked = {n: s.blocked for n, s in self.core.states.items()}
        if api_error:
            self.core.observe(self.now, None, "HTTP 500")
            self.observe_ok = False
            return
        snaps = {}
        for sim in self.sims.values():
            obj, pods = sim.objects()
            snap = snapshot_from_k8s(obj)
            if pods is not None and needs_pods(snap):
                from dataclasses import replace

                snap = replace(snap, pods=tuple(pod_from_k8s(p) for p in pods))
            snaps[snap.key] = snap
        self.core.observe(self.now, snaps)
        self.observe_ok = True
        self.last_seen = self.now
        for name, sim in self.sims.items():
            failing, start = self.run.get(name, (None, self.now))
            if failing != sim.failing:
                self.run[name] = (sim.failing, self.now)

    @rule(n=st.integers(1, 30))
    def wait(self, n: int) -> None:
        for _ in range(n):
            self._observe()

    @rule(n=st.integers(1, 3))
    def api_errors(self, n: int) -> None:
        # Rescale memory can only remember what it saw: a rescale whose steps all happen
        # while the API cannot be read is indistinguishable from a shortfall (a known gap).
        if any(sim.rescaling for sim in self.sims.values()):
            return
        for _ in range(n):
            self._observe(api_error=True)

    # -- the world -------------------------------------------------------------------------
    def _idle(self, spec: str) -> bool:
        return not self.sims[spec].busy

    @rule(spec=st.sampled_from(["football-live", "basketball-live"]))
    def fail(self, spec: str) -> None:
        sim = self.sims[spec]
        if sim.busy:
            return
        sim.failing = True
        self._observe()

    @rule(spec=st.sampled_from(["football-live", "basketball-live"]))
    def recover(self, spec: str) -> None:
        self.sims[spec].failing = False
        self._observe()

    @rule()
    def football_rolling_update(self) -> None:
        if self.sims["football-live"].busy:
            return
        self.sims["football-live"].rolling_update()
        self._observe()

    @rule()
    def basketball_statefulset_restart(self) -> None:
        if self.sims["basketball-live"].busy:
            return
        self.sims["basketball-live"].sts_restart()
        self._observe()

    @rule(spec=st.sampled_from(["football-live", "basketball-live"]), to=st.integers(2, 6))
    def rescale(self, spec: str, to: int) -> None:
        sim = self.sims[spec]
        if sim.busy or to == sim.expected:
            return
        sim.rescale(to)
        self._observe()

    @rule(spec=st.sampled_from(["football-live", "basketball-live"]))
    def eviction_the_pdb_allows(self, spec: str) -> None:
        sim = self.sims[spec]
        if sim.busy or not sim.pdb or sim.expected - 1 < max(1, sim.k8s_minimum()):
            return
        sim.evict()
        self._observe()

    # -- the claims ------------------------------------------------------------------------
    @invariant()
    def only_a_failing_workload_is_judged_unhealthy(self) -> None:
        if not self.observe_ok:
            return
        for name, verdict in self.core.verdicts.items():
            assert verdict.healthy == (not self.sims[name].failing), (name, verdict, self.sims[name])

    @invariant()
    def blocked_exactly_after_loss_time_and_unblocked_exactly_after_recovery_time(self) -> None:
        for spec in self.cfg.specs:
            st_ = self.core.states[spec.name]
            was = self.prev_blocked.get(spec.name, False)
            if not self.observe_ok:
                assert st_.blocked == was, f"{spec.name} changed without an observation"
                continue
            if spec.name not in self.run:
                continue
            failing, start = self.run[spec.name]
            seen_for = self.now - start
            if st_.blocked != was:
                event(f"{spec.name} {'blocked' if st_.blocked else 'unblocked'}")
            if failing:
                # Never earlier than loss_time of continuous failure; at once when it is reached.
                assert st_.blocked == (was or seen_for >= spec.loss_time_s), (spec.name, seen_for, spec.loss_time_s)
            else:
                assert st_.blocked == (was and seen_for < spec.recovery_time_s), (
                    spec.name, seen_for, spec.recovery_time_s)

    @invariant()
    def a_scope_is_blocked_only_while_its_own_workload_fails_or_recovers(self) -> None:
        # (judged at the last successful observation: nothing changes between observations)
        for name, st_ in self.core.states.items():
            if st_.blocked:
                assert name in self.run, name
                failing, start = self.run[name]
                assert failing or self.last_seen - start < next(
                    s.recovery_time_s for s in self.cfg.specs if s.name == name)

    @invariant()
    def a_failed_observation_silences_the_service(self) -> None:
        assert self.core.silent == (not self.observe_ok)


TestHeartbeatDecisions = HeartbeatMachine.TestCase
