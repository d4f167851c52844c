"""The node disruption sources as users deploy them → model pieces (issue 13): Go durations,
Karpenter NodePools, the kubelet's shutdown (a KubeletConfiguration or an AL2023 NodeConfig),
and the controllers' flags and environment. Every default applied is reported; values the
APIs refuse are errors naming the field and the allowed range."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing import limits as L
from lockstep.timing.extract import nodes as XN
from lockstep.timing.extract.values import ExtractError
from lockstep.timing.model import KarpenterNodePool


# ---- durations ------------------------------------------------------------------------------
@given(st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
@example(0, 1, 30).via("1m30s")
@example(24, 0, 0).via("the upper bound, 86400 s")
def test_a_go_duration_is_its_whole_seconds(h, m, s) -> None:
    text = f"{h}h{m}m{s}s"
    assert XN.duration_s(text, "f") == 3600 * h + 60 * m + s
    assert XN.duration_s(f"{3600 * h + 60 * m + s}s", "f") == 3600 * h + 60 * m + s


@pytest.mark.parametrize(("text", "seconds"), [("0", 0), ("90s", 90), ("1.5s", 1), ("1999ms", 1), ("1.5m", 90),
                                               ("+2m", 120), ("0.5h", 1800), ("1h0m0s", 3600), ("999999us", 0)])
def test_durations_round_down_to_whole_seconds(text, seconds) -> None:
    assert XN.duration_s(text, "f") == seconds


@pytest.mark.parametrize("text", ["", "90", "ninety", "1m30", "s", "1x", "-1s", "86401s", "25h", ".s", "1.5.5s", True, None])
def test_a_bad_or_out_of_range_duration_names_the_field_and_the_range(text) -> None:
    with pytest.raises(XN.FieldError) as err:
        XN.duration_s(text, "spec.template.spec.terminationGracePeriod")
    assert str(err.value).startswith("spec.template.spec.terminationGracePeriod: ")
    assert f"{L.SECONDS.lo}–{L.SECONDS.hi}s" in str(err.value)
    assert err.value.path == ("spec", "template", "spec", "terminationGracePeriod")


def test_a_duration_range_is_the_callers() -> None:
    assert XN.duration_s("10s", "f", 10, 20) == 10
    with pytest.raises(XN.FieldError, match="10–20s"):
        XN.duration_s("21s", "f", 10, 20)
    with pytest.raises(XN.FieldError):
        XN.duration_s("9s", "f", 10, 20)


# ---- NodePool -------------------------------------------------------------------------------
def pool(spec: dict, name: str = "general") -> dict:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def test_a_bare_nodepool_is_karpenters_defaults_each_reported() -> None:
    p, defaults = XN.nodepool(pool({}))
    fields = KarpenterNodePool.model_fields
    assert p == KarpenterNodePool(name="general")
    assert p.termination_grace_period_s is None and p.capacity_types == ("on-demand",)
    assert defaults == [
        "NodePool general: terminationGracePeriod unset (Karpenter waits for every pod: no node budget)",
        "NodePool general: no karpenter.sh/capacity-type requirement (on-demand)",
        f"NodePool general: consolidationPolicy {fields['consolidation_policy'].default}",
        f"NodePool general: consolidateAfter {fields['consolidate_after_s'].default}s",
        f"NodePool general: disruption budget nodes {fields['budget_nodes'].default}"]


def test_a_stated_nodepool_is_read_with_no_default() -> None:
    p, defaults = XN.nodepool(pool({
        "template": {"spec": {"terminationGracePeriod": "5m", "requirements": [
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
            {"key": XN.CAPACITY_TYPE, "operator": "In", "values": ["spot", "on-demand"]}]}},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1m",
                       "budgets": [{"nodes": "20%"}, {"nodes": "5"}, {"nodes": "0", "schedule": "@daily"}]}}))
    assert defaults == []
    assert (p.termination_grace_period_s, p.capacity_types, p.consolidation_policy, p.consolidate_after_s,
            p.budget_nodes) == (300, ("spot", "on-demand"), "WhenEmpty", 60, 5)


@pytest.mark.parametrize(("op", "values", "types"), [
    ("In", ["spot"], ("spot",)), ("In", ["on-demand", "reserved"], ("on-demand",)),
    ("NotIn", ["spot"], ("on-demand",)), ("NotIn", ["on-demand"], ("spot", "on-demand")),
    ("Exists", [], ("spot", "on-demand"))])
def test_the_capacity_type_requirement_decides_spot(op, values, types) -> None:
    req = {"key": XN.CAPACITY_TYPE, "operator": op, "values": values}
    p, _ = XN.nodepool(pool({"template": {"spec": {"requirements": [req]}}}))
    assert p.capacity_types == types


@pytest.mark.parametrize(("req", "words"), [
    ({"key": XN.CAPACITY_TYPE, "operator": "Gt", "values": ["1"]}, "operator 'Gt' (allowed: In, NotIn, Exists)"),
    ({"key": XN.CAPACITY_TYPE, "operator": "In", "values": ["preemptible"]}, "allows no capacity type")])
def test_a_capacity_type_requirement_karpenter_cannot_meet_is_bad_input(req, words) -> None:
    with pytest.raises(ExtractError, match=words.replace("(", r"\(").replace(")", r"\)")):
        XN.nodepool(pool({"template": {"spec": {"requirements": [req]}}}))


def test_budgets_keep_the_most_restrictive_always_on_one() -> None:
    def nodes(*budgets):
        return XN.nodepool(pool({"disruption": {"budgets": list(budgets)}}))[0].budget_nodes

    assert nodes({"nodes": "30%"}, {"nodes": "15%"}) == "15%"
    assert nodes({"nodes": "3"}, {"nodes": "15%"}, {"nodes": "2"}) == 2
    assert nodes({}) == "10%"  # a budget without nodes: Karpenter's 10%
    assert nodes({"nodes": "1", "schedule": "@daily", "duration": "1h"}) == "10%"  # scheduled only: the default
    with pytest.raises(XN.FieldError, match=r"budgets\[0\].nodes: '-1'") as err:
        nodes({"nodes": "-1"})
    assert err.value.path == ("spec", "disruption", "budgets", 0, "nodes")


def test_consolidate_after_never_keeps_the_models_default_and_says_so() -> None:
    p, defaults = XN.nodepool(pool({"disruption": {"consolidateAfter": "Never"}}))
    assert p.consolidate_after_s == KarpenterNodePool.model_fields["consolidate_after_s"].default
    assert any("consolidateAfter Never" in d for d in defaults)


def test_a_nodepool_the_model_refuses_names_the_pool() -> None:
    with pytest.raises(ExtractError, match="^NodePool Bad_Name: "):
        XN.nodepool(pool({}, name="Bad_Name"))


# ---- the kubelet ----------------------------------------------------------------------------
@given(st.integers(0, 600).flatmap(lambda t: st.tuples(st.just(t), st.integers(0, t))))
@example((90, 30))
@example((30, 30)).via("the critical share may be the whole period")
def test_a_kubelet_configuration_gives_its_shutdown_periods(periods) -> None:
    total, critical = periods
    k, defaults = XN.kubelet_shutdown({"shutdownGracePeriod": f"{total}s",
                                       "shutdownGracePeriodCriticalPods": f"{critical}s"}, "KubeletConfiguration")
    assert (k.shutdown_grace_period_s, k.shutdown_grace_period_critical_pods_s, defaults) == (total, critical, [])


def test_unset_kubelet_periods_are_zero_and_reported() -> None:
    k, defaults = XN.kubelet_shutdown({}, "KubeletConfiguration")
    assert (k.shutdown_grace_period_s, k.shutdown_grace_period_critical_pods_s) == (0, 0)
    assert defaults == ["KubeletConfiguration: shutdownGracePeriod 0s (unset)",
                        "KubeletConfiguration: shutdownGracePeriodCriticalPods 0s (unset)"]


def test_a_critical_share_beyond_the_whole_period_is_bad_input_at_its_field() -> None:
    with pytest.raises(XN.FieldError) as err:
        XN.kubelet_shutdown({"shutdownGracePeriod": "30s", "shutdownGracePeriodCriticalPods": "31s"}, "K")
    assert str(err.value) == "K.shutdownGracePeriodCriticalPods: 31s exceeds shutdownGracePeriod 30s " \
                             "(allowed: 0s–shutdownGracePeriod)"
    assert err.value.path == ("shutdownGracePeriodCriticalPods",)


NODECONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 90s
"""


