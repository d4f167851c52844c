"""`pool-retires-before-path` (INVARIANTS.md, "Links to what the app depends on"; issue 12): a
pooled connection is touched or retired before any idle timeout on its way closes it; a
property over the region only this rule reads, its boundaries, and what off and unknown mean."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing.model import RDS_PROXY_IDLE_CLIENT_TIMEOUT_S, ConnectionPool, Stack
from tests.timing.strategies import base, edit, error_ids, findings_of, seconds

RULE = "pool-retires-before-path"
MARGIN = base()["margin_s"]


def build(*pools: dict) -> Stack:
    return Stack.model_validate(edit(base(), {"services.0.pools": list(pools)}))


def pool(**fields) -> dict:
    return {"name": "orders-db", **fields}


def test_rds_proxys_idle_client_timeout_is_half_an_hour_and_a_pools_numbers_are_unknown() -> None:
    assert RDS_PROXY_IDLE_CLIENT_TIMEOUT_S == 30 * 60
    p = ConnectionPool(name="db")
    assert (p.max_lifetime_s, p.keepalive_s, p.path_idle_s, p.server_idle_s) == (None, None, None, None)


@given(seconds(1, 7200), seconds(1, 7200), seconds(1, 7200), seconds(1, 7200))
@example(345, 0, 350, 1800).via("slack 0: retired the margin before the NLB's 350 s")
@example(346, 0, 350, 1800).via("slack -1")
@example(1800, 120, 350, 1800).via("the keep-alive, not the lifetime, bounds the idle time")
def test_the_sooner_of_touch_and_retire_comes_a_margin_before_every_limit(life, keepalive, net, server) -> None:
    stack = build(pool(max_lifetime_s=life, keepalive_s=keepalive, path_idle_s=net, server_idle_s=server))
    idle = min(v for v in (life, keepalive) if v)
    assert (RULE in error_ids(stack)) == (idle + MARGIN > min(net, server))
    found = findings_of(stack, RULE, "api")
    assert [f.slack_s for f in found] == [net - idle - MARGIN, server - idle - MARGIN]
    assert [f.right.source for f in found] == ["pools[0].path_idle_s", "pools[0].server_idle_s"]


@given(seconds(1, 7200))
def test_a_limit_that_is_off_is_not_judged(life) -> None:
    assert findings_of(build(pool(max_lifetime_s=life, path_idle_s=0, server_idle_s=0)), RULE) == []
    [f] = findings_of(build(pool(max_lifetime_s=life, keepalive_s=0, path_idle_s=0, server_idle_s=600)), RULE)
    assert f.right.source == "pools[0].server_idle_s"


def test_a_pool_that_neither_touches_nor_retires_breaks_any_limit() -> None:
    [f] = findings_of(build(pool(max_lifetime_s=0, keepalive_s=0, path_idle_s=350, server_idle_s=0)), RULE, "api")
    assert f.render() == (f"ERROR {RULE}  api: pool idle unbounded (pools[0].max_lifetime_s 0 and "
                          "pools[0].keepalive_s 0) > path idle 350s (pools[0].path_idle_s) → give pool orders-db a "
                          f"maximum lifetime or a keep-alive of at most {350 - MARGIN}s")
    assert f.left.fields == ("pools[0].max_lifetime_s", "pools[0].keepalive_s")
    # a known limit is the one judged, whatever the order of the unknown ones
    [f] = findings_of(build(pool(max_lifetime_s=0, keepalive_s=0, server_idle_s=600)), RULE, "api")
    assert (f.status, f.right.source) == ("error", "pools[0].server_idle_s")
    # only unknown limits: whether one closes the connection is what decides it
    [f] = findings_of(build(pool(max_lifetime_s=0, keepalive_s=0, server_idle_s=0)), RULE, "api")
    assert (f.status, f.needs) == ("skipped", ("pools[0].path_idle_s",))


def test_the_fix_names_the_pool_and_the_latest_second_that_holds() -> None:
    found = findings_of(build(pool(max_lifetime_s=1800, keepalive_s=0, path_idle_s=350,
                                   server_idle_s=RDS_PROXY_IDLE_CLIENT_TIMEOUT_S)), RULE, "api")
    assert [f.render() for f in found] == [
        f"ERROR {RULE}  api: max_lifetime 1800s (pools[0].max_lifetime_s) + margin {MARGIN}s > path idle 350s "
        f"(pools[0].path_idle_s)  slack {350 - 1800 - MARGIN}s → retire or touch pool orders-db's idle connections "
        f"within {350 - MARGIN}s (pools[0].max_lifetime_s or pools[0].keepalive_s)",
        f"ERROR {RULE}  api: max_lifetime 1800s (pools[0].max_lifetime_s) + margin {MARGIN}s > server idle 1800s "
        f"(pools[0].server_idle_s)  slack {-MARGIN}s → retire or touch pool orders-db's idle connections within "
        f"{1800 - MARGIN}s (pools[0].max_lifetime_s or pools[0].keepalive_s)"]
    [ok, _] = findings_of(build(pool(max_lifetime_s=1800, keepalive_s=120, path_idle_s=350, server_idle_s=1800)), RULE)
    assert (ok.left.label, ok.left.source) == ("pool idle", "min(pools[0].keepalive_s 120, pools[0].max_lifetime_s 1800)")
    [alone] = findings_of(build(pool(max_lifetime_s=0, keepalive_s=120, path_idle_s=350, server_idle_s=0)), RULE)
    assert alone.render() == (f"OK {RULE}  api: keepalive 120s (pools[0].keepalive_s) + margin {MARGIN}s ≤ path idle "
                              f"350s (pools[0].path_idle_s)  slack {350 - 120 - MARGIN}s")
    [open_] = findings_of(build(pool(max_lifetime_s=0, path_idle_s=350, server_idle_s=0)), RULE)
    assert open_.left.render() == "keepalive unknown (pools[0].keepalive_s)"


@pytest.mark.parametrize(("fields", "statuses", "needs"), [
    # the lifetime alone is too long, but an unknown keep-alive could still touch it in time
    ({"max_lifetime_s": 1800, "path_idle_s": 350}, ["skipped"], [("pools[0].keepalive_s",)]),
    # the lifetime alone fits: an unknown keep-alive can only make it shorter
    ({"max_lifetime_s": 300, "path_idle_s": 350}, ["ok"], [()]),
    ({"keepalive_s": 0, "path_idle_s": 350}, ["skipped"], [("pools[0].max_lifetime_s",)]),
    ({"max_lifetime_s": 300, "keepalive_s": 0}, ["skipped", "skipped"],
     [("pools[0].path_idle_s",), ("pools[0].server_idle_s",)]),
])
def test_an_unknown_is_skipped_naming_it_unless_the_known_side_decides(fields, statuses, needs) -> None:
    found = findings_of(build(pool(**{"server_idle_s": 0, **fields} if "path_idle_s" in fields else fields)), RULE)
    assert [f.status for f in found] == statuses
    assert [f.needs for f in found] == needs


def test_a_pool_with_nothing_on_its_way_does_not_stop_the_next_from_being_judged() -> None:
    stack = build(pool(max_lifetime_s=1800, path_idle_s=0, server_idle_s=0),
                  {"name": "cache", "max_lifetime_s": 600, "keepalive_s": 0, "path_idle_s": 350, "server_idle_s": 0})
    assert [(f.status, f.left.source) for f in findings_of(stack, RULE)] == [("error", "pools[1].max_lifetime_s")]
    # nor does one that neither touches nor retires its connections
    stack = build(pool(max_lifetime_s=0, keepalive_s=0, path_idle_s=350, server_idle_s=0),
                  {"name": "cache", "max_lifetime_s": 600, "keepalive_s": 0, "path_idle_s": 350, "server_idle_s": 0})
    assert [(f.status, f.left.label) for f in findings_of(stack, RULE)] == [("error", "pool idle"), ("error", "max_lifetime")]


def test_every_pool_is_judged_and_two_pools_need_two_names() -> None:
    stack = build(pool(max_lifetime_s=300, path_idle_s=350, server_idle_s=0),
                  {"name": "cache", "max_lifetime_s": 600, "keepalive_s": 0, "path_idle_s": 350, "server_idle_s": 0})
    assert [f.status for f in findings_of(stack, RULE)] == ["ok", "error"]
    assert findings_of(stack, RULE)[1].left.source == "pools[1].max_lifetime_s"
    from lockstep.timing.config import stack_from_config
    from lockstep.timing.inputs import ConfigError
    with pytest.raises(ConfigError, match="pools: orders-db is named twice"):
        stack_from_config(edit(base(), {"services.0.pools": [pool(), pool()]}))


@st.composite
def pool_stacks(draw) -> Stack:
    def maybe(lo: int, hi: int):
        return draw(st.none() | st.just(0) | seconds(lo, hi))
    pools = [{"name": f"p{i}", "max_lifetime_s": maybe(30, 2400), "keepalive_s": maybe(30, 600),
              "path_idle_s": maybe(60, 900), "server_idle_s": maybe(60, 2400)} for i in range(draw(st.integers(0, 3)))]
    return Stack.model_validate(edit(base(), {"services.0.pools": pools, "margin_s": draw(st.integers(0, 30))}))


@given(pool_stacks())
def test_the_rule_breaks_exactly_where_the_catalogues_formula_does(stack) -> None:
    from tests.timing import oracle
    assert error_ids(stack) == oracle.stack_errors(stack)
