"""`lockstep render -o DIR` on the bundled example writes every component's resources."""

from __future__ import annotations

import json

import yaml

from lockstep.timing.cli import main


def test_render_writes_manifests_for_every_component(tmp_path, capsys):
    out = tmp_path / "render"
    assert main(["render", "-o", str(out)]) == 0
    summary = capsys.readouterr().out
    assert summary.splitlines()[0].startswith("lockstep render Pulumi.example.yaml")
    k8s = {p.name: list(yaml.safe_load_all(p.read_text())) for p in (out / "k8s").glob("*.yaml")}
    aws = {p.name: json.loads(p.read_text()) for p in (out / "aws").glob("*.json")}
    assert sorted(k8s) == ["00-namespaces.yaml", "01-api.yaml", "02-football-feed.yaml",
                           "03-basketball-feed.yaml", "04-odds-stream.yaml", "05-web.yaml", "06-checkout.yaml",
                           "07-heartbeat.yaml", "08-nodepools.yaml"]
    assert sorted(aws) == ["api.json", "basketball-feed.json", "checkout.json", "failover.json", "odds-stream.json"]
    for component in ("Namespaces", "TargetGroup", "Workload", "HeartbeatService", "RegionalFailover"):
        assert component in summary
    kinds = {d["kind"] for docs in k8s.values() for d in docs}
    assert {"Deployment", "StatefulSet", "TargetGroupBinding", "Secret", "ConfigMap"} <= kinds
    types = {r["type"] for resources in aws.values() for r in resources}
    assert {"aws:lb/targetGroup:TargetGroup", "aws:route53/record:Record"} <= types


def test_rendered_manifests_are_plain_kubernetes_objects(tmp_path):
    out = tmp_path / "render"
    assert main(["render", "-o", str(out)]) == 0
    for path in (out / "k8s").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            assert list(doc)[:3] == ["apiVersion", "kind", "metadata"], path
            assert not any(k.startswith("__") for k in doc), path
    index = json.loads((out / "index.json").read_text())
    assert all((out / entry["file"]).exists() for entry in index)


def test_render_replaces_what_a_previous_render_wrote(tmp_path):
    out = tmp_path / "render"
    (out / "k8s").mkdir(parents=True)
    (out / "k8s" / "99-stale.yaml").write_text("kind: Stale\n")
    assert main(["render", "-o", str(out)]) == 0
    assert not (out / "k8s" / "99-stale.yaml").exists()
