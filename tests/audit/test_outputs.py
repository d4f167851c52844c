"""The three output formats, exit codes and line tracking of `lockstep audit`."""

from __future__ import annotations

import json
from pathlib import Path

from lockstep.timing.audit.reader import documents, line_of, parse
from lockstep.timing.invariants import RULE_IDS

CORPUS = Path(__file__).parent / "corpus"
SEED = CORPUS / "seed003-defaults" / "input"
LIST = CORPUS / "kubectl-list-stdin" / "input" / "cluster.yaml"


def test_sarif_is_structurally_sarif_2_1_0(run_audit):
    run = run_audit("--format", "sarif", "--kubernetes-version", "1.31", str(CORPUS / "nlb-statefulsets" / "input"))
    log = json.loads(run.out)
    assert run.code == 1
    assert log["version"] == "2.1.0" and "sarif-2.1.0" in log["$schema"]
    (sarif_run,) = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(RULE_IDS)
    assert sarif_run["results"]
    for result in sarif_run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        assert result["message"]["text"]
        (loc,) = result["locations"]
        assert loc["physicalLocation"]["artifactLocation"]["uri"].endswith("feeds.yaml")
        assert loc["physicalLocation"]["region"]["startLine"] >= 1


def test_sarif_points_at_the_offending_field_and_suppresses_accepted_findings(run_audit):
    run = run_audit("--format", "sarif", str(CORPUS / "nlb-statefulsets" / "input"))
    results = json.loads(run.out)["runs"][0]["results"]
    lines = (CORPUS / "nlb-statefulsets" / "input" / "feeds.yaml").read_text().splitlines()
    drain = next(r for r in results if r["ruleId"] == "drain-covers-lb-detection")
    line = drain["locations"][0]["physicalLocation"]["region"]["startLine"]
    assert lines[line - 1].strip() == "preStop:"
    accepted = [r for r in results if r["properties"]["status"] == "accepted"]
    assert {r["ruleId"] for r in accepted} == {"pdb-needs-replicas", "pdb-allows-eviction", "rollout-keeps-capacity"}
    assert all(r["suppressions"] == [{"kind": "inSource", "justification": "lockstep.dev/accept annotation"}]
               for r in accepted)
    assert not [r for r in results if r["properties"]["status"] == "ok"]


def test_a_skipped_rule_is_a_note_naming_the_annotation(run_audit):
    run = run_audit("--format", "sarif", str(CORPUS / "needs-annotations" / "input"))
    notes = [r for r in json.loads(run.out)["runs"][0]["results"] if r["level"] == "note"]
    assert run.code == 0 and notes
    assert all(n["properties"]["needs"][0].startswith("lockstep.dev/") for n in notes)


def test_text_groups_findings_by_workload_with_both_sides_slack_and_fix(run_audit):
    run = run_audit("--kubernetes-version", "1.31", str(SEED))
    assert run.code == 1
    head, *body = run.out.splitlines()
    assert head.startswith("shop/Deployment/storefront  (") and "via Ingress shop/shop → Service shop/storefront" in head
    drain = next(line for line in body if "drain-covers-lb-detection" in line)
    assert "drain 5s (shutdown.drain_s) < lb_detect 10s" in drain and "slack -10s" in drain
    assert "→ raise the drain to ≥15s" in drain
    assert run.out.rstrip().splitlines()[-1].startswith("lockstep audit: 1 subject in 1 file: 7 error, 2 warning")


NEEDS = CORPUS / "needs-annotations" / "input"


def test_text_folds_a_workloads_skipped_rules_into_one_line_naming_the_annotations(run_audit):
    skipped = [f for f in run_audit("--format", "json", str(NEEDS)).findings() if f["status"] == "skipped"]
    run = run_audit(str(NEEDS))
    lines = run.out.splitlines()
    folded = [line for line in lines if line.lstrip().startswith("SKIPPED")]
    assert len(skipped) > 1 and len(folded) == 1
    (line,) = folded
    assert line.startswith(f"  SKIPPED {len(skipped)}: set ")
    for f in skipped:
        assert f["id"] in line and all(n in line for n in f["needs"]), (f["id"], f["needs"])
    assert not any(f"SKIPPED {f['id']}" in run.out for f in skipped)
    assert lines[-1].endswith(f"{len(skipped)} skipped, 0 accepted, 7 ok")  # readiness-probe-behind-lb, eviction-leaves-a-target among them


