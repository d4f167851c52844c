"""Which labels a PDB must select: the generated name label only where pods carry it."""

from __future__ import annotations

from lockstep.timing.config import read_stack_file
from lockstep.timing.invariants import context
from lockstep.timing.invariants.kube import pdb_selects_workload, pod_labels
from lockstep.timing.model import Pdb


def feed():
    stack = read_stack_file(None)
    return stack, next(s for s in stack.services if s.name == "football-feed")


def test_generated_pods_carry_the_name_label_plus_the_extra_labels():
    _, svc = feed()
    tagged = svc.model_copy(update={"labels": {"tier": "feed"}})
    assert pod_labels(tagged) == {"app.kubernetes.io/name": "football-feed", "tier": "feed"}


def test_extracted_pods_carry_exactly_their_own_labels():
    _, svc = feed()
    seen = svc.model_copy(update={"labels": {"app": "feed"}, "name_label": False})
    assert pod_labels(seen) == {"app": "feed"}


def test_a_pdb_selecting_the_name_label_selects_nothing_when_the_pods_lack_it():
    stack, svc = feed()
    seen = svc.model_copy(update={"labels": {"app": "feed"}, "name_label": False,
                                  "pdb": Pdb(min_available=1,
                                             selector={"app.kubernetes.io/name": "football-feed"})})
    [finding] = pdb_selects_workload(seen, context(stack))
    assert finding.outcome == "broken"
    matching = seen.model_copy(update={"pdb": Pdb(min_available=1, selector={"app": "feed"})})
    assert pdb_selects_workload(matching, context(stack))[0].outcome == "ok"


def test_extraction_keeps_exactly_the_template_labels():
    from lockstep.timing import extract

    manifest = {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "feed", "namespace": "feeds"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "feed"}},
                         "template": {"metadata": {"labels": {"app": "feed"}},
                                      "spec": {"containers": [{"name": "feed", "image": "feed:1",
                                                               "ports": [{"containerPort": 8080}]}]}}}}
    got = extract.workload(manifest)
    assert got.name_label is False
    assert pod_labels(got) == {"app": "feed"}


def test_name_labels_adds_the_generated_name_label_only_when_asked():
    from lockstep.timing.conventions import name_labels

    assert name_labels("heartbeat", {}, name_label=True) == {"app.kubernetes.io/name": "heartbeat"}
    assert name_labels("heartbeat", {"app": "hb"}, name_label=False) == {"app": "hb"}
