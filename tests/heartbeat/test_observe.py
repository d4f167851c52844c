"""Health judgement of single snapshots: the situations seed 000 names, one claim each."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lockstep.heartbeat.observe import Memory, judge, pdb_minimum, pod_from_k8s, snapshot_from_k8s
from tests.heartbeat import k8s
from lockstep.timing.heartbeat_config import WatchedWorkload


def wl(kind: str = "Deployment", **pdb: object) -> WatchedWorkload:
    return WatchedWorkload(name="feed", namespace="feeds", kind=kind, **pdb)


def snap(kind: str = "Deployment", **kw: object):
    return snapshot_from_k8s(k8s.workload(kind, "feed", **kw))


def test_a_rolling_updates_surge_pod_is_not_compared_with_the_total():
    # status.replicas 3 (surge) but 2 of the 2 expected available: healthy
    v, _ = judge(wl(), snap(expected=2, total=3, ready=2, updated=1), None, 0, 60)
    assert v.healthy and v.required == 2


def test_a_deployment_below_its_expected_count_without_a_pdb_is_unhealthy():
    v, _ = judge(wl(), snap(expected=2, ready=1), None, 0, 60)
    assert not v.healthy and "1 available < 2 required" in v.reason


def test_a_pdb_minimum_keeps_a_drained_workload_healthy():
    v, _ = judge(wl(pdb_min_available=1), snap(expected=2, ready=1), None, 0, 60)
    assert v.healthy


@pytest.mark.parametrize(("pdb", "expected", "minimum"), [
    ({"pdb_min_available": "50%"}, 3, 2),      # percentages round up
    ({"pdb_max_unavailable": "50%"}, 3, 1),    # 3 - ceil(1.5)
    ({"pdb_max_unavailable": 1}, 1, 1),        # never below one pod while pods are expected
    ({"pdb_min_available": 5}, 3, 3),          # never above the expected count
    ({}, 0, 0),                                # scaled to zero: nothing expected
])
def test_pdb_minimum_rounds_like_kubernetes_and_stays_within_one_and_expected(pdb, expected, minimum):
    assert pdb_minimum(wl(**pdb), expected) == minimum


def test_a_workload_missing_from_the_listing_is_unhealthy():
    v, _ = judge(wl(), None, None, 0, 60)
    assert not v.healthy and "not found" in v.reason


def test_a_rescale_in_progress_is_judged_against_the_count_last_reached():
    _, mem = judge(wl(), snap(expected=3), None, 0, 60)
    v, mem = judge(wl(), snap(expected=5, generation=2, total=5, ready=3), mem, 5, 60)
    assert v.healthy and "rescale 3→5" in v.reason
    v, mem = judge(wl(), snap(expected=5, generation=2, ready=5), mem, 10, 60)
    assert v.healthy and mem is not None and mem.settled_expected == 5
    v, _ = judge(wl(), snap(expected=5, generation=2, ready=4), mem, 15, 60)
    assert not v.healthy  # once reached, a shortfall is a shortfall


def test_a_lagging_status_is_replaced_by_counting_ready_pods_that_are_not_terminating():
    s = snap("StatefulSet", expected=3, generation=5, observed=4)
    pods = [k8s.pod("feed-0", "feed"), k8s.pod("feed-1", "feed", terminating=True), k8s.pod("feed-2", "feed", ready=False)]
    s = replace(s, pods=tuple(pod_from_k8s(p) for p in pods))
    v, _ = judge(wl("StatefulSet"), s, Memory(3), 0, 60)
    assert not v.healthy and v.available == 1 and "ready pods" in v.reason


def test_a_statefulset_rollout_tolerates_the_one_pod_in_replacement_while_it_progresses():
    w = wl("StatefulSet")  # no PDB: every pod required outside a rollout
    s = snap("StatefulSet", expected=3, ready=2, updated=1, update_revision="rev-b")
    v, mem = judge(w, s, Memory(3), 0, 90)
    assert v.healthy and "one pod in replacement" in v.reason
    v, mem = judge(w, replace(s, updated=2), mem, 80, 90)  # progress: the step clock restarts
    assert v.healthy
    v, _ = judge(w, replace(s, updated=2), mem, 80 + 90, 90)
    assert not v.healthy and v.since == 80, "a stuck step counts from when it began"


def test_a_statefulset_rollout_with_more_than_one_pod_missing_is_unhealthy_at_once():
    s = snap("StatefulSet", expected=3, ready=1, updated=1, update_revision="rev-b")
    v, _ = judge(wl("StatefulSet"), s, Memory(3), 0, 90)
    assert not v.healthy and v.since is None


def test_a_malformed_status_names_the_field():
    obj = k8s.workload("Deployment", "feed", expected=2)
    obj["status"]["availableReplicas"] = -1
    with pytest.raises(ValueError, match=r"status\.availableReplicas"):
        snapshot_from_k8s(obj)
