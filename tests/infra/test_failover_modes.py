"""RegionalFailover in its other shapes: alias records, weighted routing, negotiate mode."""

from __future__ import annotations

import json

from tests.infra.support import example_values, render
from lockstep.timing.config import stack_from_config


def test_alias_records_point_at_the_regional_load_balancers_and_carry_no_ttl():
    values = example_values()
    fo = values["failover"]
    fo["alias"], fo["ttl_s"] = True, None
    for i, region in enumerate(fo["regions"]):
        region["lb_dns_name"] = f"edge-{i}.elb.amazonaws.com"
        region["lb_zone_id"] = f"Z{i}ELBZONE"
    res = render(values)
    for i, region in enumerate(fo["regions"]):
        rec = res.one("Record", f"failover-{region['name']}-record")
        assert rec.inputs["type"] == "A" and "ttl" not in rec.inputs, rec.urn
        assert rec.inputs["aliases"][0]["name"] == region["lb_dns_name"], rec.urn
        assert rec.inputs["aliases"][0]["zoneId"] == region["lb_zone_id"], rec.urn


def test_weighted_routing_uses_each_regions_weight():
    values = example_values()
    values["failover"]["routing"] = "weighted"
    for region, weight in zip(values["failover"]["regions"], (3, 1)):
        region["weight"] = weight
    res = render(values)
    for region in values["failover"]["regions"]:
        rec = res.one("Record", f"failover-{region['name']}-record")
        assert rec.inputs["weightedRoutingPolicies"] == [{"weight": region["weight"]}], rec.urn
        assert "failoverRoutingPolicies" not in rec.inputs, rec.urn


def test_negotiate_mode_hands_the_regions_to_the_entry_service_and_creates_no_dns():
    values = example_values()
    values["failover"]["mode"] = "negotiate"
    stack = stack_from_config(values)
    res = render(values)
    assert not res.of("Record") and not res.of("HealthCheck")
    entry = next(s for s in stack.services if s.name == stack.failover.entry_service)
    cm = res.k8s("ConfigMap", entry.namespace, f"{entry.name}-regions")
    doc = json.loads(cm.inputs["data"]["regions.json"])
    assert doc["poll_interval_s"] == stack.failover.check_interval_s, cm.urn
    assert doc["failure_threshold"] == stack.failover.failure_threshold, cm.urn
    assert [(r["name"], r["role"]) for r in doc["regions"]] == [(r.name, r.role) for r in stack.failover.regions]
    assert doc["regions"][0]["health_url"] == "https://api-euw1.example.com:443/api/health"
