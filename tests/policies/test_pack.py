"""The pack as a whole: every invariant id is enforced or named as undecidable from
resources, enforcement follows severity, accepted and unreadable resources are reported,
configuration reaches the rules, and the pack is only constructed in __main__."""

from __future__ import annotations

import runpy
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st
import pulumi_policy
from pulumi_policy import EnforcementLevel, StackValidationPolicy

from lockstep.policies.findings import NOT_FROM_RESOURCES, RESOURCE_RULES, STACK_RULES
from lockstep.policies.rules import ACCEPTED, LINKED, READABLE, all_policies, severities
from lockstep.policies.settings import Settings, settings
from lockstep.timing.invariants import RULE_IDS

from tests.policies.support import DELETE, compliant, edited, urn, violations

DEP = "kubernetes:apps/v1:Deployment"


def test_every_invariant_is_enforced_by_a_policy_or_named_as_not_decidable_from_resources():
    enforced = set(RESOURCE_RULES) | set(STACK_RULES)
    assert enforced.isdisjoint(NOT_FROM_RESOURCES)
    assert enforced | set(NOT_FROM_RESOURCES) == set(RULE_IDS)


def test_error_ids_are_mandatory_and_warnings_advisory():
    levels = {p.name: p.enforcement_level for p in all_policies()}
    for rule_id in (*RESOURCE_RULES, *STACK_RULES):
        if "error" in severities(rule_id):
            assert levels[rule_id] == EnforcementLevel.MANDATORY, rule_id
        if "warning" in severities(rule_id):
            name = f"{rule_id}-advisory" if "error" in severities(rule_id) else rule_id
            assert levels[name] == EnforcementLevel.ADVISORY, rule_id
    assert levels[ACCEPTED] == levels[READABLE] == levels[LINKED] == EnforcementLevel.ADVISORY


def test_policy_names_are_unique():
    names = [p.name for p in all_policies()]
    assert len(names) == len(set(names))


def test_an_accepted_finding_is_reported_by_the_accepted_policy_not_the_rules():
    stack = edited({"feed-pdb:spec:minAvailable": 2.0,
                    "feed-deployment:metadata:annotations:lockstep.dev/accept": "pdb-allows-eviction"})
    assert violations("pdb-allows-eviction", stack) == []
    assert violations(ACCEPTED, stack) == [(
        "ACCEPTED pdb-allows-eviction  feed: allowed disruptions 0 (pdb.min_available 2 of 2 replicas) < minimum 1  "
        "slack -1 → accepted: lockstep.dev/accept annotation", urn(DEP, "feed-deployment"))]


def test_a_resource_the_pack_cannot_read_is_named_by_the_readable_policy():
    stack = edited({"feed-deployment:spec:template:spec:containers:0:ports": [],
                    "feed-deployment:spec:template:spec:containers:0:readinessProbe": DELETE,
                    "feed-deployment:spec:template:spec:containers:0:livenessProbe": DELETE})
    assert violations(READABLE, stack) == [
        ("lockstep cannot judge this resource: container 'feed' declares no port, and no probe or Service names "
         "one", urn(DEP, "feed-deployment"))]


def test_a_workload_declaring_no_port_is_judged_at_the_port_its_probes_ask():
    stack = edited({"feed-deployment:spec:template:spec:containers:0:ports": [],
                    "feed-pdb:spec:minAvailable": 2.0})
    assert violations(READABLE, stack) == []
    assert [urn for _, urn in violations("pdb-allows-eviction", stack)] == [urn(DEP, "feed-deployment")]


def test_an_ambiguous_failover_entry_service_asks_for_the_config_key():
    stack = compliant()
    stack["other-tg"] = ("aws:lb/targetGroup:TargetGroup", {**stack["api-tg"][1], "arn": "arn:other"}, ())
    stack["api-tgb"][1]["spec"]["targetGroupARN"] = "arn:other"
    stack["api-tgb"] = (stack["api-tgb"][0], stack["api-tgb"][1], ())
    stack["feed-service"] = ("kubernetes:core/v1:Service", {"metadata": {"name": "feed", "namespace": "feeds"},
                                                            "spec": {"selector": {"app.kubernetes.io/name": "feed"}}}, ())
    stack["feed-tgb"] = ("kubernetes:elbv2.k8s.aws/v1beta1:TargetGroupBinding", {
        "metadata": {"name": "feed", "namespace": "feeds"},
        "spec": {"targetGroupARN": stack["api-tg"][1]["arn"], "serviceRef": {"name": "feed", "port": 8080.0}}}, ())
    health = urn("aws:route53/healthCheck:HealthCheck", "primary-health")
    # both targets have no listener rule in the input: each could serve the check's path
    assert violations(READABLE, stack) == [(
        "lockstep cannot judge this resource: cannot tell the regional entry workload (no single workload behind "
        "an HTTP(S) target group serves the health check's path '/api/health'): set the policy config key "
        "entry_service (lockstep audit: --entry-service NAME)", health)]
    assert violations("failover-ignores-deploys", stack, {"entry_service": "api"}) == []


