"""`RegionalFailover`: how clients reach the other region (seed 002).

`dns`: a Route 53 health check per region and failover (or weighted) records, so
`failover_time` = request interval × failures + TTL + client reconnect is what Route 53 runs.
`negotiate`: no DNS at all; the application's negotiate step polls each region's health API,
so it gets the regions, their roles and health URLs and the poll timings as a ConfigMap.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from lockstep.infra import kube
from lockstep.timing import derived
from lockstep.timing.model import Failover, Region, Stack

TYPE = "lockstep:infra:RegionalFailover"


@dataclass(frozen=True)
class RegionalFailoverArgs:
    """`namespace`: the entry service's Namespace resource (negotiate mode's ConfigMap)."""

    stack: Stack
    namespace: pulumi.Resource


def health_url(region: Region) -> str:
    return f"https://{region.endpoint}:{region.health_port}{region.health_path}"


class RegionalFailover(pulumi.ComponentResource):
    """Outputs: `providers`, `health_checks`, `records` (dns mode, by region name) and
    `config_map` (negotiate mode, else None)."""

    providers: dict[str, aws.Provider]
    health_checks: dict[str, aws.route53.HealthCheck]
    records: dict[str, aws.route53.Record]
    config_map: k8s.core.v1.ConfigMap | None

    def __init__(self, name: str, args: RegionalFailoverArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        fo = args.stack.failover
        if fo is None:
            raise ValueError("the stack declares no failover")
        self.providers, self.health_checks, self.records = {}, {}, {}
        self.config_map = None
        if fo.mode == "dns":
            for region in fo.regions:
                self._region(name, fo, region)
        else:
            self.config_map = self._negotiate(name, args.stack, fo, args.namespace)
        self.register_outputs({"regions": [r.name for r in fo.regions],
                               "health_checks": {k: v.id for k, v in self.health_checks.items()}})

    def _region(self, name: str, fo: Failover, region: Region) -> None:
        # One provider per region, as the regions' load balancers and their operators are.
        provider = aws.Provider(f"{name}-{region.name}-aws", region=region.aws_region,
                                opts=pulumi.ResourceOptions(parent=self))
        opts = pulumi.ResourceOptions(parent=self, provider=provider)
        check = aws.route53.HealthCheck(
            f"{name}-{region.name}-health",
            type="HTTPS", fqdn=region.endpoint, port=region.health_port,
            resource_path=region.health_path, request_interval=fo.check_interval_s,
            failure_threshold=fo.failure_threshold,
            tags={"Name": f"{name}-{region.name}", "lockstep.dev/role": region.role}, opts=opts)
        routing: dict[str, object] = (
            {"failover_routing_policies": [aws.route53.RecordFailoverRoutingPolicyArgs(
                type=region.role.upper())]}
            if fo.routing == "failover" else
            {"weighted_routing_policies": [aws.route53.RecordWeightedRoutingPolicyArgs(
                weight=region.weight)]})
        if fo.alias:
            # An alias to an ELB answers with the ELB's fixed TTL (limits.R53_ALIAS_TTL),
            # which `failover_time` already counts; alias records take no ttl.
            target: dict[str, object] = {"type": "A", "aliases": [aws.route53.RecordAliasArgs(
                name=region.lb_dns_name, zone_id=region.lb_zone_id,
                # Our health check is the detector the model times; don't add the ELB's.
                evaluate_target_health=False)]}
        else:
            target = {"type": "CNAME", "ttl": derived.failover_ttl(fo).value,
                      "records": [region.endpoint]}
        self.providers[region.name] = provider
        self.health_checks[region.name] = check
        self.records[region.name] = aws.route53.Record(
            f"{name}-{region.name}-record", zone_id=fo.hosted_zone_id, name=fo.record_name,
            set_identifier=region.name, health_check_id=check.id, **target, **routing,
            opts=opts)

    def _negotiate(self, name: str, stack: Stack, fo: Failover,
                   namespace: pulumi.Resource) -> k8s.core.v1.ConfigMap:
        entry = next(s for s in stack.services if s.name == fo.entry_service)
        doc = {
            "regions": [{"name": r.name, "aws_region": r.aws_region, "role": r.role,
                         "endpoint": r.endpoint, "health_url": health_url(r), "weight": r.weight}
                        for r in fo.regions],
            "poll_interval_s": fo.check_interval_s, "failure_threshold": fo.failure_threshold,
            "failback_checks": fo.failback_checks, "failback_close": fo.failback_close,
            "client_reconnect_s": fo.client_reconnect_s,
        }
        return k8s.core.v1.ConfigMap(
            f"{name}-regions", metadata=kube.metadata(f"{entry.name}-regions", entry.namespace,
                                                      {"app.kubernetes.io/part-of": entry.name}),
            data={"regions.json": json.dumps(doc, indent=2)},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace]))
