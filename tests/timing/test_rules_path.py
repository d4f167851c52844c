"""The delivery path's rules (INVARIANTS.md "The delivery path as a chain of hops", issue 12).

Each rule: a property over a region where only that rule can break (the validator names it
alone iff the catalogue's formula is broken), its boundary (slack 0 passes, −1 fails), and
how the hop kinds' defaults and unknowns enter it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from tests.timing.strategies import API, BASKETBALL, DELETE, edit, error_ids, example_values, findings_of, only, seconds
from lockstep.timing.model import Stack
from lockstep.timing.hopkinds import HOP_KINDS
from lockstep.timing.path import hops

WEB, CHECKOUT = 4, 5  # its service behind ingress-nginx, and its meshed one
W, C = f"services.{WEB}", f"services.{CHECKOUT}"
NGINX = HOP_KINDS["ingress-nginx"].defaults
ISTIO = HOP_KINDS["istio-sidecar"].defaults


def build(changes: dict[str, Any] | None = None) -> Stack:
    """The example (with web behind ingress-nginx and the meshed checkout) with `changes`."""
    return Stack.model_validate(edit(example_values(), changes or {}))


def drain_of(stack: Stack):
    """checkout's mesh-drain-covers-lb finding on the drain (the other judges the start order)."""
    [f] = [f for f in findings_of(stack, "mesh-drain-covers-lb", "checkout") if "app_waits" not in f.left.source]
    return f


def expect_alone(stack: Stack, rule: str, broken: bool) -> None:
    assert error_ids(stack) == ({rule} if broken else set())


def test_every_rule_of_the_path_example_passes_and_every_path_rule_is_judged_there() -> None:
    from lockstep.timing.invariants import evaluate
    found = evaluate(build())
    assert [f.render() for f in found if f.status != "ok"] == []
    assert {"keepalive-chain-ordered", "timeouts-shrink-inward", "proxy-reload-spares-requests",
            "mesh-drain-covers-lb", "sidecar-outlives-app", "keepalive-outlasts-lb-idle"} <= {f.id for f in found}


def test_the_example_puts_web_behind_ingress_nginx_and_checkout_behind_its_sidecar() -> None:
    stack = build()
    assert (stack.services[WEB].name, stack.services[CHECKOUT].name) == ("web", "checkout")
    assert [h.kind for h in hops(stack.services[WEB])] == ["ingress-nginx", "app"]
    assert [h.kind for h in hops(stack.services[CHECKOUT])] == ["alb", "istio-sidecar", "app"]


# ---- keepalive-chain-ordered ------------------------------------------------------------------
@given(seconds(1, 600), seconds(1, 600))
@example(61, 60).via("slack 0")
@example(60, 60).via("slack -1: equal is a race")
def test_the_apps_keepalive_must_outlast_the_proxys_pool(keepalive, pool) -> None:
    stack = build({f"{W}.app.keepalive_s": keepalive, f"{W}.path.0.upstream_idle_s": pool})
    expect_alone(stack, "keepalive-chain-ordered", keepalive <= pool)
    assert only(stack, "keepalive-chain-ordered", "web").slack_s == keepalive - pool - 1


def test_an_unset_pool_idle_is_the_kinds_default_and_the_finding_says_so() -> None:
    web = only(build({f"{W}.app.keepalive_s": NGINX["upstream_idle_s"]}), "keepalive-chain-ordered", "web")
    assert web.status == "error"
    assert (web.right.value, web.right.label) == (NGINX["upstream_idle_s"],
                                                  "upstream-keepalive-timeout (ingress-nginx default)")
    # istio #55138: a DestinationRule left at Istio's 1 h idle in front of an app closing after 60 s
    values = build().services[CHECKOUT].path[0]
    assert values.upstream_idle_s == 60 and "upstream_idle_s" not in values.defaulted
    stripped = build({f"{C}.app.keepalive_s": 60, f"{C}.path.0.upstream_idle_s": None})
    found = only(stripped, "keepalive-chain-ordered", "checkout")
    assert (found.status, found.right.value) == ("error", ISTIO["upstream_idle_s"])


