"""The scenarios, each one service over one random phase: a rolling update, one pod replaced
(a node drain's eviction), a real crash of the whole service, and quiet hours (sparse
traffic, where keep-alive timeouts race). The heartbeat observer and the watchdog sample at
their own random phases; controllers are in `timing.sim.controllers`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from lockstep.timing.sim.argo import SwitchRollout
from lockstep.timing.sim.controllers import (DRAIN_PATIENCE_S, EVICTION_RETRY_S, TAIL, DeploymentRollout,
                                             StatefulSetRollout, pdb_allows, stalled)
from lockstep.timing.sim.engine import INF, Counts, Pod, World
from lockstep.timing.sim.spec import LbSpec, ServiceSpec
from lockstep.timing.sim.watchers import Observer, Watchdog

__all__ = ["DeploymentRollout", "StatefulSetRollout", "Outcome", "crash", "proxy_stop", "quiet", "reload", "replace",
           "rollout"]
MAX_ROLLOUT = 7200.0  # simulated seconds; a rollout still running then is judged only if stalled


@dataclass
class Outcome:
    service: str
    scenario: str
    counts: Counts
    metrics: dict[str, float] = field(default_factory=dict)
    timeline: list[tuple[float, str]] | None = None


def _start(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool, fast: bool
           ) -> tuple[World, list[Pod], list[Observer], float]:
    # For a verdict alone, requests before the scenario begins need no simulating: every pod
    # is serving and every target healthy, so none can be lost, unless keep-alive races.
    w = World(spec, rng, 0.0 if fast else rate, Counts(), [] if tl else None)
    w.fast = fast
    pods = [w.add_pod(f"{spec.name}-{i}", steady=True) for i in range(spec.replicas)]
    observers = [Observer(w, hb) for hb in spec.heartbeat]
    longest = max([spec.lb.interval if spec.lb else 0, spec.gate_poll]
                  + [hb.observe for hb in spec.heartbeat]
                  + [spec.watchdog.period if spec.watchdog else 0])
    t0 = 20.0 + rng.uniform(0, longest)
    if fast and w.race:
        w.rate = rate
    return w, pods, observers, t0


def _no_pods(w: World, scenario: str) -> Outcome:
    w.c.zero_capacity += 1
    w.note("no replicas: nothing serves")
    return Outcome(w.spec.name, scenario, w.c, timeline=w.timeline)


def _planned_heartbeat(out: Outcome, observers: list[Observer]) -> None:
    for ob in observers:
        if ob.blocks:
            out.metrics[f"blocked_after_s:{ob.hb.name}"] = ob.blocks[0]


def _bound(s: ServiceSpec) -> float:
    """A generous bound on one pod replacement, to tell a slow rollout from a stalled one."""
    probes = sum(p.initial_delay + p.period * (p.failure + p.success + 1)
                 for p in (s.startup, s.readiness, s.liveness) if p is not None)
    lb = 0 if s.lb is None else (s.lb.registration_propagation + s.lb.deregistration_propagation
                                 + s.lb.interval * (s.lb.healthy_threshold + 2) + s.gate_poll)
    return s.grace + s.schedule + s.warmup + probes + s.min_ready + lb + 60


def rollout(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
            fast: bool = False) -> Outcome:
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "rollout")
    w.run(t0)
    w.rate = rate
    w.capacity_from = t0
    w.note("rollout: starts")
    ctl = (SwitchRollout if spec.scale_down_delay is not None
           else DeploymentRollout if spec.kind == "Deployment" else StatefulSetRollout)(w, pods)
    w.on_change = ctl.reconcile
    ctl.reconcile()
    horizon = t0 + min(spec.replicas * _bound(spec) + 2 * spec.progress_deadline + (spec.scale_down_delay or 0),
                       MAX_ROLLOUT)
    w.run(horizon)
    out = Outcome(spec.name, "rollout", w.c, timeline=w.timeline)
    if ctl.done_at is None and not w.halted:
        out.metrics["rollout_s"] = INF
        if not ctl.failed and stalled(w, ctl):
            w.c.deploy_failed += 1
            w.note(f"rollout: stalled (not complete after {w.t - t0:.0f}s)")
        elif not ctl.failed:
            # Slow but moving (e.g. an hour-long probe cadence): nothing lost, not judged.
            w.c.notes.append(f"rollout still running after {w.t - t0:.0f}s (slow, not judged)")
    elif ctl.done_at is not None:
        out.metrics["rollout_s"] = ctl.done_at - t0
    _planned_heartbeat(out, observers)
    return out


# ---- one pod replaced ---------------------------------------------------------------------------
def replace(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
            fast: bool = False) -> Outcome:
    """A node drain evicts one pod (PDB permitting) within the node's termination budget;
    a Deployment's replacement starts at once, a StatefulSet's after the old pod is gone."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "replace")
    victim = pods[rng.randrange(len(pods))]
    new: list[Pod] = []
    done: list[float] = []
    scheduled: list[bool] = []

    def slot_ok(t: float) -> bool:
        if victim.term_at is None and w.health(victim, t) == "ok" and victim.ready:
            return True
        return bool(new) and w.available(new[0], t)

    if spec.watchdog is not None:
        Watchdog(w, spec.watchdog, slot_ok)
    w.run(t0)
    w.rate = rate
    grace = spec.grace if spec.node_budget is None else min(spec.grace, spec.node_budget)
    tries = 0
    while True:
        if pdb_allows(w):
            break
        tries += 1
        if tries > DRAIN_PATIENCE_S / EVICTION_RETRY_S or w.halted:
            w.c.deploy_failed += 1
            w.note("eviction: blocked by the PDB for 10 minutes (node drain never completes)")
            out = Outcome(spec.name, "replace", w.c, timeline=w.timeline)
            _planned_heartbeat(out, observers)
            return out
        w.run(w.t + EVICTION_RETRY_S)
    t_evict = w.t
    # No capacity rule covers an eviction (the PDB rules do, when a PDB is declared): a
    # singleton left with no pod is noted; requests it loses behind an LB count as lost.
    w.min_available = INF
    w.note(f"eviction: {victim.name}")
    w.terminate(victim, grace)

    def create() -> None:
        new.append(w.add_pod(f"{spec.name}-replacement"))
        w.changed()

    if spec.kind == "Deployment":
        create()

    def on_change() -> None:
        t = w.t
        if spec.kind == "StatefulSet" and not new and victim.gone and not scheduled:
            scheduled.append(True)
            w.at(t + spec.schedule, create)
        if new and not done and victim.gone and w.available(new[0], t):
            done.append(t)
            w.note("replacement available")
            w.at(t + TAIL + max([hb.observe for hb in spec.heartbeat] + [0]), _stop)

    def _stop() -> None:
        w.stop_flag = True

    w.on_change = on_change
    w.run(t_evict + min(4 * _bound(spec), MAX_ROLLOUT))
    out = Outcome(spec.name, "replace", w.c, timeline=w.timeline)
    if not done and not w.halted:
        if spec.gate == "never" or any(p.restarts > 0 for p in new):
            w.c.deploy_failed += 1
            w.note("replacement never became available")
        else:
            w.c.notes.append(f"replacement not available after {w.t - t_evict:.0f}s (slow, not judged)")
    elif done:
        out.metrics["replace_s"] = done[0] - t_evict
    if w.min_available == 0:
        w.c.notes.append("no pod available during the eviction (nothing keeps a second one)")
    _planned_heartbeat(out, observers)
    return out


