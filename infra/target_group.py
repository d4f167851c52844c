"""`TargetGroup`: an ELBv2 target group with every timing field explicit, and what attaches it.

The LBC, Pulumi and the AWS API each default the health check differently (INVARIANTS.md),
so nothing is left to a default: the interval × unhealthy threshold the drain rules were
judged on is exactly what the load balancer runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from lockstep.timing.extract import traffic as T
from lockstep.timing.model import LoadBalancer
from lockstep.timing.lbkinds import KINDS

TYPE = "lockstep:infra:TargetGroup"


@dataclass(frozen=True)
class TargetGroupArgs:
    """`lb`: the service's load balancer model; `service`: the service name (tags, names)."""

    service: str
    lb: LoadBalancer


class TargetGroup(pulumi.ComponentResource):
    """Outputs: `arn` (the target group's ARN, bound by the TargetGroupBinding) and
    `attachment` (the listener rule or listener, or None: an unattached group never
    reports healthy, which `readiness-gate-can-pass` already refuses for gated services)."""

    arn: pulumi.Output[str]
    group: aws.lb.TargetGroup
    attachment: aws.lb.ListenerRule | aws.lb.Listener | None

    def __init__(self, name: str, args: TargetGroupArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        lb = args.lb
        hc = lb.health_check
        child = pulumi.ResourceOptions(parent=self)
        http = hc.protocol in ("HTTP", "HTTPS")
        self.group = aws.lb.TargetGroup(
            f"{name}-tg",
            port=lb.port,
            protocol=lb.protocol,
            target_type=lb.target_type,
            vpc_id=lb.vpc_id,
            deregistration_delay=lb.deregistration_delay_s,
            # Slow start exists on some kinds' target groups only; the others reject the attribute.
            slow_start=lb.slow_start_s if KINDS[lb.kind].slow_start else None,
            health_check=aws.lb.TargetGroupHealthCheckArgs(
                enabled=True,
                protocol=hc.protocol,
                port=str(hc.port),
                path=hc.path if http else None,
                matcher=hc.matcher if http else None,
                interval=hc.interval_s,
                timeout=hc.timeout_s,
                healthy_threshold=hc.healthy_threshold,
                unhealthy_threshold=hc.unhealthy_threshold,
            ),
            # NLB target groups: what happens to an unhealthy or deregistered target's open
            # connections (nlb-connections-survive-removal judges these numbers); the other kinds
            # reject the attributes
            **self._connection_attributes(lb),
            tags={"lockstep.dev/service": args.service},
            opts=child,
        )
        self.arn = self.group.arn
        self.attachment = self._attach(name, lb, child)
        self.register_outputs({"arn": self.arn})

    @staticmethod
    def _connection_attributes(lb: LoadBalancer) -> dict[str, object]:
        if not KINDS[lb.kind].connection_termination:
            return {}
        # argument names from the table the audit and the pack read these attributes by
        state = aws.lb.TargetGroupTargetHealthStateArgs(**{
            T.UNHEALTHY_TERMINATION.arg: lb.unhealthy_connection_termination,
            # the API takes a draining interval only when unhealthy connections are kept
            T.UNHEALTHY_DRAINING.arg: None if lb.unhealthy_connection_termination else lb.unhealthy_draining_interval_s})
        return {T.DEREGISTRATION_TERMINATION.arg: lb.deregistration_connection_termination,
                T.HEALTH_STATES[1]: [state]}

    def _attach(self, name: str, lb: LoadBalancer,
                child: pulumi.ResourceOptions) -> aws.lb.ListenerRule | aws.lb.Listener | None:
        if lb.attach_to_arn is None:
            return None
        forward = aws.lb.ListenerRuleActionArgs(type="forward", target_group_arn=self.group.arn)
        if KINDS[lb.kind].attaches_by == "listener rule":
            return aws.lb.ListenerRule(
                f"{name}-rule",
                listener_arn=lb.attach_to_arn,
                priority=lb.rule_priority,
                actions=[forward],
                conditions=[aws.lb.ListenerRuleConditionArgs(
                    path_pattern=aws.lb.ListenerRuleConditionPathPatternArgs(
                        values=list(lb.path_patterns)))],
                opts=child,
            )
        return aws.lb.Listener(
            f"{name}-listener",
            load_balancer_arn=lb.attach_to_arn,
            port=lb.listener_port,
            protocol=lb.protocol,
            default_actions=[aws.lb.ListenerDefaultActionArgs(type="forward",
                                                              target_group_arn=self.group.arn)],
            opts=child,
        )