def test_the_lbs_pair_stays_keepalive_outlasts_lb_idle_and_reads_the_first_hop() -> None:
    # checkout's ALB (idle 60) reuses its connections to the sidecar, not to the app
    stack = build({f"{C}.path.0.client_idle_s": 60})
    expect_alone(stack, "keepalive-outlasts-lb-idle", True)
    f = only(stack, "keepalive-outlasts-lb-idle", "checkout")
    assert (f.left.source, f.right.source) == ("path[0].client_idle_s", "lb.idle_timeout_s")
    assert f.fix == ("raise path[0] (istio-sidecar)'s HttpConnectionManager idle_timeout to ≥61s "
                     "or lower the LB's idle timeout")
    # the app's own keep-alive is then the sidecar's business, not the ALB's
    assert "keepalive-outlasts-lb-idle" not in error_ids(build({f"{C}.app.keepalive_s": 61}))


def test_a_proxy_with_no_documented_idle_leaves_the_lbs_pair_skipped_with_its_field() -> None:
    stack = build({f"{C}.path.0": {"kind": "linkerd-proxy", "drain_s": 60}})
    f = only(stack, "keepalive-outlasts-lb-idle", "checkout")
    assert (f.status, f.needs) == ("skipped", ("path[0].client_idle_s",))
    # the Linkerd proxy's HTTP/1 pool toward the app drops idle connections after 3 s
    chain = only(stack, "keepalive-chain-ordered", "checkout")
    assert (chain.status, chain.right.value) == ("ok", HOP_KINDS["linkerd-proxy"].defaults["upstream_idle_s"])


def test_an_nlb_passes_the_connection_through_and_pairs_nothing() -> None:
    stack = build({f"services.{BASKETBALL}.path": [{"kind": "ingress-nginx"}],
                   f"services.{BASKETBALL}.app.keepalive_s": 30})
    assert findings_of(stack, "keepalive-outlasts-lb-idle", "basketball-feed") == []
    assert only(stack, "keepalive-chain-ordered", "basketball-feed").status == "error"


# ---- timeouts-shrink-inward -------------------------------------------------------------------
@given(seconds(1, 600))
@example(30).via("slack 0: the proxy waits exactly the longest request")
@example(29).via("slack -1")
def test_the_proxy_waits_at_least_the_apps_longest_request(read_timeout) -> None:
    stack = build({f"{W}.path.0.request_timeout_s": read_timeout})
    expect_alone(stack, "timeouts-shrink-inward", read_timeout < 30)
    assert only(stack, "timeouts-shrink-inward", "web").slack_s == read_timeout - 30


@given(seconds(1, 74))
@example(30).via("slack 0")
@example(29).via("slack -1: the ALB answers 504 before the app's first byte")
def test_an_albs_idle_timeout_bounds_the_longest_request_without_a_proxy(idle) -> None:
    stack = build({f"services.{API}.lb.idle_timeout_s": idle})
    expect_alone(stack, "timeouts-shrink-inward", idle < 30)


def test_a_hop_without_a_limit_is_passed_over_and_one_with_a_limit_joins_the_chain() -> None:
    f = only(build(), "timeouts-shrink-inward", "checkout")
    assert (f.left.source, f.right.source) == ("lb.idle_timeout_s", "app.max_request_s")
    stack = build({f"{C}.path.0.request_timeout_s": 10})
    outer, inner = findings_of(stack, "timeouts-shrink-inward", "checkout")
    assert (outer.status, outer.left.source, outer.right.source) == ("ok", "lb.idle_timeout_s",
                                                                     "path[0].request_timeout_s")
    assert (inner.status, inner.slack_s) == ("error", 10 - 20)
    wide = build({f"{C}.path.0.request_timeout_s": 90})
    assert [f.status for f in findings_of(wide, "timeouts-shrink-inward", "checkout")] == ["error", "ok"]


# ---- proxy-reload-spares-requests -------------------------------------------------------------
NO_FRONT = {f"{W}.path.0.lb": DELETE}  # the LB in front of the controller unstated: its clause is not judged
FRONT = f"{W}.path.0.lb"


@given(seconds(0, 600), seconds(0, 120), seconds(0, 900))
@example(30, 0, 30).via("slack 0 on both")
@example(29, 0, 300).via("slack -1: the reload kills the longest request")
@example(240, 61, 300).via("slack -1: the pod is killed before its workers finish")
def test_a_reload_lets_requests_end_and_the_grace_covers_the_shutdown(worker, delay, grace) -> None:
    stack = build({**NO_FRONT, f"{W}.path.0.worker_shutdown_s": worker, f"{W}.path.0.shutdown_delay_s": delay,
                   f"{W}.path.0.grace_s": grace})
    expect_alone(stack, "proxy-reload-spares-requests", worker < 30 or grace < worker + delay)
    request, pod = findings_of(stack, "proxy-reload-spares-requests", "web")
    assert (request.slack_s, pod.slack_s) == (worker - 30, grace - worker - delay)


