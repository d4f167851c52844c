"""The mesh proxy read from resources (issue 12, `timing.bind.mesh`): the rendered path example,
its numbers pushed around in the manifests as in the stack, gets the same verdicts from
`lockstep audit` as from `lockstep check`; and the linker's choices (which DestinationRule,
which namespace, what is a note) on small inputs."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockstep.timing.extract import mesh as M
from lockstep.timing.invariants import evaluate
from tests.timing.test_rules_path import C, build

pytest.importorskip("pulumi")

EXAMPLE = Path(__file__).resolve().parents[2] / "Pulumi.example.yaml"
MESH_RULES = ("keepalive-outlasts-lb-idle", "keepalive-chain-ordered", "mesh-drain-covers-lb", "sidecar-outlives-app")
CHECKOUT = "06-checkout.yaml"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("path-render")
    done = subprocess.run([sys.executable, "-m", "lockstep", "render", str(EXAMPLE), "-o", str(out)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def edit_checkout(root: Path, drain: str | None, idle: str | None, linkerd_wait: str | None = None,
                  order: dict[str, str] | None = None) -> None:
    """Push checkout's numbers in its rendered manifests (None: leave the key out); `order`: the
    pod annotations deciding its start order in place of the example's hold."""
    path = root / "k8s" / CHECKOUT
    docs = list(yaml.safe_load_all(path.read_text()))
    for doc in docs:
        if doc["kind"] == "Deployment":
            meta = doc["spec"]["template"]["metadata"]
            annotations = meta.setdefault("annotations", {})
            annotations.pop(M.ISTIO_PROXY_CONFIG, None)
            if linkerd_wait is not None:
                meta["labels"].pop(M.ISTIO_INJECT)
                annotations.update({M.LINKERD_INJECT: "enabled", M.LINKERD_WAIT: linkerd_wait})
            else:  # the example's checkout holds its app until Envoy is ready
                annotations[M.ISTIO_PROXY_CONFIG] = "\n".join(
                    ([] if drain is None else [f"terminationDrainDuration: {drain}"])
                    + ([f"{M.ISTIO_HOLD}: true"] if order is None else []))
            annotations.update(order or {})
        if doc["kind"] == "DestinationRule":
            http = doc["spec"]["trafficPolicy"]["connectionPool"]["http"]
            http.pop("idleTimeout")
            if idle is not None:
                http["idleTimeout"] = idle
    path.write_text(yaml.safe_dump_all(docs))


def audited(run_audit, root: Path) -> list[tuple[str, str]]:
    files = [str(root / "k8s")] + [str(p) for p in sorted((root / "aws").glob("*.json")) if p.name != "failover.json"]
    run = run_audit("--format", "json", "--kubernetes-version", "1.30", *files)
    assert run.code in (0, 1), run.err
    return sorted((f["id"], f["status"]) for f in run.findings() if f["subject"] == "web/Deployment/checkout"
                  and f["id"] in MESH_RULES)


