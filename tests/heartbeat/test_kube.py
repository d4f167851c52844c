"""The Kubernetes adapter and the Lease election against a stand-in API server on loopback."""

from __future__ import annotations

from typing import Iterator

import pytest

from lockstep.heartbeat.kube import LABEL_SELECTOR, KubeObserver, ObserveError
from lockstep.heartbeat.leader import BLOCKED_ANNOTATION, LeaderElector
from tests.heartbeat import k8s
from tests.heartbeat.fake_kube import FakeKube
from tests.heartbeat.support import short_config


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    fake = FakeKube()
    yield fake
    fake.close()


def example_cluster(kube: FakeKube) -> None:
    kube.objects[("feeds", "deployments")] = [
        k8s.workload("Deployment", "football-feed", expected=2, total=3, ready=2, updated=1),
        {**k8s.workload("Deployment", "not-watched", expected=1), "metadata": {
            "name": "not-watched", "namespace": "feeds", "labels": {"app": "x"}}},
    ]
    kube.objects[("feeds", "statefulsets")] = [
        k8s.workload("StatefulSet", "basketball-feed", expected=3, generation=2, observed=1)]
    kube.objects[("feeds", "pods")] = [
        k8s.pod("basketball-feed-0", "basketball-feed"), k8s.pod("basketball-feed-1", "basketball-feed"),
        k8s.pod("basketball-feed-2", "basketball-feed", ready=False), k8s.pod("football-feed-x", "football-feed")]


def test_the_observer_lists_labelled_workloads_and_reads_pods_only_where_counts_lag(kube):
    example_cluster(kube)
    found = KubeObserver(kube.client(), short_config(), timeout_s=2).observe()
    assert set(found) == {("Deployment", "feeds", "football-feed"), ("StatefulSet", "feeds", "basketball-feed")}
    football = found[("Deployment", "feeds", "football-feed")]
    assert (football.expected, football.total, football.available, football.pods) == (2, 3, 2, None)
    basketball = found[("StatefulSet", "feeds", "basketball-feed")]
    assert basketball.pods is not None and [p.ready for p in basketball.pods] == [True, True, False]
    lists = [r for r in kube.requests if "/deployments" in r or "/statefulsets" in r]
    assert lists and all(f"labelSelector={LABEL_SELECTOR}" in r for r in lists)
    assert sum("/pods" in r for r in kube.requests) == 1


@pytest.mark.parametrize(("status", "reason"), [(500, "InternalError"), (403, "Forbidden"), (401, "Unauthorized")])
def test_an_api_error_is_a_critical_observation_failure(kube, status, reason):
    example_cluster(kube)
    kube.failures["statefulsets"] = (status, reason)
    with pytest.raises(ObserveError, match=f"list statefulsets in feeds: HTTP {status}"):
        KubeObserver(kube.client(), short_config(), timeout_s=2).observe()


def test_a_hung_api_server_times_out_as_a_critical_failure(kube):
    example_cluster(kube)
    kube.hang_s = 1.0
    with pytest.raises(ObserveError, match="Timeout"):
        KubeObserver(kube.client(), short_config(), timeout_s=0.3).observe()


def test_an_unreachable_api_server_is_a_critical_failure(kube):
    client = kube.client()
    kube.close()
    with pytest.raises(ObserveError):
        KubeObserver(client, short_config(), timeout_s=0.5).observe()


def test_an_answer_that_is_not_a_list_is_a_critical_failure(kube):
    kube.objects[("feeds", "deployments")] = [{"kind": "Deployment", "metadata": {"name": "x", "namespace": "feeds",
                                               "labels": {"is-observable": "true"}},
                                               "status": {"readyReplicas": "two"}}]
    with pytest.raises(ObserveError, match="readyReplicas"):
        KubeObserver(kube.client(), short_config(), timeout_s=2).observe()


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def electors(kube: FakeKube, clock: Clock) -> tuple[LeaderElector, LeaderElector]:
    from kubernetes import client

    cfg = short_config().lease
    api = client.CoordinationV1Api(kube.client())
    return (LeaderElector(api, cfg, "pod-a", mono=clock), LeaderElector(api, cfg, "pod-b", mono=clock))


def test_exactly_one_instance_leads_and_the_other_takes_over_only_after_the_lease_expires(kube):
    clock = Clock()
    a, b = electors(kube, clock)
    cfg = a.cfg
    assert a.tick() and not b.tick()
    # a stops renewing (crashed): b waits a full lease duration on its own clock
    for step in range(cfg.duration_s):
        clock.t = float(step)
        assert not b.tick() or step >= cfg.duration_s
    clock.t = float(cfg.duration_s + cfg.retry_period_s)
    assert b.tick()
    lease = kube.leases[(cfg.namespace, cfg.name)]
    assert lease["spec"]["holderIdentity"] == "pod-b" and lease["spec"]["leaseTransitions"] == 1
    # a wakes up: it sees b's lease and does not lead (it stepped down for missing its deadline)
    assert not a.tick()


def test_a_released_lease_is_taken_at_once_with_the_blocked_scopes_it_records(kube):
    clock = Clock()
    a, b = electors(kube, clock)
    assert a.tick()
    assert a.save_blocked(frozenset({"football-live"}))
    a.release()
    assert not a.is_leader
    clock.t = float(a.cfg.retry_period_s)
    assert b.tick()
    assert b.restored_blocked == frozenset({"football-live"})
    assert BLOCKED_ANNOTATION in kube.leases[(a.cfg.namespace, a.cfg.name)]["metadata"]["annotations"]


def test_a_leader_that_cannot_renew_within_the_deadline_steps_down(kube):
    clock = Clock()
    a, _ = electors(kube, clock)
    assert a.tick()
    kube.close()  # the API server is gone
    clock.t = float(a.cfg.renew_deadline_s + 1)
    assert not a.tick()