def _front_detect(stack: Stack) -> int:
    lb = stack.services[WEB].path[0].lb
    return min({"deregistration": lb.deregistration_propagation_s, "endpoints": lb.endpoint_propagation_s,
                "health_check": lb.health_check.interval_s * lb.health_check.unhealthy_threshold}[p]
               for p in lb.removal)


@given(seconds(0, 300), seconds(0, 180), st.sampled_from(["ip", "instance"]))
@example(125, 120, "ip").via("slack 0: the NLB's deregistration 120 s + margin 5")
@example(124, 120, "ip").via("slack -1: the controller stops accepting while the NLB still sends")
@example(15, 10, "instance").via("slack 0: kube-proxy's endpoints 10 s + margin 5")
def test_the_controller_accepts_until_the_lb_in_front_has_noticed_it_going(delay, propagation, target) -> None:
    stack = build({f"{W}.path.0.shutdown_delay_s": delay, f"{W}.path.0.grace_s": 240 + delay,
                   f"{FRONT}.target_type": target, f"{FRONT}.deregistration_propagation_s": propagation,
                   f"{FRONT}.endpoint_propagation_s": propagation})
    need = _front_detect(stack)
    expect_alone(stack, "proxy-reload-spares-requests", delay < need + 5)
    *_, front = findings_of(stack, "proxy-reload-spares-requests", "web")
    assert (front.slack_s, front.right.value) == (delay - need - 5, need)
    assert front.right.fields and all(f.startswith("path[0].lb.") for f in front.right.fields)


def test_the_controllers_shutdown_delay_is_judged_only_against_a_stated_lb_and_names_its_fields() -> None:
    assert len(findings_of(build(NO_FRONT), "proxy-reload-spares-requests", "web")) == 2
    front = findings_of(build({f"{W}.path.0.shutdown_delay_s": DELETE}), "proxy-reload-spares-requests", "web")[-1]
    assert front.render() == (
        "ERROR proxy-reload-spares-requests  web: --shutdown-grace-period (ingress-nginx default) 0s "
        "(path[0].shutdown_delay_s) < lb_detect 120s (deregistration: path[0].lb.deregistration_propagation_s) "
        "+ margin 5s  slack -125s → raise path[0] (ingress-nginx)'s --shutdown-grace-period to ≥125s "
        "or detect faster")


def test_a_front_lb_field_no_input_states_leaves_the_clause_undecided_where_it_decides() -> None:
    from lockstep.timing import derived as d
    lb = build().services[WEB].path[0].lb
    object.__setattr__(lb, "_unknown", frozenset({"lb.deregistration_propagation_s"}))
    t = d.lb_detect(lb, "path[0].lb")
    assert (t.unknown, t.fields) == (("path[0].lb.deregistration_propagation_s",),
                                     ("path[0].lb.deregistration_propagation_s",))
    assert d.lb_detect(lb).unknown == ("lb.deregistration_propagation_s",)


def test_a_front_lb_is_refused_on_a_hop_that_is_no_ingress_proxy() -> None:
    lb = build().services[WEB].path[0].lb.model_dump()
    with pytest.raises(ValidationError, match="lb: istio-sidecar has no such setting"):
        build({f"{C}.path.0.lb": lb})


def test_the_reload_rule_reads_the_chart_and_nginx_defaults() -> None:
    unset = {f"{W}.path.0.shutdown_delay_s": DELETE, f"{W}.path.0.grace_s": DELETE, **NO_FRONT}
    request, pod = findings_of(build(unset), "proxy-reload-spares-requests", "web")
    assert (request.left.value, pod.left.value) == (NGINX["worker_shutdown_s"], NGINX["grace_s"])
    assert pod.right.value == NGINX["worker_shutdown_s"] + NGINX["shutdown_delay_s"]
    assert findings_of(build(), "proxy-reload-spares-requests", "checkout") == []  # Envoy does not reload so


