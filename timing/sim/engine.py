"""The event loop and the things it moves: pods, LB targets, kube-proxy, requests.

Control-plane happenings (health checks, probes, propagation, drain steps, controllers,
the heartbeat observer, the watchdog) are events on a heap. Requests are not: between two
events nothing that decides a request's fate can change except by the clock, so the loop
draws Poisson arrivals and serves each one arithmetically before the next event is popped
(`World.run`). A request's later fate (cut in flight) is decided when the event that cuts it
happens, from the end times each pod keeps; an LB connection's fate (the keep-alive race) is
decided when it is reused, from the time it went idle. That is the same sequence of states a
per-request event simulation visits, with two heap operations per request saved.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Callable

from timing.sim.spec import ServiceSpec, keepalive_can_race

INF = float("inf")
LONG_SHARE = 0.02  # requests that take exactly the service's longest request time
SLOW_SHARE = 0.03  # requests anywhere up to it; the rest take up to 1 s
RESTART_BACKOFF = (0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0)  # kubelet CrashLoopBackOff


@dataclass
class Counts:
    """What one scenario run saw. Losses are what users feel; deliberate 503s are not."""

    requests: int = 0
    refused_502: int = 0  # sent to a target that no longer (or not yet) listens
    no_target_503: int = 0  # the LB (or kube-proxy) had nowhere to send it
    keepalive_502: int = 0  # sent on a connection the app had already closed
    cut: int = 0  # in flight when the pod was killed, exited or the LB closed it
    deliberate_503: int = 0  # health checks answered 503 by a draining server (not a failure)
    false_blocks: int = 0  # heartbeat blocks during planned work
    premature_unblocks: int = 0  # heartbeat unblocked before the service's data is current
    watchdog_actions: int = 0  # watchdog "repairs" during planned work
    restarts: int = 0  # kubelet restarts (startup/liveness) during planned work
    deploy_failed: int = 0  # progress deadline exceeded, rollout stalled, eviction blocked
    zero_capacity: int = 0  # planned work left no pod available at some moment
    notes: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.refused_502 + self.no_target_503 + self.keepalive_502 + self.cut

    @property
    def harmful(self) -> bool:
        return (self.refused_502 + self.no_target_503 + self.keepalive_502 + self.cut
                + self.false_blocks + self.premature_unblocks + self.watchdog_actions
                + self.deploy_failed + self.zero_capacity) > 0


class Pod:
    __slots__ = ("name", "created", "start", "listen_at", "started", "rd_pass", "gate_ok", "ready",
                 "ready_since", "term_at", "stop_at", "kill_at", "gone", "gone_at", "crashed",
                 "net_down", "inflight", "target", "restarts", "rd_ok", "rd_fail", "st_fail",
                 "lv_fail", "in_proxy", "registered")

    def __init__(self, name: str, t: float) -> None:
        self.name = name
        self.created = t
        self.start = t
        self.listen_at = t
        self.started = False
        self.rd_pass = False
        self.gate_ok = False
        self.ready = False
        self.ready_since = INF
        self.term_at: float | None = None
        self.stop_at: float | None = None
        self.kill_at = INF
        self.gone = False
        self.gone_at = INF
        self.crashed = False
        self.net_down = False
        self.inflight: list[float] = []
        self.target: Target | None = None
        self.restarts = 0
        self.rd_ok = self.rd_fail = self.st_fail = self.lv_fail = 0
        self.in_proxy = False
        self.registered = False

    def listening(self, t: float) -> bool:
        return (not self.gone and not self.crashed and not self.net_down and t >= self.listen_at
                and self.stop_at is None)


class Target:
    __slots__ = ("pod", "reg_at", "health", "ok", "fail", "no_new_after", "idle", "busy")

    def __init__(self, pod: Pod, reg_at: float, health: str) -> None:
        self.pod = pod
        self.reg_at = reg_at
        self.health = health  # initial | healthy | unhealthy
        self.ok = self.fail = 0
        self.no_new_after = INF
        self.idle: list[float] = []  # LB→target connections: when each went idle
        self.busy: list[float] = []  # heap of end times of connections in use


class World:
    """One service, one scenario, one phase."""

    def __init__(self, spec: ServiceSpec, rng: random.Random, rate: float, counts: Counts,
                 timeline: list[tuple[float, str]] | None) -> None:
        self.spec = spec
        self.rng = rng
        self.rate = rate
        self.c = counts
        self.timeline = timeline
        self.t = 0.0
        self.heap: list[tuple[float, int, Callable[..., None], tuple]] = []
        self.seq = 0
        self.pods: list[Pod] = []
        self.targets: list[Target] = []
        self.cands: list = []
        self.dirty = True
        self.rr = 0
        self.stop_flag = False
        self.planned = True  # blocks and watchdog actions now are false alarms
        self.fast = False  # stop at the first harm (the config mutator needs only a verdict)
        self.halted = False  # stopped early by `fast`: later judgements would be artefacts
        self.on_change: Callable[[], None] = lambda: None
        self.change_pending = False
        self.capacity_from = INF  # planned work from here on: no pod available is a failure
        self.emptied = False
        self.min_available = INF  # fewest available pods seen at any change
        self.losses_from = 0.0  # losses before this time are not counted (crash scenario)
        self.first_unhealthy = INF
        self.first_unready = INF
        self.healthy_again = INF  # first target turning healthy at or after `healthy_from`
        self.healthy_from = INF
        self.sts_progress: Callable[[], tuple[int, int] | None] | None = None
        lb = spec.lb
        self.mode = "none" if lb is None else ("proxy" if lb.via_kube_proxy else "pods")
        self.hc_mode = lb is not None and "health_check" in lb.removal
        # The keep-alive race needs the app to close an idle connection before the LB does:
        # with keepalive > idle timeout every reuse is safe, and connections need no tracking.
        self.race = keepalive_can_race(spec)
        self.max_req = float(spec.max_request) if spec.max_request is not None else 1.0
        if self.mode == "pods":
            self.at(rng.uniform(0, spec.gate_poll), self._gate_poll)

    # ---- the loop --------------------------------------------------------------------------
    def at(self, t: float, fn: Callable[..., None], *args: object) -> None:
        heapq.heappush(self.heap, (t, self.seq, fn, args))
        self.seq += 1

    def note(self, text: str) -> None:
        if self.timeline is not None and len(self.timeline) < 400:
            self.timeline.append((round(self.t, 2), text))

    def run(self, until: float) -> None:
        heap, rng, rate = self.heap, self.rng, self.rate
        nxt = self.t + rng.expovariate(rate) if rate > 0 else INF
        while not self.stop_flag:
            t_ev = heap[0][0] if heap else INF
            if nxt <= t_ev:
                if nxt > until:
                    break
                self.t = nxt
                self.request(nxt)
                nxt += rng.expovariate(rate)
                if self.fast and self.c.cut + self.c.refused_502 + self.c.no_target_503 + self.c.keepalive_502:
                    self.stop_flag = self.halted = True
            else:
                if t_ev > until:
                    break
                t, _, fn, args = heapq.heappop(heap)
                self.t = t
                fn(*args)
                if self.fast and self.c.harmful:
                    self.stop_flag = self.halted = True
        self.t = max(self.t, until) if not self.stop_flag else self.t

    def changed(self) -> None:
        """Readiness, availability or membership changed: let the controllers look (once)."""
        self.dirty = True
        if not self.change_pending:
            self.change_pending = True
            self.at(self.t, self._fire_change)

    def _fire_change(self) -> None:
        self.change_pending = False
        t = self.t
        n = sum(1 for p in self.pods if p.term_at is None and self.available(p, t))
        self.min_available = min(self.min_available, n)
        if t >= self.capacity_from and not self.emptied and n == 0:
            self.emptied = True
            self.c.zero_capacity += 1
            self.note("no pod available")
        self.on_change()

    # ---- requests --------------------------------------------------------------------------
    def _duration(self) -> float:
        u = self.rng.random()
        if u < LONG_SHARE:
            return self.max_req
        if u < LONG_SHARE + SLOW_SHARE:
            return self.rng.uniform(0, self.max_req)
        return self.rng.uniform(0.01, min(1.0, self.max_req))

    def _candidates(self) -> list:
        t = self.t
        if self.mode == "none":
            return [p for p in self.pods if p.listening(t)]
        if self.mode == "proxy":
            return [p for p in self.pods if p.in_proxy]
        live = [g for g in self.targets if g.reg_at <= t < g.no_new_after]
        healthy = [g for g in live if g.health == "healthy"]
        # An LB fails open: with no healthy target it sends to every unhealthy one.
        return healthy or [g for g in live if g.health == "unhealthy"]

    def request(self, t: float) -> None:
        c = self.c
        if self.dirty:
            self.cands = self._candidates()
            self.dirty = False
        cands = self.cands
        dur = self._duration()
        counted = t >= self.losses_from
        c.requests += counted
        if not cands:
            if self.mode != "none" and counted:
                c.no_target_503 += 1
                self._first_loss("no target")
            return  # a consumer's queue just waits for a consumer
        self.rr = (self.rr + 1) % len(cands)
        picked = cands[self.rr]
        pod = picked if self.mode != "pods" else picked.pod
        if not pod.listening(t):
            if counted:
                c.refused_502 += 1
                self._first_loss(f"502 {pod.name} not listening")
            return
        if self.race and not self._connection(picked, t, dur):
            if counted:
                c.keepalive_502 += 1
                self._first_loss(f"502 keep-alive race on {pod.name}")
            return
        pod.inflight.append(t + dur)

    def _connection(self, g: Target, t: float, dur: float) -> bool:
        """Reuse an idle LB→target connection (any of them), or open one. False: the LB sent
        the request on a connection the app had closed after its keep-alive timeout, before
        the LB's own idle timeout dropped it (the seed-003 steady-state 502)."""
        busy, idle = g.busy, g.idle
        while busy and busy[0] <= t:
            idle.append(heapq.heappop(busy))
        keepalive, lb_idle = self.spec.keepalive, self.spec.lb.idle_timeout
        while idle:
            i = self.rng.randrange(len(idle))
            went_idle = idle[i]
            idle[i] = idle[-1]
            idle.pop()
            gap = t - went_idle
            if gap > lb_idle:
                continue  # the LB closed it itself
            if gap >= keepalive:
                return False
            break
        heapq.heappush(busy, t + dur)
        return True

    def _first_loss(self, what: str) -> None:
        if self.timeline is not None and not any(x[1].startswith("first loss") for x in self.timeline):
            self.note(f"first loss: {what}")

    def cut(self, pod: Pod, why: str) -> None:
        t = self.t
        n = sum(1 for e in pod.inflight if e > t)
        pod.inflight = []
        if n and t >= self.losses_from:
            self.c.cut += n
            self.note(f"{pod.name}: {n} in-flight cut ({why})")

    # ---- pod lifecycle -------------------------------------------------------------------------
    def add_pod(self, name: str, steady: bool = False, delay: float = 0.0) -> Pod:
        """A new pod (containers start after `delay`); `steady`: one that has long been serving."""
        s, t = self.spec, self.t
        pod = Pod(name, t)
        self.pods.append(pod)
        if steady:
            pod.start, pod.listen_at = -1e6, -1e6
            pod.started = pod.rd_pass = pod.gate_ok = pod.ready = True
            pod.ready_since = -1e6
            pod.in_proxy = True
            if self.mode == "pods":
                g = Target(pod, -1e6, "healthy")
                pod.target, pod.registered = g, True
                self.targets.append(g)
                self.at(t + self.rng.uniform(0, s.lb.interval), self._hc, g)
        else:
            pod.gate_ok = s.gate == "none"
            self._container_start(pod, t + delay)
            if self.mode == "pods" and (s.gate != "none" or "deregistration" not in s.lb.removal):
                self._register(pod)
        for kind in ("startup", "readiness", "liveness"):
            probe = getattr(s, kind)
            if probe is not None:
                self.at(t + self.rng.uniform(0, probe.period), self._probe, pod, kind)
        self.note(f"{name}: created" if not steady else f"{name}: serving")
        self.dirty = True
        return pod

    def _container_start(self, pod: Pod, t: float) -> None:
        s = self.spec
        pod.start, pod.listen_at = t, t + s.warmup
        pod.started = s.startup is None
        pod.rd_ok = pod.rd_fail = pod.st_fail = pod.lv_fail = 0
        if s.readiness is None and pod.started:
            self.at(t, self._set_rd, pod, True)
        self.at(pod.listen_at, self._dirty)

    def _dirty(self) -> None:
        self.dirty = True

    def _register(self, pod: Pod) -> None:
        s = self.spec
        pod.registered = True
        g = Target(pod, self.t + s.lb.registration_propagation, "initial")
        pod.target = g
        self.targets.append(g)
        self.at(g.reg_at, self._dirty)
        self.at(g.reg_at + self.rng.uniform(0, s.lb.interval), self._hc, g)

    def health(self, pod: Pod, t: float) -> str:
        if pod.gone:
            return "timeout"
        if pod.crashed or pod.net_down or t < pod.listen_at or pod.stop_at is not None:
            return "refused"
        if pod.term_at is not None and self.hc_mode:
            return "503"
        return "ok"

    def _set_rd(self, pod: Pod, value: bool) -> None:
        if pod.rd_pass == value:
            return
        pod.rd_pass = value
        if value and self.mode == "pods" and not pod.registered and pod.term_at is None:
            self._register(pod)
        self._update_ready(pod)

    def _update_ready(self, pod: Pod) -> None:
        ready = pod.rd_pass and pod.gate_ok and pod.term_at is None and not pod.gone
        if ready == pod.ready:
            return
        pod.ready = ready
        t = self.t
        if ready:
            pod.ready_since = t
            self.note(f"{pod.name}: Ready")
            self.at(t + self.spec.min_ready, self.changed)
        else:
            pod.ready_since = INF
            self.first_unready = min(self.first_unready, t)
        if self.mode == "proxy":
            self.at(t + self.spec.lb.endpoint_propagation, self._proxy_sync, pod)
        self.changed()

    def _proxy_sync(self, pod: Pod) -> None:
        # kube-proxy on every node has caught up with the pod's endpoint state.
        if pod.in_proxy != pod.ready:
            pod.in_proxy = pod.ready
            self.dirty = True

    def available(self, pod: Pod, t: float) -> bool:
        # The event that makes a pod available fires at ready_since + min_ready: compare with
        # a tolerance, or float rounding leaves it unavailable until the next event.
        return pod.ready and t - pod.ready_since >= self.spec.min_ready - 1e-6

    def restart(self, pod: Pod, why: str) -> None:
        s = self.spec
        self.c.restarts += 1
        self.note(f"{pod.name}: restarted by the kubelet ({why})")
        self.cut(pod, "restart")
        delay = RESTART_BACKOFF[min(pod.restarts, len(RESTART_BACKOFF) - 1)]
        pod.restarts += 1
        pod.rd_pass = False
        self._update_ready(pod)
        self._container_start(pod, self.t + delay)
        self.dirty = True
        del s

    def terminate(self, pod: Pod, grace: int) -> None:
        """Delete a pod: preStop drain (serving), then stop accepting and finish, killed at grace."""
        s, t = self.spec, self.t
        pod.term_at = t
        self._update_ready(pod)
        self.note(f"{pod.name}: terminating (drain {s.drain}s, grace {grace}s)")
        lb = s.lb
        g = pod.target
        if self.mode == "pods" and g is not None:
            if g.reg_at > t:
                g.reg_at = INF  # deregistered before it ever took traffic
            for path in lb.removal:
                if path == "deregistration":
                    g.no_new_after = min(g.no_new_after, t + lb.deregistration_propagation,
                                         t + lb.deregistration_delay)
                    if lb.kind == "alb":  # an NLB lets established flows outlive the delay
                        self.at(t + lb.deregistration_delay, self._dereg_done, pod)
                elif path == "endpoints":
                    g.no_new_after = min(g.no_new_after, t + lb.endpoint_propagation)
            self.at(g.no_new_after, self._lb_removed, g)
        pod.kill_at = t + grace
        if s.drain < grace:
            self.at(t + s.drain, self._stop_accepting, pod)
        self.at(pod.kill_at, self._kill, pod)
        if s.sidecar_drain is not None:
            self.at(t + s.sidecar_drain, self._sidecar_exit, pod)
        self.dirty = True
        self.changed()

    def _lb_removed(self, g: Target) -> None:
        self.dirty = True
        self.note(f"{g.pod.name}: LB sends it no new requests")

    def _dereg_done(self, pod: Pod) -> None:
        if not pod.gone and any(e > self.t for e in pod.inflight):
            self.cut(pod, "deregistration delay over")

    def _sidecar_exit(self, pod: Pod) -> None:
        if not pod.gone:
            pod.net_down = True
            self.cut(pod, "mesh sidecar exited")
            self.dirty = True

    def _stop_accepting(self, pod: Pod) -> None:
        if pod.gone:
            return
        t = self.t
        pod.stop_at = t
        self.dirty = True
        live = [e for e in pod.inflight if e > t]
        pod.inflight = live
        done = max(live, default=t)
        finish = t + self.spec.finish if self.spec.finish is not None else INF
        end = min(done, finish)
        self.note(f"{pod.name}: stops accepting, {len(live)} in flight")
        if end < pod.kill_at:
            self.at(end, self._exit, pod, "exited")

    def _exit(self, pod: Pod, how: str) -> None:
        if pod.gone:
            return
        self.cut(pod, "finish time over" if how == "exited" else how)
        pod.gone, pod.gone_at = True, self.t
        pod.in_proxy = False
        self.note(f"{pod.name}: {how}")
        self.dirty = True
        self.changed()

    def _kill(self, pod: Pod) -> None:
        if not pod.gone:
            self._exit(pod, "killed at grace")

    def crash(self, pod: Pod) -> None:
        # The container exits: the kubelet reports it not ready at once (no probe needed).
        pod.crashed = True
        self.cut(pod, "crash")
        pod.rd_ok = pod.rd_fail = 0
        self._set_rd(pod, False)
        self.dirty = True

    # ---- checkers ----------------------------------------------------------------------------
    def _hc(self, g: Target) -> None:
        lb, t = self.spec.lb, self.t
        if g.reg_at == INF or (g.pod.gone and t > g.pod.gone_at + lb.deregistration_delay + lb.interval
                               and "deregistration" in lb.removal):
            return
        res = self.health(g.pod, t)
        if res == "503":
            self.c.deliberate_503 += 1
        if res == "timeout":
            self.at(t + lb.timeout, self._hc_result, g, False)
        else:
            self._hc_result(g, res == "ok")
        self.at(t + lb.interval, self._hc, g)

    def _hc_result(self, g: Target, ok: bool) -> None:
        lb = self.spec.lb
        before = g.health
        if ok:
            g.ok, g.fail = g.ok + 1, 0
            if g.health == "initial" or (g.health == "unhealthy" and g.ok >= lb.healthy_threshold):
                g.health = "healthy"
        else:
            g.fail, g.ok = g.fail + 1, 0
            if g.health != "unhealthy" and g.fail >= lb.unhealthy_threshold:
                g.health = "unhealthy"
                self.first_unhealthy = min(self.first_unhealthy, self.t)
        if g.health != before:
            if g.health == "healthy" and self.t >= self.healthy_from:
                self.healthy_again = min(self.healthy_again, self.t)
            self.dirty = True
            self.note(f"{g.pod.name}: LB target {g.health}")

    def _gate_poll(self) -> None:
        # The controller sets a pod's readiness gate once its target is healthy.
        for pod in self.pods:
            if (not pod.gate_ok and self.spec.gate == "passes" and pod.target is not None
                    and pod.target.health == "healthy" and not pod.gone):
                pod.gate_ok = True
                self._update_ready(pod)
        self.at(self.t + self.spec.gate_poll, self._gate_poll)

    def _probe(self, pod: Pod, kind: str) -> None:
        if pod.gone:
            return
        s, t = self.spec, self.t
        probe = getattr(s, kind)
        self.at(t + probe.period, self._probe, pod, kind)
        if pod.crashed and kind != "readiness":
            return
        if t < pod.start or t - pod.start < probe.initial_delay:
            return
        if pod.term_at is not None and kind != "readiness":
            return  # liveness and startup are forced to success while a pod terminates
        if kind != "startup" and not pod.started:
            return
        ok = self.health(pod, t) == "ok"
        if kind == "startup":
            if pod.started:
                return
            if ok:
                pod.started = True
                if s.readiness is None:
                    self._set_rd(pod, True)
            else:
                pod.st_fail += 1
                if pod.st_fail >= probe.failure:
                    self.restart(pod, "startup probe")
        elif kind == "readiness":
            if ok:
                pod.rd_ok, pod.rd_fail = pod.rd_ok + 1, 0
                if pod.rd_ok >= probe.success:
                    self._set_rd(pod, True)
            else:
                pod.rd_fail, pod.rd_ok = pod.rd_fail + 1, 0
                if pod.rd_fail >= probe.failure:
                    self._set_rd(pod, False)
        else:
            pod.lv_fail = 0 if ok else pod.lv_fail + 1
            if pod.lv_fail >= probe.failure:
                self.restart(pod, "liveness probe")

    def every(self, period: float, fn: Callable[[], None]) -> None:
        """A periodic checker (heartbeat observer, watchdog) with a random phase."""
        def tick() -> None:
            fn()
            self.at(self.t + period, tick)
        self.at(self.t + self.rng.uniform(0, period), tick)
