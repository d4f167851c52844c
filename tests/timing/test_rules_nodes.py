"""Node disruption rules (issue 13): what drains and node shutdowns grant a pod, evictions
through a PDB, externalTrafficPolicy Local, NLB connections, and the two gaps lockstep's
simulation found (a singleton on a drained node, a rollout outlasting a heartbeat's loss time).

Each property varies both sides of its relation on the example stack and asserts the finding
appears exactly when the relation breaks; `@example`s pin slack 0 and -1."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.timing import oracle
from tests.timing.strategies import (API, BASKETBALL, DELETE, FOOTBALL, UNDRAINED, build, error_ids, expect_alone,
                                     findings_of, only, seconds, stamped)
from lockstep.timing import limits as L
from lockstep.timing import nodes as N
from lockstep.timing.context import Scene
from lockstep.timing.invariants import context, walk
from lockstep.timing.invariants.registry import BY_ID
from lockstep.timing.invariants import nodes as nd
from lockstep.timing.model import Nodes, TerminationHandler

A = f"services.{API}"
F = f"services.{FOOTBALL}"
B = f"services.{BASKETBALL}"
POOL = "nodes.karpenter.0"
ON_DEMAND = {f"{POOL}.capacity_types": ["on-demand"]}  # no spot: the NodePool's grace alone
# basketball's heartbeat spec patient enough that a longer drain or finish (a StatefulSet's
# replacement waits for the old pod's stop) leaves heartbeat-rides-out-pod-replacement alone
PATIENT_B = {"heartbeat_specs.1.loss_time_s": 170}


def case(stack, rule: str, subject: str, severity: str):
    [f] = [f for f in findings_of(stack, rule, subject) if f.severity == severity]
    return f


SHUTDOWN = "node-shutdown-drains-without-endpoints"


def shutdown_case(stack, subject: str, relation: str):
    """Of the node-shutdown rule's two verdicts for `subject`, the one over `relation`: "<=" the
    last request's finish inside the shutdown, ">=" the drain outlasting the path."""
    [f] = [f for f in findings_of(stack, SHUTDOWN, subject) if f.relation == relation]
    return f


# ---- node-budget-covers-drain -----------------------------------------------------------------------
@given(seconds(0, 60), seconds(5, 60), seconds(0, 200))
@example(0, 20, 25).via("slack 0")
@example(0, 20, 24).via("slack -1")
def test_a_nodepool_grace_must_cover_drain_finish_and_margin(drain, finish, grace) -> None:
    # football-feed: no LB; a 150 s grace keeps drain-fits-grace passing whatever the drain
    # no PDB: the NodePool grace judges the drain alone (a PDB-held wait is the next test's)
    stack = build({**ON_DEMAND, f"{POOL}.termination_grace_period_s": grace, f"{F}.shutdown.drain_s": drain,
                   f"{F}.shutdown.finish_s": finish, f"{F}.shutdown.grace_s": 150, f"{F}.pdb": DELETE})
    f = case(stack, "node-budget-covers-drain", "football-feed", "error")
    assert f.slack_s == grace - drain - finish - 5
    assert f.status == ("error" if drain + finish + 5 > grace else "ok")
    assert f.right.fields == ("nodes.karpenter.termination_grace_period_s",)


@given(seconds(5, 60), seconds(0, 60))
@example(90, 20).via("slack 0: 20 + 90 + 5 + margin 5 = 120")
@example(91, 20).via("slack -1")
def test_a_spot_notice_must_cover_the_handlers_reaction_and_the_drain(reaction, finish) -> None:
    stack = build({f"{POOL}.termination_grace_period_s": None, "nodes.spot_reaction_s": reaction,
                   f"{F}.shutdown.finish_s": finish, f"{F}.shutdown.grace_s": 150})
    f = case(stack, "node-budget-covers-drain", "football-feed", "error")
    assert f.slack_s == L.SPOT_NOTICE_S - finish - reaction - 5
    assert f.status == ("error" if f.slack_s < 0 else "ok")


def test_a_spot_notice_too_short_for_the_drain_prints_the_fix() -> None:
    stack = build({f"{F}.shutdown.drain_s": 60, f"{F}.shutdown.finish_s": 60, f"{F}.shutdown.grace_s": 150})
    assert case(stack, "node-budget-covers-drain", "football-feed", "error").render() == (
        "ERROR node-budget-covers-drain  football-feed: drain + finish + spot reaction 125s (drain + finish 120 + "
        "nodes.spot_reaction_s 5) + margin 5s > spot notice 120s (spot notice)  slack -10s → shorten the drain and "
        "finish: the spot notice is fixed")
    assert case(stack, "node-budget-covers-drain", "football-feed", "warning").render() == (
        "WARNING node-budget-covers-drain  football-feed: grace + spot reaction 155s (shutdown.grace_s 150 + "
        "nodes.spot_reaction_s 5) > spot notice 120s (spot notice)  slack -35s → lower shutdown.grace_s to what "
        "the spot notice grants")


@given(seconds(0, 200), seconds(1, 200))
@example(60, 60).via("slack 0")
@example(61, 60).via("slack -1")
def test_a_pod_grace_longer_than_the_node_budget_is_a_warning(grace, budget) -> None:
    stack = build({**ON_DEMAND, f"{POOL}.termination_grace_period_s": budget, f"{A}.shutdown.grace_s": grace})
    f = case(stack, "node-budget-covers-drain", "api", "warning")
    assert f.slack_s == budget - grace
    assert f.status == ("warning" if grace > budget else "ok")


