"""The heartbeat's pure core: observations in, commands and beat contents out.

`Core` holds everything the service remembers between observations — per-workload
`Memory` (rescales, StatefulSet rollout steps), per-scope `ScopeState`, and the state of the
critical components — and nothing that does I/O. The runtime, the dry run and the tests
drive the same object with their own clock.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from lockstep.heartbeat import decide, observe
from lockstep.heartbeat.decide import Command, ScopeState
from lockstep.heartbeat.observe import Key, Memory, Snapshot, Verdict
from lockstep.timing.heartbeat_config import RuntimeConfig

OBSERVER = "kube-api"
BROKER = "broker"
GATEWAY = "gateway"  # acknowledges applied commands within ack_timeout_s


@dataclass(frozen=True)
class ScopeView:
    spec: str
    blocked: bool
    since: float | None
    reason: str


class Core:
    def __init__(self, cfg: RuntimeConfig, restored_blocked: frozenset[str] = frozenset(),
                 now: float | None = None) -> None:
        self.cfg = cfg
        self.states: dict[str, ScopeState] = decide.initial(cfg.specs, restored_blocked, now)
        self.memories: dict[Key, Memory] = {}
        self.verdicts: dict[str, Verdict] = {}
        # Until the first successful observation nothing is known: no beat.
        self.critical: dict[str, str | None] = {OBSERVER: "no observation yet", BROKER: None,
                                                GATEWAY: None}

    def observe(self, now: float, snapshots: Mapping[Key, Snapshot] | None,
                error: str | None = None) -> list[Command]:
        """One observation of every watched workload (`snapshots`), or the error that
        prevented it (a critical failure: nothing is decided from missing data)."""
        if snapshots is None:
            self.critical[OBSERVER] = error or "observation failed"
            return []
        self.critical[OBSERVER] = None
        verdicts: dict[str, Verdict | None] = {}
        for spec in self.cfg.specs:
            key = observe.key_of(spec.workload)
            verdict, mem = observe.judge(spec.workload, snapshots.get(key), self.memories.get(key),
                                         now, stall_s=spec.loss_time_s)
            if mem is not None:
                self.memories[key] = mem
            verdicts[spec.name] = self.verdicts[spec.name] = verdict
        self.states, commands = decide.step(self.cfg.specs, self.states, now, verdicts)
        return commands

    def adopt_blocked(self, blocked: frozenset[str], now: float) -> None:
        """Take over the blocked scopes a previous leader recorded; this instance's own
        clocks (it has been observing as a follower) are kept."""
        for name, st in self.states.items():
            if (name in blocked) != st.blocked:
                self.states[name] = replace(st, blocked=name in blocked, changed_at=now,
                                            healthy_since=None if name in blocked else st.healthy_since,
                                            reason="restored from the lease")

    def set_critical(self, component: str, problem: str | None) -> None:
        self.critical[component] = problem

    @property
    def silent(self) -> bool:
        return decide.silent(self.critical)

    @property
    def blocked(self) -> frozenset[str]:
        return decide.blocked_names(self.states)

    def scopes(self) -> list[ScopeView]:
        return [ScopeView(s.name, self.states[s.name].blocked, self.states[s.name].changed_at,
                          self.states[s.name].reason) for s in self.cfg.specs]