# ---- mesh-drain-covers-lb and sidecar-outlives-app ---------------------------------------------
@given(seconds(0, 120))
@example(20).via("mesh-drain-covers-lb slack 0 (detection 15 + margin 5)")
@example(19).via("mesh-drain-covers-lb slack -1")
@example(40).via("sidecar-outlives-app slack 0 (drain 20 + finish 20)")
@example(39).via("sidecar-outlives-app slack -1")
def test_the_mesh_proxy_serves_until_the_lb_has_noticed_and_outlives_the_app(drain) -> None:
    stack = build({f"{C}.path.0.drain_s": drain})
    expected = ({"mesh-drain-covers-lb"} if drain < 20 else set()) | ({"sidecar-outlives-app"} if drain < 40 else set())
    assert error_ids(stack) == expected


def test_an_unset_mesh_drain_is_the_kinds_default() -> None:
    stack = build({f"{C}.path.0.drain_s": None})
    f = drain_of(stack)
    assert (f.status, f.left.value, f.left.label) == ("error", ISTIO["drain_s"],
                                                     "ProxyConfig terminationDrainDuration (istio-sidecar default)")


def test_the_sidecar_short_form_is_judged_by_both_rules_and_left_out_of_the_chains() -> None:
    stack = build({f"{C}.path": [], f"{C}.sidecar": {"drain_s": 39}})
    assert error_ids(stack) == {"sidecar-outlives-app"}
    assert [f.left.source for f in findings_of(stack, "keepalive-outlasts-lb-idle", "checkout")] == ["app.keepalive_s"]
    assert drain_of(stack).left.source == "sidecar.drain_s"


# ---- the model ----------------------------------------------------------------------------
@pytest.mark.parametrize(("changes", "message"), [
    ({f"{C}.path.0.worker_shutdown_s": 10},
     "worker_shutdown_s: istio-sidecar has no such setting (it has: client_idle_s, upstream_idle_s, "
     "request_timeout_s, drain_s, app_waits)"),
    ({f"{C}.sidecar": {"drain_s": 60}}, "path[0]: the pod's mesh proxy is one hop, the last of the path"),
    ({f"{C}.path": [{"kind": "istio-sidecar"}, {"kind": "ingress-nginx"}]},
     "path[0]: the pod's mesh proxy is one hop, the last of the path"),
    ({f"{W}.path.0.kind": "haproxy"}, "Input should be 'ingress-nginx', 'istio-gateway', 'istio-sidecar' or "
                                      "'linkerd-proxy'"),
    ({f"{W}.path.0.client_idle_s": 86401}, "Input should be less than or equal to 86400"),
])
def test_a_hop_refuses_what_its_kind_lacks_and_a_misplaced_mesh_proxy(changes, message) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        build(changes)


@given(st.sampled_from(sorted(HOP_KINDS)))
def test_every_kind_fills_exactly_its_documented_defaults(name) -> None:
    kind = HOP_KINDS[name]
    stack = build({f"{W}.path": [{"kind": name}]})
    hop = stack.services[WEB].path[0]
    assert hop.defaulted == frozenset(kind.defaults)
    assert {f: getattr(hop, f) for f in kind.defaults} == dict(kind.defaults)
    assert set(kind.defaults) <= set(kind.upstream)


# ---- the catalogue's formulas, re-derived (tests/timing/oracle.py) ------------------------------
@st.composite
def path_changes(draw) -> dict[str, Any]:
    maybe = st.one_of(st.none(), seconds(0, 4000))  # None: the kind's default
    return {
        f"{W}.app.keepalive_s": draw(seconds(1, 120)), f"{W}.app.max_request_s": draw(seconds(0, 60)),
        f"{W}.path.0.upstream_idle_s": draw(maybe), f"{W}.path.0.request_timeout_s": draw(maybe),
        f"{W}.path.0.worker_shutdown_s": draw(maybe), f"{W}.path.0.shutdown_delay_s": draw(st.none() | seconds(0, 200)),
        f"{W}.path.0.grace_s": draw(maybe), f"{FRONT}.deregistration_propagation_s": draw(seconds(0, 180)),
        f"{FRONT}.removal": draw(st.sampled_from([["deregistration"], ["health_check"], ["deregistration",
                                                                                       "health_check"]])),
        f"{C}.path.0.kind": draw(st.sampled_from(["istio-sidecar", "linkerd-proxy"])),
        f"{C}.path.0.upstream_idle_s": draw(st.none() | seconds(1, 120)),
        f"{C}.path.0.drain_s": draw(st.none() | seconds(0, 60)), f"{C}.path.0.app_waits": draw(st.booleans()),
        f"{C}.app.keepalive_s": draw(seconds(1, 120)), f"{C}.lb.idle_timeout_s": draw(seconds(1, 120)),
    }


