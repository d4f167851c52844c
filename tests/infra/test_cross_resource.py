"""Claims across the resources the program registers for the example stack.

Each test reads the numbers back from what was rendered (not from the model) and checks the
relation the invariants promise, naming the URN of the resource that breaks it.
"""

from __future__ import annotations

import json

from lockstep.infra.render import SECRET_MARK
from tests.infra.support import SENTINEL, Resources, example_values, render
from lockstep.timing.config import stack_from_config
from lockstep.timing.heartbeat_config import BROKER_URL_ENV, CONFIGMAP_KEY, SECRET_KEY, runtime_config

EXAMPLE = stack_from_config(example_values())
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Rollout")


def rendered_kind(svc) -> str:
    """What the program registers for a service: an Argo Rollout in place of its Deployment."""
    return "Rollout" if svc.argo is not None else svc.kind


def workloads(res: Resources) -> list:
    return [r for k in WORKLOAD_KINDS for r in res.of(k)]


def container(r) -> dict:
    return r.inputs["spec"]["template"]["spec"]["containers"][0]


def prestop_seconds(r) -> int:
    """The rendered drain: the native sleep action, or the argument of `exec sleep N`."""
    pre = container(r).get("lifecycle", {}).get("preStop")
    if pre is None:
        return 0
    if "sleep" in pre:
        return int(pre["sleep"]["seconds"])
    command = pre["exec"]["command"]
    assert command[0] == "sleep", f"{r.urn}: unexpected preStop {command}"
    return int(command[1])


def test_health_check_detection_fits_inside_the_prestop_drain_when_the_server_fails_its_check():
    values = example_values()
    values["services"][0]["lb"]["removal"] = ["health_check"]  # api drains by failing its check
    res = render(values)
    stack = stack_from_config(values)
    for svc in stack.services:
        if svc.lb is None or "health_check" not in svc.lb.removal:
            continue
        hc = res.one("TargetGroup", f"{svc.name}-tg").inputs["healthCheck"]
        detect = int(hc["interval"]) * int(hc["unhealthyThreshold"])
        workload = res.k8s(rendered_kind(svc), svc.namespace, svc.name)
        assert prestop_seconds(workload) >= detect + stack.margin_s, (
            f"{workload.urn}: preStop {prestop_seconds(workload)}s < TG interval × unhealthy "
            f"threshold {detect}s + margin {stack.margin_s}s")


