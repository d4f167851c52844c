"""ingress-nginx read from resources (issue 12, `timing.bind.nginx`): the path example's `web`
as `lockstep render` writes it, behind controller resources written from its hop's numbers,
gets the same verdicts from `lockstep audit` as from `lockstep check`; and the linker's choices
(which controller, which class, what is a note) on small inputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lockstep.timing.conventions import fact_annotations
from lockstep.timing.extract import ingress_nginx as N
from lockstep.timing.hopkinds import INGRESS_NGINX
from lockstep.timing.invariants import evaluate
from tests.timing.test_rules_path import WEB, W, build

pytest.importorskip("pulumi")

EXAMPLE = Path(__file__).resolve().parents[2] / "Pulumi.example.yaml"
CORPUS = Path(__file__).parent / "corpus" / "ingress-nginx" / "input" / "shop.yaml"
RULES = ("keepalive-chain-ordered", "timeouts-shrink-inward", "proxy-reload-spares-requests")
NS = "ingress-nginx"


@pytest.fixture(scope="module")
def web_manifests(tmp_path_factory) -> list[dict]:
    """The path example's `web` (Deployment, Service, PDB) and its Namespace, as rendered."""
    out = tmp_path_factory.mktemp("path-render")
    done = subprocess.run([sys.executable, "-m", "lockstep", "render", str(EXAMPLE), "-o", str(out)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    namespaces = [d for d in yaml.safe_load_all((out / "k8s" / "00-namespaces.yaml").read_text())
                  if d["metadata"]["name"] == "web"]
    # the stack's own Ingress of web is left out here: `controller` writes the Ingress each case needs
    return namespaces + [d for d in yaml.safe_load_all((out / "k8s" / "05-web.yaml").read_text()) if d["kind"] != "Ingress"]


def controller(hop: Any, read_in_annotation: bool) -> list[dict]:
    """The controller's resources stating exactly the hop's non-default numbers, and web's Ingress."""
    stated = {f: getattr(hop, f) for f in INGRESS_NGINX.upstream if f not in hop.defaulted}
    data = {N.NAMES[f]: (f"{v}s" if f == "worker_shutdown_s" else str(v)) for f, v in stated.items()
            if f in N.CONFIGMAP_FIELDS and not (read_in_annotation and f == "request_timeout_s")}
    args = ["/nginx-ingress-controller", f"--configmap=$(POD_NAMESPACE)/{NS}-controller"]
    args += [f"{N.SHUTDOWN_FLAG}={stated['shutdown_delay_s']}"] if "shutdown_delay_s" in stated else []
    pod: dict = {"containers": [{"name": "controller", "image": "registry.k8s.io/ingress-nginx/controller:v1.11.2",
                                 "args": args, "ports": [{"containerPort": 80}]}]}
    if "grace_s" in stated:
        pod["terminationGracePeriodSeconds"] = stated["grace_s"]
    annotations = ({N.READ_TIMEOUT_ANNOTATION: str(stated["request_timeout_s"])}
                   if read_in_annotation and "request_timeout_s" in stated else {})
    return [
        *front(hop.lb),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
         "spec": {"controller": N.CONTROLLER_CLASS}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{NS}-controller", "namespace": NS}, "data": data},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"{NS}-controller", "namespace": NS},
         "spec": {"replicas": 2, "selector": {"matchLabels": {"app": NS}},
                  "template": {"metadata": {"labels": {"app": NS}}, "spec": pod}}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
         "metadata": {"name": "web", "namespace": "web", "annotations": annotations},
         "spec": {"ingressClassName": "nginx", "rules": [{"http": {"paths": [
             {"path": "/", "pathType": "Prefix",
              "backend": {"service": {"name": "web", "port": {"name": "traffic"}}}}]}}]}},
    ]


def front(lb: Any) -> list[dict]:
    """The LoadBalancer Service in front of the controller's pods, its annotations stating the hop's NLB."""
    if lb is None:
        return []
    assert (lb.kind, lb.protocol, lb.removal) == ("nlb", "TCP", ("deregistration",) if lb.target_type == "ip"
                                                   else ("endpoints",))  # what these annotations can state
    hc, prefix = lb.health_check, "service.beta.kubernetes.io/aws-load-balancer-"
    annotations = {"type": "external", "nlb-target-type": lb.target_type, "healthcheck-interval": hc.interval_s,
                   "healthcheck-timeout": hc.timeout_s, "healthcheck-healthy-threshold": hc.healthy_threshold,
                   "healthcheck-unhealthy-threshold": hc.unhealthy_threshold,
                   "target-group-attributes": f"deregistration_delay.timeout_seconds={lb.deregistration_delay_s}"}
    return [{"apiVersion": "v1", "kind": "Service",
             "metadata": {"name": f"{NS}-controller", "namespace": NS,
                          "annotations": {prefix + k: str(v) for k, v in annotations.items()}},
             "spec": {"type": "LoadBalancer", "selector": {"app": NS},
                      "ports": [{"name": "http", "port": 80, "targetPort": lb.port}]}}]


@pytest.mark.parametrize(("changes", "in_annotation"), [
    ({f"{W}.path.0.shutdown_delay_s": 60}, False),  # the NLB in front still sends for 120 s
    ({f"{W}.path.0.lb.target_type": "instance", f"{W}.path.0.shutdown_delay_s": 14}, False),  # endpoints 10 s + 5
    ({f"{W}.path.0.lb.target_type": "instance", f"{W}.path.0.shutdown_delay_s": 15}, False),
    ({}, False),
    ({f"{W}.app.keepalive_s": 5}, False),  # ingress-nginx #3099: Node.js behind the 60 s pool
    ({f"{W}.path.0.upstream_idle_s": 4, f"{W}.app.keepalive_s": 5}, False),
    ({f"{W}.path.0.request_timeout_s": 20}, True),  # the Ingress's own annotation
    ({f"{W}.path.0.request_timeout_s": 20}, False),  # the ConfigMap's
    ({f"{W}.path.0.request_timeout_s": 45}, True),
    ({f"{W}.path.0.worker_shutdown_s": 25}, False),  # a reload cuts the 30 s request
    ({f"{W}.path.0.grace_s": 250, f"{W}.path.0.shutdown_delay_s": 15}, False),  # 240 + 15 > 250
    ({f"{W}.path.0.grace_s": 255, f"{W}.path.0.shutdown_delay_s": 15}, False),
])
def test_the_audit_of_web_behind_its_controller_agrees_with_check(web_manifests, tmp_path, run_audit,
                                                                 changes, in_annotation) -> None:
    stack = build(changes)
    web = yaml.safe_load(yaml.safe_dump(web_manifests))
    of(web, "Deployment", "web")["metadata"]["annotations"] = fact_annotations(stack.services[WEB])  # as render writes
    file = tmp_path / "web.yaml"
    file.write_text(yaml.safe_dump_all(web + controller(stack.services[WEB].path[0], in_annotation)))
    run = run_audit("--format", "json", "--all", "--kubernetes-version", "1.30", str(file))
    assert run.code in (0, 1), run.err
    audited = sorted((f["id"], f["status"]) for f in run.findings() if f["subject"] == "web/Deployment/web"
                     and f["id"] in RULES)
    checked = sorted((f.id, f.status) for f in evaluate(stack) if f.subject == "web" and f.id in RULES)
    assert audited == checked and len(checked) == 5  # the pair, the request, the reload's three


@pytest.mark.parametrize("timeout", [None, 45])
def test_the_ingress_the_stack_writes_is_read_back_as_its_hop(tmp_path, run_audit, timeout) -> None:
    text = EXAMPLE.read_text()
    if timeout is not None:
        text = text.replace("        - kind: ingress-nginx\n", f"        - kind: ingress-nginx\n          request_timeout_s: {timeout}\n")
    config = tmp_path / "Pulumi.web.yaml"
    config.write_text(text)
    out = tmp_path / "render"
    done = subprocess.run([sys.executable, "-m", "lockstep", "render", str(config), "-o", str(out)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    namespaces = [d for d in yaml.safe_load_all((out / "k8s" / "00-namespaces.yaml").read_text())
                  if d["metadata"]["name"] == "web"]
    rendered = list(yaml.safe_load_all((out / "k8s" / "05-web.yaml").read_text()))
    assert [d["kind"] for d in rendered].count("Ingress") == 1
    from lockstep.timing.config import read_stack_file
    stack = read_stack_file(str(config))
    cluster = [d for d in controller(stack.services[WEB].path[0], False) if d["kind"] != "Ingress"]
    file = tmp_path / "web.yaml"
    file.write_text(yaml.safe_dump_all(namespaces + rendered + cluster))
    run = run_audit("--format", "json", "--all", "--kubernetes-version", "1.30", str(file))
    # the bare controller Deployment is a workload behind the NLB too (no probe, no drain of its own): only
    # web's findings are this test's
    assert run.code in (0, 1), run.err
    audited = [f for f in run.findings() if f["subject"] == "web/Deployment/web"]
    assert all(f["status"] == "ok" for f in audited)
    audited = [f for f in audited if f["id"] in RULES]
    checked = sorted((f.id, f.status) for f in evaluate(stack) if f.subject == "web" and f.id in RULES)
    assert sorted((f["id"], f["status"]) for f in audited) == checked and len(checked) == 5
    [request] = [f for f in audited if f["id"] == "timeouts-shrink-inward"]
    assert f"proxy-read-timeout {timeout or 60}s" in request["message"]


def test_an_ingress_no_controller_in_the_input_explains_is_a_note(run_audit, tmp_path) -> None:
    found, run = findings(run_audit, shop(tmp_path, lambda docs: [d for d in docs if d["kind"] not in (
        "IngressClass", "Deployment") or d["metadata"]["name"] not in ("nginx", "ingress-nginx-controller")]))
    assert found == {}
    assert any("Ingress shop/web: no controller in the input serves class 'nginx'" in n for n in run.notes())


# ---- the linker's choices ---------------------------------------------------------------------
def shop(tmp_path: Path, edit=None) -> Path:
    docs = list(yaml.safe_load_all(CORPUS.read_text()))
    if edit is not None:
        docs = edit(docs)
    file = tmp_path / "shop.yaml"
    file.write_text(yaml.safe_dump_all(docs))
    return file


def of(docs: list[dict], kind: str, name: str) -> dict:
    return next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)


def findings(run_audit, file: Path, subject: str = "shop/Deployment/web") -> dict[str, dict]:
    run = run_audit("--format", "json", "--all", "--kubernetes-version", "1.30", str(file))
    return {f["id"]: f for f in run.findings() if f["subject"] == subject and f["id"] in RULES}, run


def without(kind: str, name: str):
    return lambda docs: [d for d in docs if not (d["kind"] == kind and d["metadata"]["name"] == name)]


def test_the_corpus_reads_the_configmap_the_flags_and_the_annotation(run_audit, tmp_path) -> None:
    found, _ = findings(run_audit, shop(tmp_path))
    assert "upstream-keepalive-timeout 60s (path[0].upstream_idle_s)" in found["keepalive-chain-ordered"]["message"]
    assert "proxy-read-timeout 20s" in found["timeouts-shrink-inward"]["message"]


def test_without_the_controller_an_ingress_nginx_class_takes_its_defaults_and_says_so(run_audit, tmp_path) -> None:
    found, run = findings(run_audit, shop(tmp_path, without("Deployment", "ingress-nginx-controller")))
    assert "upstream-keepalive-timeout (ingress-nginx default)" in found["keepalive-chain-ordered"]["message"]
    assert any("its ingress-nginx controller is not in the input" in n for n in run.notes())


def test_without_its_configmap_the_controllers_defaults_are_judged_and_said(run_audit, tmp_path) -> None:
    found, run = findings(run_audit, shop(tmp_path, without("ConfigMap", "ingress-nginx-controller")))
    assert "upstream-keepalive-timeout (ingress-nginx default)" in found["keepalive-chain-ordered"]["message"]
    assert any("ConfigMap ingress-nginx/ingress-nginx-controller not in the input" in n for n in run.notes())


def test_without_an_ingressclass_the_controllers_ingress_class_flag_decides(run_audit, tmp_path) -> None:
    found, _ = findings(run_audit, shop(tmp_path, without("IngressClass", "nginx")))
    assert set(found) == set(RULES)  # --ingress-class=nginx: still its Ingress

    def other_class(docs):
        docs = without("IngressClass", "nginx")(docs)
        of(docs, "Ingress", "web")["spec"]["ingressClassName"] = "traefik"
        return docs
    found, _ = findings(run_audit, shop(tmp_path, other_class))
    assert found == {}  # another controller's Ingress: no ingress-nginx hop


def classless(default: str | None = None, watch: str | None = None):
    """web's Ingress names no class; the nginx IngressClass is the cluster's default (or not),
    and the controller watches classless Ingresses (or not)."""
    def edit(docs):
        ing = of(docs, "Ingress", "web")
        ing["spec"].pop("ingressClassName", None)
        ing["metadata"].get("annotations", {}).pop("kubernetes.io/ingress.class", None)
        if default is not None:
            of(docs, "IngressClass", "nginx")["metadata"].setdefault("annotations", {})[N.DEFAULT_CLASS_ANNOTATION] = default
        if watch is not None:
            container = of(docs, "Deployment", "ingress-nginx-controller")["spec"]["template"]["spec"]["containers"][0]
            container["args"].append(f"{N.WATCH_CLASSLESS_FLAG}{watch}")
        return docs
    return edit


@pytest.mark.parametrize(("default", "watch", "read"), [
    (None, None, False),  # nobody's: ingress-nginx >= 1.0 skips it, and no default class gives it one
    ("true", None, True),  # admission gives it the default class, ingress-nginx's
    ("false", None, False),
    (None, "=true", True),  # the controller watches Ingresses without a class
    (None, "", True),  # a bare Go bool flag is true
    (None, "=false", False),
    (None, "=1", True),
])
def test_an_ingress_without_a_class_is_ingress_nginxs_by_the_default_class_or_the_watch_flag(
        run_audit, tmp_path, default, watch, read) -> None:
    found, _ = findings(run_audit, shop(tmp_path, classless(default, watch)))
    assert (set(found) == set(RULES)) if read else (found == {})


def test_an_ingressclass_of_another_controller_is_not_ingress_nginxs(run_audit, tmp_path) -> None:
    def alb(docs):
        of(docs, "IngressClass", "nginx")["spec"]["controller"] = "ingress.k8s.aws/alb"
        return docs
    found, _ = findings(run_audit, shop(tmp_path, alb))
    assert "keepalive-chain-ordered" not in found


def test_the_shortest_read_timeout_of_several_ingresses_is_judged(run_audit, tmp_path) -> None:
    def second(docs):
        extra = yaml.safe_load(yaml.safe_dump(of(docs, "Ingress", "web")))
        extra["metadata"] = {"name": "web-slow", "namespace": "shop",
                             "annotations": {N.READ_TIMEOUT_ANNOTATION: "90"}}
        of(docs, "Ingress", "web")["metadata"]["annotations"][N.READ_TIMEOUT_ANNOTATION] = "35"
        return docs + [extra]
    found, run = findings(run_audit, shop(tmp_path, second))
    assert found["timeouts-shrink-inward"]["status"] == "ok" and "proxy-read-timeout 35s" in found[
        "timeouts-shrink-inward"]["message"]
    assert any("the shortest, 35s, is judged" in n for n in run.notes())


def test_a_read_timeout_the_controller_ignores_is_a_note_and_the_configmaps_value_judged(run_audit, tmp_path) -> None:
    def seconds_suffix(docs):
        of(docs, "Ingress", "web")["metadata"]["annotations"][N.READ_TIMEOUT_ANNOTATION] = "20s"
        return docs
    found, run = findings(run_audit, shop(tmp_path, seconds_suffix))
    assert "proxy-read-timeout (ingress-nginx default) 60s" in found["timeouts-shrink-inward"]["message"]
    assert any("'20s' is not whole seconds" in n for n in run.notes())


def test_a_bad_configmap_value_is_one_line_naming_the_configmap(run_audit, tmp_path) -> None:
    def bad(docs):
        of(docs, "ConfigMap", "ingress-nginx-controller")["data"]["keep-alive"] = "75s"
        return docs
    run = run_audit("--kubernetes-version", "1.30", str(shop(tmp_path, bad)))
    assert run.code == 2 and "Traceback" not in run.err
    lines = [ln for ln in run.err.splitlines() if "ConfigMap ingress-nginx/ingress-nginx-controller" in ln]
    assert lines and all("data.keep-alive: expected whole seconds, got '75s'" in ln for ln in lines)


# ---- the load balancer in front of the controller ---------------------------------------------
def with_nlb(*targets: str, annotations: dict[str, str] | None = None):
    """LoadBalancer Services (LBC NLBs, one per target type given) selecting the controller's pods."""
    def edit(docs):
        labels = of(docs, "Deployment", "ingress-nginx-controller")["spec"]["template"]["metadata"]["labels"]
        prefix = "service.beta.kubernetes.io/aws-load-balancer-"
        return docs + [{"apiVersion": "v1", "kind": "Service",
                        "metadata": {"name": f"edge-{target}", "namespace": NS, "annotations": {
                            prefix + "type": "external", prefix + "nlb-target-type": target,
                            **{prefix + k: v for k, v in (annotations or {}).items()}}},
                        "spec": {"type": "LoadBalancer", "selector": labels,
                                 "ports": [{"name": "http", "port": 80, "targetPort": 80}]}}
                       for target in targets]
    return edit


def front_finding(found: dict[str, dict], run) -> dict:
    [front] = [f for f in run.findings() if f["subject"] == "shop/Deployment/web" and f["id"] == RULES[2]
               and "web: --shutdown-grace-period" in f["message"]]
    return front


def test_the_nlb_in_front_of_the_controller_is_its_hops_lb(run_audit, tmp_path) -> None:
    found, run = findings(run_audit, shop(tmp_path, with_nlb("ip")))
    front = front_finding(found, run)
    # --shutdown-grace-period=15 against the NLB's deregistration on IP targets (120 s) + margin
    assert front["status"] == "error" and front["slack_s"] == 15 - 120 - 5
    assert "lb_detect 120s (deregistration: path[0].lb.deregistration_propagation_s)" in front["message"]
    found, run = findings(run_audit, shop(tmp_path, with_nlb("instance")))
    front = front_finding(found, run)  # instance targets: kube-proxy's endpoints (10 s) + margin ≤ 15
    assert front["status"] == "ok" and "path[0].lb.endpoint_propagation_s" in front["message"]


def test_without_an_nlb_in_front_the_controllers_delay_is_not_judged_and_a_note_says_so(run_audit, tmp_path) -> None:
    found, run = findings(run_audit, shop(tmp_path))
    assert [f for f in run.findings() if ": --shutdown-grace-period" in f["message"]] == []
    assert any("Deployment ingress-nginx/ingress-nginx-controller: no NLB Service selecting its pods" in n
               for n in run.notes())


def test_of_several_nlbs_in_front_the_slowest_to_stop_sending_is_judged(run_audit, tmp_path) -> None:
    found, run = findings(run_audit, shop(tmp_path, with_nlb("instance", "ip")))
    assert front_finding(found, run)["slack_s"] == 15 - 120 - 5
    assert any("2 NLB Services send to Deployment ingress-nginx/ingress-nginx-controller: Service "
               "ingress-nginx/edge-ip (NLB), the slowest" in n for n in run.notes())


def with_prestop(command: list[str], drain: str | None = None):
    def edit(docs):
        ctl = of(docs, "Deployment", "ingress-nginx-controller")
        ctl["spec"]["template"]["spec"]["containers"][0]["lifecycle"] = {"preStop": {"exec": {"command": command}}}
        if drain is not None:
            ctl["metadata"].setdefault("annotations", {})["lockstep.dev/drain-seconds"] = drain
        return with_nlb("ip")(docs)
    return edit


@pytest.mark.parametrize(("command", "drain", "slack"), [
    (["sh", "-c", "sleep 110 && /wait-shutdown"], None, 110 + 15 - 125),  # the sleep, then the flag's 15 s
    (["sh", "-c", "sleep 109 && /wait-shutdown"], None, -1),
    (["/drain.sh"], "110", 0),  # a command of a stated length
])
def test_the_controllers_prestop_sleep_counts_in_its_shutdown_delay(run_audit, tmp_path, command, drain, slack):
    found, run = findings(run_audit, shop(tmp_path, with_prestop(command, drain)))
    assert front_finding(found, run)["slack_s"] == slack
    assert any("its preStop keeps it accepting" in n for n in run.notes())


def test_a_prestop_command_of_unknown_length_leaves_the_lb_in_front_unjudged(run_audit, tmp_path) -> None:
    found, run = findings(run_audit, shop(tmp_path, with_prestop(["/drain.sh"])))
    assert [f for f in run.findings() if ": --shutdown-grace-period" in f["message"]] == []
    assert any("its preStop runs a command whose length nothing states (set lockstep.dev/drain-seconds)" in n
               for n in run.notes())