def test_text_with_all_prints_every_skipped_and_passing_finding_in_full(run_audit):
    report = run_audit("--format", "json", str(NEEDS)).report
    run = run_audit("--all", str(NEEDS))
    for f in report["subjects"][0]["findings"]:
        assert f"{f['status'].upper()} {f['id']}  " in run.out, f["id"]
    assert "(--all: each)" not in run.out and "passing)" not in run.out


def test_text_prints_errors_and_warnings_in_full_beside_the_folded_skips(run_audit):
    run = run_audit(str(CORPUS / "heartbeat-configmap" / "input"))
    errors = [f for f in run_audit("--format", "json", str(CORPUS / "heartbeat-configmap" / "input")).findings()
              if f["status"] in ("error", "warning")]
    assert errors and all(f"{f['status'].upper()} {f['id']}  " in run.out for f in errors)
    assert ("  SKIPPED 2: set lockstep.dev/finish-seconds, lockstep.dev/max-request-seconds to decide "
            "drain-fits-grace, finish-covers-requests  (--all: each)") in run.out


def test_json_reports_ok_findings_too_and_the_verdict(run_audit):
    run = run_audit("--format", "json", str(CORPUS / "alb-ip-gated" / "input"))
    report = json.loads(run.out)
    assert run.code == 0 and report["ok"] is True
    api = report["subjects"][0]["findings"]
    assert report["summary"]["ok"] == sum(f["status"] == "ok" for s in report["subjects"] for f in s["findings"]) > 0
    assert {f["status"] for f in api} == {"ok", "skipped"} and len(api) > 10


def test_warnings_alone_exit_zero(run_audit, tmp_path):
    text = (CORPUS / "probes-deadlines" / "input" / "search.yaml").read_text()
    relaxed = text.replace('"120"', '"5"').replace("progressDeadlineSeconds: 120", "progressDeadlineSeconds: 600")
    relaxed = relaxed.replace("            periodSeconds: 10\n            failureThreshold: 3\n          livenessProbe",
                              "            periodSeconds: 5\n            failureThreshold: 1\n          livenessProbe")
    (tmp_path / "search.yaml").write_text(relaxed)
    run = run_audit("--format", "json", str(tmp_path))
    statuses = {f["status"] for s in run.report["subjects"] for f in s["findings"]}
    assert "error" not in statuses and "warning" in statuses
    assert run.code == 0


def test_margin_and_deregistration_propagation_flags_reach_the_rules(run_audit):
    ip = str(CORPUS / "nlb-statefulsets" / "input")
    run = run_audit("--format", "json", "--deregistration-propagation", "20", "--margin", "0", ip)
    drain = [f for f in run.findings() if f["id"] == "drain-covers-lb-detection"
             and f["subject"] == "feeds/StatefulSet/match-state"]
    assert drain[0]["status"] == "ok" and drain[0]["slack_s"] == 10


def test_stdin_and_a_directory_read_the_same(run_audit):
    piped = run_audit("--format", "json", "-", stdin=LIST.read_bytes())
    direct = run_audit("--format", "json", str(LIST))
    strip = lambda r: [(f["subject"], f["id"], f["status"]) for f in r.findings()]  # noqa: E731
    assert strip(piped) == strip(direct) and piped.code == direct.code == 1


def test_a_missing_path_and_an_empty_directory_exit_two(run_audit, tmp_path):
    assert run_audit(str(tmp_path / "nope.yaml")).code == 2
    run = run_audit(str(tmp_path))
    assert run.code == 2 and "no *.yaml, *.yml or *.json files" in run.err


