"""One verdict: the same resources get the same failing findings, and the same warnings of the
linker, from the policy pack (served over gRPC, as the engine calls it) and from `lockstep
audit` (on the files `lockstep render` writes) — because both adapt their input to
`timing.bind` and judge through it.

The stacks: the example and generated valid stacks, rendered under Pulumi's mocks, and each
render perturbed (numbers of its resources pushed to wrong values, as drift would) into
broken variants; and the audit corpus, handed to the pack as the resources it describes.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime.proto import analyzer_pb2

from bench.bench_pack import props_of, stack_request, struct
from lockstep.policies.findings import RESOURCE_RULES
from lockstep.policies.rules import LINKED, LINKED_DESCRIPTION
from tests.timing.strategies import DELETE, base, edit
from lockstep.timing.audit import adapt, audit
from lockstep.timing.audit.reader import read_all
from lockstep.timing.config import EXAMPLE, lockstep_values
from lockstep.timing.context import Ctx

pytest.importorskip("pulumi")

CTX = Ctx(5, (1, 30))  # the pack's defaults: margin 5, Kubernetes 1.30
LINE = re.compile(r"^(ERROR|WARNING|ACCEPTED) (\S+)  (.+?): ", re.M)
FAILED = ("error", "warning", "accepted")
CORPUS = Path(__file__).resolve().parents[1] / "audit" / "corpus"
# Valid stacks other than the example: fewer replicas, other probes and drains, no failover.
VARIANTS = [
    {}, {"services.0.shutdown.drain_s": 30, "services.0.shutdown.grace_s": 90},
    {"services.1.replicas": 3, "services.1.pdb": {"min_available": 2}},
    {"services.2.lb.health_check.interval_s": 20, "services.2.replicas": 4,  # a slower check needs a longer
     "services.2.shutdown.grace_s": 80, "nodes.kubelet.shutdown_grace_period_s": 120},  # node shutdown
    # without the gate the PDB goes too: evictions through a PDB need the gate (eviction-waits-for-lb)
    {"services.0.readiness_gate": None, "services.0.pdb": None, "services.0.rollout.min_ready_s": 40,
     "failover": None},
    # the api as a blue-green Argo Rollout: its Rollout custom resource and preview Service
    {"services.0.argo": {"strategy": "blueGreen", "scale_down_delay_s": 45, "abort_scale_down_delay_s": 30},
     "services.0.rollout.max_surge": "100%"},
    # the api as a DaemonSet on 3 nodes (no HPA can own a DaemonSet's count): its node count
    # travels as the lockstep.dev/nodes annotation
    {"services.0.kind": "DaemonSet", "services.0.hpa": None, "services.0.replicas": 3},
]
# the api as a canary routed by the ALB: its Rollout, stable and canary Services and the Ingress
# the controller makes the ALB from (no listener, VPC or target group of the stack's own)
CANARY = {"services.0.argo": {"strategy": "canary", "traffic_routing": "alb", "scale_down_delay_s": 45,
                              "abort_scale_down_delay_s": 60},
          **{f"services.0.lb.{k}": DELETE for k in ("attach_to_arn", "rule_priority", "listener_port", "vpc_id")}}
VARIANTS.append(CANARY)
# Issue 13, the two node rules the resources now decide. The basketball feed's Service with
# externalTrafficPolicy Local: the drain covers kube-proxy's update and the NLB's node check. No
# kubelet shutdown: with Local it would also ask the drain to outlast readiness + the node check.
NO_KUBELET = {"nodes.kubelet": DELETE}
ETP_LOCAL = {"services.2.lb.external_traffic_policy": "Local", "services.2.shutdown.drain_s": 45,
             "services.2.shutdown.grace_s": 100, "heartbeat_specs.1.loss_time_s": 170, **NO_KUBELET}
# The football feed behind an NLB on IP targets whose deregistration closes the flows: the delay
# ends within the grace period. (IP targets wait ~2 min for deregistration to propagate: a drain
# that long leaves no room for spot's two-minute notice, so the NodePool is on-demand only, and
# its terminationGracePeriod holds the grace (160 s) and a PDB-held wait for a replacement.)
NLB_IP = {"services.1.lb": {"kind": "nlb", "target_type": "ip", "protocol": "TCP", "port": 8080,
                            "vpc_id": "vpc-0a1b2c3d4e5f60789",
                            "attach_to_arn": "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/"
                                             "stream/3b5e4a1c2d6f7e8a",
                            "listener_port": 8080, "deregistration_delay_s": 140,
                            "health_check": {"protocol": "TCP", "interval_s": 10, "timeout_s": 10,
                                             "healthy_threshold": 3, "unhealthy_threshold": 3},
                            "deregistration_connection_termination": True},
          "services.1.shutdown": {"drain_s": 130, "finish_s": 20, "grace_s": 160}, "services.1.readiness_gate": {},
          "nodes.karpenter.0.capacity_types": ["on-demand"], "nodes.karpenter.0.termination_grace_period_s": 600,
          "watchdog.watches": ["api"],
          "heartbeat_specs.0.loss_time_s": 280}
# Issue 12: the api behind an Istio sidecar (its drain in the pod annotation, its pool idle in
# the Service's DestinationRule), the football feed behind the Linkerd proxy.
MESHED = {"services.0.path": [{"kind": "istio-sidecar", "drain_s": 60, "upstream_idle_s": 60}]}
LINKERD = {"services.1.path": [{"kind": "linkerd-proxy", "drain_s": 70}]}
# (compared valid and broken by the test at the end; not perturbed too, which would add two
# renders × 12 stacks to the slowest test here)
PER_RESOURCE = {t for types in RESOURCE_RULES.values() for t in types}  # types a resource policy reads
PERTURBATIONS_PER_RENDER = 11  # 7 renders × (1 + 11) = 84 stacks of resources


def numbers(obj: Any, path: tuple = ()) -> list[tuple]:
    """Paths of every number in a resource's inputs (the values drift changes)."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in numbers(v, (*path, k))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in numbers(v, (*path, i))]
    return [path] if isinstance(obj, (int, float)) and not isinstance(obj, bool) else []