@given(path_changes())
def test_the_path_rules_break_exactly_where_the_catalogues_formulas_do(changes) -> None:
    from tests.timing import oracle
    stack = build(changes)
    assert error_ids(stack) == oracle.stack_errors(stack)


# ---- what a finding says: each term by its upstream setting, each fix by the hop ------------------
def test_each_path_finding_names_its_settings_as_upstream_does_and_its_fix_by_the_hop() -> None:
    nginx, istio = "path[0] (ingress-nginx)", "path[0] (istio-sidecar)"
    worker, grace, read, drain = 20, 10, 10, 10
    web = build({f"{W}.path.0.worker_shutdown_s": worker, f"{W}.path.0.grace_s": grace,
                 f"{W}.path.0.request_timeout_s": read, f"{W}.path.0.shutdown_delay_s": DELETE, **NO_FRONT})
    longest = web.services[WEB].app.max_request_s
    assert [f.render() for f in findings_of(web, "proxy-reload-spares-requests", "web")] == [
        f"ERROR proxy-reload-spares-requests  web: worker-shutdown-timeout {worker}s (path[0].worker_shutdown_s) "
        f"< max_request {longest}s (app.max_request_s)  slack {worker - longest}s "
        f"→ raise {nginx}'s worker-shutdown-timeout to ≥{longest}s",
        f"ERROR proxy-reload-spares-requests  web: terminationGracePeriodSeconds {grace}s (path[0].grace_s) "
        f"< worker-shutdown-timeout + --shutdown-grace-period {worker}s (path[0].worker_shutdown_s {worker} "
        f"+ path[0].shutdown_delay_s 0)  slack {grace - worker}s "
        f"→ raise {nginx}'s terminationGracePeriodSeconds to ≥{worker}s or shorten its shutdown"]
    assert only(web, "timeouts-shrink-inward", "web").render() == (
        f"ERROR timeouts-shrink-inward  web: proxy-read-timeout {read}s (path[0].request_timeout_s) "
        f"< max_request {longest}s (app.max_request_s)  slack {read - longest}s "
        f"→ raise {nginx}'s proxy-read-timeout to ≥{longest}s or lower the app's longest request")
    meshed = build({f"{C}.path.0.drain_s": drain})
    f = drain_of(meshed)
    need = int(f.right.value) + f.margin_s  # the LB's detection plus the stack's margin
    assert f.render().endswith(f"slack {drain - need}s → raise {istio}'s ProxyConfig terminationDrainDuration "
                               f"to ≥{need}s or detect faster")
    short = build({f"{C}.path": [], f"{C}.sidecar": {"drain_s": drain}})
    sidecar = short.services[CHECKOUT].sidecar
    assert drain_of(short).fix == (
        f"raise sidecar ({sidecar.name})'s drain to ≥{need}s or detect faster")
    assert [h.kind for h in hops(short.services[CHECKOUT])] == ["alb", "sidecar", "app"]


def test_the_lb_hop_pools_and_bounds_requests_by_its_idle_timeout_and_nothing_pools_toward_it() -> None:
    lb = hops(build().services[CHECKOUT])[0]
    assert (lb.is_lb, dict(lb.roles)) == (True, {"upstream_idle": ("idle_timeout_s", "idle_timeout"),
                                                 "request": ("idle_timeout_s", "idle_timeout")})


@pytest.mark.parametrize("name", ["client_idle_s", "upstream_idle_s", "request_timeout_s", "drain_s", "app_waits"])
def test_a_fields_config_doc_lists_each_kinds_setting_and_default_from_the_table(name) -> None:
    from lockstep.timing.hopkinds import describe
    text = describe(name, "what it is")
    assert text.startswith("what it is (") and text.endswith(")")
    parts = text[len("what it is ("):-1].split("; ")
    kinds = [k for k in HOP_KINDS.values() if name in k.upstream]
    assert len(parts) == len(kinds) > 0
    for part, kind in zip(parts, kinds):
        value = kind.defaults.get(name)
        default = ("none" if name in kind.unbounded else "unknown" if value is None
                   else {True: "true", False: "false"}[value] if isinstance(value, bool) else str(value))
        assert part == f"{kind.name}: {kind.upstream[name]}, default {default}"
    if name == "app_waits":  # a bool default in YAML's spelling
        assert "linkerd-proxy: config.linkerd.io/proxy-await, default true" in text