# ---- a real crash ------------------------------------------------------------------------------
def crash(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
          fast: bool = False) -> Outcome:
    """Every pod's process dies and cannot start for an outage, then comes back. Requests lost
    meanwhile are unavoidable and not counted; what counts is how fast each checker notices,
    and whether the heartbeat unblocks only once the data is current and traffic flows."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "crash")
    dog = (Watchdog(w, spec.watchdog, lambda t: pods[0].listening(t) and w.available(pods[0], t))
           if spec.watchdog is not None else None)
    w.run(t0)
    w.note("crash: every pod's process dies")
    w.losses_from = INF
    w.planned = False  # from here on blocks and watchdog actions are the right response
    w.rate = 0.0  # requests from here on are lost whatever the numbers: not simulated
    for pod in pods:
        w.crash(pod)
    wd = spec.watchdog
    outage = max([60.0] + [hb.loss + 2 * hb.observe + 30 for hb in spec.heartbeat]
                 + ([wd.period * (wd.failures + 1)] if wd is not None and not fast else [])
                 + ([spec.lb.interval * (spec.lb.unhealthy_threshold + 1) + spec.lb.timeout]
                    if spec.lb else []))
    w.run(t0 + outage)
    t_back = w.t
    w.note("crash: processes start again")
    for pod in pods:
        pod.crashed = False
        w._container_start(pod, t_back)
    w.dirty = True
    w.healthy_from = t_back
    back: dict[str, float] = {}

    def settled() -> None:
        # Stop once everything has come back: pods available, the LB routing, scopes unblocked.
        t = w.t
        if "lb" not in back and w.healthy_again < INF:
            back["lb"] = w.healthy_again
        if ((w.mode != "pods" or "lb" in back) and all(w.available(p, t) for p in pods)
                and not any(ob.blocked for ob in observers)):
            w.stop_flag = True

    w.every(1.0, settled)
    w.run(t_back + min(2 * _bound(spec), MAX_ROLLOUT)
          + max([hb.recovery + 2 * hb.observe for hb in spec.heartbeat] + [0]))
    out = Outcome(spec.name, "crash", w.c, timeline=w.timeline)
    m = out.metrics
    detect = w.first_unhealthy if w.mode == "pods" else w.first_unready
    if spec.lb is not None and w.mode == "proxy":
        detect = w.first_unready + spec.lb.endpoint_propagation
    m["detect_s"] = detect - t0
    if dog is not None and dog.actions:
        m["watchdog_s"] = dog.actions[0] - t0
    listening = t_back + spec.warmup
    if "lb" in back:
        m["lb_recover_s"] = back["lb"] - listening
        if spec.max_recovery is not None and m["lb_recover_s"] > spec.max_recovery:
            w.c.notes.append(f"LB recovery {m['lb_recover_s']:.0f}s > app.max_recovery_s {spec.max_recovery}s")
    current = listening + spec.catch_up
    for ob in observers:
        after = [b for b in ob.blocks if b >= t0]
        if not after:
            w.c.notes.append(f"heartbeat {ob.hb.name}: never blocked during a {outage:.0f}s outage")
            continue
        m[f"block_s:{ob.hb.name}"] = after[0] - t0
        if after[0] - t0 > ob.hb.max_outage:
            w.c.notes.append(f"heartbeat {ob.hb.name}: blocked {after[0] - t0:.0f}s after the crash "
                             f"> max_outage_s {ob.hb.max_outage}s")
        if ob.unblocks:
            due = max(current, back.get("lb", current))
            if ob.unblocks[0] < due:
                w.c.premature_unblocks += 1
                w.c.notes.append(f"heartbeat {ob.hb.name}: unblocked {due - ob.unblocks[0]:.0f}s "
                                 "before the data was current and traffic reached the service")
    return out


# ---- quiet hours ---------------------------------------------------------------------------------
def quiet(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
          fast: bool = False) -> Outcome:
    """Steady state under sparse traffic, where pooled connections between two hops of the path
    (the ALB and the app, ingress-nginx and the app, a mesh proxy and the app) sit idle long
    enough for the inner hop's keep-alive timeout and the outer hop's idle timeout to race.
    Traffic is set so that a target's idle gaps fall around both timeouts; with no race
    possible (every inner keep-alive longer than the pool in front) nothing can go wrong here
    and nothing is run."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "quiet")
    if w.race:
        # traffic sparse enough for idle gaps around both timeouts of the first racing link,
        # for as long as the slowest racing link needs
        first = spec.links[w.racing[0]]
        w.rate = 2.0 * len(pods) / (first.client_idle + first.pool_idle + 1)
        w.capacity_from = t0
        w.run(20.0 * (max(spec.links[k].pool_idle for k in w.racing) + 1))
    out = Outcome(spec.name, "quiet", w.c, timeline=w.timeline)
    _planned_heartbeat(out, observers)
    return out