def set_at(obj: Any, path: tuple, value: Any) -> None:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def perturbed(recorded: list, rng: random.Random) -> list:
    """The render with one to three numbers of its resources changed to wrong values."""
    out = [replace(r, inputs=copy.deepcopy(r.inputs)) for r in recorded]
    candidates = [(i, p) for i, r in enumerate(out) if r.custom for p in numbers(r.inputs)
                  if "port" not in str(p).lower()]
    for i, path in rng.sample(candidates, rng.randint(1, 3)):
        value = out[i].inputs
        for key in path:
            value = value[key]
        set_at(out[i].inputs, path, rng.choice([0, 1, int(value) // 2, int(value) - 1, int(value) + 1,
                                                int(value) * 3, 3600]))
    return out


def pack_findings(analyzer, recorded: list) -> tuple[set[tuple[str, str, str]], list[str]]:
    """(status, rule id, subject) of every failing finding the served pack reports: its stack
    policies on all resources, its resource policies on each (as the engine calls them); and
    the linker's warnings it reports."""
    diagnostics = list(analyzer.AnalyzeStack(stack_request(recorded), timeout=60).diagnostics)
    for r in recorded:
        if not r.custom or r.type not in PER_RESOURCE:
            continue  # custom resources only, as in the stack request; no resource policy reads this type
        diagnostics += analyzer.Analyze(analyzer_pb2.AnalyzeRequest(type=r.type, properties=struct(props_of(r)),
                                                                    urn=r.urn, name=r.name), timeout=60).diagnostics
    return ({(m.group(1).lower(), m.group(2), m.group(3)) for d in diagnostics for m in LINE.finditer(d.message)},
            sorted(d.message.removeprefix(LINKED_DESCRIPTION + "\n") for d in diagnostics if d.policyName == LINKED))


