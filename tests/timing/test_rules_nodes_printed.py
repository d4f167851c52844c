"""Every node rule's findings printed whole, with the service that owns them and the fields
each side reads (what `locate` and the `accept` lists use), on one stack per case."""

from __future__ import annotations

import pytest

from tests.timing.strategies import DELETE, build, findings_of

CASES = [
    ('eviction-waits-for-lb', {},
     [('OK eviction-waits-for-lb  api: readiness gate set (readiness_gate) = required a readiness gate that can pass (pdb)', 'api', ('readiness_gate',), ('pdb',), ())]),
    ('eviction-waits-for-lb', {'services.0.readiness_gate.namespace_labelled': False},
     [('ERROR eviction-waits-for-lb  api: readiness gate set (readiness_gate) ≠ required a readiness gate that can pass (pdb) → add a passable readiness gate: a PDB counts Ready pods, whose targets may still be initial', 'api', ('readiness_gate',), ('pdb',), ())]),
    ('eviction-waits-for-lb', {'services.0.readiness_gate.injected_after_binding': None},
     [('SKIPPED eviction-waits-for-lb  api: readiness gate set (readiness_gate) = required a readiness gate that can pass (pdb) → needs readiness_gate.injected_after_binding', 'api', ('readiness_gate',), ('pdb',), ('readiness_gate.injected_after_binding',))]),
    ('node-shutdown-drains-without-endpoints', {'nodes.undrained_shutdowns': True},
     [('OK node-shutdown-drains-without-endpoints  api: lb detection + finish 40s (lb detection 10 + shutdown.finish_s 30) + margin 5s ≤ grace 60s (shutdown.grace_s)  slack 15s', 'api', ('lb.health_check.interval_s', 'lb.health_check.unhealthy_threshold', 'shutdown.finish_s'), ('shutdown.grace_s',), ()), ('OK node-shutdown-drains-without-endpoints  api: drain 20s (shutdown.drain_s) ≥ lb detection 10s (lb.health_check.interval_s 5 × lb.health_check.unhealthy_threshold 2) + margin 5s  slack 5s', 'api', ('shutdown.drain_s',), ('lb.health_check.interval_s', 'lb.health_check.unhealthy_threshold'), ()), ("ERROR node-shutdown-drains-without-endpoints  basketball-feed: pod leaves the endpoints after it has exited (the kubelet stops its probes on a node shutdown) ≠ required before it stops serving (undrained shutdowns: nodes.undrained_shutdowns) → drain every node before it shuts down (Karpenter's interruption queue, aws-node-termination-handler, an ASG lifecycle hook) and say so with nodes.undrained_shutdowns: false, or use IP targets (lb.target_type: ip) so the LB's own health check takes the pod out: behind kube-proxy a node shutdown leaves it in the endpoints until it has exited", 'basketball-feed', ('lb.target_type',), ('nodes.undrained_shutdowns',), ()), ("ERROR node-shutdown-drains-without-endpoints  odds-stream: pod leaves the endpoints after it has exited (the kubelet stops its probes on a node shutdown) ≠ required before it stops serving (undrained shutdowns: nodes.undrained_shutdowns) → drain every node before it shuts down (Karpenter's interruption queue, aws-node-termination-handler, an ASG lifecycle hook) and say so with nodes.undrained_shutdowns: false, or use IP targets (lb.target_type: ip) so the LB's own health check takes the pod out: behind kube-proxy a node shutdown leaves it in the endpoints until it has exited", 'odds-stream', ('lb.target_type',), ('nodes.undrained_shutdowns',), ())]),
    ('etp-local-drain-covers-node-check', {'services.2.lb.external_traffic_policy': 'Local', 'services.2.shutdown.drain_s': 45, 'services.2.shutdown.grace_s': 100, 'heartbeat_specs.1.loss_time_s': 170},
     [('OK etp-local-drain-covers-node-check  basketball-feed: drain 45s (shutdown.drain_s) ≥ node check 40s (lb.endpoint_propagation_s 10 + health_check 30) + margin 5s  slack 0s', 'basketball-feed', ('shutdown.drain_s',), ('lb.endpoint_propagation_s', 'lb.health_check.interval_s', 'lb.health_check.unhealthy_threshold'), ())]),
    ('nlb-connections-survive-removal', {'services.2.lb.removal': ['health_check'], 'services.2.shutdown.drain_s': 35, 'services.2.shutdown.grace_s': 100, 'services.2.lb.unhealthy_connection_termination': False, 'services.2.lb.unhealthy_draining_interval_s': 10, 'heartbeat_specs.1.loss_time_s': 170},
     [('OK nlb-connections-survive-removal  basketball-feed: unhealthy draining 10s (lb.unhealthy_draining_interval_s) ≥ finish 10s (shutdown.finish_s)  slack 0s', 'basketball-feed', ('lb.unhealthy_draining_interval_s',), ('shutdown.finish_s',), ())]),
    ('nlb-connections-survive-removal', {'services.2.lb.removal': ['health_check'], 'services.2.shutdown.drain_s': 35, 'services.2.shutdown.grace_s': 100, 'services.2.lb.unhealthy_connection_termination': False, 'services.2.lb.unhealthy_draining_interval_s': 9, 'heartbeat_specs.1.loss_time_s': 170},
     [('ERROR nlb-connections-survive-removal  basketball-feed: unhealthy draining 9s (lb.unhealthy_draining_interval_s) < finish 10s (shutdown.finish_s)  slack -1s → raise lb.unhealthy_draining_interval_s to the finish time', 'basketball-feed', ('lb.unhealthy_draining_interval_s',), ('shutdown.finish_s',), ())]),
    ('nlb-connections-survive-removal', {'services.2.lb.removal': ['health_check'], 'services.2.shutdown.drain_s': 35, 'services.2.shutdown.grace_s': 100, 'heartbeat_specs.1.loss_time_s': 170},
     [('ERROR nlb-connections-survive-removal  basketball-feed: unhealthy connection termination on (lb.unhealthy_connection_termination) ≠ required off → set lb.unhealthy_connection_termination false and a draining interval ≥ finish', 'basketball-feed', ('lb.unhealthy_connection_termination',), (), ())]),
    ('nlb-connections-survive-removal', {'services.2.lb.removal': ['deregistration'], 'services.2.lb.deregistration_connection_termination': True, 'services.2.lb.deregistration_delay_s': 51},
     [('ERROR nlb-connections-survive-removal  basketball-feed: deregistration_delay 51s (lb.deregistration_delay_s) > grace 50s (shutdown.grace_s)  slack -1s → lower lb.deregistration_delay_s to the grace period: closed flows must not outlive the pod', 'basketball-feed', ('lb.deregistration_delay_s',), ('shutdown.grace_s',), ())]),
    ('nlb-connections-survive-removal', {'services.2.lb.removal': ['deregistration'], 'services.2.lb.deregistration_connection_termination': True, 'services.2.lb.deregistration_delay_s': 50},
     [('OK nlb-connections-survive-removal  basketball-feed: deregistration_delay 50s (lb.deregistration_delay_s) ≤ grace 50s (shutdown.grace_s)  slack 0s', 'basketball-feed', ('lb.deregistration_delay_s',), ('shutdown.grace_s',), ())]),
    ('eviction-leaves-a-target', {'services.0.pdb': DELETE, 'services.0.hpa': DELETE, 'services.0.replicas': 2},
     [('OK eviction-leaves-a-target  api: replicas 2 (replicas) ≥ targets left by a drain 2  slack 0', 'api', ('replicas',), (), ()), ('OK eviction-leaves-a-target  basketball-feed: pods the PDB keeps 2 (replicas - allowed by pdb) ≥ kept through a drain 1  slack 1', 'basketball-feed', ('replicas', 'pdb'), (), ()), ('OK eviction-leaves-a-target  odds-stream: pods the PDB keeps 2 (replicas - allowed by pdb) ≥ kept through a drain 1  slack 1', 'odds-stream', ('replicas', 'pdb'), (), ())]),
    ('heartbeat-rides-out-rollout', {'services.1.pdb': DELETE, 'services.1.rollout.max_surge': 0, 'services.1.rollout.max_unavailable': 1},
     [('OK heartbeat-rides-out-rollout  football-live (football-feed): loss_time 120s (loss_time_s) ≥ rollout_time + observe 85s (rollout_time 80 + heartbeat.resync_period_s 5) + margin 5s  slack 30s', 'football-feed', ('loss_time_s',), ('replicas', 'app.warmup_s', 'probes.readiness.period_s', 'probes.readiness.success_threshold', 'rollout.min_ready_s', 'shutdown.drain_s', 'shutdown.finish_s', 'heartbeat.resync_period_s'), ())]),
]


@pytest.mark.parametrize(("rule", "changes", "expected"), CASES)
def test_a_node_rule_prints_its_findings_whole_and_owns_them(rule, changes, expected) -> None:
    # the example's two path services (web, checkout) are not what these changes are about
    got = [(f.render(), f.service, f.left.fields, f.right.fields, f.needs) for f in findings_of(build(changes), rule)
           if f.service not in ("web", "checkout")]
    assert got == expected


def test_an_undecided_eviction_gate_still_carries_the_fix_for_when_it_is_decided() -> None:
    # the skipped line prints what decides it; the finding keeps the fix (JSON output, locate)
    [f] = findings_of(build({'services.0.readiness_gate.injected_after_binding': None}), 'eviction-waits-for-lb', 'api')
    assert (f.status, f.fix) == ('skipped', 'add a passable readiness gate: a PDB counts Ready pods, whose targets '
                                            'may still be initial')
