"""A pod's mesh proxy read from its resources (`timing.extract.mesh`, issue 12): Istio's and
Linkerd's injection rules as their docs state them, the drain and pool numbers with their
units, one line naming the field for bad input, and what `lockstep render` writes reading back
as it was declared."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from lockstep.timing.extract import mesh as M
from lockstep.timing.extract.nodes import FieldError


def ns(labels=None, annotations=None) -> dict:
    return {"metadata": {"name": "pay", "labels": labels or {}, "annotations": annotations or {}}}


# ---- injection --------------------------------------------------------------------------------
@pytest.mark.parametrize(("labels", "annotations", "namespace", "expected"), [
    ({M.ISTIO_INJECT: "true"}, {}, None, "istio-sidecar"),  # the pod's label alone injects
    ({M.ISTIO_INJECT: " True "}, {}, ns(), "istio-sidecar"),
    ({}, {M.ISTIO_INJECT: "true"}, ns(), "istio-sidecar"),  # the older annotation is honoured
    ({M.ISTIO_INJECT: "false"}, {M.ISTIO_INJECT: "true"}, ns(), None),  # the label over the annotation
    ({}, {}, ns({M.ISTIO_NAMESPACE_LABEL: "enabled"}), "istio-sidecar"),
    ({}, {}, ns({M.ISTIO_REVISION_LABEL: "1-24"}), "istio-sidecar"),
    ({M.ISTIO_INJECT: "false"}, {}, ns({M.ISTIO_NAMESPACE_LABEL: "enabled"}), None),  # either no wins
    ({M.ISTIO_INJECT: "true"}, {}, ns({M.ISTIO_NAMESPACE_LABEL: "disabled"}), None),
    ({}, {}, ns({M.ISTIO_NAMESPACE_LABEL: "Enabled"}), "istio-sidecar"),
    ({}, {M.LINKERD_INJECT: "enabled"}, ns(), "linkerd-proxy"),
    ({}, {M.LINKERD_INJECT: "ingress"}, ns(), "linkerd-proxy"),
    ({}, {}, ns(annotations={M.LINKERD_INJECT: "enabled"}), "linkerd-proxy"),  # from the namespace
    ({}, {M.LINKERD_INJECT: "disabled"}, ns(annotations={M.LINKERD_INJECT: "enabled"}), None),  # the pod's wins
    ({}, {M.LINKERD_INJECT: "ENABLED"}, None, "linkerd-proxy"),
    ({}, {}, ns(), None),  # neither mesh named: enableNamespacesByDefault is off by default
])
def test_a_mesh_injects_as_its_labels_and_annotations_decide(labels, annotations, namespace, expected) -> None:
    assert M.injected(labels, annotations, namespace) == (expected, "")


@pytest.mark.parametrize(("labels", "annotations", "why"), [
    ({}, {}, "undecided"),  # only the missing namespace could say
    ({M.ISTIO_INJECT: "false"}, {}, ""),  # the pod said no
    ({}, {M.LINKERD_INJECT: "disabled"}, ""),
])
def test_a_missing_namespace_leaves_injection_undecided_only_when_the_pod_says_nothing(labels, annotations, why) -> None:
    assert M.injected(labels, annotations, None) == (None, why)


def test_the_undecided_note_names_every_key_that_decides_injection() -> None:
    for key in (M.ISTIO_NAMESPACE_LABEL, M.ISTIO_REVISION_LABEL, M.LINKERD_INJECT):
        assert key in M.UNDECIDED_NOTE


# ---- the numbers --------------------------------------------------------------------------
@pytest.mark.parametrize(("raw", "seconds"), [
    ("terminationDrainDuration: 45s", 45), ("terminationDrainDuration: 1m30s\nconcurrency: 2\n", 90),
    ({"terminationDrainDuration": "2.5s"}, 2), ("concurrency: 2", None), ("", None),
])
def test_istios_drain_is_the_pods_proxyconfig_in_whole_seconds(raw, seconds) -> None:
    assert M.istio_drain({M.ISTIO_PROXY_CONFIG: raw}) == seconds


def test_no_proxyconfig_annotation_states_no_drain() -> None:
    assert M.istio_drain({}) is None


@pytest.mark.parametrize(("raw", "message"), [
    ("terminationDrainDuration: [", "metadata.annotations.proxy.istio.io/config: not YAML ("),
    ("terminationDrainDuration: soon",
     "metadata.annotations.proxy.istio.io/config.terminationDrainDuration: 'soon' is not a duration"),
])
def test_a_bad_proxyconfig_is_one_line_naming_its_field(raw, message) -> None:
    with pytest.raises(FieldError) as err:
        M.istio_drain({M.ISTIO_PROXY_CONFIG: raw})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_proxyconfig_that_is_not_yaml_quotes_the_parsers_first_line() -> None:
    raw = "terminationDrainDuration: [\n  5s"
    with pytest.raises(yaml.YAMLError) as parser:
        yaml.safe_load(raw)
    first = str(parser.value).splitlines()[0]
    with pytest.raises(FieldError) as err:
        M.istio_drain({M.ISTIO_PROXY_CONFIG: raw})
    assert str(err.value) == f"metadata.annotations.{M.ISTIO_PROXY_CONFIG}: not YAML ({first})"


@pytest.mark.parametrize(("data", "seconds"), [
    ({"mesh": "defaultConfig:\n  terminationDrainDuration: 30s\n"}, 30),
    ({"mesh": "defaultConfig:\n  concurrency: 2\n"}, None), ({"mesh": "accessLogFile: /dev/stdout\n"}, None),
    ({}, None), ({"mesh": "- a list"}, None),
])
def test_the_mesh_wide_drain_is_the_istio_configmaps_default_config(data, seconds) -> None:
    assert M.istio_mesh_drain({"data": data}) == seconds


def test_a_bad_mesh_wide_drain_names_its_key() -> None:
    with pytest.raises(FieldError, match=r"^data\.mesh\.defaultConfig\.terminationDrainDuration: '-3s' is out of range"):
        M.istio_mesh_drain({"data": {"mesh": "defaultConfig: {terminationDrainDuration: -3s}"}})
    with pytest.raises(FieldError, match=r"^data\.mesh: not YAML"):
        M.istio_mesh_drain({"data": {"mesh": "defaultConfig: {"}})


@pytest.mark.parametrize(("rule", "seconds"), [
    ({"spec": {"trafficPolicy": {"connectionPool": {"http": {"idleTimeout": "1h"}}}}}, 3600),
    ({"spec": {"trafficPolicy": {"connectionPool": {"http": {"idleTimeout": "59s"}}}}}, 59),
    ({"spec": {"trafficPolicy": {"connectionPool": {"tcp": {"connectTimeout": "1s"}}}}}, None),
    ({"spec": {"host": "api"}}, None),
])
def test_a_destination_rules_pool_idle_timeout(rule, seconds) -> None:
    assert M.destination_idle(rule) == seconds


def test_a_bad_pool_idle_timeout_names_its_field() -> None:
    with pytest.raises(FieldError, match=r"^spec\.trafficPolicy\.connectionPool\.http\.idleTimeout: 'x' is not"):
        M.destination_idle({"spec": {"trafficPolicy": {"connectionPool": {"http": {"idleTimeout": "x"}}}}})


@pytest.mark.parametrize(("pod", "namespace", "seconds"), [
    ({M.LINKERD_WAIT: "30"}, None, 30), ({M.LINKERD_WAIT: " 7 "}, ns(), 7),
    ({}, ns(annotations={M.LINKERD_WAIT: "20"}), 20), ({M.LINKERD_WAIT: "5"}, ns(annotations={M.LINKERD_WAIT: "20"}), 5),
    ({}, ns(), None), ({}, None, None),
])
def test_linkerds_drain_is_the_pods_wait_before_exit_else_its_namespaces(pod, namespace, seconds) -> None:
    assert M.linkerd_drain(pod, namespace) == seconds


def test_a_linkerd_wait_that_is_not_whole_seconds_names_its_annotation() -> None:
    with pytest.raises(FieldError) as err:
        M.linkerd_drain({M.LINKERD_WAIT: "30s"}, None)
    assert str(err.value) == f"{M.LINKERD_WAIT}: expected whole seconds, got '30s'"


# ---- what render writes reads back ------------------------------------------------------------
def test_render_writes_each_meshs_own_keys() -> None:
    assert M.pod_metadata("istio-sidecar", 45) == ({M.ISTIO_INJECT: "true"},
                                                   {M.ISTIO_PROXY_CONFIG: "terminationDrainDuration: 45s"})
    assert M.pod_metadata("istio-sidecar", None) == ({M.ISTIO_INJECT: "true"}, {})
    assert M.pod_metadata("linkerd-proxy", 45) == ({}, {M.LINKERD_INJECT: "enabled", M.LINKERD_WAIT: "45"})
    assert M.pod_metadata("linkerd-proxy", None) == ({}, {M.LINKERD_INJECT: "enabled"})
    assert M.pod_metadata("ingress-nginx", 45) == ({}, {})  # not a pod's own proxy
    assert M.pod_metadata("istio-sidecar", 45, True) == ({M.ISTIO_INJECT: "true"}, {
        M.ISTIO_PROXY_CONFIG: "terminationDrainDuration: 45s\nholdApplicationUntilProxyStarts: true"})
    assert M.pod_metadata("istio-sidecar", None, False) == ({M.ISTIO_INJECT: "true"}, {
        M.ISTIO_PROXY_CONFIG: "holdApplicationUntilProxyStarts: false", M.ISTIO_NATIVE: "false"})
    assert M.pod_metadata("linkerd-proxy", None, False) == ({}, {M.LINKERD_INJECT: "enabled",
                                                                 M.LINKERD_AWAIT: "disabled"})
    assert M.pod_metadata("linkerd-proxy", 5, True) == ({}, {M.LINKERD_INJECT: "enabled", M.LINKERD_WAIT: "5",
                                                             M.LINKERD_AWAIT: "enabled"})


@given(st.sampled_from(["istio-sidecar", "linkerd-proxy"]), st.none() | st.integers(0, 86400),
       st.none() | st.booleans())
def test_what_render_writes_reads_back_as_declared(kind, drain, waits) -> None:
    labels, annotations = M.pod_metadata(kind, drain, waits)
    assert M.injected(labels, annotations, ns()) == (kind, "")
    read = M.istio_drain(annotations) if kind == "istio-sidecar" else M.linkerd_drain(annotations, ns())
    assert read == drain
    order = M.istio_app_waits(annotations, None) if kind == "istio-sidecar" else M.linkerd_app_waits(annotations, ns())
    assert order == waits  # unwritten: Linkerd's default applies, Istio's installation decides


def mesh_cm(default_config: str) -> dict:
    return {"data": {"mesh": f"defaultConfig:\n  {default_config}\n"}}


@pytest.mark.parametrize(("annotations", "mesh", "waits"), [
    ({}, None, None),  # istiod's native-sidecar mode decides: not in the input
    ({M.ISTIO_PROXY_CONFIG: "holdApplicationUntilProxyStarts: true"}, None, True),
    ({M.ISTIO_PROXY_CONFIG: "holdApplicationUntilProxyStarts: false"}, None, None),  # native mode may still hold it
    ({M.ISTIO_NATIVE: "true"}, None, True),
    ({M.ISTIO_NATIVE: "false"}, None, False),  # a classic sidecar, and hold off by default
    ({M.ISTIO_NATIVE: "False"}, mesh_cm("holdApplicationUntilProxyStarts: true"), True),  # the mesh-wide hold
    ({M.ISTIO_NATIVE: "false", M.ISTIO_PROXY_CONFIG: "holdApplicationUntilProxyStarts: false"},
     mesh_cm("holdApplicationUntilProxyStarts: true"), False),  # the pod's ProxyConfig over the mesh's
    ({}, mesh_cm("terminationDrainDuration: 5s"), None),
])
def test_istio_holds_the_app_by_proxyconfig_or_a_native_sidecar_else_the_installation_decides(
        annotations, mesh, waits) -> None:
    assert M.istio_app_waits(annotations, mesh) == waits


@pytest.mark.parametrize(("annotations", "mesh", "message"), [
    ({M.ISTIO_PROXY_CONFIG: "holdApplicationUntilProxyStarts: yes please"}, None,
     f"metadata.annotations.{M.ISTIO_PROXY_CONFIG}.holdApplicationUntilProxyStarts: expected true or false, "
     "got 'yes please'"),
    ({M.ISTIO_NATIVE: "on"}, None, f'metadata.annotations.{M.ISTIO_NATIVE}: expected "true" or "false", got \'on\''),
    ({}, mesh_cm("holdApplicationUntilProxyStarts: 1"),
     "data.mesh.defaultConfig.holdApplicationUntilProxyStarts: expected true or false, got 1"),
    ({M.ISTIO_PROXY_CONFIG: "hold: [unclosed"}, None, f"metadata.annotations.{M.ISTIO_PROXY_CONFIG}: not YAML"),
    ({}, {"data": {"mesh": "defaultConfig: [unclosed"}}, "data.mesh: not YAML"),
])
def test_a_start_order_that_is_no_boolean_names_its_key(annotations, mesh, message) -> None:
    with pytest.raises(FieldError) as err:
        M.istio_app_waits(annotations, mesh)
    assert str(err.value) == message if "not YAML" not in message else str(err.value).startswith(message)


@pytest.mark.parametrize(("pod", "namespace", "waits"), [
    ({M.LINKERD_AWAIT: "disabled"}, None, False), ({M.LINKERD_AWAIT: " Enabled "}, None, True),
    ({}, {"metadata": {"annotations": {M.LINKERD_AWAIT: "disabled"}}}, False),
    ({M.LINKERD_AWAIT: "enabled"}, {"metadata": {"annotations": {M.LINKERD_AWAIT: "disabled"}}}, True),
    ({}, None, None),  # the kind's default (enabled) applies
])
def test_linkerds_await_is_the_pods_else_its_namespaces(pod, namespace, waits) -> None:
    assert M.linkerd_app_waits(pod, namespace) == waits


def test_a_linkerd_await_neither_enabled_nor_disabled_names_its_annotation() -> None:
    with pytest.raises(FieldError) as err:
        M.linkerd_app_waits({M.LINKERD_AWAIT: "true"}, None)
    assert str(err.value) == f"{M.LINKERD_AWAIT}: expected enabled or disabled, got 'true'"
