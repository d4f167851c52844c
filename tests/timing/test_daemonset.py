"""A DaemonSet service: one pod per node, the node count stated (`replicas`) or unknown.

Where a rule needs no pod count it judges a DaemonSet exactly as the Deployment with the same
numbers; where it needs one, an unknown count makes it skipped, naming `replicas`. The
rolling update takes the DaemonSet's own defaults and rounds percentages up; OnDelete never
rolls, so the rollout rules have nothing to judge."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import ValidationError

from lockstep.timing import derived as d
from lockstep.timing import limits as L
from lockstep.timing.conventions import ANNOTATION, NODES_ANNOTATION, fact_annotations
from lockstep.timing.extract import ExtractError
from lockstep.timing.extract.kube import workload
from lockstep.timing.invariants import evaluate
from lockstep.timing.model import Rollout, Service, Stack
from lockstep.timing.timeline import stack_timelines
from lockstep.timing.workloads import WORKLOAD_KINDS
from tests.timing.strategies import API, BASKETBALL, FOOTBALL, base, build, edit

# The rules that need the pod count (INVARIANTS.md, "DaemonSets").
NEEDS_COUNT = {"rollout-keeps-capacity", "pdb-needs-replicas", "pdb-allows-eviction", "health-check-drain-needs-peers",
               "eviction-leaves-a-target"}
# Rules only a Deployment has (its progress deadline; an HPA cannot own a DaemonSet's count).
DEPLOYMENT_ONLY = {"progress-deadline-covers-pod-ready", "hpa-owns-replicas"}


def as_daemonset(values: dict, i: int, nodes: int | None) -> dict:
    """Service `i` run as a DaemonSet on `nodes` nodes (None: unknown), every other number kept."""
    svc = values["services"][i]
    svc.update(kind="DaemonSet", replicas=nodes, hpa=None)
    return values


def without_heartbeat(values: dict) -> dict:
    # The heartbeat service watches Deployments and StatefulSets only.
    return {**values, "heartbeat": None, "heartbeat_specs": []}


def verdicts(stack: Stack, name: str, exclude: set[str]) -> set[tuple]:
    return {(f.id, f.status, f.left.value, f.right.value, f.slack_s) for f in evaluate(stack)
            if f.subject == name and f.id not in exclude}


# ---- the model -----------------------------------------------------------------------------
def test_an_unstated_node_count_is_unknown_not_one_and_not_an_error():
    stack = build(values=without_heartbeat(as_daemonset(base(), API, None)))
    svc = stack.services[API]
    assert svc.replicas is None
    assert (d.replicas(svc), d.count_unknown(svc)) == (0, ("replicas",))
    assert d.replica_term(svc).render() == "replicas unknown (replicas)"


def test_a_deployment_still_needs_its_replicas():
    values = base()
    values["services"][FOOTBALL].pop("replicas")
    with pytest.raises(ValidationError, match="replicas is required unless an hpa owns"):
        Stack.model_validate(values)


def test_an_unstated_rolling_update_takes_the_daemonsets_own_defaults_not_the_deployments():
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, 3))
    values["services"][FOOTBALL].pop("rollout")
    rollout = build(values=values).services[FOOTBALL].rollout
    assert (rollout.max_unavailable, rollout.max_surge) == (L.DAEMONSET_ROLLOUT_DEFAULTS["max_unavailable"],
                                                            L.DAEMONSET_ROLLOUT_DEFAULTS["max_surge"])
    assert (rollout.max_unavailable, rollout.max_surge) != (L.K8S_DEFAULTS["max_unavailable"],
                                                            L.K8S_DEFAULTS["max_surge"])


@pytest.mark.parametrize("given_rollout", [{"max_surge": 2}, Rollout(max_surge=2)])
def test_a_partly_stated_rolling_update_keeps_what_it_states_and_defaults_the_rest(given_rollout):
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, 3))
    values["services"][FOOTBALL]["rollout"] = given_rollout
    rollout = build(values=values).services[FOOTBALL].rollout
    assert (rollout.max_surge, rollout.max_unavailable) == (2, L.DAEMONSET_ROLLOUT_DEFAULTS["max_unavailable"])


def test_a_deployments_rollout_defaults_are_untouched():
    values = base()
    values["services"][FOOTBALL].pop("rollout")
    rollout = build(values=values).services[FOOTBALL].rollout
    assert (rollout.max_surge, rollout.max_unavailable) == (L.K8S_DEFAULTS["max_surge"], L.K8S_DEFAULTS["max_unavailable"])


@pytest.mark.parametrize("kind", ["DaemonSet", "Deployment"])
def test_a_rollout_that_is_not_a_mapping_is_refused_by_its_field(kind):
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, 3))
    values["services"][FOOTBALL].update(kind=kind, rollout="fast")
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(values)
    assert [e["loc"][-1] for e in err.value.errors()] == ["rollout"]


@pytest.mark.parametrize("kind", [["DaemonSet"], "Job", 5])
def test_a_kind_that_is_not_one_of_the_table_is_refused_by_its_field(kind):
    values = base()
    values["services"][FOOTBALL]["kind"] = kind
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(values)
    assert "kind" in [e["loc"][-1] for e in err.value.errors()]


def test_a_readers_out_of_range_rollout_number_is_kept_not_revalidated():
    # `extract.values.build` keeps out-of-range numbers for the range rules to report
    loose = Rollout.model_construct(min_ready_s=L.MIN_READY.hi + 1, _fields_set={"min_ready_s"})
    for kind in ("DaemonSet", "Deployment"):
        values = without_heartbeat(as_daemonset(base(), FOOTBALL, 3))
        values["services"][FOOTBALL].update(kind=kind, rollout=loose)
        rollout = build(values=values).services[FOOTBALL].rollout
        assert rollout.min_ready_s == L.MIN_READY.hi + 1
        defaults = L.DAEMONSET_ROLLOUT_DEFAULTS if kind == "DaemonSet" else L.K8S_DEFAULTS
        assert (rollout.max_surge, rollout.max_unavailable) == (defaults["max_surge"], defaults["max_unavailable"])


def test_an_hpa_cannot_own_a_daemonsets_count():
    values = without_heartbeat(as_daemonset(base(), API, None))
    values["services"][API]["hpa"] = {"min_replicas": 2, "max_replicas": 4}
    with pytest.raises(ValidationError, match=r"hpa: a DaemonSet has no scale subresource"):
        Stack.model_validate(values)


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet"])
def test_on_delete_is_a_daemonset_strategy_only(kind):
    values = base()
    values["services"][BASKETBALL].update(kind=kind, rollout={"update_strategy": "OnDelete"})
    with pytest.raises(ValidationError, match=f"OnDelete is not a {kind} strategy"):
        Stack.model_validate(values)


def test_a_heartbeat_spec_cannot_watch_a_daemonset():
    values = as_daemonset(base(), FOOTBALL, 2)
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(values)
    assert [e["msg"] for e in err.value.errors()] == [  # the whole message: the user reads all of it
        "Value error, heartbeat_specs.0.service: football-feed is a DaemonSet; the heartbeat service watches "
        "Deployments and StatefulSets"]


def test_the_heartbeat_deployment_cannot_be_updated_on_delete():
    values = base()
    values["heartbeat"]["rollout"] = {"update_strategy": "OnDelete"}
    with pytest.raises(ValidationError) as err:
        Stack.model_validate(values)
    assert [e["msg"] for e in err.value.errors()] == [
        "Value error, heartbeat.rollout.update_strategy: the heartbeat service is a Deployment: RollingUpdate only"]


def test_the_kind_table_holds_every_kind_the_model_accepts():
    kinds = Service.model_fields["kind"].annotation.__args__
    assert set(kinds) == set(WORKLOAD_KINDS)
    assert all(k.name == name for name, k in WORKLOAD_KINDS.items())
    assert [k for k in WORKLOAD_KINDS.values() if k.count_may_be_unknown] == [WORKLOAD_KINDS["DaemonSet"]]


# ---- derived pod counts -------------------------------------------------------------------------
def daemonset(nodes: int | None, **rollout) -> Service:
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, nodes))
    values["services"][FOOTBALL]["rollout"] = rollout
    values["services"][FOOTBALL]["pdb"] = None
    return build(values=values).services[FOOTBALL]


@given(nodes=st.integers(1, 500), pct=st.integers(1, 100))
@example(nodes=3, pct=10)  # 0.3 pods: a Deployment rounds to 0, a DaemonSet to 1
@example(nodes=10, pct=25)
def test_a_percentage_unavailability_of_nodes_rounds_up(nodes, pct):
    svc = daemonset(nodes, max_unavailable=f"{pct}%", max_surge=0)
    assert d.unavailable_pods(svc) == -(-pct * nodes // 100)
    assert d.unavailable_pods(svc) >= 1


@given(nodes=st.integers(1, 500), pct=st.integers(1, 100))
@example(nodes=3, pct=10)
def test_a_deployments_percentage_unavailability_still_rounds_down(nodes, pct):
    values = base()
    values["services"][FOOTBALL].update(replicas=nodes, rollout={"max_unavailable": f"{pct}%", "max_surge": 1})
    values["services"][FOOTBALL]["pdb"] = None
    svc = build(values=values).services[FOOTBALL]
    assert d.unavailable_pods(svc) == pct * nodes // 100


def test_both_bounds_zero_take_one_node_down_as_the_daemonset_controller_does():
    svc = daemonset(4, max_unavailable=0, max_surge=0)
    assert d.fencepost(svc) and d.unavailable_pods(svc) == 1


@given(nodes=st.integers(1, 200), down=st.integers(1, 10), surge=st.integers(0, 10))
def test_a_daemonsets_rollout_takes_a_wave_per_step_of_nodes(nodes, down, surge):
    svc = daemonset(nodes, max_unavailable=down, max_surge=surge)
    ready, end = d.pod_ready(svc), d.stop(svc)
    step = max(down, surge)
    assert d.rollout_time(svc).value == -(-nodes // step) * ready.value + end.value
    assert d.rollout_time(svc).unknown == ready.unknown + end.unknown


def test_an_unknown_node_count_leaves_the_rollout_time_a_lower_bound_naming_replicas():
    svc = daemonset(None)
    t = d.rollout_time(svc)
    assert t.value == d.stop(svc).value  # no wave counted: the bound that holds for any count
    assert "replicas" in t.unknown and "replicas ?" in t.source
    assert t.render().startswith("rollout_time ≥")


def test_on_delete_never_rolls():
    assert not d.rolls(daemonset(3, update_strategy="OnDelete"))
    assert d.rolls(daemonset(3))


# ---- the rules ---------------------------------------------------------------------------------
@pytest.mark.parametrize("i", [API, FOOTBALL, BASKETBALL])
def test_rules_that_need_no_count_judge_a_daemonset_as_the_deployment_with_the_same_numbers(i):
    values = without_heartbeat(base())
    values["services"][i]["kind"] = "Deployment"
    deployment = build(values=values)
    ds = build(values=as_daemonset(without_heartbeat(base()), i, None))
    name = values["services"][i]["name"]
    same = verdicts(deployment, name, NEEDS_COUNT | DEPLOYMENT_ONLY)
    assert same and same == verdicts(ds, name, NEEDS_COUNT | DEPLOYMENT_ONLY)


@pytest.mark.parametrize("i", [API, FOOTBALL, BASKETBALL])
def test_rules_that_need_the_count_are_skipped_naming_replicas_when_it_is_unknown(i):
    stack = build(values=as_daemonset(without_heartbeat(base()), i, None))
    name = stack.services[i].name
    pdb = stack.services[i].pdb
    fixed = pdb is not None and isinstance(pdb.max_unavailable, int)  # a number of pods: no count needed
    # a minAvailable of pods keeps one pod through a drain whatever the count: decided
    keeps_one = pdb is not None and isinstance(pdb.min_available, int) and pdb.min_available >= 1
    decided = [f for f in evaluate(stack) if f.subject == name and f.id == "eviction-leaves-a-target" and keeps_one]
    assert all(f.status == "ok" for f in decided)
    found = [f for f in evaluate(stack) if f.subject == name and f.id in NEEDS_COUNT
             and not (fixed and f.id == "pdb-allows-eviction") and f not in decided]
    assert found
    assert all(f.status == "skipped" and f.needs == ("replicas",) for f in found), [f.render() for f in found]


@given(nodes=st.integers(1, 50))
@example(nodes=1)
@example(nodes=2)
def test_a_stated_node_count_decides_the_count_rules_as_the_deployments_replicas_do(nodes):
    # the football feed's rollout (surge 1, none down) and its PDB (min_available 1) as numbers
    ds = build(values=as_daemonset(without_heartbeat(base()), FOOTBALL, nodes))
    values = without_heartbeat(base())
    values["services"][FOOTBALL]["replicas"] = nodes
    deployment = build(values=values)
    name = "football-feed"
    count_rules = NEEDS_COUNT | {"pdb-selects-workload"}
    got = {f for f in verdicts(ds, name, set()) if f[0] in count_rules}
    assert got and got == {f for f in verdicts(deployment, name, set()) if f[0] in count_rules}


@pytest.mark.parametrize("rollout", [None, {}])  # the feed's surge-only rollout; the DaemonSet's default (1 down)
def test_an_unknown_count_shows_the_capacity_during_rollout_by_its_field(rollout):
    values = as_daemonset(without_heartbeat(base()), FOOTBALL, None)
    if rollout is not None:
        values["services"][FOOTBALL]["rollout"] = rollout
    found = [f for f in evaluate(build(values=values))
             if f.subject == "football-feed" and f.id == "rollout-keeps-capacity"]
    assert [f.render() for f in found] == [
        "SKIPPED rollout-keeps-capacity  football-feed: capacity during rollout unknown (replicas) ≥ minimum 1 pod  "
        "slack -1 pods → needs replicas"]


def test_a_health_check_drain_of_an_unknown_count_of_targets_waits_on_the_node_count():
    values = without_heartbeat(as_daemonset(base(), BASKETBALL, None))
    values["services"][BASKETBALL]["lb"]["removal"] = ["health_check"]
    found = [f for f in evaluate(build(values=values))
             if f.subject == "basketball-feed" and f.id == "health-check-drain-needs-peers"]
    assert [f.render() for f in found] == [
        "SKIPPED health-check-drain-needs-peers  basketball-feed: targets unknown (replicas) ≥ targets 2  slack -2 "
        "→ needs replicas"]


def test_a_pdb_of_a_fixed_number_of_pods_allows_eviction_whatever_the_node_count():
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, None))
    values["services"][FOOTBALL]["pdb"] = {"max_unavailable": 1}
    stack = build(values=values)
    found = [f for f in evaluate(stack) if f.subject == "football-feed" and f.id == "pdb-allows-eviction"]
    assert [(f.status, f.left.value, f.left.unknown) for f in found] == [("ok", 1, ())]  # known, not a bound


@pytest.mark.parametrize("pdb", [{"max_unavailable": "10%"}, {"min_available": "50%"}, {"min_available": 1}])
def test_a_pdb_that_scales_with_the_count_waits_on_the_node_count(pdb):
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, None))
    values["services"][FOOTBALL]["pdb"] = pdb
    found = [f for f in evaluate(build(values=values)) if f.subject == "football-feed" and f.id.startswith("pdb-")
             and f.id != "pdb-selects-workload"]
    assert found and all(f.status == "skipped" and f.needs == ("replicas",) for f in found)
    expected = {"pdb-allows-eviction"} | ({"pdb-needs-replicas"} if "min_available" in pdb else set())
    assert {f.id for f in found} == expected


def test_an_unknown_count_shows_the_allowed_disruptions_as_a_bound_from_zero():
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, None))
    values["services"][FOOTBALL]["pdb"] = {"min_available": 2}
    found = [f for f in evaluate(build(values=values)) if f.subject == "football-feed" and f.id == "pdb-allows-eviction"]
    assert [f.render() for f in found] == [
        "SKIPPED pdb-allows-eviction  football-feed: allowed disruptions ≥0 (pdb.min_available 2 of replicas unknown "
        "(replicas)) ≥ minimum 1  slack -1 → needs replicas"]


@pytest.mark.parametrize("keep", [0, "0%"])
def test_a_pdb_keeping_no_pod_asks_nothing_of_an_unknown_count(keep):
    values = without_heartbeat(as_daemonset(base(), FOOTBALL, None))
    values["services"][FOOTBALL]["pdb"] = {"min_available": keep}
    ids = {f.id for f in evaluate(build(values=values)) if f.subject == "football-feed"}
    assert "pdb-needs-replicas" not in ids


def test_an_on_delete_daemonset_has_no_rollout_to_judge_and_no_rollout_timeline():
    values = without_heartbeat(as_daemonset(base(), API, 3))
    values["services"][API]["rollout"] = {"update_strategy": "OnDelete"}
    stack = build(values=values)
    ids = {f.id for f in evaluate(stack) if f.subject == "api"}
    assert not ids & {"rollout-keeps-capacity", "rollout-waits-for-lb", "progress-deadline-covers-pod-ready"}
    assert "drain-covers-lb-detection" in ids
    titles = [t.title for t in stack_timelines(stack)]
    assert "api: rolling deploy" not in titles and "api: drain handshake" in titles


def test_a_rolling_daemonset_has_a_rollout_timeline_and_no_progress_deadline_rule():
    stack = build(values=without_heartbeat(as_daemonset(base(), API, 3)))
    ids = {f.id for f in evaluate(stack) if f.subject == "api"}
    assert "rollout-keeps-capacity" in ids and "progress-deadline-covers-pod-ready" not in ids
    assert "api: rolling deploy" in [t.title for t in stack_timelines(stack)]


# ---- what infra writes and the readers read back --------------------------------------------------
def test_a_stated_node_count_is_written_as_the_annotation_and_an_unknown_one_is_not():
    assert fact_annotations(daemonset(5))[ANNOTATION + NODES_ANNOTATION] == "5"
    assert ANNOTATION + NODES_ANNOTATION not in fact_annotations(daemonset(None))
    deployment = build().services[FOOTBALL]
    assert ANNOTATION + NODES_ANNOTATION not in fact_annotations(deployment)


def manifest(annotations=None, update_strategy=None, **spec_keys) -> dict:
    spec = {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}},
                         "spec": {"containers": [{"name": "agent", "image": "agent:1",
                                                  "ports": [{"containerPort": 9100}]}]}}}
    if update_strategy is not None:
        spec["updateStrategy"] = update_strategy
    spec.update(spec_keys)
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "annotations": annotations or {}}, "spec": spec}


def test_a_daemonset_manifest_without_the_annotation_has_an_unknown_count_and_the_default_update():
    svc = workload(manifest())
    assert (svc.kind, svc.replicas) == ("DaemonSet", None)
    assert (svc.rollout.max_unavailable, svc.rollout.max_surge, svc.rollout.update_strategy) == (1, 0, "RollingUpdate")


def test_a_daemonset_manifest_reads_its_node_count_and_update_strategy():
    svc = workload(manifest({ANNOTATION + NODES_ANNOTATION: "6"},
                            {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "20%", "maxUnavailable": 0}},
                            minReadySeconds=7))
    assert (svc.replicas, svc.rollout.min_ready_s) == (6, 7)
    assert (svc.rollout.max_surge, svc.rollout.max_unavailable) == ("20%", 0)
    assert workload(manifest(update_strategy={"type": "OnDelete"})).rollout.update_strategy == "OnDelete"


@pytest.mark.parametrize("raw", ["three", "-1", "2.5"])
def test_a_node_count_that_is_not_a_whole_number_is_one_error_naming_the_annotation(raw):
    with pytest.raises(ExtractError, match=r"^lockstep.dev/nodes: expected a whole number of nodes"):
        workload(manifest({ANNOTATION + NODES_ANNOTATION: raw}))


def test_an_hpa_scaling_a_daemonset_manifest_is_an_input_error():
    from lockstep.timing.model import Hpa

    with pytest.raises(ExtractError, match="hpa: a DaemonSet has no scale subresource"):
        workload(manifest(), hpa=Hpa(min_replicas=1, max_replicas=3))


@pytest.mark.parametrize(("pdb", "status", "kept"), [
    ({"min_available": 1}, "ok", 1),          # one pod kept on any count of nodes
    ({"min_available": 2}, "ok", 1),          # on one node it keeps that one: the least is 1
    ({"min_available": 0}, "error", 0),       # keeps nothing on any count
    ({"min_available": "50%"}, "skipped", 0),  # a share of a count no input states
    ({"max_unavailable": 1}, "skipped", 0),   # on one node it lets the only pod go
])
def test_what_a_pdb_keeps_through_a_drain_of_an_unknown_node_count(pdb, status, kept):
    values = without_heartbeat(as_daemonset(base(), BASKETBALL, None))
    values["services"][BASKETBALL]["pdb"] = pdb
    [f] = [f for f in evaluate(build(values=values))
           if (f.id, f.subject) == ("eviction-leaves-a-target", "basketball-feed")]
    assert (f.status, f.left.value) == (status, kept)
    assert f.needs == (() if status != "skipped" else ("replicas",))
