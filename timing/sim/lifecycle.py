"""Pod lifecycle: start and warm-up, readiness and the gate, registration, and termination
(drain while serving, stop accepting, finish, exit, or be killed at grace)."""

from __future__ import annotations

from lockstep.timing.sim.state import INF, Pod, Target

RESTART_BACKOFF = (0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0)  # kubelet CrashLoopBackOff


class Lifecycle:
    """Mixed into `World`: what happens to one pod, and to its LB target."""

    def add_pod(self, name: str, steady: bool = False, delay: float = 0.0, selected: bool = True) -> Pod:
        """A new pod (containers start after `delay`); `steady`: one that has long been serving;
        not `selected`: the Service traffic follows does not select it (yet)."""
        s, t = self.spec, self.t
        pod = Pod(name, t)
        pod.selected = selected
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
            # The controller's webhook injects the gate at pod creation, into pods a bound
            # Service selects: a pod created outside it carries no gate.
            pod.gate_ok = s.gate == "none" or not selected
            self._container_start(pod, t + delay)
            if s.path.app_first:  # its first calls find no proxy: the app exits and is restarted
                self.at(t + delay, self.restart, pod, "the app started before its mesh proxy was ready")
            if self.mode == "pods" and selected and (s.gate != "none" or "deregistration" not in s.lb.removal):
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
        self._wake(pod)
        if s.readiness is None and pod.started:
            self.at(t, self._set_rd, pod, True)
        self.at(pod.listen_at, self._dirty)

    def _wake(self, pod: Pod) -> None:
        """Something `Checkers._idle` or `_check_idle` reads has changed: each probe left out,
        and the LB's health check of the pod's target, comes round again at the next of its own
        times after now (each a period after the last, as it ran)."""
        if pod.parked:
            for kind, last in pod.parked.items():
                self.at(self._next_round(last, getattr(self.spec, kind).period), self._probe, pod, kind)
            pod.parked.clear()
        g = pod.target
        if g is not None and g.parked is not None:
            self.at(self._next_round(g.parked, self.spec.lb.interval), self._hc, g)
            g.parked = None

    def _next_round(self, last: float, period: float) -> float:
        """The first of `last` + period, + period, ... after now, added one period at a time as
        the rounds that were left out would have scheduled each other."""
        at = last
        while at <= self.t:
            at += period
        return at

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
        if (pod.term_at is not None and self.hc_mode) or pod.signalled:
            return "503"
        return "ok"

    def _set_rd(self, pod: Pod, value: bool) -> None:
        if pod.rd_pass == value:
            return
        pod.rd_pass = value
        if value and self.mode == "pods" and not pod.registered and pod.term_at is None and pod.selected:
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
        if self.mode == "proxy" or self.node_check:
            self.at(t + self.spec.lb.endpoint_propagation, self._proxy_sync, pod)
        self.changed()

    def _proxy_sync(self, pod: Pod) -> None:
        # kube-proxy on every node has caught up with the pod's endpoint state.
        if pod.in_proxy != (pod.ready and pod.selected):
            pod.in_proxy = pod.ready and pod.selected
            self._wake(pod)
            self.dirty = True

    def available(self, pod: Pod, t: float) -> bool:
        # The event that makes a pod available fires at ready_since + min_ready: compare with
        # a tolerance, or float rounding leaves it unavailable until the next event.
        return pod.ready and t - pod.ready_since >= self.spec.min_ready - 1e-6

    def restart(self, pod: Pod, why: str) -> None:
        self.c.restarts += self.planned  # after a real crash a restart is the cure, not a harm
        self.note(f"{pod.name}: restarted by the kubelet ({why})")
        self.cut(pod, "restart")
        delay = RESTART_BACKOFF[min(pod.restarts, len(RESTART_BACKOFF) - 1)]
        pod.restarts += 1
        pod.rd_pass = False
        self._update_ready(pod)
        self._container_start(pod, self.t + delay)
        self.dirty = True

    def terminate(self, pod: Pod, grace: int) -> None:
        """Delete a pod: preStop drain (serving), then stop accepting and finish, killed at grace."""
        s, t = self.spec, self.t
        pod.term_at = t
        self._wake(pod)
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
                    # An NLB lets established flows outlive the delay unless told to close them
                    # (deregistration_delay.connection_termination.enabled).
                    if lb.kind == "alb" or lb.dereg_reset:
                        self.at(t + lb.deregistration_delay, self._dereg_done, pod)
                elif path == "endpoints":
                    g.no_new_after = min(g.no_new_after, t + lb.endpoint_propagation)
            self.at(max(t, g.no_new_after), self._lb_removed, g)  # an Argo switch may have set it earlier
        self._signal(pod, grace)
        self.changed()

    def shutdown(self, pod: Pod, grace: float) -> None:
        """The kubelet's graceful node shutdown: SIGTERM with no deletion, so the endpoints stay
        ready and the LB learns only by its health checks, which the app fails from now on
        (kubernetes #116965); grace 0 is no graceful shutdown: the pod dies with the node."""
        self.note(f"{pod.name}: node shutdown (SIGTERM, no deletion, grace {grace:.0f}s)")
        pod.signalled = True
        self._wake(pod)
        if grace <= 0:
            self._exit(pod, "node powered off")
            return
        self._signal(pod, grace)

    def _signal(self, pod: Pod, grace: float) -> None:
        """SIGTERM: preStop drain while serving, then stop accepting and finish; killed at grace."""
        s, t = self.spec, self.t
        pod.kill_at = t + grace
        if s.drain < grace:
            self.at(t + s.drain, self._stop_accepting, pod)
        self.at(pod.kill_at, self._kill, pod)
        if s.sidecar_drain is not None:
            self.at(t + s.sidecar_drain, self._sidecar_exit, pod)
        self.dirty = True

    def _lb_removed(self, g: Target) -> None:
        self.dirty = True
        self.note(f"{g.pod.name}: LB sends it no new requests")

    def _dereg_done(self, pod: Pod) -> None:
        if not pod.gone and any(e > self.t for e in pod.inflight):
            self.cut(pod, "deregistration delay over")

    def _sidecar_exit(self, pod: Pod) -> None:
        if not pod.gone:
            pod.net_down = True
            self._wake(pod)
            self.cut(pod, "mesh sidecar exited")
            self.dirty = True

    def _stop_accepting(self, pod: Pod) -> None:
        if pod.gone:
            return
        t = self.t
        pod.stop_at = t
        self._wake(pod)
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
        self._wake(pod)
        self.note(f"{pod.name}: {how}")
        self.dirty = True
        self.changed()

    def _kill(self, pod: Pod) -> None:
        if not pod.gone:
            self._exit(pod, "killed at grace")

    def crash(self, pod: Pod) -> None:
        # The container exits: the kubelet reports it not ready at once (no probe needed).
        pod.crashed = True
        self._wake(pod)
        self.cut(pod, "crash")
        pod.rd_ok = pod.rd_fail = 0
        self._set_rd(pod, False)
        self.dirty = True
