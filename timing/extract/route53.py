"""A Route 53 health check and the record it guards → the failover's timing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lockstep.timing.extract.values import build, get, items, num
from lockstep.timing.model import FailoverTiming

def route53_check(props: Mapping[str, Any]) -> tuple[int, int]:
    """(request interval, failure threshold) of a Route 53 health check; API defaults 30, 3."""
    interval, failures = num(props, "requestInterval"), num(props, "failureThreshold")
    return 30 if interval is None else interval, 3 if failures is None else failures


def failover(check: Mapping[str, Any], record: Mapping[str, Any], entry_service: str | None) -> FailoverTiming:
    """A Route 53 health check and the record it guards → the failover's timing (mode `dns`).
    What no resource states — RTO, client reconnect time, failback checks — is unknown (None)."""
    interval, failures = route53_check(check)
    alias = bool(items(get(record, "aliases")))
    ttl = num(record, "ttl")
    routing = "weighted" if items(get(record, "weightedRoutingPolicies")) else "failover"
    return build(FailoverTiming, {
        "mode": "dns", "routing": routing, "entry_service": entry_service, "check_interval_s": interval,
        "failure_threshold": failures, "ttl_s": None if alias else ttl, "alias": alias,
        "client_reconnect_s": None, "rto_s": None, "failback_checks": None})