@given(seconds(0, 300), seconds(60, 120))
@example(124, 60).via("slack 0: grace 60 + replace_time 59 + margin 5")
@example(123, 60).via("slack -1")
def test_a_nodepool_grace_must_also_fit_a_pdb_held_eviction(tgp, grace) -> None:
    # Karpenter deletes a pod the PDB still holds when only its grace is left of the node's:
    # the wait for the previous replacement comes first
    stack = build({**ON_DEMAND, f"{POOL}.termination_grace_period_s": tgp, f"{A}.shutdown.grace_s": grace})
    replace_time = oracle._replace(stack.services[API])  # the catalogue's formula, restated
    f = case(stack, "node-budget-covers-drain", "api", "error")
    assert f.slack_s == tgp - grace - replace_time - 5  # the drain + finish (50 s) is always the looser
    assert f.status == ("error" if f.slack_s < 0 else "ok")
    assert f.left.fields[0] == "shutdown.grace_s" and f.right.fields == ("nodes.karpenter.termination_grace_period_s",)


def test_a_nodepool_grace_short_of_a_pdb_held_eviction_prints_the_fix() -> None:
    stack = build({**ON_DEMAND, f"{POOL}.termination_grace_period_s": 100})
    f = case(stack, "node-budget-covers-drain", "api", "error")
    assert f.render() == (
        "ERROR node-budget-covers-drain  api: grace + replace_time 119s (shutdown.grace_s 60 + replace_time 59) + "
        "margin 5s > nodepool general 100s (nodes.karpenter.termination_grace_period_s)  slack -24s → raise "
        "nodes.karpenter.termination_grace_period_s to ≥124s: a PDB-held eviction waits for the previous replacement")
    assert f.service == "api"


def test_without_a_pdb_nothing_holds_an_eviction_and_the_drain_alone_must_fit() -> None:
    stack = build({**ON_DEMAND, f"{POOL}.termination_grace_period_s": 55, f"{A}.pdb": DELETE})
    f = case(stack, "node-budget-covers-drain", "api", "error")
    assert (f.status, f.slack_s, f.left.label) == ("ok", 0, "drain + finish")


def test_only_a_nodepool_grace_forces_what_the_pdb_holds() -> None:
    # the autoscaler evicts through the PDB and never forces; a spot notice takes one node
    assert [b.forces for b in N.budgets(build({"nodes": {"cluster_autoscaler": {}, "karpenter": [
        {"name": "p", "termination_grace_period_s": 300, "capacity_types": ["spot"], "interruption_queue": True}]}}).nodes)
    ] == [False, True, False]


def test_an_unknown_spot_reaction_is_skipped_naming_the_field() -> None:
    stack = build({"nodes.spot_reaction_s": None})
    found = findings_of(stack, "node-budget-covers-drain")
    # the error and the warning side of every service's budget (the heartbeat service's too) are
    # both undecided
    assert {f.status for f in found} == {"skipped"} and len(found) == 2 * (len(stack.services) + 1)
    assert {f.subject for f in found} == {s.name for s in stack.services} | {stack.heartbeat.name}
    assert all(f.needs == ("nodes.spot_reaction_s",) for f in found)


def test_an_unknown_spot_reaction_that_cannot_save_the_drain_is_an_error() -> None:
    stack = build({"nodes.spot_reaction_s": None, f"{F}.shutdown.drain_s": 60, f"{F}.shutdown.finish_s": 60,
                   f"{F}.shutdown.grace_s": 150})
    assert case(stack, "node-budget-covers-drain", "football-feed", "error").status == "error"


@pytest.mark.parametrize(("nodes", "shown"), [
    ({"cluster_autoscaler": {}}, "cluster autoscaler 600s (nodes.cluster_autoscaler.max_graceful_termination_s)"),
    ({"asg_lifecycle_hook": {"heartbeat_timeout_s": 30}}, "lifecycle hook 30s (nodes.asg_lifecycle_hook.heartbeat_timeout_s)"),
    ({"termination_handler": {"pod_termination_grace_period_s": 40}, "asg_spot": True, "spot_reaction_s": 5},
     "handler pod grace 40s (nodes.termination_handler.pod_termination_grace_period_s)"),
    ({"karpenter": [{"name": "big", "termination_grace_period_s": 900}, {"name": "small", "termination_grace_period_s": 70}]},
     "nodepool small 70s (nodes.karpenter.termination_grace_period_s)"),
])
def test_the_tightest_declared_budget_is_the_one_reported(nodes, shown) -> None:
    stack = build({"nodes": {"karpenter": [{"name": "big", "termination_grace_period_s": 900}], **nodes}})
    f = case(stack, "node-budget-covers-drain", "api", "error")
    assert f.right.render() == shown
    assert f.right.value == min(int(b.grant.value) - (int(b.lead.value) if b.lead else 0)
                                for b in N.budgets(stack.nodes))


def test_the_cluster_autoscaler_grants_600_seconds_unless_told_otherwise() -> None:
    assert Nodes.model_validate({"cluster_autoscaler": {}}).cluster_autoscaler.max_graceful_termination_s == 600


def test_of_two_broken_budgets_the_tighter_is_reported_whatever_their_order() -> None:
    # no PDB: the NodePool grace is judged on the drain alone (a PDB-held wait would be tighter)
    stack = build({f"{POOL}.termination_grace_period_s": 40, "nodes.asg_lifecycle_hook": {"heartbeat_timeout_s": 30},
                   f"{A}.pdb": DELETE})
    f = case(stack, "node-budget-covers-drain", "api", "error")
    assert (f.right.source, f.slack_s) == ("nodes.asg_lifecycle_hook.heartbeat_timeout_s", 30 - 50 - 5)