def test_an_ingress_backend_naming_a_service_the_stack_lacks_is_reported_by_the_linked_policy():
    stack = compliant()
    assert violations(LINKED, stack) == []
    ingress = "kubernetes:networking.k8s.io/v1:Ingress"
    stack["site-ingress"] = (ingress, {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "site", "namespace": "web"},
        "spec": {"ingressClassName": "alb", "rules": [{"http": {"paths": [
            {"path": "/blog", "pathType": "Prefix", "backend": {"service": {"name": "blog", "port": {"number": 80.0}}}},
        ]}}]}}, ())
    assert violations(LINKED, stack) == [
        ("Ingress web/site: backend Service web/blog not in the input: its paths reach no pod (or add the Service "
         "to the input)", urn(ingress, "site-ingress"))]
    assert violations(READABLE, stack) == []  # a warning, not a resource the pack could not read


def unbound(stack: dict) -> dict:
    """The stack without the api's target group (and the listener rule forwarding to it)."""
    del stack["api-tg"], stack["api-rule"]
    stack["api-tgb"] = (*stack["api-tgb"][:2], ())
    return stack


def test_a_binding_whose_target_group_the_stack_lacks_is_judged_at_the_bound():
    short = unbound(edited({"api-deployment:spec:template:spec:containers:0:lifecycle:preStop:sleep:seconds": 10.0}))
    assert [m for m, _ in violations("drain-covers-lb-detection", short)] == [
        "ERROR drain-covers-lb-detection  api: drain 10s (shutdown.drain_s) < lb_detect ≥15s (deregistration: "
        "lb.deregistration_propagation_s) + margin 5s  slack -10s → raise the drain to ≥20s or detect faster"]
    assert violations("drain-covers-lb-detection", unbound(compliant())) == []  # 20 s: only the kind decides: skipped
    assert violations("lb-values-in-range", unbound(compliant())) == []
    # an unknown protocol is no HTTP(S) target group: the failover's entry workload is not guessed
    assert [m for m, _ in violations(READABLE, unbound(compliant()))] == [
        "lockstep cannot judge this resource: cannot tell the regional entry workload (no single workload behind "
        "an HTTP(S) target group serves the health check's path '/api/health'): set the policy config key "
        "entry_service (lockstep audit: --entry-service NAME)"]


def test_a_target_group_of_an_unmodelled_protocol_is_not_judged():
    stack = edited({"api-tg:protocol": "UDP"})
    assert violations("lb-values-in-range", stack) == []


def test_the_margin_comes_from_policy_config():
    found = violations("drain-covers-lb-detection", config={"margin_s": 6.0})
    assert [m for m, _ in found] == [
        "ERROR drain-covers-lb-detection  api: drain 20s (shutdown.drain_s) < lb_detect 15s (deregistration: "
        "lb.deregistration_propagation_s) + margin 6s  slack -1s → raise the drain to ≥21s or detect faster"]


def test_deregistration_propagation_comes_from_policy_config():
    found = violations("drain-covers-lb-detection", config={"deregistration_propagation_s": 16})
    assert [m for m, _ in found] == [
        "ERROR drain-covers-lb-detection  api: drain 20s (shutdown.drain_s) < lb_detect 16s (deregistration: "
        "lb.deregistration_propagation_s) + margin 5s  slack -1s → raise the drain to ≥21s or detect faster"]


def test_registration_propagation_and_cluster_version_come_from_policy_config():
    assert len(violations("rollout-waits-for-lb", edited({"ns-web:metadata:labels": {}}),
                          {"registration_propagation_s": 0})) == 1
    exec_sleep = edited({"api-deployment:spec:template:spec:containers:0:lifecycle:preStop":
                         {"exec": {"command": ["sleep", "20"]}}})
    assert violations("prestop-uses-native-sleep", exec_sleep, {"kubernetes_version": "1.29"}) == []


def test_settings_default_to_the_documented_values_and_ignore_unknown_keys():
    assert settings(None) == Settings(margin_s=5, deregistration_propagation_s=None, registration_propagation_s=None,
                                      alb_idle_timeout_s=60, kubernetes_version="1.30", entry_service=None)
    assert settings({"margin_s": 7.0, "enforcementLevel": "mandatory"}).margin_s == 7


