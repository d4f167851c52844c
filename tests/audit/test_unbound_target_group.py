"""A TargetGroupBinding whose target group the input lacks: the workload's load-balancer rules
are judged at the least values the API allows over every kind the group may be, never at a
default; what the binding and its Service leave open is a note (issue 14)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from lockstep.timing.bind import lbs
from lockstep.timing import limits as L
from lockstep.timing.extract import mesh as M
from lockstep.timing.lbkinds import KINDS

BUNDLE = Path(__file__).parent / "corpus" / "tgb-unbound-short-drain" / "input" / "payments.yaml"
DOCS = list(yaml.safe_load_all(BUNDLE.read_text()))


def write(tmp_path: Path, docs: list[dict]) -> str:
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def edited(**changes) -> list[dict]:
    """The bundle's documents: `binding`, `service` and `deployment` dicts merged into their spec."""
    docs = copy.deepcopy(DOCS)
    for doc, key in zip(docs, ("binding", "service", "deployment")):
        doc["spec"].update(changes.get(key, {}))
    return docs


def drain_finding(run) -> dict:
    return next(f for f in run.findings() if f["id"] == "drain-covers-lb-detection")


def test_the_bound_is_the_least_value_over_every_kind_and_the_api_ranges() -> None:
    lb = lbs.unbound_lb("ip", 8080, {})
    assert lb.deregistration_propagation_s == min(k.propagation["deregistration_propagation_s"] for k in KINDS.values())
    assert lb.registration_propagation_s == min(k.propagation["registration_propagation_s"] for k in KINDS.values())
    hc = lb.health_check
    assert (hc.interval_s, hc.timeout_s, hc.healthy_threshold, hc.unhealthy_threshold) == (
        L.HC_INTERVAL.lo, L.HC_TIMEOUT.lo, L.HC_THRESHOLD.lo, L.HC_THRESHOLD.lo)
    assert lb.deregistration_delay_s == L.DEREGISTRATION_DELAY.lo
    assert lb.idle_timeout_s == min(r.lo for k in KINDS.values() for r in k.idle_timeout.values())
    assert lb.unknown == frozenset(lbs.UNSTATED)


def test_a_propagation_the_user_states_is_known() -> None:
    lb = lbs.unbound_lb("ip", 8080, {"deregistration_propagation_s": 40})
    assert lb.deregistration_propagation_s == 40
    assert "lb.deregistration_propagation_s" not in lb.unknown
    assert "lb.registration_propagation_s" in lb.unknown


@pytest.mark.parametrize(("propagation", "status"), [(0, "ok"), (1, "error")])
def test_the_drain_rule_is_decided_once_the_deregistration_propagation_is_given(run_audit, tmp_path, propagation,
                                                                                 status) -> None:
    path = write(tmp_path, edited())  # a 5 s drain, margin 5 s
    run = run_audit("--format", "json", "--deregistration-propagation", str(propagation), path)
    assert (drain_finding(run)["status"], drain_finding(run)["needs"]) == (status, [])


def test_instance_targets_leave_by_the_endpoints_whatever_the_target_group(run_audit, tmp_path) -> None:
    docs = edited(binding={"targetType": "instance"}, service={"type": "NodePort"})
    found = drain_finding(run_audit("--format", "json", write(tmp_path, docs)))
    assert (found["status"], found["needs"]) == ("error", [])
    assert found["right"]["value"] == L.ENDPOINT_PROPAGATION_DEFAULT


def test_without_a_target_type_a_node_port_service_leaves_ip_or_instance_open(run_audit, tmp_path) -> None:
    run = run_audit("--format", "json", write(tmp_path, edited(service={"type": "NodePort"})))
    assert not [f for f in run.findings() if f["id"] == "drain-covers-lb-detection"]
    assert any("no targetType and a NodePort/LoadBalancer Service" in n and "not judged" in n for n in run.notes())


def test_a_clusterip_service_can_only_be_bound_with_ip_targets(run_audit, tmp_path) -> None:
    run = run_audit("--format", "json", write(tmp_path, edited()))
    assert drain_finding(run)["right"]["source"] == "deregistration: lb.deregistration_propagation_s"


def test_a_binding_the_controller_manages_is_judged_from_its_annotations_not_the_bound(run_audit, tmp_path) -> None:
    docs = edited()
    docs[0]["metadata"]["labels"] = {"service.k8s.aws/stack": "checkout/payments"}
    run = run_audit("--format", "json", write(tmp_path, docs))
    assert not [f for f in run.findings() if f["id"] == "drain-covers-lb-detection"]
    # (the one note about the namespace, which would say whether a mesh proxy runs, is no such guess)
    assert not any("not in the input" in n and M.UNDECIDED_NOTE not in n for n in run.notes())


def test_the_target_group_rules_are_not_run_on_a_target_group_nobody_described(run_audit, tmp_path) -> None:
    ids = {f["id"] for f in run_audit("--format", "json", "--all", write(tmp_path, edited())).findings()}
    assert "drain-covers-lb-detection" in ids
    assert not ids & {"lb-values-in-range", "lb-timeout-below-interval"}