def test_a_broken_budget_is_reported_before_a_tighter_passing_one() -> None:
    # the spot notice passes football-feed's drain; the 20 s NodePool grace does not
    stack = build({f"{POOL}.termination_grace_period_s": 20})
    assert case(stack, "node-budget-covers-drain", "football-feed", "error").right.value == 20


def test_a_service_stating_its_own_node_budget_is_left_to_drain_fits_grace() -> None:
    stack = build({f"{F}.shutdown.node_termination_budget_s": 20})
    assert findings_of(stack, "node-budget-covers-drain", "football-feed") == []
    assert len(findings_of(stack, "node-budget-covers-drain", "basketball-feed")) == 2  # the next is judged
    assert error_ids(stack) == {"drain-fits-grace"}
    assert N.node_budget_s(stack.services[FOOTBALL], stack.nodes) == 20


def test_without_node_sources_the_budget_is_the_services_own_or_none() -> None:
    stack = build({"nodes": DELETE})
    assert findings_of(stack, "node-budget-covers-drain") == []
    assert N.node_budget_s(stack.services[API], None) is None
    assert N.node_budget_s(stack.services[API], build().nodes) == L.SPOT_NOTICE_S - 5
    assert N.node_budget_s(stack.services[API], Nodes()) is None
    # a source with no lead (the autoscaler) grants its number whole
    assert N.node_budget_s(stack.services[API], Nodes.model_validate({"cluster_autoscaler": {}})) == 600


# ---- node-shutdown-drains-without-endpoints --------------------------------------------------------------
# The example drains every node first; these cases let nodes shut down undrained (`UNDRAINED`)
# under its kubelet (90 s, 30 s of it for critical pods).


@given(st.integers(0, 120).flatmap(lambda t: st.tuples(st.just(t), st.integers(0, t))), seconds(40, 100))
@example((75, 30), 60).via("api: slack 0: lb detection 10 + finish 30 + margin 5 = 45")
@example((74, 30), 60).via("slack -1")
def test_a_kubelet_shutdown_must_outlast_the_path_and_finish(periods, grace) -> None:
    total, critical = periods
    stack = build({**UNDRAINED, "nodes.kubelet": {"shutdown_grace_period_s": total,
                                                  "shutdown_grace_period_critical_pods_s": critical},
                   f"{A}.shutdown.grace_s": grace})
    f = shutdown_case(stack, "api", "<=")
    limit = min(grace, total - critical)
    assert f.right.fields == (("shutdown.grace_s",) if grace <= total - critical else
                              ("nodes.kubelet.shutdown_grace_period_s", "nodes.kubelet.shutdown_grace_period_critical_pods_s"))
    assert f.slack_s == limit - 10 - 30 - 5
    assert f.status == ("error" if f.slack_s < 0 else "ok")


@given(seconds(0, 600), st.integers(1, 6), st.integers(1, 5), seconds(0, 20), st.sampled_from(["Cluster", "Local"]),
       st.booleans())
@example(600, 1, 1, 0, "Cluster", True).via("the longest drain and the quickest unready: still broken")
def test_behind_kube_proxy_an_undrained_shutdown_is_broken_whatever_the_drain(
        drain, period, failures, propagation, policy, probe) -> None:
    # instance targets: kube-proxy sends by the endpoint's readiness, which the kubelet stops
    # probing on a node shutdown and leaves true until the pod has exited (kubernetes #105215, #116965)
    stack = build({**UNDRAINED, **PATIENT_B, f"{B}.shutdown.drain_s": drain, f"{B}.probes.readiness.period_s": period,
                   f"{B}.probes.readiness.failure_threshold": failures,
                   f"{B}.lb.endpoint_propagation_s": propagation, f"{B}.lb.external_traffic_policy": policy,
                   **({} if probe else {f"{B}.probes.readiness": None})})
    [f] = findings_of(stack, SHUTDOWN, "basketball-feed")
    assert (f.status, f.relation, f.slack_s, f.needs) == ("error", "==", None, ())
    assert (f.left.fields, f.right.fields) == (("lb.target_type",), (N.UNDRAINED,))


def test_the_same_stack_drained_first_is_not_judged_behind_kube_proxy_or_anywhere() -> None:
    assert findings_of(build(), SHUTDOWN) == []
    assert {f.status for f in findings_of(build(UNDRAINED), SHUTDOWN, "basketball-feed")} == {"error"}


@given(seconds(0, 60), st.integers(5, 30), st.integers(2, 10))
@example(15, 5, 2).via("api: slack 0: 5 × 2 + margin 5 = 15")
@example(14, 5, 2).via("slack -1")
def test_on_targets_the_lb_checks_itself_the_drain_must_outlast_its_detection(drain, interval, unhealthy) -> None:
    stack = build({**UNDRAINED, f"{A}.shutdown.drain_s": drain, f"{A}.lb.health_check.interval_s": interval,
                   f"{A}.lb.health_check.unhealthy_threshold": unhealthy})
    f = shutdown_case(stack, "api", ">=")
    assert f.slack_s == drain - interval * unhealthy - 5
    assert f.status == ("error" if f.slack_s < 0 else "ok")
    assert f.right.label == "lb detection"


def _queue_unstated(stack) -> list:
    """The stack's findings of the node-shutdown rule with the interruption queue unstated."""
    nodes = stack.nodes.model_copy()
    nodes._unknown = frozenset({N.QUEUE})
    scene = Scene(services=stack.services, nodes=nodes)
    return walk(scene, context(stack), (BY_ID[SHUTDOWN],))


