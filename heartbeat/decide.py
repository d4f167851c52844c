"""When is a scope blocked? Pure, deterministic decisions driven by an injected clock.

Per spec (seed 000): a workload unhealthy *continuously* for `loss_time` puts the spec's
scope into `blocked`; the scope leaves `blocked` only after `recovery_time` of continuous
health (a recovered service may still be catching up on its lag). An observation missing
(the API could not be read) changes nothing: the clocks neither start nor reset.

Critical components (the observer's own API access, the broker link) failing is a global
failure: no guarantee can be given, so the service sends no heartbeat at all (`silent`).

Imports nothing but `timing` and the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Mapping

from lockstep.heartbeat.observe import Verdict
from lockstep.timing.heartbeat_config import SpecConfig

Action = Literal["block", "unblock"]


@dataclass(frozen=True)
class ScopeState:
    blocked: bool = False
    unhealthy_since: float | None = None
    healthy_since: float | None = None
    changed_at: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class Command:
    action: Action
    spec: str
    reason: str
    decided_at: float


def initial(specs: tuple[SpecConfig, ...], blocked: frozenset[str] = frozenset(),
            now: float | None = None) -> dict[str, ScopeState]:
    """Fresh state; `blocked` restores scopes a previous leader had blocked: they stay
    blocked until they have been healthy for their recovery time under this instance."""
    return {s.name: ScopeState(blocked=s.name in blocked, changed_at=now if s.name in blocked else None,
                               reason="restored from the lease" if s.name in blocked else "")
            for s in specs}


def step_scope(spec: SpecConfig, st: ScopeState, now: float,
               verdict: Verdict | None) -> tuple[ScopeState, Command | None]:
    if verdict is None:
        return st, None
    if not verdict.healthy:
        since = now if st.unhealthy_since is None else st.unhealthy_since
        if verdict.since is not None:
            since = min(since, verdict.since)
        st = replace(st, unhealthy_since=since, healthy_since=None, reason=verdict.reason)
        if not st.blocked and now - since >= spec.loss_time_s:
            why = f"unhealthy for {now - since:.0f}s ≥ loss_time {spec.loss_time_s}s: {verdict.reason}"
            return replace(st, blocked=True, changed_at=now, reason=why), Command("block", spec.name, why, now)
        return st, None
    since = now if st.healthy_since is None else st.healthy_since
    st = replace(st, healthy_since=since, unhealthy_since=None, reason=verdict.reason)
    if st.blocked and now - since >= spec.recovery_time_s:
        why = f"healthy for {now - since:.0f}s ≥ recovery_time {spec.recovery_time_s}s: {verdict.reason}"
        return replace(st, blocked=False, changed_at=now, reason=why), Command("unblock", spec.name, why, now)
    return st, None


def step(specs: tuple[SpecConfig, ...], states: Mapping[str, ScopeState], now: float,
         verdicts: Mapping[str, Verdict | None]) -> tuple[dict[str, ScopeState], list[Command]]:
    """One decision for every spec, in config order (so commands come out deterministic)."""
    out: dict[str, ScopeState] = {}
    commands: list[Command] = []
    for spec in specs:
        st, cmd = step_scope(spec, states.get(spec.name, ScopeState()), now, verdicts.get(spec.name))
        out[spec.name] = st
        if cmd is not None:
            commands.append(cmd)
    return out, commands


def blocked_names(states: Mapping[str, ScopeState]) -> frozenset[str]:
    return frozenset(n for n, s in states.items() if s.blocked)


def silent(critical: Mapping[str, str | None]) -> bool:
    """`critical` maps each critical component to its failure (None = working)."""
    return any(problem is not None for problem in critical.values())
