"""The node scenarios (issue 13): the example loses nothing in them, each broken node variant
loses requests in the scenario its rule is about (or a test says why not), and a property per
scenario states the relation the simulation obeys."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lockstep.timing.config import read_stack_file
from lockstep.timing.sim.spec import stack_specs
from lockstep.timing.simulate import applies, run_scenario

PHASES = 4
NODE = ("node-drain", "consolidation", "spot-interruption", "node-shutdown", "etp-local")


def _reports(path, scenario, phases=PHASES):
    return {s.name: run_scenario(s, scenario, phases=phases, seed=0, rate=20.0)
            for s in stack_specs(read_stack_file(path)) if applies(s, scenario)}


@pytest.mark.parametrize("scenario", ["node-drain", "consolidation", "spot-interruption"])
def test_the_example_loses_nothing_when_its_nodes_go(scenario):
    reports = _reports(None, scenario)
    assert reports and not [n for n, r in reports.items() if r.harmful]


def test_no_service_of_the_example_is_behind_an_etp_local_service():
    assert not _reports(None, "etp-local")


def test_the_example_drains_every_node_so_no_kubelet_shutdown_happens_to_it():
    # undrained_shutdowns: false — the kubelet's shutdown is the backstop, never the path
    assert not _reports(None, "node-shutdown")


def test_an_undrained_shutdown_spares_the_alb_service_and_loses_requests_behind_kube_proxy():
    # The kubelet stops the pod's probes and leaves it ready (kubernetes #105215, #116965): behind
    # the NLBs' instance targets it stays in the endpoints until it has exited, whatever its drain
    # (the rule says so too: tests/timing/test_seed_examples.py); the ALB's own check takes api out.
    reports = _reports("examples/Pulumi.nodes-undrained.yaml", "node-shutdown")
    assert not reports["api"].harmful
    assert reports["basketball-feed"].counts.lost > 0 and reports["odds-stream"].counts.lost > 0


def test_a_nodepool_grace_below_the_drain_kills_api_mid_drain():
    for scenario in ("node-drain", "consolidation"):
        assert _reports("examples/Pulumi.nodes-budget.yaml", scenario)["api"].counts.cut > 0


def test_an_etp_local_node_keeps_getting_requests_after_its_pod_stopped():
    report = _reports("examples/Pulumi.nodes-etp-local.yaml", "etp-local")["basketball-feed"]
    assert report.counts.refused_502 > 0


def test_an_nlb_resetting_unhealthy_targets_cuts_the_streams_still_finishing():
    report = _reports("examples/Pulumi.nodes-nlb-reset.yaml", "node-drain")["basketball-feed"]
    assert report.counts.cut > 0


def test_undrained_spot_without_a_kubelet_shutdown_loses_what_runs_at_the_notices_end():
    reports = _reports("examples/Pulumi.nodes-shutdown.yaml", "spot-interruption")
    assert reports["api"].counts.lost > 0


def test_an_evicted_singleton_leaves_the_lb_without_a_target_on_a_node_drain():
    assert _reports("examples/Pulumi.nodes-singleton.yaml", "node-drain")["api"].counts.no_target_503 > 0


def test_eviction_waits_for_lb_is_stricter_than_a_three_replica_drain():
    # Without the gate the PDB lets the next eviction go while the replacement's target is
    # still initial, but with 3 replicas and a PDB keeping 2 one old target stays healthy
    # throughout: the rule guards the case where that is the last one (fewer replicas, or
    # several replacements initial at once), which this drain does not reach.
    assert not _reports("examples/Pulumi.nodes-eviction-gate.yaml", "node-drain")["api"].harmful


def test_a_heartbeat_rollout_variant_is_not_about_nodes():
    # heartbeat-rides-out-rollout's variant changes no node number: a drain of it loses nothing.
    assert not _reports("examples/Pulumi.nodes-rollout-loss.yaml", "node-drain")["football-feed"].harmful


# ---- properties ------------------------------------------------------------------------------------
def _web_drain(kit, budget):
    return kit.spec_of(kit.stack_of(kit.web_service(shutdown={"node_termination_budget_s": budget})))


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 80))
@example(35)  # need: requests arrive until deregistration propagates (15 s) and last up to 20 s
@example(25)
def test_a_node_drain_cuts_requests_iff_the_budget_is_below_what_the_last_request_needs(kit, budget):
    spec = _web_drain(kit, budget)
    need = spec.lb.deregistration_propagation + spec.max_request
    cut = run_scenario(spec, "node-drain", phases=2, seed=0, rate=20.0).counts.cut
    if budget >= need:
        assert cut == 0
    elif budget <= need - 10:  # requests of up to max_request still run: some are cut
        assert cut > 0


def _shut(kit, kubelet, critical=0):
    stack = kit.stack_of(kit.web_service(lb={"removal": ["health_check"]}, shutdown={"drain_s": 15}),
                         nodes={"kubelet": {"shutdown_grace_period_s": kubelet,
                                            "shutdown_grace_period_critical_pods_s": critical}})
    return kit.spec_of(stack)


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 90))
@example(35)  # the drain (15 s) + the longest request (20 s)
@example(20)
def test_a_node_shutdown_cuts_requests_iff_its_grace_is_below_drain_plus_the_longest_request(kit, kubelet):
    spec = _shut(kit, kubelet)
    need = spec.drain + spec.max_request
    report = run_scenario(spec, "node-shutdown", phases=2, seed=0, rate=20.0)
    if kubelet >= need:
        assert report.counts.cut == 0
    elif kubelet <= need - 10:
        assert report.counts.cut > 0


def test_node_shutdown_grace_is_what_the_critical_pods_leave(kit):
    assert _shut(kit, 60, critical=40).nodes.kubelet == 20


# ---- a gap the consolidation scenario found (closed by node-budget-covers-drain) ----------------
def _short_nodepool_grace():
    from lockstep.timing.model import Stack

    data = read_stack_file(None).model_dump()
    # 50 s: basketball-feed's drain + finish (40 s) + the 5 s margin fit; its grace (50 s) just does
    data["nodes"]["karpenter"][0]["termination_grace_period_s"] = 50
    return Stack.model_validate(data, context={"skip_invariants": True})


def test_a_nodepool_grace_that_covers_the_drain_still_forces_evictions_the_pdb_holds():
    # Karpenter disrupts basketball-feed's nodes one at a time; a pod the PDB still holds (its
    # predecessor's replacement is not Ready yet) is deleted anyway once the NodePool's grace less
    # the pod's own (50 − 50 = 0 s) is over: the StatefulSet's pods go before any replacement is Ready.
    spec = next(s for s in stack_specs(_short_nodepool_grace()) if s.name == "basketball-feed")
    assert run_scenario(spec, "consolidation", phases=2, seed=0, rate=10.0).counts.no_target_503 > 0


def test_the_rules_reject_a_nodepool_grace_shorter_than_a_pdb_held_eviction():
    from lockstep.timing.invariants import errors, evaluate

    found = [f for f in errors(evaluate(_short_nodepool_grace()))
             if (f.id, f.subject) == ("node-budget-covers-drain", "basketball-feed")]
    # not for the drain (40 s + margin ≤ 50 s): for the grace and the wait for a replacement
    assert [f.left.label for f in found] == ["grace + replace_time"]


def _web_nodes(kit, nodes, **over):
    return kit.spec_of(kit.stack_of(kit.web_service(**over), nodes=nodes))


@settings(max_examples=6, deadline=None)
@given(st.integers(1, 80))
@example(35)  # deregistration propagation (15 s) + the longest request (20 s)
@example(25)
def test_a_consolidation_cuts_requests_iff_the_nodepool_grace_is_below_what_the_last_request_needs(kit, tgp):
    spec = _web_nodes(kit, {"karpenter": [{"name": "p", "termination_grace_period_s": tgp}]})
    need = spec.lb.deregistration_propagation + spec.max_request
    cut = run_scenario(spec, "consolidation", phases=2, seed=0, rate=20.0).counts.cut
    if tgp >= need:
        assert cut == 0
    elif tgp <= need - 10:
        assert cut > 0


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 115))
@example(85)  # the notice (120 s) less what the pod needs (15 s + 20 s)
@example(95)
def test_a_handled_spot_interruption_loses_requests_iff_the_reaction_leaves_less_than_the_pod_needs(kit, reaction):
    spec = _web_nodes(kit, {"karpenter": [{"name": "p", "capacity_types": ["spot"], "interruption_queue": True}],
                            "spot_reaction_s": reaction})
    need = spec.lb.deregistration_propagation + spec.max_request
    lost = run_scenario(spec, "spot-interruption", phases=2, seed=0, rate=20.0).counts.lost
    if 120 - reaction >= need:
        assert lost == 0
    elif 120 - reaction <= need - 10:
        assert lost > 0


def _local(kit, drain):
    return kit.spec_of(kit.stack_of(kit.web_service(
        app={"keepalive_s": None},
        lb={"kind": "nlb", "target_type": "instance", "protocol": "TCP", "idle_timeout_s": 350,
            "external_traffic_policy": "Local", "unhealthy_connection_termination": False,
            "unhealthy_draining_interval_s": 30,
            "health_check": {"protocol": "TCP", "path": None, "interval_s": 10, "timeout_s": 10,
                             "healthy_threshold": 2, "unhealthy_threshold": 2}},
        shutdown={"drain_s": drain, "grace_s": 120})))


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 60))
@example(40)  # endpoint propagation (10 s) + 2 node checks 10 s apart + one interval of phase
@example(20)
def test_an_etp_local_node_gets_requests_after_its_pod_stopped_iff_the_drain_is_below_the_node_check(kit, drain):
    spec = _local(kit, drain)
    lb = spec.lb
    need = lb.endpoint_propagation + lb.interval * (lb.unhealthy_threshold + 1)
    refused = run_scenario(spec, "etp-local", phases=2, seed=0, rate=20.0).counts.refused_502
    if drain >= need:
        assert refused == 0
    elif drain <= lb.endpoint_propagation + lb.interval * (lb.unhealthy_threshold - 1):
        assert refused > 0


# ---- eviction-waits-for-lb, measured ---------------------------------------------------------------
def _evicted(kit, replicas, keep, gate):
    over = {"replicas": replicas, "pdb": {"min_available": keep}}
    if gate:
        over["readiness_gate"] = {}
    return kit.stack_of(kit.web_service(**over))


@pytest.mark.parametrize("replicas, keep", [(2, 1), (3, 1)])
def test_without_the_gate_a_drain_evicts_the_last_healthy_target_while_its_successor_is_initial(kit, replicas, keep):
    stack = _evicted(kit, replicas, keep, gate=False)
    assert kit.error_ids(stack) == {"eviction-waits-for-lb"}
    assert run_scenario(kit.spec_of(stack), "node-drain", phases=PHASES, seed=0, rate=20.0).counts.no_target_503 > 0
    gated = _evicted(kit, replicas, keep, gate=True)
    assert kit.error_ids(gated) == set()
    assert not run_scenario(kit.spec_of(gated), "node-drain", phases=PHASES, seed=0, rate=20.0).harmful


@pytest.mark.parametrize("replicas", [3, 4])
def test_eviction_waits_for_lb_is_stricter_by_one_pod_when_the_pdb_keeps_all_but_one(kit, replicas):
    # One eviction at a time: an old target stays healthy until the replacement's is; the
    # rule rejects the stack all the same (it does not count what the PDB keeps).
    stack = _evicted(kit, replicas, replicas - 1, gate=False)
    assert kit.error_ids(stack) == {"eviction-waits-for-lb"}
    assert not run_scenario(kit.spec_of(stack), "node-drain", phases=PHASES, seed=0, rate=20.0).harmful


def test_a_long_drain_the_pdb_keeps_letting_through_is_not_a_blocked_one():
    # 30 StatefulSet pods drained one at a time (PDB maxUnavailable 1): about 30 replacements
    # long, far past ten minutes, but each eviction goes through within one replacement; the
    # patience counts from the last eviction that went through, as its message says
    from lockstep.timing.model import Stack

    data = read_stack_file(None).model_dump()
    data["services"][2]["replicas"] = 30
    stack = Stack.model_validate(data, context={"skip_invariants": True})
    spec = next(s for s in stack_specs(stack) if s.name == "basketball-feed")
    report = run_scenario(spec, "node-drain", phases=1, seed=0, rate=10.0)
    assert report.counts.deploy_failed == 0 and not report.harmful
    assert report.metrics["drain_s"] > 600


def test_an_nlb_target_that_recovers_inside_its_draining_interval_keeps_its_connections():
    # A replacement registered before it listens (registration_propagation_s 0) fails the NLB's
    # check, then passes it: back to healthy inside the unhealthy draining interval, its
    # connections stay open (the NLB's unhealthy.draining state flips back to healthy).
    from tests.simulation.test_mutate import UNDRAINED_CLEAN
    from tests.timing.strategies import build

    stack = build({**UNDRAINED_CLEAN, "services.2.lb.registration_propagation_s": 0})
    [spec] = [s for s in stack_specs(stack) if s.name == "basketball-feed"]
    report = run_scenario(spec, "node-shutdown", phases=PHASES, seed=0, rate=20.0, timeline=True)
    assert "LB target unhealthy" in " ".join(text for _, text in report.timeline)
    assert report.counts.cut == 0 and not report.harmful
