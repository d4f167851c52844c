"""An Argo Rollout's switch, then scale-down (blue-green; a canary routed by the ALB at its
full promotion), as the Argo Rollouts controller runs it (its blue-green and canary docs).

The new ReplicaSet comes up in full beside the old one, outside the Service traffic follows
(the controller pins that Service's selector to the old ReplicaSet's pod-template hash). Once
every new pod is available, the controller rewrites the selector at one instant: the switch.
Nothing else moves then. The endpoints change has to reach whoever routes: kube-proxy, or the
AWS Load Balancer Controller (`lb.endpoint_propagation_s`); for an IP target group the
controller then deregisters the old pods' addresses, which the ALB keeps sending new requests
to for `lb.deregistration_propagation_s`, and registers the new ones, which get requests once
registered and through one passing health check (as after any registration here). The old
ReplicaSet is scaled down `scaleDownDelaySeconds` after the switch: its pods get SIGTERM and
go through the same preStop drain, stop and kill at grace as any other pod (`Lifecycle`).
A request sent to an old pod that has stopped serving is refused like any other.

Without a load balancer no Service routes the work (a consumer pulls it), so the switch moves
nothing and only the scale-down remains. The model's basic canary (no traffic routing) rolls
as a Deployment does and never gets here (`ServiceSpec.scale_down_delay` is None).
"""

from __future__ import annotations

from lockstep.timing.sim.controllers import TAIL, ProgressDeadline
from lockstep.timing.sim.engine import World
from lockstep.timing.sim.state import Pod


class SwitchRollout(ProgressDeadline):
    def __init__(self, w: World, old: list[Pod]) -> None:
        assert w.spec.scale_down_delay is not None
        self.old = list(old)
        self.seen: set[int] = set()
        self.switched_at: float | None = None
        self.done_at: float | None = None
        super().__init__(w)
        self.new = [w.add_pod(f"{self.s.name}-new-{i}", selected=False) for i in range(self.s.replicas)]
        w.note(f"rollout: new ReplicaSet of {len(self.new)} up beside the old one, not yet selected")

    def _settled(self) -> bool:  # progressDeadlineSeconds counts until the switch
        return self.switched_at is not None

    def reconcile(self) -> None:
        w, t = self.w, self.w.t
        if self.switched_at is not None:
            return
        for pod in self.new:
            if id(pod) not in self.seen and w.available(pod, t):
                self.seen.add(id(pod))
                self._progress()
        if all(w.available(p, t) and p.term_at is None for p in self.new):
            self._switch()

    # ---- the switch and what follows it ----------------------------------------------------------
    def _switch(self) -> None:
        w, s = self.w, self.s
        self.switched_at = w.t
        w.note("rollout: the Service's selector switches to the new ReplicaSet")
        if w.mode != "none":
            assert s.lb is not None
            w.at(w.t + s.lb.endpoint_propagation, self._endpoints_moved)
        w.at(w.t + s.scale_down_delay, self._scale_down)

    def _endpoints_moved(self) -> None:
        """kube-proxy, or the load balancer controller, now routes by the new selector."""
        w, lb, t = self.w, self.s.lb, self.w.t
        for pod in self.old:
            pod.selected = False
            if w.mode == "proxy":
                pod.in_proxy = False
            elif pod.target is not None:
                g = pod.target
                g.no_new_after = min(g.no_new_after, t + lb.deregistration_propagation)
                w.at(max(t, g.no_new_after), w._lb_removed, g)
                if lb.kind == "alb":  # the ALB closes what is still open when the delay ends
                    w.at(t + lb.deregistration_delay, w._dereg_done, pod)
        for pod in self.new:
            pod.selected = True
            if w.mode == "proxy":
                pod.in_proxy = pod.ready
            elif not pod.registered and pod.term_at is None and not pod.gone:
                w._register(pod)
        w.dirty = True
        w.note("rollout: endpoints moved to the new ReplicaSet")

    def _scale_down(self) -> None:
        w = self.w
        w.note("rollout: scale-down delay over, the old ReplicaSet goes")
        for pod in self.old:
            if pod.term_at is None and not pod.gone:
                w.terminate(pod, self.s.grace)
        self.done_at = w.t
        w.at(w.t, self._finish)

    def _finish(self) -> None:
        if all(p.gone for p in self.old):
            self.w.at(self.w.t + TAIL, self._stop)
        else:
            self.w.at(self.w.t + 1, self._finish)

    def _stop(self) -> None:
        self.w.stop_flag = True