def test_an_instance_target_the_nlb_checks_itself_is_out_when_its_check_fails() -> None:
    # removal by health check (not endpoints): the NLB checks the pod through its node port
    stack = build({**UNDRAINED, f"{B}.lb.removal": ["health_check"], f"{B}.probes.readiness": None})
    f = shutdown_case(stack, "basketball-feed", ">=")
    assert (f.right.label, f.right.value) == ("lb detection", 30)


def test_local_is_kube_proxys_path_whatever_the_removal_and_means_nothing_on_ip_targets() -> None:
    # the NLB's check of a Local service is kube-proxy's healthCheckNodePort, which counts the
    # node's ready endpoints: the pod the kubelet leaves ready keeps it passing
    local = build({**UNDRAINED, f"{B}.lb.removal": ["health_check"], f"{B}.lb.external_traffic_policy": "Local"})
    assert N.shutdown_unrouted(local.services[BASKETBALL]) is None
    assert N.shutdown_unrouted(build({**UNDRAINED, f"{B}.lb.removal": ["health_check"]}).services[BASKETBALL]) is not None
    # IP targets are checked by the LB itself, whatever the Service's traffic policy says
    ip = build({**UNDRAINED, f"{A}.lb.external_traffic_policy": "Local"}).services[API]
    assert N.shutdown_unrouted(ip).label == "lb detection"


def test_a_drain_short_of_the_lb_check_prints_the_fix() -> None:
    assert shutdown_case(build({**UNDRAINED, f"{A}.shutdown.drain_s": 14}), "api", ">=").render() == (
        "ERROR node-shutdown-drains-without-endpoints  api: drain 14s (shutdown.drain_s) < lb detection 10s "
        "(lb.health_check.interval_s 5 × lb.health_check.unhealthy_threshold 2) + margin 5s  slack -1s → raise "
        "shutdown.drain_s to ≥15s: the pod must keep serving until the path stops sending")


def test_an_lb_check_no_input_states_leaves_the_drain_undecided_naming_it() -> None:
    stack = build()
    lb = stack.services[API].lb.model_copy()
    lb._unknown = frozenset({"lb.health_check.interval_s"})
    unrouted = N.shutdown_unrouted(stack.services[API].model_copy(update={"lb": lb}))
    assert unrouted.unknown == ("lb.health_check.interval_s",)


KUBE_PROXY_FIX = (
    "drain every node before it shuts down (Karpenter's interruption queue, aws-node-termination-handler, an ASG "
    "lifecycle hook) and say so with nodes.undrained_shutdowns: false, or use IP targets (lb.target_type: ip) so "
    "the LB's own health check takes the pod out: behind {} a node shutdown leaves it in the endpoints until it "
    "has exited")


def test_behind_kube_proxy_an_undrained_shutdown_prints_its_fix_whole() -> None:
    [f] = findings_of(build(UNDRAINED), SHUTDOWN, "basketball-feed")
    assert f.render() == (
        "ERROR node-shutdown-drains-without-endpoints  basketball-feed: pod leaves the endpoints after it has exited "
        "(the kubelet stops its probes on a node shutdown) ≠ required before it stops serving (undrained shutdowns: "
        "nodes.undrained_shutdowns) → " + KUBE_PROXY_FIX.format("kube-proxy"))
    assert f.service == "basketball-feed"


def test_the_local_path_is_named_in_the_fix() -> None:
    [f] = findings_of(build({**UNDRAINED, f"{B}.lb.external_traffic_policy": "Local"}), SHUTDOWN, "basketball-feed")
    assert f.fix == KUBE_PROXY_FIX.format("externalTrafficPolicy Local")


def test_spot_no_handler_drains_names_the_queue_as_what_shuts_nodes_down_undrained() -> None:
    [f] = findings_of(build({f"{POOL}.interruption_queue": False}), SHUTDOWN, "basketball-feed")
    assert (f.status, f.right.fields) == ("error", (N.QUEUE,))
    assert f.right.source == "undrained shutdowns: nodes.karpenter.interruption_queue"
    both = findings_of(build({**UNDRAINED, f"{POOL}.interruption_queue": False}), SHUTDOWN, "basketball-feed")
    assert [(g.right.fields, g.right.source) for g in both] == [
        ((N.QUEUE, N.UNDRAINED), "undrained shutdowns: nodes.karpenter.interruption_queue, nodes.undrained_shutdowns")]


def test_when_only_an_unstated_queue_decides_the_shutdown_kube_proxy_is_skipped_naming_it() -> None:
    undecided = {"nodes.kubelet": DELETE, f"{POOL}.interruption_queue": False}
    [g] = [g for g in _queue_unstated(build(undecided)) if g.subject == "basketball-feed"]
    assert g.render() == (
        "SKIPPED node-shutdown-drains-without-endpoints  basketball-feed: pod leaves the endpoints after it has "
        "exited (the kubelet stops its probes on a node shutdown) = required before it stops serving (undrained "
        "shutdowns: nodes.karpenter.interruption_queue) → needs nodes.karpenter.interruption_queue")
    assert (g.status, g.needs, g.relation, g.fix) == ("skipped", (N.QUEUE,), "==", KUBE_PROXY_FIX.format("kube-proxy"))


def test_when_only_an_unstated_queue_decides_a_short_drain_is_skipped_and_a_long_one_holds() -> None:
    base = {"nodes.kubelet": DELETE, f"{POOL}.interruption_queue": False}
    for drain, status in ((14, "skipped"), (15, "ok")):  # api: lb detection 10 + margin 5
        found = _queue_unstated(build({**base, f"{A}.shutdown.drain_s": drain}))
        [f] = [f for f in found if f.subject == "api" and f.relation == ">="]
        assert f.status == status