# ---- an ingress proxy's reload -------------------------------------------------------------------
def reload(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
           fast: bool = False) -> Outcome:
    """A proxy in front replaces its workers (ingress-nginx: on any Ingress change in the
    cluster, not only this service's): the old workers keep the requests they carry for
    `worker-shutdown-timeout`, then close them. Requests of every length are in flight when the
    reload comes; one still running when the old workers go is cut."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "reload")
    w.rate = rate
    w.capacity_from = t0
    w.run(t0 + w.max_req)  # a request of every length is in flight
    at = w.t
    carried = {id(p): [e for e in p.inflight if e > at] for p in w.pods}  # on the old workers
    w.note("an ingress proxy in front reloads")
    if (fast and w.sure and w.front_down is None and all(p.listening(at) for p in w.pods)
            and (w.mode == "none" or w._candidates())):
        # For a verdict: a request from here on goes to the new workers, and in this steady
        # state none can be lost (every pod listens, a target takes it, `World.sure`): only
        # the carried ones can.
        w.rate = 0.0

    def old_workers_close(name: str) -> None:
        n = 0
        for p in w.pods:
            for end in carried.get(id(p), []):
                if end > w.t and end in p.inflight:
                    p.inflight.remove(end)
                    n += 1
        if n:
            w.c.cut += n
            w.c.at_hop(f"cut by {name}'s reload", n)
            w.note(f"{name}: {n} in-flight cut as the old workers close")

    for name, shutdown in spec.path.reloads:
        w.at(at + shutdown, old_workers_close, name)
    w.run(at + max(s for _, s in spec.path.reloads) + w.max_req + 1)
    out = Outcome(spec.name, "reload", w.c, timeline=w.timeline)
    _planned_heartbeat(out, observers)
    return out


# ---- an ingress proxy's own pod replaced ---------------------------------------------------------
def _front_removal(lb: LbSpec | None, rng: random.Random) -> float:
    """From the proxy pod's SIGTERM to the load balancer in front sending it nothing new: its
    fastest removal path (an unstated LB: at once, so nothing is judged against it)."""
    if lb is None:
        return 0.0
    paths = {"deregistration": float(lb.deregistration_propagation), "endpoints": float(lb.endpoint_propagation),
             # the first failing check comes within one interval, then the rest of the threshold
             "health_check": rng.uniform(0, lb.interval) + (lb.unhealthy_threshold - 1) * lb.interval}
    return min(paths[p] for p in lb.removal)


def proxy_stop(spec: ServiceSpec, rng: random.Random, rate: float, tl: bool = False,
               fast: bool = False) -> Outcome:
    """An ingress proxy's own pod is replaced (its rollout, a node drain): on SIGTERM it accepts
    on for its shutdown delay, then quits gracefully, its workers killed `worker-shutdown-timeout`
    later and the pod at its grace. Until the load balancer in front has noticed, it sends the
    pod new connections, refused once the pod stopped accepting. Every request counts as coming
    through the leaving pod (one replica's share of them, all with one replica)."""
    w, pods, observers, t0 = _start(spec, rng, rate, tl, fast)
    if not pods:
        return _no_pods(w, "proxy-stop")
    w.rate = rate
    w.capacity_from = t0
    w.run(t0 + w.max_req)  # a request of every length is in flight

    for stop in spec.path.stops:
        at = w.t
        quits, gone = at + stop.delay, at + _front_removal(stop.front, rng)
        w.note(f"{stop.name}: its pod gets SIGTERM; the LB in front stops sending at +{gone - at:.1f}s")
        w.front_down = (quits, gone, stop.name) if gone > quits else None
        since = min(quits, gone)
        if fast:  # for a verdict: a request ending before `since` is not carried, and none is lost here
            w.rate = 0.0
            w.run(since - w.max_req)
            w.rate = rate
        w.run(since)
        carried = {id(p): [e for e in p.inflight if e > since] for p in w.pods}  # through the leaving pod

        def killed(name: str = stop.name, carried: dict[int, list[float]] = carried) -> None:
            n = 0
            for p in w.pods:
                for end in carried.get(id(p), []):
                    if end > w.t and end in p.inflight:
                        p.inflight.remove(end)
                        n += 1
            if n:
                w.c.cut += n
                w.c.at_hop(f"cut by {name}'s pod going", n)
                w.note(f"{name}: {n} in-flight cut as its workers are killed")

        kill = at + min(stop.delay + stop.worker, stop.grace)
        w.at(kill, killed)
        if fast and w.front_down is None:
            w.rate = 0.0  # the LB in front sends the rest elsewhere: only the carried can be lost
        w.run(max(kill, gone) + 1)
        w.front_down, w.rate = None, rate
    out = Outcome(spec.name, "proxy-stop", w.c, timeline=w.timeline)
    _planned_heartbeat(out, observers)
    return out
