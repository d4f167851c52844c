"""Pulumi stack config → the frozen timing model, once, before any resource exists.

`pulumi.Config` hands every value over as a string: structured keys (services, heartbeat,
...) as JSON, scalars as their text. Which is which comes from the model's own field types,
so a new top-level key needs no change here. Numbers are never defaulted here: a key that
is not set is left out and the model's default (if it has one) applies.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi

from lockstep.timing.config import NAMESPACE, ConfigError, stack_from_config
from lockstep.timing.controllers import LBC_ATTACHED
from lockstep.timing.lbkinds import KINDS
from lockstep.timing.invariants import raise_errors
from lockstep.timing.model import LoadBalancer, Stack

# Keys whose config value is a plain string, not JSON ("1.30" must not become 1.3).
TEXT_KEYS = frozenset(name for name, f in Stack.model_fields.items() if f.annotation is str)


def read_values(config: pulumi.Config) -> dict[str, Any]:
    """The `lockstep:` values of the running stack, namespace stripped, as the model
    takes them."""
    values: dict[str, Any] = {}
    for name in Stack.model_fields:
        raw = config.get(name)
        if raw is None:
            continue
        if name in TEXT_KEYS:
            values[name] = raw
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ConfigError([f"{NAMESPACE}:{name}: not valid YAML/JSON ({err.msg})"]) from None
        values[name] = value  # an empty optional section is absent: timing.config.present
    return values


# A canary routed by the ALB runs on the ALB the controller makes from the Ingress infra renders
# (`infra/ingress.py`): the ALB, its listener (on the controller's default port), the rule order
# and the target groups (in the cluster's VPC) are the controller's, so a stack value for them
# would be ignored; `check` judges such a group attached either way.
CONTROLLER_OWNED = ("rule_priority", "listener_port", "vpc_id")
CONTROLLER_OWNS = ("leave unset for a canary routed by the ALB: the controller makes the ALB, its listener and "
                   "target groups from the Ingress infra renders")


def controller_owned(lb: LoadBalancer) -> list[str]:
    """The listener and target-group fields a canary routed by the ALB states (none allowed)."""
    stated = ["attach_to_arn"] if lb.attach_to_arn != LBC_ATTACHED else []
    return stated + [name for name in CONTROLLER_OWNED if getattr(lb, name) is not None]


def deployable_errors(stack: Stack) -> list[str]:
    """What the model may leave open but a real deployment needs (input errors, exit 2).
    Kept here, not in the model: `check`, `plan` and `audit` judge partial stacks too."""
    problems: list[str] = []
    for i, svc in enumerate(stack.services):
        lb = svc.lb
        if lb is None:
            continue
        where = f"{NAMESPACE}:services.{i}.lb"
        if svc.argo is not None and svc.argo.traffic_routing == "alb":
            problems += [f"{where}.{name}: {CONTROLLER_OWNS}" for name in controller_owned(lb)]
            continue
        if lb.vpc_id is None:
            problems.append(f"{where}.vpc_id: required to create the target group")
        attaches_by = KINDS[lb.kind].attaches_by
        if lb.attach_to_arn is not None and attaches_by == "listener rule" and lb.rule_priority is None:
            problems.append(f"{where}.rule_priority: required to attach an {lb.kind.upper()} target group "
                            "with a listener rule")
        if lb.attach_to_arn is not None and attaches_by == "listener" and lb.listener_port is None:
            problems.append(f"{where}.listener_port: required to attach an {lb.kind.upper()} target group "
                            "with a listener")
    fo = stack.failover
    if fo is not None and fo.mode == "dns":
        for key in ("hosted_zone_id", "record_name"):
            if getattr(fo, key) is None:
                problems.append(f"{NAMESPACE}:failover.{key}: required in dns mode")
        if fo.alias:
            for i, region in enumerate(fo.regions):
                for key in ("lb_dns_name", "lb_zone_id"):
                    if getattr(region, key) is None:
                        problems.append(f"{NAMESPACE}:failover.regions.{i}.{key}: required "
                                        "when failover.alias is true")
    return problems


def load_stack(values: dict[str, Any]) -> Stack:
    """Validate the values into a `Stack`; raises `ConfigError` (input) or
    `timing.invariants.InvariantErrors` (error findings), never returns a broken stack."""
    stack = stack_from_config(values)
    problems = deployable_errors(stack)
    if problems:
        raise ConfigError(problems)
    raise_errors(stack)
    return stack


def broker_url(config: pulumi.Config, stack: Stack) -> pulumi.Output[str] | None:
    """The AMQP URL, as a Pulumi secret: it never reaches state or outputs in plain text.
    A missing or plain-text value is an input error: a plain value would sit unencrypted in
    the stack file."""
    if stack.heartbeat is None:
        return None
    key = stack.heartbeat.broker_secret_key
    how = f"set it with `pulumi config set --secret {NAMESPACE}:{key} amqp://...`"
    if not config.get(key):
        raise ConfigError([f"{NAMESPACE}:{key}: required by the heartbeat service; {how}"])
    if not pulumi.runtime.is_config_secret(config.full_key(key)):
        raise ConfigError([f"{NAMESPACE}:{key}: must be a secret; {how}"])
    return config.require_secret(key)