def checked(changes: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((f.id, f.status) for f in evaluate(build(changes)) if f.subject == "checkout" and f.id in MESH_RULES)


@pytest.mark.parametrize(("drain", "idle", "wait", "changes"), [
    ("45s", "60s", None, {}),
    ("10s", "60s", None, {f"{C}.path.0.drain_s": 10}),  # both drain rules
    ("30s", "60s", None, {f"{C}.path.0.drain_s": 30}),  # covers the LB, not the app's stop
    (None, "60s", None, {f"{C}.path.0.drain_s": None}),  # Istio's default drain
    ("45s", "1h", None, {f"{C}.path.0.upstream_idle_s": 3600}),  # istio #55138
    ("45s", None, None, {f"{C}.path.0.upstream_idle_s": None}),  # the DestinationRule's default
    ("45s", "74s", None, {f"{C}.path.0.upstream_idle_s": 74}),
    (None, None, "60", {f"{C}.path.0": {"kind": "linkerd-proxy", "drain_s": 60}}),
    (None, None, "15", {f"{C}.path.0": {"kind": "linkerd-proxy", "drain_s": 15}}),
])
def test_the_audit_of_the_rendered_manifests_agrees_with_check(rendered, tmp_path, run_audit,
                                                                drain, idle, wait, changes) -> None:
    root = tmp_path / "r"
    subprocess.run(["cp", "-r", str(rendered), str(root)], check=True)
    edit_checkout(root, drain, idle, wait)
    expected = checked(changes)
    assert {i for i, _ in expected} == set(MESH_RULES)
    assert audited(run_audit, root) == expected


@pytest.mark.parametrize(("wait", "order", "changes"), [
    (None, {M.ISTIO_NATIVE: "false"}, {f"{C}.path.0.app_waits": False}),  # a classic sidecar, no hold
    (None, {M.ISTIO_NATIVE: "true"}, {}),
    (None, {}, {f"{C}.path.0.app_waits": None}),  # istiod decides: skipped by both
    ("45", {M.LINKERD_AWAIT: "disabled"}, {f"{C}.path.0": {"kind": "linkerd-proxy", "drain_s": 45, "app_waits": False}}),
])
def test_the_start_order_read_from_the_pod_agrees_with_check(rendered, tmp_path, run_audit, wait, order,
                                                             changes) -> None:
    root = tmp_path / "r"
    subprocess.run(["cp", "-r", str(rendered), str(root)], check=True)
    edit_checkout(root, "45s", "60s", wait, order)
    expected = checked(changes)
    assert {i for i, _ in expected} == set(MESH_RULES)
    assert audited(run_audit, root) == expected


# ---- the linker's choices ---------------------------------------------------------------------
APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: checkout, namespace: pay, annotations: {{lockstep.dev/keepalive-seconds: "30"}}}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: checkout}}}}
  template:
    metadata: {{labels: {{app: checkout{labels}}}, annotations: {{{annotations}}}}}
    spec:
      containers:
      - {{name: app, image: x, ports: [{{containerPort: 8080}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: checkout, namespace: pay}}
spec: {{selector: {{app: checkout}}, ports: [{{port: 80, targetPort: 8080}}]}}
"""


def rule(name: str, namespace: str, host: str, idle: str, extra: str = "") -> str:
    return textwrap.dedent(f"""\
        ---
        apiVersion: networking.istio.io/v1
        kind: DestinationRule
        metadata: {{name: {name}, namespace: {namespace}}}
        spec:
          host: {host}
          trafficPolicy: {{connectionPool: {{http: {{idleTimeout: {idle}}}}}}}
        """) + extra


def namespace(labels: str = "") -> str:
    return f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: pay, labels: {{{labels}}}}}\n"


def chain(run_audit, tmp_path, text: str, *, labels: str = f", {M.ISTIO_INJECT}: 'true'", annotations: str = ""):
    file = tmp_path / "m.yaml"
    file.write_text(APP.format(labels=labels, annotations=annotations) + text)
    run = run_audit("--format", "json", "--all", "--kubernetes-version", "1.30", str(file))
    found = [f for f in run.findings() if f["id"] == "keepalive-chain-ordered"]
    return run, found


@pytest.mark.parametrize("host", ["checkout", "checkout.pay.svc.cluster.local"])
def test_a_destination_rule_names_its_service_by_its_short_or_full_host(run_audit, tmp_path, host) -> None:
    run, found = chain(run_audit, tmp_path, namespace() + rule("dr", "pay", host, "1h"))
    assert [(f["status"], f["message"].count("3600s")) for f in found] == [("error", 1)]
    assert "default" not in found[0]["message"]  # the rule's own 1 h


@pytest.mark.parametrize("host", ["checkout.pay", "checkout.pay.svc"])
def test_a_dotted_partial_host_names_no_service_as_in_istiod_and_says_so(run_audit, tmp_path, host) -> None:
    """istiod completes only a host with no dot (ResolveShortnameToFQDN): `checkout.pay` is
    looked up as written, names no Service, and the rule's 20 s does not apply."""
    run, found = chain(run_audit, tmp_path, namespace() + rule("dr", "pay", host, "20s"))
    assert [f["status"] for f in found] == ["error"]
    assert "(istio-sidecar default)" in found[0]["message"]
    assert any(f"host {host!r} names no Service" in n and "checkout.pay.svc.cluster.local" in n for n in run.notes())


def test_a_short_host_in_another_namespace_is_another_service(run_audit, tmp_path) -> None:
    _, found = chain(run_audit, tmp_path, namespace() + rule("dr", "other", "checkout", "1h"))
    assert [f["status"] for f in found] == ["error"]
    assert "(istio-sidecar default)" in found[0]["message"]  # the rule did not apply: Istio's own 1 h


def test_the_services_own_namespace_wins_and_the_others_are_a_note(run_audit, tmp_path) -> None:
    text = namespace() + rule("root", "istio-system", "checkout.pay.svc.cluster.local", "1h") + rule("own", "pay", "checkout", "20s")
    run, found = chain(run_audit, tmp_path, text)
    assert [f["status"] for f in found] == ["ok"]
    assert any("2 DestinationRules name these pods' Service; judged: DestinationRule pay/own" in n for n in run.notes())


@pytest.mark.parametrize(("host", "extra", "note"), [
    ("'*.pay.svc.cluster.local'", "", "wildcard host"),
    ("checkout", "  workloadSelector: {matchLabels: {app: client}}\n", "workloadSelector"),
])
def test_a_rule_that_is_not_one_services_is_a_note_not_a_guess(run_audit, tmp_path, host, extra, note) -> None:
    run, found = chain(run_audit, tmp_path, namespace() + rule("dr", "pay", host, "20s", extra))
    assert "(istio-sidecar default)" in found[0]["message"]
    assert any(note in n for n in run.notes())


def test_the_mesh_wide_drain_comes_from_the_istio_configmap_unless_the_pod_says(run_audit, tmp_path) -> None:
    mesh = ("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: istio, namespace: istio-system}\n"
            "data:\n  mesh: |\n    defaultConfig:\n      terminationDrainDuration: 33s\n")
    file = tmp_path / "m.yaml"
    for annotations, drain in (("", "33s"), (f"{M.ISTIO_PROXY_CONFIG}: 'terminationDrainDuration: 44s'", "44s")):
        file.write_text(APP.format(labels=f", {M.ISTIO_INJECT}: 'true'", annotations=annotations) + namespace() + mesh)
        run = run_audit("--format", "json", "--all", "--kubernetes-version", "1.30", str(file))
        [f] = [f for f in run.findings() if f["id"] == "sidecar-outlives-app"]
        assert f"terminationDrainDuration {drain}" in f["message"]


def test_a_missing_namespace_is_one_note_and_no_proxy(run_audit, tmp_path) -> None:
    run, found = chain(run_audit, tmp_path, "", labels="")
    assert found == []
    assert [n for n in run.notes() if M.UNDECIDED_NOTE in n] == [f"Namespace pay {M.UNDECIDED_NOTE}"]


def test_a_namespace_label_injects_and_a_pod_label_opts_out(run_audit, tmp_path) -> None:
    text = namespace(f"{M.ISTIO_NAMESPACE_LABEL}: enabled") + rule("dr", "pay", "checkout", "1h")
    assert [f["status"] for f in chain(run_audit, tmp_path, text, labels="")[1]] == ["error"]
    assert chain(run_audit, tmp_path, text, labels=f", {M.ISTIO_INJECT}: 'false'")[1] == []


def test_a_bad_destination_rule_is_one_line_naming_it_and_its_line(run_audit, tmp_path) -> None:
    file = tmp_path / "m.yaml"
    file.write_text(APP.format(labels=f", {M.ISTIO_INJECT}: 'true'", annotations="")
                    + namespace() + rule("dr", "pay", "checkout", "soon"))
    run = run_audit("--kubernetes-version", "1.30", str(file))
    assert run.code == 2
    line = [ln for ln in run.err.splitlines() if "DestinationRule pay/dr" in ln]
    assert len(line) == 1 and "spec.trafficPolicy.connectionPool.http.idleTimeout: 'soon' is not a duration" in line[0]
    at = int(re.search(r"DestinationRule pay/dr \(.*m\.yaml:(\d+)\)", line[0]).group(1))
    assert file.read_text().splitlines()[at - 1].startswith("apiVersion: networking.istio.io/")  # the rule's own line
    assert "Traceback" not in run.err


@pytest.mark.parametrize("stated", [True, False])
def test_audit_fix_writes_a_linkerd_drain_into_the_pod_annotation_stated_or_not(rendered, tmp_path, stated) -> None:
    """checkout's Linkerd proxy waits 15 s before exit (or Linkerd's 0 when the annotation is
    absent): --fix sets config.alpha.linkerd.io/proxy-wait-before-exit-seconds as the string of
    seconds Linkerd reads, adding the annotation when the pod leaves it out; the patched
    manifests are audited again and the drain reads back."""
    pytest.importorskip("z3")
    from lockstep.timing import limits as L
    from lockstep.timing.context import Ctx
    from lockstep.timing.fix.manifests import fix_manifests

    root = tmp_path / "r"
    subprocess.run(["cp", "-r", str(rendered), str(root)], check=True)
    edit_checkout(root, None, None, "15")
    if not stated:
        path = root / "k8s" / CHECKOUT
        docs = list(yaml.safe_load_all(path.read_text()))
        for doc in docs:
            if doc["kind"] == "Deployment":
                del doc["spec"]["template"]["metadata"]["annotations"][M.LINKERD_WAIT]
        path.write_text(yaml.safe_dump_all(docs))
    files = [str(root / "k8s")] + [str(p) for p in sorted((root / "aws").glob("*.json")) if p.name != "failover.json"]
    r = fix_manifests(files, Ctx(L.MARGIN_DEFAULT, (1, 30)), {})
    [change] = [c for fx in r.fixes if fx.key == "web/Deployment/checkout" for c in fx.changes if c.field == "path[0].drain_s"]
    assert change.old == (15 if stated else 0) and change.new > change.old and change.written, change
    patched = yaml.safe_load_all(r.patched[next(f for f in r.patched if f.endswith(CHECKOUT))])
    [pod] = [d["spec"]["template"]["metadata"] for d in patched if d and d["kind"] == "Deployment"]
    assert pod["annotations"][M.LINKERD_WAIT] == str(change.new)
