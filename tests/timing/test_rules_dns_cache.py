"""`client-dns-cache-within-ttl` (INVARIANTS.md, "Regional failover"; issue 12): DNS failover
moves a client only when it asks again, so its cache must end within the record's TTL, and the
failover time counts the longer of the two."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing import limits as L
from lockstep.timing.model import Stack
from tests.timing.strategies import base, edit, error_ids, findings_of, seconds

RULE = "client-dns-cache-within-ttl"


def build(changes: dict) -> Stack:
    return Stack.model_validate(edit(base(), changes))


@given(seconds(0, 600), st.integers(0, 300))
@example(60, 60).via("slack 0: the cache ends with the TTL")
@example(61, 60).via("slack -1")
def test_a_clients_dns_cache_must_end_within_the_records_ttl(cache, ttl) -> None:
    stack = build({"failover.client_dns_cache_s": cache, "failover.ttl_s": ttl, "failover.rto_s": 86400})
    assert (RULE in error_ids(stack)) == (cache > ttl)
    [f] = findings_of(stack, RULE)
    assert f.slack_s == ttl - cache
    assert f.fix == f"cache resolved names for ≤{ttl}s in the clients (the record's TTL)"


def test_an_alias_records_ttl_is_route_53s_fixed_one() -> None:
    stack = build({"failover.alias": True, "failover.ttl_s": None, "failover.client_dns_cache_s": L.R53_ALIAS_TTL + 1})
    [f] = findings_of(stack, RULE)
    assert (f.status, f.right.value, f.right.source) == ("error", L.R53_ALIAS_TTL, "alias record: fixed")


def test_negotiated_failover_asks_no_dns_and_an_unknown_cache_is_skipped_naming_it() -> None:
    assert findings_of(build({"failover.mode": "negotiate"}), RULE) == []
    [f] = findings_of(build({"failover.client_dns_cache_s": None}), RULE)
    assert (f.status, f.needs) == ("skipped", ("failover.client_dns_cache_s",))


@given(seconds(0, 300), seconds(0, 300), seconds(30, 600))
def test_the_failover_time_counts_the_longer_of_the_ttl_and_the_clients_cache(cache, ttl, rto) -> None:
    stack = build({"failover.client_dns_cache_s": cache, "failover.ttl_s": ttl, "failover.rto_s": rto})
    fo = stack.failover
    [f] = findings_of(stack, "failover-within-rto")
    assert f.left.value == fo.check_interval_s * fo.failure_threshold + max(ttl, cache) + fo.client_reconnect_s
    assert f"max(ttl, client_dns_cache) {max(ttl, cache)}" in f.left.source


def test_an_unknown_cache_leaves_the_failover_time_a_lower_bound() -> None:
    stack = build({"failover.client_dns_cache_s": None})
    [f] = findings_of(stack, "failover-within-rto")
    assert (f.status, f.needs) == ("skipped", ("failover.client_dns_cache_s",))
    fo = stack.failover
    short = build({"failover.client_dns_cache_s": None,
                   "failover.rto_s": fo.check_interval_s * fo.failure_threshold + fo.ttl_s + fo.client_reconnect_s - 1})
    [f] = findings_of(short, "failover-within-rto")
    assert f.status == "error"  # broken by the TTL alone, whatever the cache


@given(st.sampled_from(["dns", "negotiate"]), st.none() | seconds(0, 300), seconds(0, 300), seconds(30, 600))
def test_the_failover_rules_break_exactly_where_the_catalogues_formulas_do(mode, cache, ttl, rto) -> None:
    from tests.timing import oracle
    stack = build({"failover.mode": mode, "failover.client_dns_cache_s": cache, "failover.ttl_s": ttl,
                   "failover.rto_s": rto})
    assert error_ids(stack) == oracle.stack_errors(stack)


def test_the_finding_names_the_clients_cache_and_the_records_ttl() -> None:
    [f] = findings_of(build({"failover.client_dns_cache_s": 90, "failover.ttl_s": 60}), RULE)
    assert f.render() == (f"ERROR {RULE}  failover: client_dns_cache 90s (failover.client_dns_cache_s) > ttl 60s "
                          "(failover.ttl_s)  slack -30s → cache resolved names for ≤60s in the clients (the record's TTL)")
    assert (f.subject, f.left.fields) == ("failover", ("failover.client_dns_cache_s",))
    [f] = findings_of(build({"failover.client_dns_cache_s": None, "failover.ttl_s": 60}), RULE)
    assert f.render() == (f"SKIPPED {RULE}  failover: client_dns_cache unknown (failover.client_dns_cache_s) ≤ ttl 60s "
                          "(failover.ttl_s)  slack 60s → needs failover.client_dns_cache_s")
