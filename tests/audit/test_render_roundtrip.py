"""What `lockstep render` writes for the example stack audits clean: infra/ and extraction agree.

The example stack passes every rule (`lockstep check`); its rendered manifests, read back by
`lockstep audit`, must not break any rule either, and every workload must be found.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("pulumi")


def test_the_rendered_example_stack_audits_without_errors_or_warnings(tmp_path):
    out = tmp_path / "render"
    render = subprocess.run([sys.executable, "-m", "lockstep", "render", "-o", str(out)],
                            capture_output=True, text=True, timeout=240)
    assert render.returncode == 0, render.stderr[-2000:]
    audit = subprocess.run([sys.executable, "-m", "lockstep", "audit", "--format", "json",
                            "--kubernetes-version", "1.30", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr[-2000:]
    report = json.loads(audit.stdout)
    subjects = {s["subject"] for s in report["subjects"]}
    assert {"web/Deployment/api", "feeds/Deployment/football-feed", "feeds/StatefulSet/basketball-feed",
            "heartbeat/Deployment/heartbeat"} <= subjects
    broken = [f["message"] for s in report["subjects"] for f in s["findings"]
              if f["status"] in ("error", "warning")]
    assert broken == []
    # The render's AWS JSON is read too: the load-balancer rules judge its target groups and
    # the failover rules its Route 53 health checks (auditing k8s/ alone judged none of them).
    judged = {(s["subject"], f["id"]) for s in report["subjects"] for f in s["findings"] if f["status"] == "ok"}
    assert {("web/Deployment/api", "drain-covers-lb-detection"), ("web/Deployment/api", "lb-values-in-range"),
            ("feeds/StatefulSet/basketball-feed", "lb-values-in-range"),
            ("Route 53 health check failover-eu-west-health", "failover-ignores-deploys")} <= judged