def test_a_kubelet_shutdown_too_short_prints_the_fix() -> None:
    stack = build({**UNDRAINED, "nodes.kubelet.shutdown_grace_period_s": 70})
    assert shutdown_case(stack, "api", "<=").render() == (
        "ERROR node-shutdown-drains-without-endpoints  api: lb detection + finish 40s (lb detection 10 + "
        "shutdown.finish_s 30) + margin 5s > kubelet shutdown 40s (nodes.kubelet.shutdown_grace_period_s 70 - "
        "nodes.kubelet.shutdown_grace_period_critical_pods_s 30)  slack -5s → raise nodes.kubelet shutdownGracePeriod "
        "(beyond the critical pods' share) and shutdown.grace_s to ≥45s, or drain nodes before they shut down")


def test_spot_no_handler_drains_leaves_pods_no_shutdown_at_all() -> None:
    stack = build({"nodes.kubelet": DELETE, f"{POOL}.interruption_queue": False})
    f = shutdown_case(stack, "api", "<=")
    assert (f.status, f.right.value, f.right.fields) == ("error", 0, ("nodes.kubelet",))
    assert f.render().startswith(
        "ERROR node-shutdown-drains-without-endpoints  api: lb detection + finish 40s (lb detection 10 + "
        "shutdown.finish_s 30) + margin 5s > kubelet shutdown 0s (nodes.kubelet unset: no graceful node shutdown)  "
        "slack -45s → ")
    assert N.undrained_spot(stack.nodes) == ["nodes.karpenter.interruption_queue"]


def test_node_group_spot_without_a_handler_is_named_by_the_missing_handler() -> None:
    nodes = build({"nodes.asg_spot": True}).nodes
    assert N.undrained_spot(nodes) == ["nodes.termination_handler"]
    assert N.undrained_spot(nodes.model_copy(update={"termination_handler": TerminationHandler()})) == []
    assert N.undrained(nodes) == ["nodes.termination_handler"]
    assert N.undrained(nodes.model_copy(update={"undrained_shutdowns": True})) == ["nodes.termination_handler",
                                                                                   N.UNDRAINED]


@pytest.mark.parametrize(("changes", "judged"), [
    ({"nodes.kubelet": DELETE}, False),  # spot drained by Karpenter's queue, no kubelet stated
    ({"nodes.kubelet": DELETE, f"{POOL}.interruption_queue": False, "nodes.termination_handler": {}}, False),
    ({"nodes.kubelet": DELETE, "nodes.asg_spot": True}, True),  # node-group spot with no handler
    ({}, False),  # the example: every node drained first, the kubelet only a backstop
    (UNDRAINED, True),
    ({**UNDRAINED, "nodes.kubelet": DELETE}, False),  # undrained with no graceful shutdown: a crash
    ({**UNDRAINED, f"{POOL}.interruption_queue": False}, True),
])
def test_the_node_shutdown_rule_is_judged_where_pods_can_be_shut_down_undrained(changes, judged) -> None:
    stack = build(changes)
    assert bool(findings_of(stack, "node-shutdown-drains-without-endpoints")) is judged


def test_a_services_without_an_lb_is_not_judged_by_the_node_shutdown_rule() -> None:
    assert findings_of(build(), "node-shutdown-drains-without-endpoints", "football-feed") == []


def test_the_kubelet_refuses_a_critical_share_above_the_shutdown_period() -> None:
    with pytest.raises(ValueError, match="shutdown_grace_period_critical_pods_s must be <="):
        build({"nodes.kubelet.shutdown_grace_period_critical_pods_s": 91})


# ---- eviction-waits-for-lb --------------------------------------------------------------------------------
def test_ip_targets_with_a_pdb_and_no_readiness_gate_let_evictions_outrun_the_lb() -> None:
    stack = build({f"{A}.readiness_gate": DELETE, f"{A}.rollout.min_ready_s": 60})
    # a minReadySeconds that satisfies the rollout does not hold an eviction back
    assert error_ids(stack) == {"eviction-waits-for-lb"}
    assert only(stack, "eviction-waits-for-lb", "api").render() == (
        "ERROR eviction-waits-for-lb  api: readiness gate none (readiness_gate) ≠ required a readiness gate that can "
        "pass (pdb) → add a passable readiness gate: a PDB counts Ready pods, whose targets may still be initial")


@pytest.mark.parametrize(("changes", "status"), [
    ({}, "ok"),
    ({f"{A}.readiness_gate.namespace_labelled": False}, "error"),
    ({f"{A}.readiness_gate.injected_after_binding": None}, "skipped"),
])
def test_eviction_waits_for_the_lb_exactly_when_the_gate_can_pass(changes, status) -> None:
    f = only(build(changes), "eviction-waits-for-lb", "api")
    assert f.status == status
    if status == "skipped":
        assert f.needs == ("readiness_gate.injected_after_binding",)


@pytest.mark.parametrize("changes", [{f"{A}.pdb": DELETE}, {f"{A}.lb.target_type": "instance"}])
def test_evictions_without_a_pdb_or_behind_instance_targets_are_not_judged_by_the_gate(changes) -> None:
    assert findings_of(build(changes), "eviction-waits-for-lb", "api") == []


# ---- eviction-leaves-a-target -----------------------------------------------------------------------------
@given(seconds(1, 12))
@example(2).via("slack 0")
@example(1).via("slack -1: a drain leaves the LB without a target")
def test_a_service_behind_an_lb_without_a_pdb_needs_a_second_replica(n) -> None:
    stack = build({f"{A}.pdb": DELETE, f"{A}.hpa.min_replicas": n})
    expect_alone(stack, "eviction-leaves-a-target", n < 2)
    assert only(stack, "eviction-leaves-a-target", "api").slack_s == n - 2