def audit_findings(paths: list[str]) -> tuple[set[tuple[str, str, str]], list[str]]:
    result = audit(paths, CTX, {})
    return ({(f.status, f.id, f.subject) for f in result.findings if f.status in FAILED},
            sorted(audit_warning_words(result.warnings)))


def renders() -> list[list]:
    from lockstep.infra.render import record

    example = lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"])
    return [record(edit(example, variant) if variant else example) for variant in VARIANTS]


def test_the_variants_are_valid_stacks_and_differ() -> None:
    from lockstep.timing.invariants import validate

    stacks = [validate(edit(base(), v)) for v in VARIANTS]
    assert len({s.model_dump_json() for s in stacks}) == len(VARIANTS)


def test_the_pack_and_the_audit_agree_on_rendered_and_perturbed_stacks(analyzer, tmp_path) -> None:
    from lockstep.infra.render_cli import write

    rng = random.Random(20261201)
    compared, broken = 0, 0
    for n, recorded in enumerate(renders()):
        for k in range(1 + PERTURBATIONS_PER_RENDER):
            stack = recorded if k == 0 else perturbed(recorded, rng)
            out = tmp_path / f"{n}-{k}"
            write(stack, out)
            expected = audit_findings([str(out)])
            assert pack_findings(analyzer, stack) == expected, f"render {n} variant {k}"
            compared += 1
            broken += bool(expected[0])
    assert compared >= 50 and broken >= 25  # valid and broken stacks both, many of each


def corpus_resources(bundle: Path) -> list[analyzer_pb2.AnalyzerResource]:
    """A corpus bundle's documents as the resources a Pulumi program would register: Kubernetes
    objects under their type token, target groups as Pulumi's inputs (what the audit reads them as)."""
    docs, _ = read_all([str(bundle / "input")])
    out = []
    resources = adapt.resources(docs)

    def urn_of(r, token: str) -> str:
        return f"urn:pulumi:corpus::lockstep::{token}::{r.origin.id}"

    tokens = {}
    for r in resources:
        if r.kind == "TargetGroup":
            token = "aws:lb/targetGroup:TargetGroup"
        elif r.kind in ("Route53HealthCheck", "Route53Record", "Listener", "ListenerRule"):
            continue  # the corpus holds none but the rendered ones, which the render test covers
        else:
            group = str(r.obj.get("apiVersion", "v1"))
            token = f"kubernetes:{group if '/' in group else 'core/' + group}:{r.kind}"
        tokens[id(r)] = token
    # The order a program that gets the gate right declares: each workload after the Services
    # and bindings of its namespace (manifests state no order; the audit reports it unknown).
    for r in resources:
        if id(r) not in tokens:
            continue
        deps = [urn_of(o, tokens[id(o)]) for o in resources if r.kind in ("Deployment", "StatefulSet")
                and o.kind in ("Service", "TargetGroupBinding") and o.namespace == r.namespace]
        out.append(analyzer_pb2.AnalyzerResource(type=tokens[id(r)], properties=struct(dict(r.obj)),
                                                 urn=urn_of(r, tokens[id(r)]), name=r.name, dependencies=deps))
    return out


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.iterdir() if (p / "expected.yaml").exists()))
def test_the_pack_and_the_audit_agree_on_the_audit_corpus(analyzer, name) -> None:
    bundle = CORPUS / name
    expected = yaml.safe_load((bundle / "expected.yaml").read_text())
    if expected["exit"] == 2 or "rendered" in name:
        pytest.skip("unreadable input (the pack names it instead) / render output (the render test covers it)")
    args = expected.get("args", [])
    version = (tuple(int(v) for v in args[args.index("--kubernetes-version") + 1].split("."))
               if "--kubernetes-version" in args else (0, 0))
    # Other audit options (--assume-lbc-services) are left at their defaults on both sides: the
    # served pack takes the defaults of its config, and the two must agree on the same input.
    ctx = Ctx(5, version)
    result = audit([str(bundle / "input")], ctx, {})
    want = {(f.status, f.id, f.subject) for f in result.findings if f.status in FAILED}
    resources = corpus_resources(bundle)
    config = {"kubernetes_version": ".".join(map(str, version))} if version != (0, 0) else {"kubernetes_version": "0.0"}
    request = analyzer_pb2.AnalyzeStackRequest(resources=resources)
    diagnostics = list(analyzer.AnalyzeStack(request, timeout=60).diagnostics)
    for r in resources:
        if r.type not in PER_RESOURCE:
            continue
        diagnostics += analyzer.Analyze(analyzer_pb2.AnalyzeRequest(type=r.type, properties=r.properties, urn=r.urn,
                                                                    name=r.name), timeout=60).diagnostics
    got = {(m.group(1).lower(), m.group(2), m.group(3)) for d in diagnostics for m in LINE.finditer(d.message)}
    if version == (0, 0):
        got = {g for g in got if g[1] != "prestop-uses-native-sleep"}  # the pack's default cluster is 1.30
    assert got == want
    # The linker's warnings: the audit prints `file:line: <words>`, the pack reports the words on the
    # resource (the engine's message starts with the policy's description).
    assert sorted(d.message.removeprefix(LINKED_DESCRIPTION + "\n") for d in diagnostics if d.policyName == LINKED) \
        == sorted(audit_warning_words(result.warnings))


