"""The node readers at their edges (issue 13): each error message whole, with its field and the
allowed range; the bounds of durations and whole numbers; every spelling Go accepts for a
boolean flag; budgets in any order; user data that only looks like a NodeConfig."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing import limits as L
from lockstep.timing.extract import nodes as XN
from lockstep.timing.extract.values import ExtractError

ALLOWED = f"(allowed: a Go duration such as 90s or 1m30s, {L.SECONDS.lo}–{L.SECONDS.hi}s)"


def pool(spec: dict, metadata: dict | None = None) -> dict:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": "general"} if metadata is None else metadata, "spec": spec}


# ---- durations ------------------------------------------------------------------------------
@pytest.mark.parametrize("raw", [None, True, False, 1.5, ["90s"], ""])
def test_a_value_that_is_no_duration_text_is_said_so_whole(raw) -> None:
    with pytest.raises(XN.FieldError) as err:
        XN.duration_s(raw, "spec.f")
    assert str(err.value) == f"spec.f: expected a duration, got {raw!r} {ALLOWED}"
    assert err.value.path == ("spec", "f")


@pytest.mark.parametrize("raw", ["-1s", "-90s", "86401s", "24h0m1s"])
def test_a_duration_past_the_range_is_out_of_range_not_unparsable(raw) -> None:
    with pytest.raises(XN.FieldError) as err:
        XN.duration_s(raw, "spec.f")
    assert str(err.value) == f"spec.f: {raw!r} is out of range {ALLOWED}"


@pytest.mark.parametrize(("raw", "seconds"), [("-0s", 0), ("-0", 0), ("0s", 0), ("86400s", L.SECONDS.hi),
                                              (0, 0), (" 90s ", 90)])
def test_the_range_bounds_and_a_negative_zero_are_durations(raw, seconds) -> None:
    assert XN.duration_s(raw, "f") == seconds


@given(st.integers(1, 3600))
@example(1).via("the smallest negative")
@example(10).via("a two-digit negative")
def test_a_negative_duration_is_its_negated_seconds_where_the_range_allows(s) -> None:
    assert XN.duration_s(f"-{s}s", "f", -3600, 3600) == -s
    assert XN.duration_s(f"-{s}s", "f", -s, 0) == -s


# ---- NodePool -------------------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "field"), [
    ({"template": {"spec": {"terminationGracePeriod": "1x"}}}, "spec.template.spec.terminationGracePeriod"),
    ({"disruption": {"consolidateAfter": "1x"}}, "spec.disruption.consolidateAfter")])
def test_a_bad_nodepool_duration_names_its_full_field(spec, field) -> None:
    with pytest.raises(XN.FieldError) as err:
        XN.nodepool(pool(spec))
    assert str(err.value) == f"{field}: '1x' is not a duration {ALLOWED}"
    assert err.value.path == tuple(field.split("."))


@pytest.mark.parametrize(("req", "message"), [
    ({"operator": "Gt", "values": ["1"]}, "operator 'Gt' (allowed: In, NotIn, Exists)"),
    ({"operator": "In", "values": ["preemptible"]},
     "allows no capacity type (allowed values: spot, on-demand, reserved)"),
    ({"operator": "NotIn", "values": ["spot", "on-demand", "reserved"]},
     "allows no capacity type (allowed values: spot, on-demand, reserved)")])
def test_a_capacity_type_error_is_printed_whole_at_the_requirements(req, message) -> None:
    reqs = [{"key": XN.CAPACITY_TYPE, **req}]
    with pytest.raises(ExtractError) as err:
        XN.nodepool(pool({"template": {"spec": {"requirements": reqs}}}))
    assert str(err.value) == f"spec.template.spec.requirements: requirement {XN.CAPACITY_TYPE} {message}"


@pytest.mark.parametrize("metadata", [{}, {"name": None}, {"name": ""}])
def test_a_name_less_nodepool_is_bad_input_at_its_name(metadata) -> None:
    with pytest.raises(ExtractError) as err:
        XN.nodepool(pool({}, metadata))
    assert str(err.value).startswith("NodePool : KarpenterNodePool: name: ")


def budget_nodes(*budgets: dict):
    return XN.nodepool(pool({"disruption": {"budgets": list(budgets)}}))[0].budget_nodes


def test_a_scheduled_budget_does_not_hide_an_always_on_one_after_it() -> None:
    scheduled = {"nodes": "0", "schedule": "@daily", "duration": "1h"}
    assert budget_nodes(scheduled, {"nodes": "5"}) == 5
    assert budget_nodes(scheduled, {"nodes": "25%"}, scheduled) == "25%"


@given(st.lists(st.integers(0, 100), min_size=1, max_size=6))
@example([5, 15]).via("a smaller number whose text sorts later")
@example([100, 20]).via("a three-digit percentage")
@example([0, 10])
def test_the_smallest_percentage_budget_holds(percents) -> None:
    assert budget_nodes(*({"nodes": f"{p}%"} for p in percents)) == f"{min(percents)}%"


@given(st.lists(st.integers(0, 1000), min_size=1, max_size=6), st.lists(st.integers(0, 100), max_size=3))
@example([9, 10], [])
def test_the_smallest_count_budget_holds_over_any_percentage(counts, percents) -> None:
    budgets = [{"nodes": f"{p}%"} for p in percents] + [{"nodes": str(c)} for c in counts]
    assert budget_nodes(*budgets) == min(counts)


# ---- the kubelet ----------------------------------------------------------------------------
@pytest.mark.parametrize("key", list(XN.KUBELET_KEYS))
def test_a_bad_kubelet_period_names_its_field_under_the_source(key) -> None:
    with pytest.raises(XN.FieldError) as err:
        XN.kubelet_shutdown({key: "1x"}, "KubeletConfiguration")
    assert str(err.value) == f"KubeletConfiguration.{key}: '1x' is not a duration {ALLOWED}"
    assert err.value.path == ("KubeletConfiguration", key)


def test_a_critical_share_without_a_whole_period_exceeds_its_zero_default() -> None:
    with pytest.raises(XN.FieldError) as err:
        XN.kubelet_shutdown({"shutdownGracePeriodCriticalPods": "1s"}, "K")
    assert str(err.value) == ("K.shutdownGracePeriodCriticalPods: 1s exceeds shutdownGracePeriod 0s "
                              "(allowed: 0s–shutdownGracePeriod)")


NODECONFIG = """apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: {grace}
"""


@pytest.mark.parametrize("header", ["MIME-Version: 1.0", "Content-Type: text/x-shellscript"])
def test_a_mime_document_of_another_type_states_no_kubelet_even_if_its_body_looks_like_one(header) -> None:
    # read as YAML the headers would merge into the NodeConfig mapping; read as MIME it is a
    # part that nodeadm does not take (text/plain by default, or a shell script)
    assert XN.nodeconfig_kubelet(f"{header}\n\n{NODECONFIG.format(grace='90s')}") is None


def test_a_multipart_without_a_mime_version_header_is_still_read_by_its_parts() -> None:
    ud = ('Content-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: application/node.eks.aws\n\n'
          f'{NODECONFIG.format(grace="90s")}\n--B--\n')
    assert XN.nodeconfig_kubelet(ud) == {"shutdownGracePeriod": "90s"}


def test_only_the_nodeadm_part_of_a_multipart_is_read() -> None:
    ud = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n'
          f'--B\nContent-Type: application/node.eks.aws\n\n{NODECONFIG.format(grace="90s")}\n'
          f'--B\nContent-Type: text/plain\n\n{NODECONFIG.format(grace="30s")}\n--B--\n')
    assert XN.nodeconfig_kubelet(ud) == {"shutdownGracePeriod": "90s"}


# ---- controllers ----------------------------------------------------------------------------
def test_only_the_leading_dashes_come_off_a_flag_name() -> None:
    assert XN.settings({"args": ["--XDG-dir=/x", "-X", "--x-y", "1"]}) == {"XDG-dir": "/x", "X": "true", "x-y": "1"}


GO_TRUE, GO_FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")


@pytest.mark.parametrize("raw", GO_TRUE + GO_FALSE)
def test_every_spelling_go_parses_as_a_boolean_is_read(raw) -> None:
    assert XN.flag_bool(raw, "f") is (raw in GO_TRUE)


@pytest.mark.parametrize("raw", ["yes", "no", "tRUE", "fALSE", "", " true", "2", "y"])
def test_any_other_boolean_spelling_is_bad_input_printed_whole(raw) -> None:
    with pytest.raises(ExtractError) as err:
        XN.flag_bool(raw, "--f")
    assert str(err.value) == f"--f: {raw!r} is not a boolean (allowed: true, false)"


@pytest.mark.parametrize("seconds", [L.SECONDS.lo, L.SECONDS.hi])
def test_the_autoscalers_grace_takes_both_bounds(seconds) -> None:
    ca, _ = XN.cluster_autoscaler({"args": [f"--{XN.CA_FLAG}={seconds}"]})
    assert ca.max_graceful_termination_s == seconds


@pytest.mark.parametrize("raw", [str(L.SECONDS.hi + 1), str(L.SECONDS.lo - 1), "1.5", "", "ten"])
def test_an_autoscaler_grace_past_the_bounds_is_printed_whole(raw) -> None:
    with pytest.raises(ExtractError) as err:
        XN.cluster_autoscaler({"args": [f"--{XN.CA_FLAG}={raw}"]})
    assert str(err.value) == f"--{XN.CA_FLAG}: {raw!r} (allowed: a whole number {L.SECONDS.lo}–{L.SECONDS.hi})"


def test_a_whole_number_takes_a_negative_bound() -> None:
    assert XN.whole("-5", "f", -5, 5) == -5
    assert XN.whole(" 5 ", "f", -5, 5) == 5


def test_karpenter_without_a_queue_says_so_whole() -> None:
    assert XN.karpenter_interruption_queue({"args": ["--log-level=debug"]}) == (
        False, ["Karpenter controller: no interruption queue (INTERRUPTION_QUEUE unset: spot notices not handled)"])


def test_the_handlers_spot_switch_is_read_as_a_boolean_named_by_its_flag() -> None:
    with pytest.raises(ExtractError) as err:
        XN.termination_handler({"env": [{"name": "ENABLE_SPOT_INTERRUPTION_DRAINING", "value": "no"}]})
    assert str(err.value) == "--enable-spot-interruption-draining: 'no' is not a boolean (allowed: true, false)"
    assert XN.termination_handler({"args": ["--enable-spot-interruption-draining=F"]}) == (
        None, ["aws-node-termination-handler: spot interruption draining off: drains no spot node"])