def test_a_nodeconfig_is_read_plain_or_from_its_mime_part() -> None:
    assert XN.nodeconfig_kubelet(NODECONFIG) == {"shutdownGracePeriod": "90s"}
    mime = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n--B\n'
            'Content-Type: text/x-shellscript\n\n#!/bin/sh\necho hi\n--B\n'
            f'Content-Type: application/node.eks.aws\n\n---\n{NODECONFIG}\n--B--\n')
    assert XN.nodeconfig_kubelet(mime) == {"shutdownGracePeriod": "90s"}


@pytest.mark.parametrize("user_data", [None, "", "  ", 7, "#!/bin/bash\necho no nodeconfig\n",
                                       "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n"])
def test_user_data_without_kubelet_settings_states_none(user_data) -> None:
    assert XN.nodeconfig_kubelet(user_data) is None


def test_a_nodeconfig_part_that_is_not_yaml_is_bad_input() -> None:
    with pytest.raises(ExtractError, match="^spec.userData: the NodeConfig part is not YAML"):
        XN.nodeconfig_kubelet("key: [unclosed\n")


# ---- controllers ----------------------------------------------------------------------------
def test_settings_read_flags_both_ways_and_literal_env_the_last_flag_winning() -> None:
    c = {"command": ["./app", "--a=1", "--b", "2", "-c"], "args": ["--a=3", "--d"],
         "env": [{"name": "E", "value": "x"}, {"name": "F", "valueFrom": {"secretKeyRef": {}}}]}
    assert XN.settings(c) == {"E": "x", "a": "3", "b": "2", "c": "true", "d": "true"}
    assert XN.setting({"flag": "1", "ENV": "2"}, "flag", "ENV") == "1"
    assert XN.setting({"ENV": "2"}, "flag", "ENV") == "2"
    assert XN.setting({}, "flag", "ENV") is None


