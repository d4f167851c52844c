"""The checkers: the LB's health checks and the controller's gate poll, kubelet probes, and
periodic observers (heartbeat, watchdog), each at its own random phase."""

from __future__ import annotations

from heapq import heappush
from typing import Callable

from lockstep.timing.sim.state import INF, Pod, Target


class Checkers:
    """Mixed into `World`: everything that looks at pods on a period."""

    def _hc(self, g: Target) -> None:
        lb, t = self.spec.lb, self.t
        if g.reg_at == INF or (g.pod.gone and t > g.pod.gone_at + lb.deregistration_delay + lb.interval
                               and "deregistration" in lb.removal):
            return
        # The node check (externalTrafficPolicy Local) is answered by kube-proxy: healthy while
        # the node has a ready local endpoint, as kube-proxy sees it.
        res = ("ok" if g.pod.in_proxy else "503") if self.node_check else self.health(g.pod, t)
        if self._check_idle(g, res):
            # as an idle probe round (`_probe`): left out, put back by `Lifecycle._wake`
            g.parked = t
            return
        if res == "503" and not self.node_check:
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
                g.unhealthy_since = self.t
                self.first_unhealthy = min(self.first_unhealthy, self.t)
                self._unhealthy_connections(g)
        if g.health != before:
            if g.health == "healthy" and self.t >= self.healthy_from:
                self.healthy_again = min(self.healthy_again, self.t)
            self.dirty = True
            self.note(f"{g.pod.name}: LB target {g.health}")

    def _unhealthy_connections(self, g: Target) -> None:
        """An NLB resets an unhealthy target's connections (unhealthy.connection_termination,
        on by default), or lets them drain for unhealthy.draining_interval_seconds and then
        closes them. A target already deregistering is draining by its delay instead."""
        lb, pod = self.spec.lb, g.pod
        if lb.kind != "nlb" or pod.gone or (pod.term_at is not None and "deregistration" in lb.removal):
            return
        if lb.unhealthy_reset:
            self.cut(pod, "NLB reset an unhealthy target's connections")
        else:
            self.at(self.t + lb.unhealthy_draining, self._unhealthy_drained, g, g.unhealthy_since)

    def _unhealthy_drained(self, g: Target, since: float) -> None:
        # A target that recovers inside the interval goes back to healthy and keeps its
        # connections (the NLB's unhealthy.draining state; AWS's launch note for it): only one
        # still unhealthy since the same failure has them closed.
        if not g.pod.gone and g.health == "unhealthy" and g.unhealthy_since == since:
            self.cut(g.pod, "NLB unhealthy draining interval over")

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
        if pod.signalled:
            # The kubelet's node shutdown stops the pod's probes before it kills it, and a
            # container with no probe worker left is reported ready (kubelet nodeshutdown
            # manager, kubernetes #105215; #105780 and #116965, open): its readiness stays.
            return
        s, t = self.spec, self.t
        probe = getattr(s, kind)
        if self._idle(pod, kind, t):
            # This round changes nothing, nor will the next ones until something happens to the
            # pod that `Lifecycle._wake` is told of: they are left out (the commonest events by
            # far, most of them in a pod that just serves), and put back at their own times then.
            pod.parked[kind] = t
            return
        # `self.at(t + probe.period, self._probe, pod, kind)`, spelt out: the commonest event
        heappush(self.heap, (t + probe.period, self.seq, self._probe, (pod, kind)))
        self.seq += 1
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

    def _idle(self, pod: Pod, kind: str, t: float) -> bool:
        """Whether this round of the probe changes nothing, and no later one can until the pod
        is restarted, crashes, terminates, stops accepting or loses its network (what the round
        reads, written only where `Lifecycle._wake` is called; a pod that goes, or is signalled,
        is never probed again): a started container's startup probe, and for a started container
        that answers, its readiness probe once passing with no failure counted, its liveness
        probe with no failure counted. (A passed readiness round counts toward `success` only
        while the probe is not passing, and every way there starts that count again from 0: one
        left out while it passes counts nothing.)"""
        if kind == "startup":
            return pod.started
        if not pod.started or self.health(pod, t) != "ok":
            return False
        if kind == "readiness":
            return pod.rd_pass and pod.rd_fail == 0
        return pod.lv_fail == 0

    def _check_idle(self, g: Target, res: str) -> bool:
        """Whether this health check changes nothing, and no later one can until `_idle`'s
        things happen to the pod, or it is signalled, goes, or kube-proxy on its node changes
        whether it routes to it (`in_proxy`, which a node check reads; each calls
        `Lifecycle._wake`): a healthy target answering with no failure counted. (Passed checks
        count toward `healthy_threshold` only while it is unhealthy, and the way there starts
        that count again from 0.) Targets exist only where the LB sends to the pods (`mode`
        "pods"): elsewhere nothing is checked."""
        return res == "ok" and g.health == "healthy" and g.fail == 0

    def every(self, period: float, fn: Callable[[], None]) -> None:
        """A periodic checker (heartbeat observer, watchdog) with a random phase."""
        def tick() -> None:
            fn()
            self.at(self.t + period, tick)
        self.at(self.t + self.rng.uniform(0, period), tick)
