"""Node disruptions (issue 13), each one service over one random phase: nodes drained through
the PDB, a Karpenter consolidation, a spot interruption, the kubelet's graceful node shutdown,
and a node leaving an `externalTrafficPolicy: Local` load balancer.

Where pods sit is not stated anywhere the model reads: every scenario here places one pod of
the service per node (the default scheduler spreads a ReplicaSet's pods over nodes; the rules
assume the same). A drained pod is deleted as a rollout deletes one (`Lifecycle.terminate`):
what differs is who deletes it, when, and with what grace.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from lockstep.timing import limits as L
from lockstep.timing.sim.controllers import DRAIN_PATIENCE_S, EVICTION_RETRY_S, TAIL, pdb_allows
from lockstep.timing.sim.engine import INF, Pod, World
from lockstep.timing.sim.scenarios import MAX_ROLLOUT, Outcome, _bound, _no_pods, _planned_heartbeat, _start
from lockstep.timing.sim.spec import ServiceSpec, resolve


class Eviction:
    """Pods on nodes being drained, each evicted through the PDB (`pdb_allows`: Ready pods, so
    only a readiness gate makes an eviction wait for an LB target). An evicted pod is deleted with `grace(t)` and its ReplicaSet
    replaces it at once (a StatefulSet once it is gone). At `force_at` what is left is deleted
    whatever the PDB says (Karpenter's terminationGracePeriod)."""

    def __init__(self, w: World, victims: list[Pod], grace, force_at: float = INF) -> None:
        self.w, self.s = w, w.spec
        self.pending = list(victims)
        self.victims = list(victims)
        self.grace = grace
        self.force_at = force_at
        self.started = w.t
        self.new: list[Pod] = []
        self.asked = 0  # StatefulSet pods scheduled, not yet created
        self.blocked = False
        self._try()

    def _try(self) -> None:
        w = self.w
        forced = w.t >= self.force_at
        while self.pending and (forced or pdb_allows(w)):
            self.started = w.t  # the patience runs from the last eviction that went through
            pod = self.pending.pop(0)
            w.note(f"eviction: {pod.name}" + (" (forced: the node's grace is over)" if forced else ""))
            w.terminate(pod, self.grace(w.t))
            if self.s.kind == "Deployment":
                self._create()
        if not self.pending:
            return
        if w.t - self.started >= DRAIN_PATIENCE_S:
            self.blocked = True
            w.c.deploy_failed += 1
            w.note("eviction: blocked by the PDB for 10 minutes (node drain never completes)")
            w.stop_flag = True
            return
        w.at(min(w.t + EVICTION_RETRY_S, max(self.force_at, w.t)), self._try)

    def _create(self) -> None:
        self.new.append(self.w.add_pod(f"{self.s.name}-moved-{len(self.w.pods)}"))
        self.w.changed()

    def on_change(self) -> None:
        """A StatefulSet's pod comes back (on another node) once the old one is gone."""
        if self.s.kind != "StatefulSet":
            return
        gone = sum(1 for p in self.victims if p.gone)
        while len(self.new) + self.asked < gone:
            self.asked += 1
            self.w.at(self.w.t + self.s.schedule, self._sts_create)

    def _sts_create(self) -> None:
        self.asked -= 1
        self._create()

    def done(self) -> bool:
        t = self.w.t
        return (not self.pending and all(p.gone for p in self.victims)
                and len(self.new) == len(self.victims) and all(self.w.available(p, t) for p in self.new))


def _finish(w: World, name: str, observers, done, t_from: float, metric: str) -> Outcome:
    """Run until `done()` holds (then a tail for the observers), or the bound."""
    spec = w.spec
    end: list[float] = []

    def check() -> None:
        if not end and done():
            end.append(w.t)
            w.note("every moved pod available")
            w.at(w.t + TAIL + max([hb.observe for hb in spec.heartbeat] + [0]), _stop)

    def _stop() -> None:
        w.stop_flag = True

    w.every(1.0, check)
    w.run(t_from + min(4 * spec.replicas * _bound(spec), MAX_ROLLOUT))
    out = Outcome(spec.name, name, w.c, timeline=w.timeline)
    if end:
        out.metrics[metric] = end[0] - t_from
    elif not w.halted and not w.c.deploy_failed:
        w.c.notes.append(f"{name}: not settled after {w.t - t_from:.0f}s (slow, not judged)")
    if w.min_available == 0:
        w.c.notes.append(f"{name}: no pod available at some moment")
    _planned_heartbeat(out, observers)
    return out


def _node_grace(spec: ServiceSpec) -> float:
    return spec.grace if spec.node_budget is None else min(spec.grace, spec.node_budget)


# ---- nodes drained ------------------------------------------------------------------------------
def node_drain(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
               fast: bool = False) -> Outcome:
    """The nodes under the service drained together (a node group's upgrade, `kubectl drain`
    of several nodes): every pod evicted through the PDB, each killed min(its grace, the node
    budget) after its deletion; the PDB alone paces the evictions."""
    return _drain(spec, rng, rate, tl, fast, "node-drain",
                  "node drain: every node under the service cordoned and drained", lambda pods: pods)


def _drain(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool, fast: bool, name: str, note: str,
           pick: Callable[[list[Pod]], list[Pod]]) -> Outcome:
    """The nodes of the pods `pick` chooses drained: each evicted through the PDB and killed
    min(its grace, the node budget) after its deletion."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, name)
    w.run(t0)
    w.rate = rate
    w.min_available = INF
    victims = pick(pods)
    w.note(note)
    grace = _node_grace(spec)
    ev = Eviction(w, victims, lambda t: grace)
    w.on_change = ev.on_change
    return _finish(w, name, observers, ev.done, t0, "drain_s")


# ---- Karpenter consolidation -----------------------------------------------------------------------
def consolidation(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
                  fast: bool = False) -> Outcome:
    """Karpenter consolidating the nodes under the service, as many at a time as the NodePool's
    disruption budget allows (a percentage of the pool's nodes rounded up, as Karpenter rounds
    it; the pool's nodes here: one per pod). Each batch's pods are evicted through the PDB;
    a pod the PDB still holds is deleted anyway so that its grace period ends when the
    NodePool's terminationGracePeriod does, each with no more grace than the node has left
    (unset: Karpenter waits for every pod)."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "consolidation")
    nodes = spec.nodes
    assert nodes is not None and nodes.pool_budgets  # simulate runs it only under a NodePool
    at_once = min(resolve(b, len(pods), round_up=True) for b in nodes.pool_budgets)
    w.run(t0)
    w.rate = rate
    w.min_available = INF
    if at_once == 0:
        w.c.notes.append("consolidation: the disruption budget allows no node at a time (nothing consolidates)")
        return Outcome(spec.name, "consolidation", w.c, timeline=w.timeline)
    batches = [pods[i:i + at_once] for i in range(0, len(pods), at_once)]
    evictions: list[Eviction] = []

    def start_batch() -> None:
        batch = batches[len(evictions)]
        start = w.t
        tgp = nodes.pool_grace
        node_end = INF if tgp is None else start + tgp
        # Karpenter deletes a pod the PDB still holds early enough for its own grace period
        # to end with the node's terminationGracePeriod (or at once, if that is shorter).
        force_at = INF if tgp is None else start + max(0, tgp - spec.grace)

        def grace(t: float) -> float:
            return spec.grace if tgp is None else max(0.0, min(spec.grace, node_end - t))

        w.note(f"consolidation: {len(batch)} node(s) disrupted")
        evictions.append(Eviction(w, batch, grace, force_at))

    def on_change() -> None:
        for ev in evictions:
            ev.on_change()
        cur = evictions[-1]
        if len(evictions) < len(batches) and all(p.gone for p in cur.victims) and not cur.pending:
            start_batch()

    w.on_change = on_change
    start_batch()
    return _finish(w, "consolidation", observers,
                   lambda: len(evictions) == len(batches) and all(ev.done() for ev in evictions),
                   t0, "consolidation_s")


# ---- the kubelet's graceful node shutdown ----------------------------------------------------------
def _shutdown_node(w: World, pod: Pod, nodes_kubelet: int):
    """A node shutting down with no drain in front: the kubelet's graceful shutdown gives the
    pod min(its grace, shutdownGracePeriod − shutdownGracePeriodCriticalPods); its ReplicaSet
    replaces it once it has failed (a StatefulSet after scheduling)."""
    spec = w.spec
    w.shutdown(pod, min(spec.grace, nodes_kubelet))
    replaced: list[Pod] = []

    def on_change() -> None:
        if pod.gone and not replaced:
            replaced.append(pod)
            delay = spec.schedule if spec.kind == "StatefulSet" else 0.0
            w.at(w.t + delay, lambda: moved.append(w.add_pod(f"{spec.name}-moved")) or w.changed())

    moved: list[Pod] = []
    w.on_change = on_change
    return lambda: pod.gone and bool(moved) and all(w.available(p, w.t) for p in moved)


def node_shutdown(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
                  fast: bool = False) -> Outcome:
    """The kubelet's graceful node shutdown (a scale-in or spot node with no drain in front):
    the node's pod gets SIGTERM and no deletion; it stays in its endpoints, so the LB stops
    sending only when its health check fails (the app fails it on SIGTERM)."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "node-shutdown")
    assert spec.nodes is not None
    w.run(t0)
    w.rate = rate
    victim = pods[rng.randrange(len(pods))]
    done = _shutdown_node(w, victim, spec.nodes.kubelet)
    return _finish(w, "node-shutdown", observers, done, t0, "shutdown_s")


# ---- a spot interruption ---------------------------------------------------------------------------
def spot_interruption(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
                      fast: bool = False) -> Outcome:
    """The two-minute notice. With a handler (Karpenter's interruption queue, or
    aws-node-termination-handler) the node is drained once the handler reacts, and whatever
    still runs when the notice ends dies with the instance. Without one nothing drains: the
    instance shuts down at the notice's end and only the kubelet's graceful shutdown (if
    configured) stops the pod first."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "spot-interruption")
    nodes = spec.nodes
    assert nodes is not None and nodes.spot
    w.run(t0)
    w.rate = rate
    victim = pods[rng.randrange(len(pods))]
    w.note("spot: interruption notice")
    end = t0 + L.SPOT_NOTICE_S
    if not nodes.spot_drained:
        w.run(end)
        w.note("spot: the notice is over, the instance shuts down (nothing drained it)")
        done = _shutdown_node(w, victim, nodes.kubelet)
        return _finish(w, "spot-interruption", observers, done, t0, "spot_s")
    w.run(t0 + nodes.spot_reaction)
    grace = _node_grace(spec)
    ev = Eviction(w, [victim], lambda t: max(0.0, min(grace, end - t)), force_at=end)
    w.on_change = ev.on_change

    def instance_gone() -> None:
        w.note("spot: the instance is gone")
        if not victim.gone:
            w._exit(victim, "killed with the instance")

    w.at(end, instance_gone)
    return _finish(w, "spot-interruption", observers, ev.done, t0, "spot_s")


# ---- externalTrafficPolicy Local -------------------------------------------------------------------
def etp_local(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
              fast: bool = False) -> Outcome:
    """A node under an `externalTrafficPolicy: Local` Service drained: its one pod evicted
    through the PDB. The LB targets the node and keeps sending to it until the node's
    healthCheckNodePort has failed interval × unhealthy threshold times, which starts only once
    kube-proxy sees no ready local endpoint; meanwhile kube-proxy serves the terminating pod
    (KEP-1669). The NLB's connection attributes decide whether open connections are reset."""
    return _drain(spec, rng, rate, tl, fast, "etp-local", "etp-local: the node of one pod drained",
                  lambda pods: [pods[rng.randrange(len(pods))]])