def test_prestop_plus_finish_fits_the_termination_grace_period(recorded):
    for svc in EXAMPLE.services:
        r = recorded.k8s(rendered_kind(svc), svc.namespace, svc.name)
        grace = int(r.inputs["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])
        used = prestop_seconds(r) + (svc.shutdown.finish_s or 0)
        assert used + EXAMPLE.margin_s <= grace, f"{r.urn}: preStop + finish {used}s > grace {grace}s"


def test_every_pdb_selects_exactly_its_workloads_pods(recorded):
    for pdb in recorded.of("PodDisruptionBudget"):
        meta = pdb.inputs["metadata"]
        selector = pdb.inputs["spec"]["selector"]["matchLabels"]
        kind = "Deployment" if meta["name"] == "heartbeat" else next(
            rendered_kind(s) for s in EXAMPLE.services if s.name == meta["name"])
        workload = recorded.k8s(kind, meta["namespace"], meta["name"])
        labels = workload.inputs["spec"]["template"]["metadata"]["labels"]
        assert selector and selector.items() <= labels.items(), (
            f"{pdb.urn}: selector {selector} does not select pod labels {labels} of {workload.urn}")


def test_target_group_binding_carries_its_own_target_groups_arn(recorded):
    bindings = recorded.of("TargetGroupBinding")
    assert {b.inputs["metadata"]["name"] for b in bindings} == {s.name for s in EXAMPLE.services if s.lb}
    for tgb in bindings:
        name = tgb.inputs["metadata"]["name"]
        tg = recorded.one("TargetGroup", f"{name}-tg")
        assert tgb.inputs["spec"]["targetGroupARN"] == tg.arn, f"{tgb.urn}: ARN is not {tg.urn}'s"
        assert tgb.inputs["spec"]["targetType"] == tg.inputs["targetType"], tgb.urn
        svc = recorded.k8s("Service", tgb.inputs["metadata"]["namespace"], tgb.inputs["spec"]["serviceRef"]["name"])
        ports = [p["port"] for p in svc.inputs["spec"]["ports"]]
        assert tgb.inputs["spec"]["serviceRef"]["port"] in ports, f"{tgb.urn}: port not on {svc.urn}"


def test_every_target_group_is_attached_to_its_listener(recorded):
    rule = recorded.one("ListenerRule", "api-rule")
    listener = recorded.one("Listener", "basketball-feed-listener")
    api, basket = EXAMPLE.services[0].lb, EXAMPLE.services[2].lb
    assert rule.inputs["listenerArn"] == api.attach_to_arn, rule.urn
    assert rule.inputs["actions"][0]["targetGroupArn"] == recorded.one("TargetGroup", "api-tg").arn, rule.urn
    assert int(rule.inputs["priority"]) == api.rule_priority, rule.urn
    assert listener.inputs["loadBalancerArn"] == basket.attach_to_arn, listener.urn
    assert int(listener.inputs["port"]) == basket.listener_port, listener.urn
    assert listener.inputs["defaultActions"][0]["targetGroupArn"] == \
        recorded.one("TargetGroup", "basketball-feed-tg").arn, listener.urn


def test_heartbeat_roles_only_read_workloads_and_pods_besides_its_own_lease(recorded):
    assert not recorded.of("ClusterRole") and not recorded.of("ClusterRoleBinding")
    lease = runtime_config(EXAMPLE).lease.name
    for role in recorded.of("Role"):
        for rule in role.inputs["rules"]:
            if rule["apiGroups"] == ["coordination.k8s.io"]:
                assert rule["resources"] == ["leases"], role.urn
                if rule.get("resourceNames"):
                    assert rule["resourceNames"] == [lease] and set(rule["verbs"]) <= {"get", "update"}, role.urn
                else:
                    assert rule["verbs"] == ["create"], f"{role.urn}: unnamed lease rule may only create"
                continue
            assert set(rule["verbs"]) <= {"get", "list", "watch"}, f"{role.urn}: writes {rule}"
            assert set(rule["resources"]) <= {"deployments", "statefulsets", "pods"}, role.urn


def test_heartbeat_reads_exactly_the_watched_namespaces(recorded):
    readers = {r.inputs["metadata"]["namespace"] for r in recorded.of("Role")
               if r.inputs["metadata"]["name"].endswith("-reader")}
    assert readers == set(runtime_config(EXAMPLE).namespaces)


def test_broker_secret_never_appears_in_plain_text(recorded):
    for r in recorded:
        text = json.dumps([r.inputs, r.outputs])
        assert SENTINEL not in text, f"{r.urn}: broker URL in plain text"
    secret = recorded.one("Secret", "heartbeat-broker")
    assert "stringData" in secret.secret_paths, f"{secret.urn}: stringData not a Pulumi secret"
    assert secret.inputs["stringData"] == {SECRET_KEY: SECRET_MARK}, secret.urn
    env = {e["name"]: e for e in container(recorded.one("Deployment", "heartbeat-deployment"))["env"]}
    ref = env[BROKER_URL_ENV]
    assert "value" not in ref and ref["valueFrom"]["secretKeyRef"] == {
        "name": secret.inputs["metadata"]["name"], "key": SECRET_KEY}


def test_heartbeat_config_map_holds_the_runtime_config_and_no_secret(recorded):
    cm = recorded.one("ConfigMap", "heartbeat-config")
    assert json.loads(cm.inputs["data"][CONFIGMAP_KEY]) == json.loads(runtime_config(EXAMPLE).model_dump_json())


def test_gated_workload_waits_for_its_service_and_binding(recorded):
    api = recorded.one("Deployment", "api-deployment")
    deps = {recorded.by_urn(u).kind for u in api.depends_on}
    assert {"Service", "TargetGroupBinding", "Namespace"} <= deps, f"{api.urn}: depends on {deps}"
    ns = next(n for n in recorded.of("Namespace") if n.inputs["metadata"]["name"] == "web")
    assert ns.inputs["metadata"]["labels"] == {"elbv2.k8s.aws/pod-readiness-gate-inject": "enabled"}, ns.urn


def test_only_namespaces_with_gated_services_get_the_injection_label(recorded):
    labelled = {n.inputs["metadata"]["name"] for n in recorded.of("Namespace")
                if n.inputs["metadata"].get("labels")}
    assert labelled == {s.namespace for s in EXAMPLE.services if s.readiness_gate}


def test_a_workload_under_an_hpa_sets_no_replicas(recorded):
    for svc in EXAMPLE.services:
        r = recorded.k8s(rendered_kind(svc), svc.namespace, svc.name)
        if svc.hpa is None:
            assert int(r.inputs["spec"]["replicas"]) == svc.replicas, r.urn
            continue
        assert "replicas" not in r.inputs["spec"], f"{r.urn}: sets replicas under an HPA"
        hpa = recorded.k8s("HorizontalPodAutoscaler", svc.namespace, svc.name)
        assert (int(hpa.inputs["spec"]["minReplicas"]), int(hpa.inputs["spec"]["maxReplicas"])) == \
            (svc.hpa.min_replicas, svc.hpa.max_replicas), hpa.urn
        assert hpa.inputs["spec"]["scaleTargetRef"]["name"] == svc.name, hpa.urn


def test_only_workloads_a_heartbeat_spec_watches_carry_the_observable_label(recorded):
    watched = {s.service for s in EXAMPLE.heartbeat_specs}
    for svc in EXAMPLE.services:
        r = recorded.k8s(rendered_kind(svc), svc.namespace, svc.name)
        labelled = r.inputs["metadata"]["labels"].get("is-observable") == "true"
        assert labelled == (svc.name in watched), r.urn


def test_children_are_named_from_and_parented_to_their_component(recorded):
    components = {r.urn: r for r in recorded if not r.custom}
    assert {c.type for c in components.values()} <= {
        f"lockstep:infra:{x}" for x in ("Namespaces", "TargetGroup", "Workload", "HeartbeatService",
                                         "RegionalFailover", "NodePools")}
    for r in recorded:
        if not r.custom:
            continue
        assert r.parent in components, f"{r.urn}: not parented to a component"
        assert r.name.startswith(components[r.parent].name), f"{r.urn}: not named from {r.parent}"


def test_dns_failover_has_a_provider_health_check_and_record_per_region(recorded):
    fo = EXAMPLE.failover
    for region in fo.regions:
        hc = recorded.one("HealthCheck", f"failover-{region.name}-health")
        rec = recorded.one("Record", f"failover-{region.name}-record")
        provider = recorded.one("aws", f"failover-{region.name}-aws")
        assert provider.inputs["region"] == region.aws_region, provider.urn
        assert hc.provider is not None and provider.urn in hc.provider, hc.urn
        assert (int(hc.inputs["requestInterval"]), int(hc.inputs["failureThreshold"])) == \
            (fo.check_interval_s, fo.failure_threshold), hc.urn
        assert rec.inputs["healthCheckId"] == hc.id, rec.urn
        assert rec.inputs["failoverRoutingPolicies"] == [{"type": region.role.upper()}], rec.urn
        assert int(rec.inputs["ttl"]) == fo.ttl_s, rec.urn
