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
from math import log
from typing import Callable

from lockstep.timing.sim.checkers import Checkers
from lockstep.timing.sim.lifecycle import Lifecycle
from lockstep.timing.sim.spec import ServiceSpec
from lockstep.timing.sim.state import INF, Counts, Pod, Target

LONG_SHARE = 0.02  # requests that take exactly the service's longest request time
SLOW_SHARE = 0.03  # requests anywhere up to it; the rest take up to 1 s

__all__ = ["INF", "Counts", "Pod", "Target", "World"]


class World(Lifecycle, Checkers):
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
        # an ingress proxy's pod in front stopped accepting while the LB in front still sends it
        # new connections: (from, until, the hop), refused in between
        self.front_down: tuple[float, float, str] | None = None
        self.sts_progress: Callable[[], tuple[int, int] | None] | None = None
        lb = spec.lb
        self.mode = "none" if lb is None else ("proxy" if lb.via_kube_proxy else "pods")
        self.hc_mode = lb is not None and "health_check" in lb.removal
        self.node_check = lb is not None and lb.node_check
        # A keep-alive race needs the inner hop of a link to close an idle connection before the
        # outer one stops reusing it: links where every reuse is safe need no tracking.
        self.racing = [k for k, link in enumerate(spec.links) if link.races]
        self.race = bool(self.racing)
        # the hop in front that gives up first on a slow answer (504), if any limits the wait
        self.wait = min(spec.path.waits, key=lambda w: w[1], default=None)
        self.max_req = float(spec.max_request) if spec.max_request is not None else 1.0
        # no request can be lost for the whole run by a race or a hop in front giving up
        self.sure = not self.race and (self.wait is None or self.wait[1] >= max(self.max_req, 0.01))
        self.cand_pods: list[Pod] = []
        self.all_listen = False
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
        heap, rate, c, fast = self.heap, self.rate, self.c, self.fast
        heappop = heapq.heappop
        random = self.rng.random
        # an arrival's gap is `random.expovariate(rate)`, drawn here as it draws it
        nxt = self.t - log(1.0 - random()) / rate if rate > 0 else INF
        while not self.stop_flag:
            t_ev = heap[0][0] if heap else INF
            if nxt <= t_ev:
                if nxt > until:
                    break
                self.t = nxt
                if self.dirty:
                    self.cands = self._candidates()
                    self.dirty = False
                    self.cand_pods = [g.pod for g in self.cands] if self.mode == "pods" else self.cands
                    # (with no candidate, only a consumer's queue: it just waits)
                    self.all_listen = (bool(self.cands) or self.mode == "none") and all(
                        p.listening(nxt) for p in self.cand_pods)
                if self.all_listen and self.front_down is None and nxt >= self.losses_from and self.sure:
                    nxt = self._served(nxt, t_ev if t_ev < until else until, rate)
                    continue
                self.request(nxt)
                nxt -= log(1.0 - random()) / rate
                if fast and c.lost:
                    self.stop_flag = self.halted = True
            else:
                if t_ev > until:
                    break
                t, _, fn, args = heappop(heap)
                self.t = t
                fn(*args)
                if fast and c.harmful:
                    self.stop_flag = self.halted = True
        self.t = max(self.t, until) if not self.stop_flag else self.t

    # When a request cannot be lost (`run` serves it with `_served`): every candidate listens
    # (with no candidate, only a consumer's queue, which just waits), nothing in front refuses
    # (`front_down`), losses count (`losses_from`), and for the whole run (`sure`) no keep-alive
    # race is tracked and no hop in front gives up before the longest request. Whether
    # every candidate listens is found when the candidates are (`dirty`): a pod stops listening
    # only by what marks them dirty (it stops accepting, exits, crashes, loses its proxy, is
    # restarted), and one that starts listening later was not counted (its `_dirty` event comes
    # first, or its request goes through `request`).

    def _served(self, t: float, bound: float, rate: float) -> float:
        """Every request from `t` (the next arrival) up to `bound` (the next event, or the end of
        this run) when none can be lost: each goes to the next candidate in turn and is
        in flight until its end, exactly as `request` serves it, drawing the same numbers. One
        that ends by `bound` is not kept: everything that looks at what a pod has in flight
        looks from `bound` on, for the ends after it. Returns the next arrival after `bound`."""
        random, c = self.rng.random, self.c
        pods = self.cand_pods
        n = len(pods)
        rr = self.rr
        longest = self.max_req
        short_span = min(1.0, longest) - 0.01
        long_share, slow_share = LONG_SHARE, LONG_SHARE + SLOW_SHARE
        served = 0
        last = t
        while t <= bound:
            # `_duration`'s draws, in its arithmetic (`random.uniform(a, b)` is a + (b - a) * random())
            u = random()
            if u < long_share:
                dur = longest
            elif u < slow_share:
                dur = 0 + (longest - 0) * random()
            else:
                dur = 0.01 + short_span * random()
            served += 1
            if n:
                rr = (rr + 1) % n
                end = t + dur
                if end > bound:
                    pods[rr].inflight.append(end)
            last = t
            t -= log(1.0 - random()) / rate
        c.requests += served
        self.rr = rr
        self.t = last
        return t

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
        front = self.front_down
        if front is not None and front[0] <= t < front[1]:
            if counted:
                c.refused_502 += 1
                c.at_hop(f"refused by {front[2]}: stopped accepting before the LB in front stopped sending")
                self._first_loss(f"refused by {front[2]}'s leaving pod")
            return
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
        for k in self.racing:
            if not self._connection(picked, t, dur, k):
                if counted:
                    c.keepalive_502 += 1
                    c.at_hop(f"502 keep-alive race: {self.spec.links[k].name}")
                    self._first_loss(f"502 keep-alive race on {pod.name} ({self.spec.links[k].name})")
                return
        pod.inflight.append(t + dur)
        if self.wait is not None and dur > self.wait[1] and counted:
            # the app works on; the hop in front has answered 504 already
            c.timeout_504 += 1
            c.at_hop(f"504 {self.wait[0]} gave up after {self.wait[1]}s")
            self._first_loss(f"504 from {self.wait[0]} on a {dur:.0f}s request to {pod.name}")

    def _connection(self, g: Target, t: float, dur: float, k: int) -> bool:
        """Reuse an idle connection of link `k` toward the target (any of them), or open one.
        False: the outer hop sent the request on a connection the inner one had closed after
        its keep-alive timeout, before the outer hop's own idle timeout dropped it (the seed-003
        steady-state 502, between the LB and the app or any two hops behind it)."""
        while len(g.busy) <= k:
            g.busy.append([])
            g.idle.append([])
        busy, idle = g.busy[k], g.idle[k]
        while busy and busy[0] <= t:
            idle.append(heapq.heappop(busy))
        link = self.spec.links[k]
        keepalive, lb_idle = link.client_idle, link.pool_idle
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
