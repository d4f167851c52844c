"""Policy configuration: what the resources do not say and the stack config would.

Every policy takes the same keys (`pulumi preview --policy-pack policies
--policy-pack-config policy-config.json`, per policy name). Defaults come from
`timing.limits`; the propagation delays default to the documented ones for the load
balancer's kind (INVARIANTS.md) when unset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyConfigSchema

from lockstep.timing import limits as L
from lockstep.timing.lbkinds import ALB
from lockstep.timing.context import Ctx, parse_version

NATIVE_SLEEP_VERSION = ".".join(str(n) for n in L.NATIVE_SLEEP_SINCE)

SCHEMA = PolicyConfigSchema(properties={
    "margin_s": {"type": "integer", "minimum": 0, "default": L.MARGIN_DEFAULT,
                 "description": "seconds every timing relation must hold by (the stack's margin_s)"},
    "deregistration_propagation_s": {
        "type": "integer", "minimum": 0,
        "description": "seconds until a load balancer stops sending to a deregistered target "
                       "(default by kind: ALB 15, NLB 120)"},
    "registration_propagation_s": {
        "type": "integer", "minimum": 0,
        "description": "seconds until a new target receives traffic (default by kind: ALB 15, NLB 120)"},
    "alb_idle_timeout_s": {"type": "integer", "minimum": 1,
                           "default": ALB.lbc_defaults["idle_timeout_s"],
                           "description": "idle timeout of the ALB the target groups are attached to"},
    "kubernetes_version": {"type": "string", "pattern": r"^1\.[0-9]{1,2}$", "default": NATIVE_SLEEP_VERSION,
                           "description": "cluster minor version, e.g. \"1.30\" (decides the native sleep preStop)"},
    "entry_service": {"type": "string",
                      "description": "the regional entry workload the failover health checks probe "
                                     "(default: the only workload behind an HTTP(S) target group, else the "
                                     "one whose ALB listener rule path pattern matches the checks' path)"},
    "assume_lbc_services": {"type": "boolean", "default": False,
                            "description": "take a `type: LoadBalancer` Service without loadBalancerClass for an "
                                           "AWS Load Balancer Controller NLB (LBC >= 2.5's Service webhook)"},
})


@dataclass(frozen=True)
class Settings:
    margin_s: int = L.MARGIN_DEFAULT
    deregistration_propagation_s: int | None = None
    registration_propagation_s: int | None = None
    alb_idle_timeout_s: int = ALB.lbc_defaults["idle_timeout_s"]
    kubernetes_version: str = NATIVE_SLEEP_VERSION
    entry_service: str | None = None
    assume_lbc_services: bool = False

    @property
    def ctx(self) -> Ctx:
        return Ctx(self.margin_s, parse_version(self.kubernetes_version))

    @property
    def link_options(self) -> dict[str, Any]:
        """What the linker takes from the policy config (see `timing.bind.link.link`)."""
        return {"deregistration_propagation_s": self.deregistration_propagation_s,
                "registration_propagation_s": self.registration_propagation_s,
                "alb_idle_timeout_s": self.alb_idle_timeout_s, "entry_service": self.entry_service,
                "assume_lbc_services": self.assume_lbc_services}


def settings(config: Mapping[str, Any] | None) -> Settings:
    """The policy's config (`args.get_config()`), numbers as ints, unknown keys ignored."""
    known = {k: v for k, v in (config or {}).items() if k in Settings.__dataclass_fields__}
    for key, value in known.items():
        if isinstance(value, float) and value.is_integer():
            known[key] = int(value)
    return Settings(**known)