def audit_warning_words(warnings: list[str]) -> list[str]:
    """An audit warning without the `file:line: ` it starts with."""
    out = []
    for w in warnings:
        where, words = w.split(": ", 1)
        assert re.fullmatch(r".+:\d+", where), w
        out.append(words)
    return out


def test_the_corpus_holds_a_linker_warning_for_the_pack_to_agree_on() -> None:
    # the agreement above is only a check if some bundle warns
    warned = [name for name in sorted(p.name for p in CORPUS.iterdir() if (p / "expected.yaml").exists())
              if yaml.safe_load((CORPUS / name / "expected.yaml").read_text()).get("warnings")]
    assert warned


def check_findings(values: dict) -> set[tuple[str, str, str]]:
    """(status, rule id, subject) of every failing finding `lockstep check` reports on the stack."""
    from lockstep.timing.config import stack_from_config
    from lockstep.timing.invariants import evaluate

    return {(f.status, f.id, f.subject) for f in evaluate(stack_from_config(values)) if f.status in FAILED}


def assert_one_verdict(analyzer, out: Path, values: dict, stack: list, label: str) -> None:
    """The three front ends agree: `check` on the stack config `values`, `lockstep audit` on
    `stack` as `lockstep render` writes it to `out`, and the served pack on `stack` (the
    linker's warnings too)."""
    from lockstep.infra.render_cli import write

    write(stack, out)
    by_audit = audit_findings([str(out)])
    assert by_audit[0] == check_findings(values), label
    assert pack_findings(analyzer, stack) == by_audit, label


def canary_with_delay(values: dict, recorded: list, delay: int) -> list:
    """The render with the Rollout's scaleDownDelaySeconds set to `delay` (what a config with
    that delay would render: the program refuses to render a broken stack)."""
    out = [replace(r, inputs=copy.deepcopy(r.inputs)) for r in recorded]
    rollout = next(r for r in out if r.custom and r.kind == "Rollout")
    rollout.inputs["spec"]["strategy"]["canary"]["scaleDownDelaySeconds"] = delay
    return out