def test_a_singleton_on_a_drained_node_prints_the_fix() -> None:
    stack = build({f"{A}.pdb": DELETE, f"{A}.hpa.min_replicas": 1})
    assert only(stack, "eviction-leaves-a-target", "api").render() == (
        "ERROR eviction-leaves-a-target  api: replicas 1 (hpa.min_replicas) < targets left by a drain 2  slack -1 → "
        "run ≥2 replicas with a PDB (or accept it for a singleton)")


def test_without_a_pdb_a_health_check_only_drain_leaves_the_count_to_its_own_rule() -> None:
    assert findings_of(build({f"{A}.pdb": DELETE, f"{A}.lb.removal": ["health_check"]}),
                       "eviction-leaves-a-target", "api") == []


@given(st.integers(2, 12).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n + 2))),
       st.sampled_from(["min_available", "max_unavailable"]))
@example((3, 1), "min_available").via("slack 0: the PDB keeps one pod")
@example((3, 0), "min_available").via("slack -1: minAvailable 0 lets a drain take all")
@example((3, 3), "max_unavailable").via("slack -1: maxUnavailable = replicas")
def test_a_pdb_must_keep_a_pod_through_a_drain_of_every_node(counts, key) -> None:
    n, value = counts
    stack = build({f"{B}.replicas": n, f"{B}.pdb": {key: value}})
    kept = value if key == "min_available" else n - value
    f = only(stack, "eviction-leaves-a-target", "basketball-feed")
    assert f.slack_s == kept - 1
    assert f.status == ("error" if kept < 1 else "ok")
    assert f.left.fields == ("replicas", "pdb")


def test_a_pdb_keeping_no_pod_prints_the_fix() -> None:
    assert only(build({f"{B}.pdb": {"min_available": 0}}), "eviction-leaves-a-target", "basketball-feed").render() == (
        "ERROR eviction-leaves-a-target  basketball-feed: pods the PDB keeps 0 (replicas - allowed by pdb) < kept "
        "through a drain 1  slack -1 → set pdb.min_available ≥ 1 (or pdb.max_unavailable below the replicas)")


def test_a_service_without_a_pdb_may_accept_the_drain_its_nodepool_cuts_short() -> None:
    # no PDB: the drain side is the tightest error, and the service's accept list covers it
    stack = build({**ON_DEMAND, f"{POOL}.termination_grace_period_s": 30, f"{A}.pdb": DELETE,
                   f"{A}.accept": [{"id": "node-budget-covers-drain", "reason": "drained by hand"}]})
    f = case(stack, "node-budget-covers-drain", "api", "error")
    assert (f.status, f.left.label, f.service) == ("accepted", "drain + finish", "api")


def test_an_accepted_singleton_is_reported_as_accepted() -> None:
    stack = build({f"{A}.pdb": DELETE, f"{A}.hpa.min_replicas": 1,
                   f"{A}.accept": [{"id": "eviction-leaves-a-target", "reason": "a batch console"}]})
    assert only(stack, "eviction-leaves-a-target", "api").status == "accepted"


# ---- etp-local-drain-covers-node-check --------------------------------------------------------------------
@given(seconds(0, 20), seconds(0, 60))
@example(10, 30).via("slack 0: 10 + 30 + 5 = 15 + 30")
@example(10, 29).via("slack -1")
def test_an_etp_local_drain_must_cover_the_endpoint_update_and_the_node_check(propagation, extra) -> None:
    # the drain stays ≥ propagation + margin (drain-covers-lb-detection); grace 100 fits it
    drain = propagation + 5 + extra
    # no kubelet shutdown: with Local it would judge the same drain (node-shutdown-drains-without-endpoints)
    stack = build({f"{B}.lb.external_traffic_policy": "Local", f"{B}.lb.endpoint_propagation_s": propagation,
                   f"{B}.shutdown.drain_s": drain, f"{B}.shutdown.grace_s": 100, "nodes.kubelet": DELETE, **PATIENT_B})
    expect_alone(stack, "etp-local-drain-covers-node-check", drain < propagation + 30 + 5)
    assert only(stack, "etp-local-drain-covers-node-check").slack_s == drain - propagation - 30 - 5


def test_an_etp_local_drain_too_short_prints_the_fix() -> None:
    stack = build({f"{B}.lb.external_traffic_policy": "Local"})
    assert only(stack, "etp-local-drain-covers-node-check").render() == (
        "ERROR etp-local-drain-covers-node-check  basketball-feed: drain 30s (shutdown.drain_s) < node check 40s "
        "(lb.endpoint_propagation_s 10 + health_check 30) + margin 5s  slack -15s → raise the drain to ≥45s or "
        "check the node faster")


def test_etp_cluster_or_ip_targets_are_not_judged_by_the_node_check() -> None:
    assert findings_of(build(), "etp-local-drain-covers-node-check") == []
    assert findings_of(build({f"{A}.lb.external_traffic_policy": "Local"}), "etp-local-drain-covers-node-check") == []


# ---- nlb-connections-survive-removal ----------------------------------------------------------------------
# basketball drained by its health check: the drain covers the 30 s detection, the grace the rest
NLB_HC = {f"{B}.lb.removal": ["health_check"], f"{B}.shutdown.drain_s": 35, f"{B}.shutdown.grace_s": 100, **PATIENT_B}