# ---- the app starts only once its mesh proxy is ready (mesh-drain-covers-lb) ---------------------
@pytest.mark.parametrize(("kind", "waits", "status"), [
    ("istio-sidecar", True, "ok"), ("istio-sidecar", False, "error"), ("istio-sidecar", DELETE, "skipped"),
    ("linkerd-proxy", False, "error"), ("linkerd-proxy", DELETE, "ok"),  # Linkerd's proxy-await is on unless disabled
])
def test_the_app_starts_only_after_its_mesh_proxy_and_an_unstated_istio_order_is_not_guessed(kind, waits, status):
    stack = build({f"{C}.path.0.kind": kind, f"{C}.path.0.app_waits": waits, f"{C}.path.0.drain_s": 45})
    start = [f for f in findings_of(stack, "mesh-drain-covers-lb", "checkout") if "app_waits" in f.left.source]
    assert [f.status for f in start] == [status]
    assert error_ids(stack) == ({"mesh-drain-covers-lb"} if status == "error" else set())
    if status == "skipped":
        assert start[0].needs == ("path[0].app_waits",)
    default = HOP_KINDS[kind].defaults.get("app_waits")
    assert stack.services[CHECKOUT].path[0].app_waits == (default if waits is DELETE else waits)


def test_the_start_order_is_judged_without_a_load_balancer_and_not_for_the_short_form() -> None:
    alone = build({f"{C}.lb": DELETE, f"{C}.readiness_gate": DELETE, f"{C}.path.0.app_waits": False})
    assert [f.status for f in findings_of(alone, "mesh-drain-covers-lb", "checkout")] == ["error"]
    short = build({f"{C}.path": [], f"{C}.sidecar": {"drain_s": 45}})
    assert all("app_waits" not in f.left.source for f in findings_of(short, "mesh-drain-covers-lb", "checkout"))


def test_a_start_order_is_refused_on_a_hop_that_is_no_mesh_proxy() -> None:
    with pytest.raises(ValidationError, match="app_waits: ingress-nginx has no such setting"):
        build({f"{W}.path.0.app_waits": True})


def test_each_start_order_finding_says_what_decides_it_and_the_fix_by_the_hop() -> None:
    def start(changes):
        [f] = [f for f in findings_of(build(changes), "mesh-drain-covers-lb", "checkout") if "app_waits" in f.left.source]
        return f
    hold = "ProxyConfig holdApplicationUntilProxyStarts or a native sidecar"
    fix = f"set path[0] (istio-sidecar)'s {hold} so the app starts after its proxy"
    on, off = start({}), start({f"{C}.path.0.app_waits": False})
    assert on.render() == (f"OK mesh-drain-covers-lb  checkout: {hold} on (path[0].app_waits) = the app's start "
                           "after the proxy is ready")
    assert off.render() == (f"ERROR mesh-drain-covers-lb  checkout: {hold} off (path[0].app_waits) ≠ the app's "
                            f"start after the proxy is ready → {fix}")
    unknown = start({f"{C}.path.0.app_waits": DELETE})
    assert unknown.render() == (f"SKIPPED mesh-drain-covers-lb  checkout: {hold} unknown (path[0].app_waits) = "
                                f"the app's start after the proxy is ready → needs path[0].app_waits")
    assert (unknown.margin_s, unknown.slack_s, unknown.fix, unknown.left.fields) == (0, None, fix, ("path[0].app_waits",))
    assert (on.left.label, on.right.label, on.right.value) == (hold, "the app's start", "after the proxy is ready")
    linkerd = start({f"{C}.path.0": {"kind": "linkerd-proxy", "drain_s": 45}})
    assert linkerd.left.label == "config.linkerd.io/proxy-await (linkerd-proxy default)" and linkerd.status == "ok"


@pytest.mark.parametrize("removal", [["health_check"], ["deregistration", "health_check"]])
def test_a_front_lbs_health_check_path_names_its_fields_where_it_sits(removal) -> None:
    from lockstep.timing import derived as d
    lb = build({f"{FRONT}.removal": removal}).services[WEB].path[0].lb
    fields = {"path[0].lb.health_check.interval_s", "path[0].lb.health_check.unhealthy_threshold"}
    assert fields <= {f for p in d.removal_paths(lb, "path[0].lb") for f in p.fields}
    object.__setattr__(lb, "_unknown", frozenset({"lb.health_check.interval_s", "lb.health_check.unhealthy_threshold"}))
    checked = d.detection(lb, "path[0].lb")
    assert set(checked.unknown) == fields