def test_yaml_keeps_the_line_of_every_key_across_documents_and_lists():
    docs = documents(parse(LIST.read_text(), "c.yaml"), "c.yaml")
    lines = LIST.read_text().splitlines()
    api = next(d for d in docs if d.kind == "Service" and d.obj["metadata"]["name"] == "api")
    line = line_of(api.obj, ("metadata", "annotations", "alb.ingress.kubernetes.io/healthcheck-interval-seconds"))
    assert "healthcheck-interval-seconds" in lines[line - 1]
    assert [d.kind for d in docs][:4] == ["Namespace", "IngressClass", "Ingress", "Ingress"]


def test_json_documents_get_line_numbers_too():
    text = (CORPUS / "tgb-described" / "input" / "target-groups.json").read_text()
    (doc,) = documents(parse(text, "t.json"), "t.json")
    line = line_of(doc.obj, ("TargetGroups", 1, "UnhealthyThresholdCount"))
    assert '"UnhealthyThresholdCount": 12' in text.splitlines()[line - 1]


GATED_INSTANCE = """\
apiVersion: v1
kind: Service
metadata:
  name: quotes
  namespace: fx
  annotations:
    service.beta.kubernetes.io/aws-load-balancer-type: external
spec:
  type: LoadBalancer
  selector: {app: quotes}
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: quotes, namespace: fx}
spec:
  replicas: 2
  selector: {matchLabels: {app: quotes}}
  template:
    metadata: {labels: {app: quotes}}
    spec:
      readinessGates:
        - conditionType: target-health.elbv2.k8s.aws/k8s-fx-quotes-1a2b3c
      containers:
        - name: quotes
          image: ghcr.io/example/quotes:1.0.0
          ports: [{containerPort: 8443}]
"""


def test_a_declared_readiness_gate_on_instance_targets_cannot_pass(run_audit, tmp_path):
    (tmp_path / "quotes.yaml").write_text(GATED_INSTANCE)
    run = run_audit("--format", "json", str(tmp_path))
    (gate,) = [f for f in run.findings() if f["id"] == "readiness-gate-can-pass"]
    assert gate["status"] == "error" and "IP targets" in gate["fix"]
    assert GATED_INSTANCE.splitlines()[gate["line"] - 1].strip() == "readinessGates:"


def test_an_unexpected_failure_is_still_one_line_and_exit_two(run_audit, monkeypatch):
    import lockstep.timing.audit as audit_module

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(audit_module.link, "plan", broken)
    run = run_audit(str(SEED))
    assert run.code == 2 and run.out == ""
    assert run.err == "lockstep audit: cannot audit the input: RuntimeError: boom\n"


def test_sarif_fingerprints_survive_a_changed_number(run_audit, tmp_path):
    text = (SEED / "shop.yaml").read_text()
    (tmp_path / "shop.yaml").write_text(text)
    before = json.loads(run_audit("--format", "sarif", str(tmp_path)).out)["runs"][0]["results"]
    (tmp_path / "shop.yaml").write_text(text.replace('"sleep 5"', '"sleep 7"'))
    after = json.loads(run_audit("--format", "sarif", str(tmp_path)).out)["runs"][0]["results"]
    prints = lambda rs: {r["ruleId"]: r["partialFingerprints"]["lockstep/v1"] for r in rs}  # noqa: E731
    assert prints(before)["drain-covers-lb-detection"] == prints(after)["drain-covers-lb-detection"]
    assert len(set(prints(before).values())) == len(before)


def test_a_directory_is_read_recursively_without_hidden_directories(run_audit, tmp_path):
    (tmp_path / "apps" / "shop").mkdir(parents=True)
    (tmp_path / "apps" / "shop" / "shop.yml").write_text((SEED / "shop.yaml").read_text())
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yaml").write_text("on: [push]\njobs: {a: [unclosed\n")
    (tmp_path / "notes.txt").write_text("not yaml: [")
    run = run_audit("--format", "json", str(tmp_path))
    assert run.code == 1 and [s["subject"] for s in run.report["subjects"]] == ["shop/Deployment/storefront"]
