"""The periodic observers of a service: the heartbeat's judgement (seed 000) and a host
watchdog (seed 003)."""

from __future__ import annotations

from typing import Callable

from lockstep.timing.sim.engine import World
from lockstep.timing.sim.spec import HeartbeatSpec, WatchdogSpec


class Observer:
    """The heartbeat's judgement of one spec's service (seed 000, as `heartbeat/` decides):
    healthy while the PDB minimum (else every expected replica, never below one) is
    available; during a StatefulSet rollout one pod may be missing while a step progresses
    for less than the loss time. Unhealthy *continuously* for `loss` seconds, counted from the
    first unhealthy observation, blocks the scope; `recovery` seconds of health unblock it."""

    def __init__(self, w: World, hb: HeartbeatSpec) -> None:
        self.w, self.hb = w, hb
        n, keep = w.spec.replicas, w.spec.pdb_keep
        self.required = n if keep is None else min(n, max(1, keep))
        self.tolerated = max(1, min(self.required, n - 1))
        self.blocked = False
        self.unhealthy_since: float | None = None
        self.healthy_since: float | None = None
        self.step: tuple[float, tuple[int, int]] | None = None
        self.blocks: list[float] = []
        self.unblocks: list[float] = []
        w.every(hb.observe, self.sample)

    def _verdict(self, t: float) -> tuple[bool, float | None]:
        w = self.w
        n = sum(1 for p in w.pods if p.term_at is None and not p.gone and w.available(p, t))
        progress = w.sts_progress() if w.sts_progress is not None else None
        if progress is None:
            self.step = None
            return n >= self.required, None
        if self.step is None or self.step[1] != progress:
            self.step = (t, progress)
        if n >= self.required:
            return True, None
        age = t - self.step[0]
        if n >= self.tolerated:
            return (True, None) if age < self.hb.loss else (False, self.step[0])
        return False, None

    def sample(self) -> None:
        t = self.w.t
        healthy, since = self._verdict(t)
        if healthy:
            self.unhealthy_since = None
            self.healthy_since = t if self.healthy_since is None else self.healthy_since
            if self.blocked and t - self.healthy_since >= self.hb.recovery - 1e-6:
                self.blocked = False
                self.unblocks.append(t)
                self.w.note(f"heartbeat {self.hb.name}: unblocked")
            return
        self.healthy_since = None
        start = t if self.unhealthy_since is None else self.unhealthy_since
        self.unhealthy_since = start if since is None else min(start, since)
        if not self.blocked and t - self.unhealthy_since >= self.hb.loss - 1e-6:
            self.blocked = True
            self.blocks.append(t)
            self.w.note(f"heartbeat {self.hb.name}: BLOCKED")
            if self.w.planned:
                self.w.c.false_blocks += 1


class Watchdog:
    """A host watchdog: acts after `failures` consecutive failed checks of its slot."""

    def __init__(self, w: World, spec: WatchdogSpec, slot_ok: Callable[[float], bool]) -> None:
        self.w, self.spec, self.slot_ok = w, spec, slot_ok
        self.fails = 0
        self.actions: list[float] = []
        w.every(spec.period, self.check)

    def check(self) -> None:
        if self.slot_ok(self.w.t):
            self.fails = 0
            return
        self.fails += 1
        if self.fails >= self.spec.failures:
            self.fails = 0
            self.actions.append(self.w.t)
            self.w.note("watchdog: acts on the service")
            if self.w.planned:
                self.w.c.watchdog_actions += 1