@given(seconds(0, 40), seconds(10, 25))
@example(10, 10).via("slack 0")
@example(9, 10).via("slack -1")
def test_an_nlb_draining_interval_must_cover_the_finish(interval, finish) -> None:
    stack = build({**NLB_HC, f"{B}.lb.unhealthy_connection_termination": False,
                   f"{B}.lb.unhealthy_draining_interval_s": interval, f"{B}.shutdown.finish_s": finish})
    expect_alone(stack, "nlb-connections-survive-removal", interval < finish)


def test_an_nlb_resetting_unhealthy_targets_connections_prints_the_fix() -> None:
    stack = build(NLB_HC)
    assert error_ids(stack) == {"nlb-connections-survive-removal"}
    assert only(stack, "nlb-connections-survive-removal").render() == (
        "ERROR nlb-connections-survive-removal  basketball-feed: unhealthy connection termination on "
        "(lb.unhealthy_connection_termination) ≠ required off → set lb.unhealthy_connection_termination false "
        "and a draining interval ≥ finish")


@given(seconds(0, 3600), seconds(0, 3600))
@example(60, 60).via("slack 0")
@example(61, 60).via("slack -1")
def test_an_nlb_closing_deregistered_flows_must_close_them_before_the_pod_dies(delay, grace) -> None:
    svc = build().services[BASKETBALL]
    lb = svc.lb.model_copy(update={"removal": ("deregistration",), "deregistration_connection_termination": True,
                                   "deregistration_delay_s": delay})
    svc = svc.model_copy(update={"lb": lb, "shutdown": svc.shutdown.model_copy(update={"grace_s": grace})})
    [f] = stamped("nlb-connections-survive-removal", nd.nlb_connections_survive_removal(svc, context(build())))
    assert (f.status, f.slack_s) == ("error" if delay > grace else "ok", grace - delay)


def test_an_nlb_that_leaves_deregistered_flows_open_or_an_alb_is_not_judged() -> None:
    ctx = context(build())
    svc = build().services[BASKETBALL]
    open_flows = svc.model_copy(update={"lb": svc.lb.model_copy(update={"removal": ("deregistration",)})})
    assert nd.nlb_connections_survive_removal(open_flows, ctx) == []
    api = build({f"{A}.lb.removal": ["health_check", "deregistration"]}).services[API]
    assert nd.nlb_connections_survive_removal(api, ctx) == []


# ---- heartbeat-rides-out-rollout --------------------------------------------------------------------------
TAKE_DOWN = {f"{F}.pdb": DELETE, f"{F}.rollout.max_surge": 0, f"{F}.rollout.max_unavailable": 1}


@given(seconds(2, 8), seconds(40, 290))
@example(3, 120).via("slack 0: 3 waves × pod_ready 30 + stop 20 + resync 5 + margin 5")
@example(3, 119).via("slack -1")
def test_a_rollout_taking_pods_down_must_fit_the_loss_time(n, loss) -> None:
    stack = build({**TAKE_DOWN, f"{F}.replicas": n, "heartbeat_specs.0.loss_time_s": loss})
    need = n * 30 + 20 + 5 + 5
    expect_alone(stack, "heartbeat-rides-out-rollout", loss < need)
    assert only(stack, "heartbeat-rides-out-rollout").slack_s == loss - need


def test_a_rollout_outlasting_the_loss_time_prints_the_fix() -> None:
    stack = build({**TAKE_DOWN, f"{F}.replicas": 3, "heartbeat_specs.0.loss_time_s": 119})
    assert only(stack, "heartbeat-rides-out-rollout").render() == (
        "ERROR heartbeat-rides-out-rollout  football-live (football-feed): loss_time 119s (loss_time_s) < "
        "rollout_time + observe 115s (rollout_time 110 + heartbeat.resync_period_s 5) + margin 5s  slack -1s → "
        "raise loss_time_s to ≥120s, surge instead (rollout.max_unavailable: 0) or keep pods with a PDB")


@pytest.mark.parametrize("changes", [
    {},  # surge: no pod goes down
    {f"{F}.rollout.max_surge": 0, f"{F}.rollout.max_unavailable": 1},  # the PDB keeps 1 of 2: healthy enough
])
def test_a_rollout_that_stays_above_what_the_heartbeat_requires_is_not_judged(changes) -> None:
    assert findings_of(build({**changes, "heartbeat_specs.0.loss_time_s": 40}), "heartbeat-rides-out-rollout") == []


def test_a_pdb_minimum_the_rollout_goes_below_makes_it_judged() -> None:
    stack = build({f"{F}.replicas": 3, f"{F}.pdb.min_available": 3, f"{F}.rollout.max_surge": 0,
                   f"{F}.rollout.max_unavailable": 1})
    assert only(stack, "heartbeat-rides-out-rollout").status == "ok"


def test_a_statefulset_rollout_is_left_to_the_replacement_rule() -> None:
    assert findings_of(build({f"{B}.pdb": DELETE}), "heartbeat-rides-out-rollout") == []


# ---- the node sources' defaults and ranges (upstream docs, timing/limits.py) --------------------------------
def test_the_node_sources_default_to_what_upstream_documents() -> None:
    nodes = Nodes.model_validate({"cluster_autoscaler": {}, "karpenter": [{"name": "p"}], "termination_handler": {},
                                  "asg_lifecycle_hook": {}, "kubelet": {}})
    pool = nodes.karpenter[0]
    assert nodes.cluster_autoscaler.max_graceful_termination_s == 600
    assert (pool.termination_grace_period_s, pool.consolidation_policy, pool.consolidate_after_s, pool.budget_nodes,
            pool.capacity_types, pool.interruption_queue) == (None, "WhenEmptyOrUnderutilized", 0, "10%",
                                                              ("on-demand",), False)
    handler = nodes.termination_handler
    assert (handler.mode, handler.pod_termination_grace_period_s, handler.node_termination_grace_period_s) == \
        ("imds", None, 120)
    assert nodes.asg_lifecycle_hook.heartbeat_timeout_s == 3600
    assert (nodes.kubelet.shutdown_grace_period_s, nodes.kubelet.shutdown_grace_period_critical_pods_s) == (0, 0)
    lb = build().services[BASKETBALL].lb
    assert (lb.external_traffic_policy, lb.unhealthy_connection_termination, lb.unhealthy_draining_interval_s,
            lb.deregistration_connection_termination) == ("Cluster", True, 0, False)