def test_main_builds_the_pack_from_every_policy_and_keys_its_answers_by_the_engines_request(monkeypatch):
    from pulumi_policy.policy import _PolicyAnalyzerServicer as servicer

    built = {}
    monkeypatch.setattr(pulumi_policy, "PolicyPack", lambda **kw: built.update(kw))
    monkeypatch.setattr(servicer, "AnalyzeStack", servicer.AnalyzeStack)  # put back afterwards
    runpy.run_module("lockstep.policies.__main__", run_name="__main__")
    assert built["name"] == "lockstep"
    assert [p.name for p in built["policies"]] == [p.name for p in all_policies()]
    assert built["enforcement_level"] == EnforcementLevel.MANDATORY
    assert getattr(servicer.AnalyzeStack, "sets_lockstep_request", False)  # (tests/policies/test_request_key.py)


@pytest.mark.parametrize("policy", [p for p in all_policies() if isinstance(p, StackValidationPolicy)],
                         ids=lambda p: p.name)
def test_stack_policies_declare_the_config_schema(policy):
    assert set(policy.config_schema.properties) >= {"margin_s", "deregistration_propagation_s"}


def test_during_a_preview_unknown_arns_are_followed_by_dependency(monkeypatch):
    """A new target group's ARN (and a new health check's id) is unknown at preview: the
    binding, the listener rule and the record still reach them through their dependencies."""
    from pulumi.runtime.rpc import UNKNOWN
    from pulumi_policy.proxy import unknown_checking_proxy

    import tests.policies.support as support

    stack = edited({"api-tg:arn": UNKNOWN, "api-tgb:spec:targetGroupARN": UNKNOWN,
                    "api-rule:actions:0:targetGroupArn": UNKNOWN, "api-rule:listenerArn": UNKNOWN,
                    "primary-record:healthCheckId": UNKNOWN, "primary-health:id": UNKNOWN})
    real = support.PolicyResource
    monkeypatch.setattr(support, "PolicyResource",
                        lambda t, props, *rest: real(t, unknown_checking_proxy(props), *rest))
    for policy in all_policies():
        assert violations(policy.name, stack) == [], policy.name
    broken = edited({"api-deployment:spec:template:spec:containers:0:lifecycle:preStop:sleep:seconds": 19.0}, stack)
    assert len(violations("drain-covers-lb-detection", broken)) == 1
    assert len(violations("failover-ignores-deploys", edited(
        {"api-deployment:spec:strategy:rollingUpdate:maxUnavailable": 1.0}, stack))) == 1


def test_the_pack_has_one_policy_per_severity_of_every_rule_resources_decide_and_none_other():
    """The policy list follows the registry: decided-from-resources rules only, an advisory
    twin for a rule's warning case, and the two reporting policies."""
    from lockstep.policies.rules import all_policies
    from lockstep.timing.invariants import RULES

    expected = []
    for r in RULES:
        if r.decided == "config":
            continue
        if "error" in r.severities:
            expected.append(r.id)
        if "warning" in r.severities:
            expected.append(f"{r.id}-advisory" if "error" in r.severities else r.id)
    names = [p.name for p in all_policies()]
    assert sorted(names) == sorted(expected + [ACCEPTED, READABLE, LINKED])


# Props as the engine hands them over: JSON values (every number a float), some unknown.
_UNKNOWNS = [getattr(pulumi_policy.proxy, n) for n in dir(pulumi_policy.proxy) if n.startswith("UNKNOWN_")]
_JSON = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.integers()
    | st.text(max_size=4) | st.sampled_from(_UNKNOWNS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=25)


class _Generic(Mapping):
    """A mapping no fast path knows: plain() reads it item by item, through the proxy."""

    def __init__(self, proxy):
        self.proxy = proxy

    def __getitem__(self, key):
        return self.proxy[key]

    def __iter__(self):
        return iter(self.proxy)

    def __len__(self):
        return len(self.proxy)


@given(st.dictionaries(st.text(max_size=4), _JSON, max_size=5))
def test_props_behind_the_engines_proxy_convert_as_through_the_generic_mapping_path(props):
    from pulumi_policy.proxy import unknown_checking_proxy

    from lockstep.policies.resources import plain
    from lockstep.timing.bind.resource import UNKNOWN

    def expected(v):
        if isinstance(v, dict):
            return {k: expected(x) for k, x in v.items()}
        if isinstance(v, list):
            return [expected(x) for x in v]
        if v in _UNKNOWNS:
            return UNKNOWN
        return int(v) if isinstance(v, float) and v.is_integer() else v

    fast = plain(unknown_checking_proxy(props))
    assert fast == plain(_Generic(unknown_checking_proxy(props)))
    assert fast == expected(props)
    assert all(type(a) is type(b) for a, b in zip(_leaves(fast), _leaves(expected(props))))


def _leaves(v):
    if isinstance(v, dict):
        return [x for item in v.values() for x in _leaves(item)]
    if isinstance(v, list):
        return [x for item in v for x in _leaves(item)]
    return [v]
