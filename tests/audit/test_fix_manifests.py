"""`lockstep audit --fix`: the nearest consistent numbers for audited workloads, written into
the manifests (formatting kept), audited again, and offered as SARIF `fixes`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from lockstep.timing import conventions as C
from lockstep.timing import limits as L
from lockstep.timing.audit.core import audit
from lockstep.timing.audit.locate import fields_of
from lockstep.timing.context import Ctx, parse_version
from lockstep.timing.fix.knobs import knobs
from lockstep.timing.fix.manifests import fix_manifests

pytest.importorskip("z3")

CORPUS = Path(__file__).parent / "corpus"
SEED = CORPUS / "seed003-defaults" / "input"


def case(name: str) -> tuple[list[str], Ctx, dict[str, object]]:
    expected = yaml.safe_load((CORPUS / name / "expected.yaml").read_text())
    args = expected.get("args") or []
    version = parse_version(args[args.index("--kubernetes-version") + 1]) if "--kubernetes-version" in args else (0, 0)
    options: dict[str, object] = {"assume_lbc_services": True} if "--assume-lbc-services" in args else {}
    return [str(CORPUS / name / "input")], Ctx(L.MARGIN_DEFAULT, version), options


FAILING = sorted(d.name for d in CORPUS.iterdir()
                 if yaml.safe_load((d / "expected.yaml").read_text()).get("exit") == 1)


def values(a, key: str) -> dict[str, int]:
    [s] = [s for s in a.linked.subjects if s.key == key]
    return {n: k.value for n, k in knobs(s.service)[1].items()}


@pytest.mark.parametrize("name", FAILING)
def test_every_failing_corpus_case_is_fixed_or_says_what_is_left(name):
    """The relation, per subject: after the patch, a rule still fails only where the fix said it
    would (a change left by hand, a conflict, a relation no number decides); every written change
    reads back as its number; nothing the fix did not touch fails where it passed (a failover's
    rules read the entry workload, so they may pass now)."""
    paths, ctx, options = case(name)
    r = fix_manifests(paths, ctx, options)
    touched = {fx.key for fx in r.fixes}
    for fx in r.fixes:
        now = values(r.after, fx.key)
        for c in fx.changes:
            assert not c.by_hand.startswith("the edit reads back"), (fx.key, c)
            if c.written:
                assert now[c.field] == c.new, (fx.key, c.field)
        left = {rule for c in fx.changes if not c.written for rule in c.rules} | {f.id for f in fx.unmovable}
        still = {x.finding.id for j in r.after.judged if j.key == fx.key for x in j.findings
                 if x.finding.status == "error"}
        if not fx.conflict:
            assert still <= left, (fx.key, still - left)
    for j in r.before.judged:
        if j.key not in touched:
            [after] = [a for a in r.after.judged if a.key == j.key]
            was = {x.finding.id for x in j.findings if x.finding.status == "error"}
            assert {x.finding.id for x in after.findings if x.finding.status == "error"} <= was, j.key
    for file, text in r.patched.items():  # every patched file still reads as the same documents
        assert len([d for d in yaml.safe_load_all(text) if d is not None]) == \
            len([d for d in yaml.safe_load_all(r.texts[file]) if d is not None])


def test_the_seeds_manifests_change_only_named_fields_and_keep_the_file(tmp_path):
    r = fix_manifests([str(SEED)], Ctx(L.MARGIN_DEFAULT, (1, 31)), {})
    [fx] = r.fixes
    named = {fld for j in r.before.judged for x in j.findings if x.finding.failed for fld in fields_of(x.finding)}
    assert {c.field for c in fx.changes} <= named
    # what a manifest only describes is never written: the app's finish time and keep-alive are
    # the app's. (The ALB's idle timeout may not go below the app's longest request,
    # timeouts-shrink-inward, so the keep-alive must rise above it instead.)
    by_hand = [c for c in fx.changes if not c.written]
    assert [(c.field, C.ANNOTATION + a in c.by_hand) for c, a in zip(by_hand, ("keepalive-seconds", "finish-seconds"))] \
        == [("app.keepalive_s", True), ("shutdown.finish_s", True)]
    assert {x.finding.id for j in r.after.judged for x in j.findings if x.finding.status == "error"} == \
        {"finish-covers-requests", "keepalive-outlasts-lb-idle"}
    [(name, old)] = r.texts.items()
    new = r.patched[name]
    for line in old.splitlines():  # comments and every unchanged line kept, in order
        if line.strip().startswith("#") or "#" in line:
            assert line in new.splitlines()
    removed = [ln[1:] for ln in r.diff().splitlines() if ln.startswith("-") and not ln.startswith("---")]
    assert len(removed) == sum(1 for c in fx.changes if c.written and c.edits[0].start != c.edits[0].end)
    # the annotation the controller would have defaulted is added as a string, as Kubernetes needs
    assert 'alb.ingress.kubernetes.io/healthcheck-interval-seconds: "10"' in new


def test_a_quoted_annotation_keeps_its_quotes_and_an_attribute_list_its_other_keys(tmp_path):
    text = (SEED / "shop.yaml").read_text().replace(
        "alb.ingress.kubernetes.io/scheme: internet-facing",
        "alb.ingress.kubernetes.io/scheme: internet-facing\n"
        "    alb.ingress.kubernetes.io/healthcheck-interval-seconds: '15'  # kept comment\n"
        "    alb.ingress.kubernetes.io/load-balancer-attributes: "
        "routing.http2.enabled=true,idle_timeout.timeout_seconds=60")
    (tmp_path / "shop.yaml").write_text(text)
    r = fix_manifests([str(tmp_path)], Ctx(L.MARGIN_DEFAULT, (1, 31)), {})
    new = next(iter(r.patched.values()))
    assert "healthcheck-interval-seconds: '10'  # kept comment" in new
    # the idle timeout stays: lowering it under the app's keep-alive would cut its longest request
    assert "load-balancer-attributes: routing.http2.enabled=true,idle_timeout.timeout_seconds=60" in new


def test_a_missing_prestop_gets_the_native_sleep_where_the_cluster_has_it(tmp_path):
    text = (SEED / "shop.yaml").read_text()
    start = text.index("          lifecycle:")
    end = text.index("---", start)
    (tmp_path / "shop.yaml").write_text(text[:start] + text[end:])
    for version, hook in (((1, 31), "sleep:\n                seconds: 15"), ((1, 29), 'command: ["sleep", "15"]')):
        r = fix_manifests([str(tmp_path)], Ctx(L.MARGIN_DEFAULT, version), {})
        [drain] = [c for fx in r.fixes for c in fx.changes if c.field == "shutdown.drain_s"]
        assert drain.written and drain.old == 0
        assert hook in next(iter(r.patched.values()))


def test_a_json_manifest_is_edited_in_place(tmp_path):
    docs = [d for d in yaml.safe_load_all((SEED / "shop.yaml").read_text()) if d]
    (tmp_path / "shop.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}, indent=2))
    r = fix_manifests([str(tmp_path)], Ctx(L.MARGIN_DEFAULT, (1, 31)), {})
    patched = json.loads(next(iter(r.patched.values())))
    [deploy] = [d for d in patched["items"] if d["kind"] == "Deployment"]
    assert deploy["spec"]["replicas"] == 2
    assert deploy["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 80


def test_two_workloads_wanting_different_values_of_one_shared_annotation_write_neither(tmp_path):
    text = (SEED / "shop.yaml").read_text()
    docs = text.split("---\n")
    second = [d.replace("storefront", "checkout").replace('max-recovery-seconds: "20"', 'max-recovery-seconds: "12"')
              for d in docs if "kind: Service\n" in d or "kind: Deployment" in d]
    ingress = [d for d in docs if "kind: Ingress" in d][0]
    rule = ingress[ingress.index("  defaultBackend:"):ingress.index("---") if "---" in ingress else None]
    shared = ingress.replace(rule, rule + "  rules:\n    - http:\n        paths:\n          - path: /checkout\n"
                             "            pathType: Prefix\n            backend:\n              service:\n"
                             "                name: checkout\n                port: {number: 80}\n")
    rest = [d for d in docs if d is not ingress and "kind: Ingress" not in d]
    (tmp_path / "shop.yaml").write_text("---\n".join([shared, *rest, *second]))
    before = audit([str(tmp_path)], Ctx(L.MARGIN_DEFAULT, (1, 31)), {})
    assert {j.key for j in before.judged} >= {"shop/Deployment/storefront", "shop/Deployment/checkout"}
    r = fix_manifests([str(tmp_path)], Ctx(L.MARGIN_DEFAULT, (1, 31)), {})
    interval = [c for fx in r.fixes for c in fx.changes if c.field == "lb.health_check.interval_s"]
    assert len(interval) == 2 and len({c.new for c in interval}) == 2
    assert all(not c.written and "another workload" in c.by_hand for c in interval)
    assert "healthcheck-interval-seconds" not in r.diff()


def test_sarif_fixes_rebuild_the_patch_and_carry_only_written_changes(run_audit, tmp_path):
    shutil.copytree(SEED, tmp_path / "in")
    run = run_audit("--format", "sarif", "--kubernetes-version", "1.31", "--fix", str(tmp_path / "in"))
    log = json.loads(run.out)
    [sarif_run] = log["runs"]
    assert sarif_run["columnKind"] == "unicodeCodePoints"
    text = (tmp_path / "in" / "shop.yaml").read_text()
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    edits = set()
    for res in sarif_run["results"]:
        if res["ruleId"] == "finish-covers-requests":
            assert "fixes" not in res  # the app's change: by hand, never offered
        for fix in res.get("fixes", []):
            assert fix["description"]["text"]
            for change in fix["artifactChanges"]:
                assert change["artifactLocation"]["uri"].endswith("shop.yaml")
                for rep in change["replacements"]:
                    reg = rep["deletedRegion"]
                    edits.add((starts[reg["startLine"] - 1] + reg["startColumn"] - 1,
                               starts[reg["endLine"] - 1] + reg["endColumn"] - 1, rep["insertedContent"]["text"]))
    out = text
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    expected = fix_manifests([str(tmp_path / "in")], Ctx(L.MARGIN_DEFAULT, (1, 31)), {})
    assert out == next(iter(expected.patched.values()))
    assert run.code == 1  # SARIF reports the input's findings: its exit code is the audit's


def test_write_applies_the_patch_and_the_second_audit_passes(run_audit, tmp_path):
    shutil.copytree(CORPUS / "probes-deadlines" / "input", tmp_path / "in")
    run = run_audit("--fix", "--write", str(tmp_path / "in"))
    assert run.code == 0, run.out
    assert "the patched manifests pass the audit" in run.out and "wrote" in run.out
    again = run_audit(str(tmp_path / "in"))
    assert again.code == 0, again.out
    assert run_audit("--fix", str(tmp_path / "in")).out.strip().endswith("nothing to fix")


def test_without_write_the_patch_is_shown_and_no_file_changes(run_audit, tmp_path):
    shutil.copytree(CORPUS / "probes-deadlines" / "input", tmp_path / "in")
    before = {p: p.read_bytes() for p in (tmp_path / "in").rglob("*") if p.is_file()}
    run = run_audit("--fix", str(tmp_path / "in"))
    assert run.code == 0, run.out
    last = run.out.strip().splitlines()[-1]
    assert "not written: --write applies it" in last and "wrote" not in run.out
    assert {p: p.read_bytes() for p in (tmp_path / "in").rglob("*") if p.is_file()} == before


def test_json_gives_the_changes_as_data(run_audit, tmp_path):
    shutil.copytree(SEED, tmp_path / "in")
    data = json.loads(run_audit("--fix", "--format", "json", "--kubernetes-version", "1.31", str(tmp_path / "in")).out)
    assert data["ok"] is False and data["diff"].startswith("--- a/")
    [subject] = data["subjects"]
    by_field = {c["field"]: c for c in subject["changes"]}
    assert by_field["replicas"] == {**by_field["replicas"], "from": 1, "to": 2, "written": True}
    assert not by_field["shutdown.finish_s"]["written"] and by_field["shutdown.finish_s"]["by_hand"]
    assert [f["id"] for f in data["still_failing"]] == ["keepalive-outlasts-lb-idle", "finish-covers-requests"]


def test_keep_pins_a_field_and_a_conflict_is_named(run_audit, tmp_path):
    shutil.copytree(SEED, tmp_path / "in")
    run = run_audit(str(tmp_path / "in"), "--fix", "--keep", "shop/Deployment/storefront.lb.health_check.*")
    assert run.code == 1
    assert "recovery-within-budget" in run.out and "--keep lb.health_check.interval_s (= 15)" in run.out


@pytest.mark.parametrize("argv, message", [
    (["--write"], "--write needs --fix"),
    (["--keep", "shutdown.grace_s"], "--keep needs --fix"),
    (["--fix", "--keep", "nope.*"], "--keep nope.*: names no whole-number field of an audited workload"),
])
def test_misused_flags_are_one_line_and_exit_two(run_audit, argv, message):
    run = run_audit(str(SEED), *argv)
    assert run.code == 2 and message in run.err and "Traceback" not in run.err
    assert len(run.err.strip().splitlines()) == 1


def test_write_refuses_standard_input(run_audit):
    run = run_audit("--fix", "--write", "-", stdin=(SEED / "shop.yaml").read_bytes())
    assert run.code == 2 and "standard input cannot be written back" in run.err


@pytest.mark.parametrize(("name", "spelt"), [
    # an ingress-nginx ConfigMap's digits stay digits, its duration gets seconds, a grace a number
    ("ingress-nginx", {"path[0].upstream_idle_s": '"4"', "path[0].request_timeout_s": '"30"',
                       "path[0].worker_shutdown_s": '"600s"', "path[0].grace_s": "615"}),
    # Istio durations (a VirtualService route's timeout, a DestinationRule's `1h`) in seconds
    ("istio-gateway", {"path[0].request_timeout_s": '"120s"', "path[0].upstream_idle_s": '"59s"'}),
    ("mesh-proxies", {"path[0].upstream_idle_s": '"74s"'}),
])
def test_a_hops_numbers_are_written_where_the_linker_read_them_as_the_manifest_spells_them(name, spelt):
    """A finding names `path[0].*`; --fix writes that number back into the ConfigMap, Ingress,
    VirtualService or DestinationRule it was read from, in the file's own spelling. A drain set
    inside the proxy.istio.io/config annotation's YAML is named for a person to change."""
    r = fix_manifests(*case(name))
    changes = [c for fx in r.fixes for c in fx.changes if c.field.startswith("path[")]
    assert {c.field: "".join(e.text for e in c.edits) for c in changes if c.written} == spelt
    for c in changes:
        if not c.written:
            assert c.field == "path[0].drain_s" and f"terminationDrainDuration: {c.new}s" in c.by_hand, c


def test_a_destination_rule_without_a_pool_idle_timeout_gets_one(tmp_path):
    """The Service's DestinationRule states no idle timeout (Istio's 1 h applies): the fix adds
    trafficPolicy.connectionPool.http.idleTimeout to it, and the patched rule reads back."""
    paths, ctx, options = case("mesh-proxies")
    files = sorted(Path(paths[0]).glob("*.yaml"))
    for f in files:
        text = f.read_text()
        stated = "  trafficPolicy:\n    connectionPool:\n      http:\n        idleTimeout: 1h\n"
        (tmp_path / f.name).write_text(text.replace(stated, "") if stated in text else text)
    assert "idleTimeout" not in "".join(f.read_text() for f in tmp_path.iterdir())
    r = fix_manifests([str(tmp_path)], ctx, options)
    [change] = [c for fx in r.fixes for c in fx.changes if c.field == "path[0].upstream_idle_s"]
    assert change.old == 3600 and change.written, change
    patched = "".join(r.patched.values())
    rule = [d for d in yaml.safe_load_all(patched) if d and d.get("kind") == "DestinationRule"]
    assert [d["spec"]["trafficPolicy"]["connectionPool"]["http"]["idleTimeout"] for d in rule] == [f"{change.new}s"]
