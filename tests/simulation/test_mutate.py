"""The config mutator's parts: ranges from the model, rule boundaries by bisection, verdicts,
the baseline a mutant is judged against, and the parallel run."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from collections import Counter

from bench.bench_render import many_services
from lockstep.timing.config import lockstep_values, read_stack_file, stack_from_config
from lockstep.timing.invariants import context, evaluate, walk
from lockstep.timing.mutate import (Baseline, Mutant, SimCache, build, candidates, field_range, judge,
                           mutate_stack, numbers, with_value)
from lockstep.timing.mutate_judge import stack_scene
from lockstep.timing.sim.spec import stack_specs
from tests.timing.strategies import UNDRAINED

EXAMPLE = read_stack_file(None)


def _copies(n):
    return stack_from_config(lockstep_values(many_services(n)["config"])).model_dump()


DATA = EXAMPLE.model_dump()
DRAIN = ("services", 0, "shutdown", "drain_s")
BASE = Baseline(EXAMPLE)
PATHS = sorted(dict(numbers(DATA)), key=str)


@pytest.mark.parametrize("path, expected", [
    (("services", 0, "lb", "health_check", "interval_s"), (5, 300)),
    (("services", 0, "lb", "health_check", "unhealthy_threshold"), (2, 10)),
    (("services", 1, "replicas"), (0, 10000)),
    (("services", 0, "rollout", "max_surge"), (0, 10000)),
    (DRAIN, (0, 86400)),
    (("watchdog", "failures_before_action"), (1, 100)),
])
def test_ranges_come_from_the_models_field_constraints(path, expected):
    assert field_range(path) == expected


def test_every_integer_of_the_stack_is_found_and_no_boolean():
    found = dict(numbers(DATA))
    assert found[DRAIN] == 20
    assert all(isinstance(v, int) and not isinstance(v, bool) for v in found.values())
    # odds-stream (the blue-green Rollout) adds 41; the heartbeat service states resync_period_s,
    # confirm_timeout_s, ack_timeout_s (defaults); each NLB/ALB its unhealthy draining interval
    # (default 0, 3 LBs), the node sources five numbers; the heartbeat's broker link three (its
    # heartbeat, the idle timeout on its way, the broker's consumer_timeout default); the
    # failover the clients' DNS cache; api's database pool four (lifetime, keep-alive, the two
    # idle timeouts), odds-stream's gRPC clients two (their keepalive, the server's permit); web
    # and checkout (issue 12) 79, their hops' numbers among them; the NLB in front of web's
    # ingress-nginx 12 (port, idle timeout, the check's four, deregistration delay, slow start, the
    # three propagations, the unhealthy draining interval)
    assert len(found) == 316 + 12
    assert len(dict(numbers({**DATA, "services": [s for s in DATA["services"] if s["name"] != "web"]}))) == (
        len(found) - sum(1 for path in found if path[:2] == ("services", 4)))


def test_changing_one_number_leaves_the_original_untouched():
    changed = with_value(DATA, DRAIN, 3)
    assert changed["services"][0]["shutdown"]["drain_s"] == 3
    assert DATA["services"][0]["shutdown"]["drain_s"] == 20


def test_the_drains_wrong_values_include_both_sides_of_its_rule_boundary():
    # drain-covers-lb-detection: drain ≥ 15 s + margin 5 s, so 20 passes and 19 fails.
    values = {m.value: m.why for m in candidates(BASE, DRAIN, 20)}
    assert {0, 10, 40, 200, 86400} <= set(values)
    assert "drain-covers-lb-detection" in values[19] and "drain-covers-lb-detection" in values[18]


def _judge(path, value):
    mutant = Mutant(path, dict(numbers(DATA))[path], value, "test")
    return judge(BASE, mutant, SimCache(phases=1, seed=0, rate=10))


def test_a_value_the_model_rejects_is_counted_and_not_simulated():
    verdict = _judge(("services", 0, "lb", "health_check", "interval_s"), 0)
    assert verdict.category == "rejected_by_model" and not verdict.simulated
    assert "interval_s" in verdict.problem


def test_a_harmful_drain_is_caught_by_its_rule():
    verdict = _judge(DRAIN, 5)
    assert verdict.category == "caught"
    assert verdict.rules == ("drain-covers-lb-detection",)
    assert any("api rollout: requests lost" in h for h in verdict.harm)


def test_every_kind_of_harm_is_named():
    # a startup probe checking every second kills the warming-up app: the harm is the kubelet's restarts
    verdict = _judge(("services", 0, "probes", "startup", "period_s"), 1)
    assert verdict.harm and all("kubelet restart" in h for h in verdict.harm)
    assert not [h for h in verdict.harm if ":  (" in h]


def test_a_drain_inside_the_margin_is_rejected_but_harmless():
    assert _judge(DRAIN, 19).category == "strict"


def test_a_number_the_simulation_does_not_read_is_outside_it():
    assert _judge(("services", 0, "container_port"), 9090).category == "outside"


def _judged(f):
    # a finding as judged: a hop rebuilt from dumped values no longer knows which of its numbers
    # were its kind's defaults, so the labels ("... (ingress-nginx default)") are left out
    return (f.id, f.severity, f.status, f.subject, f.left.value, f.left.source, f.relation, f.right.value,
            f.right.source, f.margin_s, f.slack_s, f.needs, f.service)


def _whole_findings(stack):
    """Every finding of a stack as the baseline splits it: `evaluate`'s, with the stack's own
    (the findings of its watchdog, heartbeat, failover and nodes alone) once per service."""
    bare = walk(stack_scene(stack), context(stack), scopes=("stack",))
    return Counter(map(_judged, evaluate(stack))) + Counter(
        {f: n * (len(stack.services) - 1) for f, n in Counter(map(_judged, bare)).items()})


def _split_findings(base, variant=None):
    """Every finding the baseline holds, with the segments a variant judged again in place of
    its own (a stack-level number's variant holds every service's and the whole stack's)."""
    if variant is not None and variant.index is None:
        return Counter(_judged(f) for seg in variant.segments for f in seg.all())
    again = {} if variant is None else {seg.key: seg for seg in variant.segments}
    return Counter(_judged(f) for seg in base.segments for f in again.get(seg.key, seg).all())


def test_the_baseline_holds_exactly_the_findings_evaluate_reports():
    assert BASE.separable
    assert _split_findings(BASE) == _whole_findings(EXAMPLE)
    assert BASE.errors == tuple(sorted({f.id for f in evaluate(EXAMPLE) if f.status == "error"}))


def _assert_judged_as_the_whole(base, data, path, value):
    # The reference: validate the whole mutated stack and run every rule on it.
    mutated = with_value(data, path, value)
    v = base.variant(path, value)
    try:
        whole = build(mutated)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        assert v == f"{where}: {first['msg'].removeprefix('Value error, ')}"
        return
    assert not isinstance(v, str), v
    # compared as values (a hop rebuilt from dumped values no longer knows its defaults)
    assert v.stack.model_dump() == whole.model_dump()
    assert _split_findings(base, v) == (Counter(map(_judged, evaluate(whole))) if v.index is None
                                        else _whole_findings(whole))
    assert base.error_rules(v) == tuple(sorted({f.id for f in evaluate(whole) if f.status == "error"}))
    assert base.changed_specs(v) == [s for s, b in zip(stack_specs(whole), stack_specs(base.stack)) if s != b]


@given(path=st.sampled_from(PATHS), value=st.integers(-5, 100_000))
@example(path=DRAIN, value=5)  # a service's rule breaks
@example(path=("margin_s",), value=3600)  # a stack-level number re-judges every service
@example(path=("services", 0, "lb", "health_check", "interval_s"), value=0)  # invalid input
@example(path=("nodes", "karpenter", 0, "termination_grace_period_s"), value=30)  # every service's node budget
@example(path=("watchdog", "period_s"), value=3600)  # the watched services' findings
def test_a_mutant_judged_against_the_baseline_matches_judging_the_whole_mutated_stack(path, value):
    _assert_judged_as_the_whole(BASE, DATA, path, value)


def _near(original):
    """Values around a number's own, where rules flip, and far from it."""
    return st.integers(-2, 2 * original + 2) | st.sampled_from([0, 1, original // 2, original * 10, 86400, 2**31])


# The example's services copied under new names (as the mutate benchmark builds its stacks), the
# watchdog and a heartbeat spec watching a copy too: a mutant of one copy must not be judged as
# another's, nor a copy as its original.
COPIES = with_value(with_value(_copies(8), ("watchdog", "watches"), ["api", "football-feed", "api-6"]),
                    ("heartbeat_specs", 0, "service"), "football-feed-7")
COPIES_BASE = Baseline(build(COPIES))
COPY_NUMBERS = sorted(numbers(COPIES), key=str)


@given(st.sampled_from(COPY_NUMBERS).flatmap(lambda pv: st.tuples(st.just(pv[0]), _near(pv[1]))))
@example((("services", 6, "shutdown", "drain_s"), 5))
@example((("heartbeat_specs", 0, "loss_time_s"), 1))
def test_a_mutant_of_a_stack_of_copies_matches_judging_the_whole_mutated_stack(mutant):
    assert COPIES_BASE.separable
    _assert_judged_as_the_whole(COPIES_BASE, COPIES, *mutant)


def test_a_stack_check_that_compares_services_makes_every_mutant_judge_the_whole_stack(monkeypatch):
    # A check reading all services at once (here: how many there are) is not split per
    # service: the baseline finds that out on the unmutated stack and judges stack-scope
    # checks over the whole stack for every mutant.
    from lockstep.timing import mutate_judge
    from lockstep.timing.findings import Term, holds
    from lockstep.timing.invariants.registry import rule

    def count(scene, ctx):
        n = len(scene.services)
        return [holds("stack", n < 7, Term("services", n, "services", unit=""), "<", Term("limit", 7, "", unit=""), "")]

    extra = rule("services-counted", ("error",), "config", "test", ("stack", count))
    rules = (*mutate_judge.RULES, extra)
    monkeypatch.setattr(mutate_judge, "RULES", rules)
    monkeypatch.setattr(mutate_judge, "ALL_RULES", tuple(range(len(rules))))
    monkeypatch.setattr(mutate_judge, "RULE_INDEX", {r.id: i for i, r in enumerate(rules)})
    monkeypatch.setattr(mutate_judge, "_HAS", {**mutate_judge._HAS, ("stack",): mutate_judge._HAS[("stack",)] | {len(rules) - 1}})
    base = Baseline(EXAMPLE)
    assert not base.separable
    v = base.variant(DRAIN, 5)
    assert base.error_rules(v) == ("drain-covers-lb-detection",)
    assert [f.id for seg in v.segments for f in seg.all() if f.id == "services-counted"] == ["services-counted"]


SIMULATED = [p for p in PATHS if p[0] in ("services", "nodes", "watchdog", "heartbeat_specs")]


@settings(max_examples=12)
@given(path=st.sampled_from(SIMULATED), value=st.integers(0, 4000))
@example(path=("nodes", "karpenter", 0, "termination_grace_period_s"), value=100)  # every spec's node budget
@example(path=("services", 3, "argo", "scale_down_delay_s"), value=0)  # the rollout reads it, nothing else
def test_a_verdict_reused_from_the_unmutated_spec_is_what_simulating_the_mutant_gives(path, value):
    v = BASE.variant(path, value)
    assume(not isinstance(v, str))
    reusing = SimCache(phases=1, seed=0, rate=10, baseline=BASE.specs)
    for spec in BASE.changed_specs(v):
        assert reusing.harm(spec) == SimCache(phases=1, seed=0, rate=10).harm(spec)


def test_a_mutant_is_simulated_only_in_the_scenarios_that_read_what_it_changed():
    sims = SimCache(phases=1, seed=0, rate=10, baseline=BASE.specs)
    for spec in BASE.specs:
        sims.harm(spec)
    ran = sims.runs
    # the node budget: only a pod replaced by a node drain is given it
    changed = BASE.changed_specs(BASE.variant(("nodes", "karpenter", 0, "termination_grace_period_s"), 100))
    assert len(changed) > 1
    for spec in changed:
        sims.harm(spec)
    assert sims.runs - ran == sum(1 for s in changed if s.node_budget != BASE.specs[[b.name for b in BASE.specs].index(s.name)].node_budget)
    # the kubelet's shutdown grace: read by no default scenario at all (only by node-shutdown)
    ran = sims.runs
    changed = BASE.changed_specs(BASE.variant(("nodes", "kubelet", "shutdown_grace_period_s"), 600))
    assert changed
    for spec in changed:
        sims.harm(spec)
    assert sims.runs == ran


def test_services_with_the_same_numbers_share_their_runs_and_keep_their_names():
    from dataclasses import replace

    sims = SimCache(phases=1, seed=0, rate=10)
    [harmful] = BASE.changed_specs(BASE.variant(DRAIN, 5))
    mine = sims.harm(harmful)
    ran = sims.runs
    theirs = sims.harm(replace(harmful, name="api-copy"))
    assert sims.runs == ran  # nothing simulated again
    assert mine and [h.replace("api-copy ", "api ", 1) for h in theirs] == list(mine)
    assert all(h.startswith("api-copy ") for h in theirs)


def test_a_run_in_two_worker_processes_reports_exactly_what_one_process_does():
    serial = mutate_stack(EXAMPLE, phases=1, jobs=1)
    parallel = mutate_stack(EXAMPLE, phases=1, jobs=2)
    assert parallel.jobs == 2 and serial.jobs == 1
    assert serial.numbers == parallel.numbers == len(PATHS)
    assert [v.as_dict() for v in parallel.verdicts] == [v.as_dict() for v in serial.verdicts]
    assert (parallel.baseline_harm, parallel.baseline_errors) == (serial.baseline_harm, serial.baseline_errors)
    assert parallel.counts == serial.counts
    assert serial.counts["gap"] == 0  # every harmful mutant of the example is caught by a rule


def test_every_harmful_mutant_of_the_example_in_the_node_scenarios_is_caught_by_a_rule():
    from lockstep.timing.scenario_names import NODE_SCENARIOS

    report = mutate_stack(EXAMPLE, phases=1, jobs=2, scenarios=NODE_SCENARIOS)
    assert not report.baseline_harm and not report.baseline_errors
    assert report.counts["caught"] > 0
    assert [f"{v.mutant.where} → {v.mutant.value}" for v in report.by("gap")] == []


# The example with nodes that shut down undrained, its NLB services moved off kube-proxy's path
# (targets removed by the NLB's own check, which lets them drain 30 s once unhealthy): a stack
# where the kubelet's node shutdown happens to every LB service and `check` passes.
UNDRAINED_CLEAN = {**UNDRAINED, **{
    f"services.{i}.lb.{k}": v for i in (2, 3) for k, v in (
        ("removal", ["health_check"]), ("unhealthy_connection_termination", False),
        ("unhealthy_draining_interval_s", 30), ("health_check.interval_s", 5))}}


def test_every_harmful_mutant_of_a_stack_shut_down_undrained_is_caught_by_a_rule():
    from tests.timing.strategies import build as build_stack

    stack = build_stack(UNDRAINED_CLEAN)
    assert not [f for f in evaluate(stack) if f.failed]
    report = mutate_stack(stack, phases=1, jobs=2, scenarios=("node-shutdown",))
    assert not report.baseline_harm and not report.baseline_errors
    assert any("node-shutdown-drains-without-endpoints" in v.rules for v in report.by("caught"))
    assert [f"{v.mutant.where} → {v.mutant.value}" for v in report.by("gap")] == []


def test_mutate_refuses_fewer_than_one_job_with_one_line(capsys):
    from lockstep.timing.cli import main

    assert main(["mutate", "--jobs", "0"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "lockstep mutate: --jobs: must be at least 1 (got 0)"]


def test_mutate_names_its_worker_processes_in_the_report(capsys):
    from lockstep.timing.cli import main

    assert main(["mutate", "--only", "services.0.shutdown.grace_s", "--phases", "1", "--jobs", "2"]) == 0
    assert "(2 processes)" in capsys.readouterr().out.splitlines()[0]