def test_karpenters_interruption_queue_is_its_flag_or_variable() -> None:
    assert XN.karpenter_interruption_queue({"env": [{"name": "INTERRUPTION_QUEUE", "value": "q"}]}) == (True, [])
    assert XN.karpenter_interruption_queue({"args": ["--interruption-queue=q"]}) == (True, [])
    assert XN.karpenter_interruption_queue({"env": [{"name": "INTERRUPTION_QUEUE", "value": " "}]}) == (False, [])
    on, defaults = XN.karpenter_interruption_queue({})
    assert not on and defaults and "INTERRUPTION_QUEUE unset" in defaults[0]


def test_the_autoscalers_flag_or_its_default() -> None:
    ca, defaults = XN.cluster_autoscaler({"command": ["./cluster-autoscaler", "--max-graceful-termination-sec=55"]})
    assert (ca.max_graceful_termination_s, defaults) == (55, [])
    ca, defaults = XN.cluster_autoscaler({})
    assert ca.max_graceful_termination_s == L.CA_MAX_GRACEFUL_TERMINATION_DEFAULT
    assert defaults == [f"Cluster Autoscaler: --max-graceful-termination-sec {L.CA_MAX_GRACEFUL_TERMINATION_DEFAULT} (unset)"]
    with pytest.raises(ExtractError, match=r"--max-graceful-termination-sec: '-5' \(allowed: a whole number 0–86400\)"):
        XN.cluster_autoscaler({"args": ["--max-graceful-termination-sec=-5"]})


def env(**kv) -> dict:
    return {"env": [{"name": k, "value": v} for k, v in kv.items()]}


def test_the_termination_handler_defaults_to_imds_and_each_pods_own_grace() -> None:
    nth, defaults = XN.termination_handler({})
    assert (nth.mode, nth.pod_termination_grace_period_s, nth.node_termination_grace_period_s) == (
        "imds", None, L.NTH_NODE_TERMINATION_GRACE_DEFAULT)
    assert defaults == ["aws-node-termination-handler: --pod-termination-grace-period -1 (unset: each pod's own grace)",
                        f"aws-node-termination-handler: --node-termination-grace-period {L.NTH_NODE_TERMINATION_GRACE_DEFAULT}"]


@pytest.mark.parametrize(("container", "mode", "pod_grace", "node_grace"), [
    (env(ENABLE_SQS_TERMINATION_DRAINING="true", POD_TERMINATION_GRACE_PERIOD="45"), "queue", 45, 120),
    ({"args": ["--pod-termination-grace-period=-1", "--node-termination-grace-period=90"]}, "imds", None, 90),
    (env(POD_TERMINATION_GRACE_PERIOD="-30"), "imds", None, 120),  # any negative: the pod's own
    ({"args": ["--enable-sqs-termination-draining", "--pod-termination-grace-period", "0"]}, "queue", 0, 120)])
def test_the_termination_handler_reads_its_mode_and_graces(container, mode, pod_grace, node_grace) -> None:
    nth, _ = XN.termination_handler(container)
    assert (nth.mode, nth.pod_termination_grace_period_s, nth.node_termination_grace_period_s) == (
        mode, pod_grace, node_grace)


def test_a_handler_that_does_not_drain_spot_is_no_spot_handler() -> None:
    nth, notes = XN.termination_handler(env(ENABLE_SPOT_INTERRUPTION_DRAINING="false"))
    assert nth is None and "drains no spot node" in notes[0]
    # in queue mode spot notices arrive through the queue: the IMDS switch does not apply
    nth, _ = XN.termination_handler(env(ENABLE_SQS_TERMINATION_DRAINING="true", ENABLE_SPOT_INTERRUPTION_DRAINING="false"))
    assert nth is not None and nth.mode == "queue"
    assert XN.termination_handler(env(ENABLE_SPOT_INTERRUPTION_DRAINING="true"))[0] is not None


@pytest.mark.parametrize(("container", "words"), [
    (env(ENABLE_SQS_TERMINATION_DRAINING="yes"), "--enable-sqs-termination-draining: 'yes' is not a boolean"),
    (env(POD_TERMINATION_GRACE_PERIOD="thirty"), "--pod-termination-grace-period: 'thirty'"),
    (env(NODE_TERMINATION_GRACE_PERIOD="-1"), "--node-termination-grace-period: '-1' (allowed: a whole number 0–86400)")])
def test_bad_handler_settings_are_bad_input(container, words) -> None:
    with pytest.raises(ExtractError) as err:
        XN.termination_handler(container)
    assert str(err.value).startswith(words)


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("t", True), ("TRUE", True), ("True", True),
                                            ("0", False), ("f", False), ("FALSE", False), ("False", False)])
def test_booleans_are_gos(raw, value) -> None:
    assert XN.flag_bool(raw, "f") is value
