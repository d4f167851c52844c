"""No silent ignore: every workload in the corpus input is judged or listed with its reason.

Counts the pod-running objects of each bundle's input (by reading the YAML itself, not
through lockstep) and finds each one in the report: as a judged subject, or named in a note
(not judged, and why), or in a problem line on stderr (unreadable input, a kustomization).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.audit.test_corpus import BUNDLES, CORPUS, run_bundle

POD_KINDS = ("Deployment", "StatefulSet", "Rollout", "DaemonSet", "ReplicaSet", "Pod", "Job", "CronJob")


def workloads_in(bundle: Path) -> list[tuple[str, str, str, Path]]:
    found = []
    for f in sorted((bundle / "input").rglob("*")):
        if f.suffix not in (".yaml", ".yml"):
            continue
        try:
            docs = list(yaml.safe_load_all(f.read_text()))
        except yaml.YAMLError:
            continue  # a file YAML cannot read is one problem line naming it: no workload in it to count
        for doc in docs:
            items = doc.get("items", []) if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            for d in items:
                if isinstance(d, dict) and d.get("kind") in POD_KINDS and isinstance(d.get("metadata"), dict):
                    meta = d["metadata"]
                    found.append((d["kind"], meta.get("namespace") or "default", str(meta.get("name")), f))
    return found


def kustomized(path: Path, bundle: Path) -> bool:
    return any((p / "kustomization.yaml").exists() for p in path.parents if bundle in p.parents or p == bundle)


@pytest.mark.parametrize("name", BUNDLES)
def test_every_workload_of_the_input_is_judged_or_listed_with_its_reason(name, run_audit):
    expected, run = run_bundle(name, run_audit)
    bundle = CORPUS / name
    if not run.out.strip():
        pytest.skip("input refused whole (exit 2): nothing is judged, the problem lines name it")
    subjects = {s["subject"] for s in run.report["subjects"]}
    said = " | ".join(run.notes()) + " | " + run.err
    judged = listed = 0
    workloads = workloads_in(bundle)
    for kind, ns, wl, f in workloads:
        if f"{ns}/{kind}/{wl}" in subjects:
            judged += 1
        elif f"{kind} {ns}/{wl}" in said or (kustomized(f, bundle) and "a kustomization" in said):
            listed += 1
        else:
            pytest.fail(f"{kind} {ns}/{wl} ({f.name}) is neither judged nor listed")
    assert judged + listed == len(workloads)


def test_the_corpus_holds_every_pod_running_kind_the_model_does_not_judge():
    kinds = {k for name in BUNDLES for k, *_ in workloads_in(CORPUS / name)}
    assert {"Deployment", "StatefulSet", "Rollout", "DaemonSet", "CronJob"} <= kinds