@pytest.mark.parametrize(("changes", "ok"), [
    ({"asg_lifecycle_hook": {"heartbeat_timeout_s": 30}}, True), ({"asg_lifecycle_hook": {"heartbeat_timeout_s": 29}}, False),
    ({"asg_lifecycle_hook": {"heartbeat_timeout_s": 7200}}, True),
    ({"asg_lifecycle_hook": {"heartbeat_timeout_s": 7201}}, False),
    ({"kubelet": {"shutdown_grace_period_s": 30, "shutdown_grace_period_critical_pods_s": 30}}, True),
    ({"kubelet": {"shutdown_grace_period_s": 30, "shutdown_grace_period_critical_pods_s": 31}}, False),
])
def test_the_node_sources_refuse_what_their_apis_refuse(changes, ok) -> None:
    from pydantic import ValidationError

    try:
        Nodes.model_validate(changes)
    except ValidationError as err:
        assert not ok
        if "kubelet" in changes:
            assert [e["msg"] for e in err.errors()] == [
                "Value error, shutdown_grace_period_critical_pods_s must be <= shutdown_grace_period_s"]
    else:
        assert ok


def test_an_nlb_draining_interval_is_held_to_the_api_range() -> None:
    from pydantic import ValidationError

    assert build({f"{B}.lb.unhealthy_draining_interval_s": 360000}).services[BASKETBALL].lb.unhealthy_draining_interval_s \
        == L.NLB_UNHEALTHY_DRAINING.hi
    with pytest.raises(ValidationError):
        build({f"{B}.lb.unhealthy_draining_interval_s": 360001})


@pytest.mark.parametrize(("nodes", "labels"), [
    ({}, []),
    ({"termination_handler": {}}, []),  # a handler with no spot capacity to watch grants nothing
    ({"asg_spot": True}, []),  # node-group spot nothing drains: undrained, the kubelet's to judge
    ({"asg_spot": True, "termination_handler": {}}, ["spot notice"]),
    ({"karpenter": [{"name": "p", "capacity_types": ["spot"]}]}, []),
    ({"karpenter": [{"name": "p", "capacity_types": ["spot"], "interruption_queue": True}]}, ["spot notice"]),
    ({"karpenter": [{"name": "p", "capacity_types": ["spot"]}], "termination_handler": {}}, ["spot notice"]),
    ({"karpenter": [{"name": "p", "termination_grace_period_s": 60}], "cluster_autoscaler": {},
      "asg_lifecycle_hook": {}, "termination_handler": {"pod_termination_grace_period_s": 30}},
     ["cluster autoscaler", "nodepool p", "handler pod grace", "lifecycle hook"]),
])
def test_each_declared_drainer_grants_a_budget_and_nothing_else_does(nodes, labels) -> None:
    assert [b.grant.label for b in N.budgets(Nodes.model_validate(nodes))] == labels
    spot = [b for b in N.budgets(Nodes.model_validate(nodes)) if b.lead is not None]
    assert [b.lead.source for b in spot] == (["nodes.spot_reaction_s"] if "spot notice" in labels else [])


def test_a_nodepool_grace_shorter_than_the_drain_prints_both_fixes() -> None:
    stack = build({**ON_DEMAND, f"{POOL}.termination_grace_period_s": 50, f"{A}.pdb": DELETE})
    assert case(stack, "node-budget-covers-drain", "api", "error").render() == (
        "ERROR node-budget-covers-drain  api: drain + finish 50s (shutdown.drain_s 20 + shutdown.finish_s 30) + "
        "margin 5s > nodepool general 50s (nodes.karpenter.termination_grace_period_s)  slack -5s → raise "
        "nodes.karpenter.termination_grace_period_s to ≥55s or shorten the drain")
    assert case(stack, "node-budget-covers-drain", "api", "warning").render() == (
        "WARNING node-budget-covers-drain  api: grace 60s (shutdown.grace_s) > nodepool general 50s "
        "(nodes.karpenter.termination_grace_period_s)  slack -10s → lower shutdown.grace_s to what the nodepool "
        "general grants, or raise nodes.karpenter.termination_grace_period_s")


@pytest.mark.parametrize("rule", ["node-budget-covers-drain", "node-shutdown-drains-without-endpoints"])
def test_a_service_may_accept_a_node_rule_it_breaks(rule) -> None:
    stack = build({**UNDRAINED, f"{POOL}.termination_grace_period_s": 30, "nodes.kubelet.shutdown_grace_period_s": 60,
                   f"{A}.accept": [{"id": rule, "reason": "drained by hand before scale-down"}]})
    # every broken case is accepted (the warning too); a case that holds stays ok
    assert {f.status for f in findings_of(stack, rule, "api")} - {"ok"} == {"accepted"}
    assert all(f.status == "accepted" for f in findings_of(stack, rule, "api") if f.slack_s is None or f.slack_s < 0)
    assert rule not in {f.id for f in findings_of(stack, rule, "basketball-feed") if f.status == "accepted"}