def test_check_the_audit_and_the_pack_agree_on_a_canary_routed_by_the_alb_valid_and_broken(analyzer, tmp_path):
    """One verdict from the three front ends: `check` on the stack config, `lockstep audit` on
    the files `lockstep render` writes, and the served pack on the rendered resources. The
    broken canary scales the old ReplicaSet down before the switch has propagated."""
    from lockstep.infra.render import record
    from lockstep.timing.invariants.rollouts import switch_time

    valid = edit(lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"]), CANARY)
    recorded = record(valid)
    from lockstep.timing.config import stack_from_config
    api = stack_from_config(valid).services[0]
    short = int(switch_time(api).value) + CTX.margin_s - 1  # one second short of switch + margin
    broken = edit(valid, {"services.0.argo.scale_down_delay_s": short})
    for name, values, stack in (("valid", valid, recorded), ("broken", broken, canary_with_delay(valid, recorded, short))):
        assert_one_verdict(analyzer, tmp_path / name, values, stack, name)
    assert ("error", "rollout-scale-down-outlasts-switch", "api") in check_findings(broken)
    assert not any(f[1] == "rollout-scale-down-outlasts-switch" for f in check_findings(valid))


def edited(recorded: list, kind: str, name: str, path: tuple, value: Any) -> list:
    """The render with one input of one resource set to `value` (what a config with that value
    would render: the program refuses to render a broken stack)."""
    out = [replace(r, inputs=copy.deepcopy(r.inputs)) for r in recorded]
    target = [r for r in out if r.custom and r.kind == kind
              and (r.name == name or (r.inputs.get("metadata") or {}).get("name") == name)]
    assert len(target) == 1, [r.name for r in target]
    set_at(target[0].inputs, path, value)
    return out


@pytest.mark.parametrize(("variant", "broken", "kind", "name", "path", "value", "rule", "subject"), [
    # the example's basketball feed (no kubelet shutdown) with Local and its own 30 s drain:
    # short of the node check
    (ETP_LOCAL, {"services.2.shutdown.drain_s": 30, "services.2.shutdown.grace_s": 50,
                 "heartbeat_specs.1.loss_time_s": 90},
     None, None, None, None, "etp-local-drain-covers-node-check", "basketball-feed"),
    # the flows closed after a delay (170 s) that outlasts the grace period (160 s)
    (NLB_IP, {"services.1.lb.deregistration_delay_s": 170}, "TargetGroup", "football-feed-tg",
     ("deregistrationDelay",), 170, "nlb-connections-survive-removal", "football-feed"),
    # issue 12: the api meshed by Istio; its sidecar drains for less than the ALB's detection
    # (the pod annotation), then its DestinationRule keeps idle connections for Istio's 1 h
    (MESHED, {"services.0.path.0.drain_s": 10}, "Deployment", "api",
     ("spec", "template", "metadata", "annotations", "proxy.istio.io/config"), "terminationDrainDuration: 10s",
     "mesh-drain-covers-lb", "api"),
    (MESHED, {"services.0.path.0.upstream_idle_s": 3600}, "DestinationRule", "api",
     ("spec", "trafficPolicy", "connectionPool", "http", "idleTimeout"), "3600s", "keepalive-chain-ordered", "api"),
    # the football feed meshed by Linkerd, its proxy gone before the app has drained
    (LINKERD, {"services.1.path.0.drain_s": 10}, "Deployment", "football-feed",
     ("spec", "template", "metadata", "annotations", "config.alpha.linkerd.io/proxy-wait-before-exit-seconds"), "10",
     "sidecar-outlives-app", "football-feed"),
])
def test_check_the_audit_and_the_pack_agree_on_the_node_and_mesh_rules_the_resources_decide(
        analyzer, tmp_path, variant, broken, kind, name, path, value, rule, subject) -> None:
    """One verdict on the resource-decided node rules (issue 13) and mesh rules (issue 12),
    passing and failing: `check` on the config, the audit of the render and the served pack on
    the rendered resources."""
    from lockstep.infra.render import record

    example = lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"])
    valid = edit(example, variant)
    bad = edit(valid, broken)
    if kind is None:  # the example as rendered (no kubelet), its Service with the variant's traffic policy
        bad_render = edited(record(edit(example, NO_KUBELET)), "Service", "basketball-feed",
                            ("spec", "externalTrafficPolicy"), "Local")
    else:
        bad_render = edited(record(valid), kind, name, path, value)
    for label, values, stack in (("valid", valid, record(valid)), ("broken", bad, bad_render)):
        assert_one_verdict(analyzer, tmp_path / label, values, stack, label)
    assert ("error", rule, subject) in check_findings(bad)
    assert not any(f[1] == rule for f in check_findings(valid))
