"""Rollout controllers, as Kubernetes runs them.

A Deployment scales its new ReplicaSet up within maxSurge and its old one down while keeping
`replicas - maxUnavailable` pods available (a pod is available once Ready for
minReadySeconds; Ready needs the readiness gate when one is injected), and reports failure
when no progress is made for progressDeadlineSeconds. A StatefulSet replaces pods one at a
time, highest ordinal first, the old pod gone before its successor is scheduled.
"""

from __future__ import annotations

from lockstep.timing.sim.engine import World
from lockstep.timing.sim.state import Pod

TAIL = 15.0  # simulated seconds after the last old pod is gone
# `kubectl drain` retries an eviction the PDB refuses every 5 s ("will retry after 5s");
# Karpenter's and the termination handler's drains retry on their own short loops.
EVICTION_RETRY_S = 5.0
DRAIN_PATIENCE_S = 600.0  # a drain still blocked by the PDB after 10 minutes never completes


def pdb_allows(w: World) -> bool:
    """The eviction API's check: the pods whose Ready condition is true, less the one evicted,
    must not fall below what the PDB keeps (the disruption controller counts Ready pods, not
    minReadySeconds)."""
    keep = w.spec.pdb_keep
    return keep is None or sum(1 for p in w.pods if p.ready) - keep >= 1


class ProgressDeadline:
    """progressDeadlineSeconds: a rollout that makes no progress for that long, before it has
    settled, is reported failed (once). A subclass says when it has settled."""

    def __init__(self, w: World) -> None:
        self.w, self.s = w, w.spec
        self.last_progress = w.t
        self.failed = False
        self._arm()

    def _settled(self) -> bool:
        raise NotImplementedError

    def _arm(self) -> None:
        self.w.at(self.last_progress + self.s.progress_deadline, self._deadline, self.last_progress)

    def _deadline(self, mark: float) -> None:
        if not self._settled() and mark == self.last_progress and not self.failed:
            self.failed = True
            self.w.c.deploy_failed += 1
            self.w.note("rollout: progress deadline exceeded (reported failed)")

    def _progress(self) -> None:
        self.last_progress = self.w.t
        self._arm()


class DeploymentRollout(ProgressDeadline):
    def __init__(self, w: World, old: list[Pod]) -> None:
        self.old, self.new = list(old), []
        self.seen: set[int] = set()
        self.done_at: float | None = None
        super().__init__(w)

    def _settled(self) -> bool:
        return self.done_at is not None

    def reconcile(self) -> None:
        w, s, t = self.w, self.s, self.w.t
        if self.done_at is not None:
            return
        old = [p for p in self.old if p.term_at is None]
        new = [p for p in self.new if p.term_at is None]
        n = s.replicas
        for _ in range(min(n + s.surge - len(old) - len(new), n - len(new))):
            pod = w.add_pod(f"{s.name}-new-{len(self.new)}")
            self.new.append(pod)
            new.append(pod)
            self._progress()
        for pod in new:
            if id(pod) not in self.seen and w.available(pod, t):
                self.seen.add(id(pod))
                self._progress()
        new_avail = sum(1 for p in new if w.available(p, t))
        floor = n - s.unavailable
        # Unavailable old pods go first, as far as the new ones' unavailability allows.
        budget = len(old) + len(new) - floor - (len(new) - new_avail)
        for pod in [p for p in old if not w.available(p, t)]:
            if budget <= 0:
                break
            w.terminate(pod, s.grace)
            budget -= 1
        old = [p for p in old if p.term_at is None]
        spare = sum(1 for p in old if w.available(p, t)) + new_avail - floor
        for pod in old:
            if spare <= 0:
                break
            if w.available(pod, t):
                w.terminate(pod, s.grace)
                spare -= 1
        old = [p for p in old if p.term_at is None]
        if not old and len(new) == n and new_avail == n:
            self.done_at = t
            w.note("rollout: complete")
            w.at(t, self._finish)

    def _finish(self) -> None:
        if all(p.gone for p in self.old):
            self.w.at(self.w.t + TAIL, self._stop)
        else:
            self.w.at(self.w.t + 1, self._finish)

    def _stop(self) -> None:
        self.w.stop_flag = True


class StatefulSetRollout:
    def __init__(self, w: World, old: list[Pod]) -> None:
        self.w, self.s = w, w.spec
        self.queue = list(reversed(old))  # highest ordinal first
        self.cur_old: Pod | None = None
        self.cur_new: Pod | None = None
        self.creating = False
        self.done_at: float | None = None
        self.failed = False
        self.count = 0
        self.new: list[Pod] = []
        w.sts_progress = self.progress

    def progress(self) -> tuple[int, int] | None:
        """(updatedReplicas, readyReplicas) while the rollout runs, as the observer reads them."""
        if self.done_at is not None:
            return None
        w = self.w
        return (sum(1 for p in self.new if not p.gone),
                sum(1 for p in w.pods if p.ready and not p.gone))

    def reconcile(self) -> None:
        w, t = self.w, self.w.t
        if self.done_at is not None:
            return
        if self.cur_new is not None:
            if not w.available(self.cur_new, t):
                return
            self.cur_new = None
        if self.cur_old is not None:
            if self.cur_old.gone and not self.creating:
                self.creating = True
                w.at(t + self.s.schedule, self._create)
            return
        if self.queue:
            self.cur_old = self.queue.pop(0)
            w.terminate(self.cur_old, self.s.grace)
            return
        self.done_at = t
        w.note("rollout: complete")
        w.at(t + TAIL, self._stop)

    def _create(self) -> None:
        self.cur_new = self.w.add_pod(f"{self.s.name}-new-{self.count}")
        self.new.append(self.cur_new)
        self.count += 1
        self.cur_old, self.creating = None, False
        self.w.changed()

    def _stop(self) -> None:
        self.w.stop_flag = True


def stalled(w: World, ctl: DeploymentRollout | StatefulSetRollout) -> bool:
    """A rollout that can never finish: new pods crash-loop or wait on a gate that never
    passes (a slow one is not stalled)."""
    new = ctl.new[-1:] if isinstance(ctl, StatefulSetRollout) else ctl.new
    return w.spec.gate == "never" or any(p.restarts > 0 for p in new)
