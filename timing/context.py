"""What rules need besides the model pieces, and the container stack-scope rules judge.

`Ctx` is the stack's margin and cluster version. `Scene` holds exactly the pieces the
stack-scope rules read; `lockstep check` builds it from a validated `Stack`, and the audit and
the policy pack build it from the pieces the linker found in resources — each piece a valid
model object, so no model is ever assembled that breaks its own types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lockstep.timing.model import Accept, Failover, HeartbeatService, HeartbeatSpec, Service, Stack, Watchdog


@dataclass(frozen=True, slots=True)
class Ctx:
    margin_s: int
    kubernetes_version: tuple[int, int]

    @property
    def version_text(self) -> str:
        return f"{self.kubernetes_version[0]}.{self.kubernetes_version[1]}"


def parse_version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def context(stack: Stack) -> Ctx:
    return Ctx(stack.margin_s, parse_version(stack.kubernetes_version))


@dataclass(frozen=True, slots=True)
class Scene:
    """The pieces of a stack the rules judge. `accept` is the stack's own list (for findings
    that belong to no service); each service carries its own."""

    services: tuple[Service, ...] = ()
    watchdog: Watchdog | None = None
    heartbeat: HeartbeatService | None = None
    heartbeat_specs: tuple[HeartbeatSpec, ...] = ()
    failover: Failover | None = None
    accept: tuple[Accept, ...] = ()

    @classmethod
    def of(cls, stack: Stack) -> Scene:
        return cls(stack.services, stack.watchdog, stack.heartbeat, stack.heartbeat_specs, stack.failover,
                   stack.accept)
