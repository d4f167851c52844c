"""An Istio ingress gateway read from its resources (`timing.extract.istio_gateway`, issue 12):
which pods are a gateway, which Gateways a VirtualService binds to, where its routes send and
how long they wait (whole seconds only), and what decides the gateway's own drain."""

from __future__ import annotations

import pytest

from lockstep.timing.extract import istio_gateway as G
from lockstep.timing.extract import mesh as M
from lockstep.timing.extract.nodes import FieldError


def pod(*containers: dict, annotations: dict | None = None) -> dict:
    template: dict = {"spec": {"containers": list(containers)}}
    if annotations is not None:
        template["metadata"] = {"annotations": annotations}
    return {"spec": {"template": template}}


ROUTER = {"name": "istio-proxy", "image": "docker.io/istio/proxyv2:1.24.2", "args": ["proxy", "router", "--domain", "x"]}


@pytest.mark.parametrize(("workload", "gateway"), [
    (pod({"name": "istio-proxy", "image": "auto"}, annotations={"inject.istio.io/templates": "gateway"}), True),
    (pod({"name": "istio-proxy", "image": "auto"}, annotations={"inject.istio.io/templates": "custom, gateway"}), True),
    (pod({"name": "istio-proxy", "image": "auto"}, annotations={"inject.istio.io/templates": "custom,gateway"}), True),
    (pod({"name": "istio-proxy", "image": "auto"}, annotations={"inject.istio.io/templates": None}), False),
    (pod({"name": "istio-proxy", "image": "auto"}, annotations={"inject.istio.io/templates": "sidecar"}), False),
    (pod({"name": "istio-proxy", "image": "auto"}, annotations={"inject.istio.io/templates": "gateways"}), False),
    (pod(ROUTER), True),  # the legacy istio-ingressgateway Deployment, spelled out
    (pod({**ROUTER, "image": "istio/proxyv2@sha256:0a1b"}), True),
    (pod({**ROUTER, "image": "registry.example.com:5000/mirror/proxyv2:1.24.2"}), True),
    (pod({**ROUTER, "args": ["proxy", "sidecar"]}), False),  # an injected sidecar: pilot-agent as `sidecar`
    (pod({**ROUTER, "image": "docker.io/istio/proxyv3:1.0"}), False),
    (pod({**ROUTER, "image": "example.com/proxyv2-tools:1"}), False),
    (pod({"name": "web", "image": "nginx:1.27", "args": ["router"]}), False),
    (pod(), False), ({}, False),
])
def test_a_gateway_is_the_gateway_template_or_a_proxyv2_container_running_as_a_router(workload, gateway) -> None:
    assert G.is_gateway(workload) is gateway


@pytest.mark.parametrize(("image", "name"), [
    ("docker.io/istio/proxyv2:1.24.2", "proxyv2"), ("istio/pilot@sha256:0a1b", "pilot"),
    ("registry.example.com:5000/mirror/proxyv2:1.24.2", "proxyv2"), ("proxyv2", "proxyv2"), (None, ""), (7, ""),
])
def test_an_image_name_drops_registry_path_tag_and_digest(image, name) -> None:
    assert G.image_name({} if image is None else {"image": image}) == name


@pytest.mark.parametrize(("api_version", "istio"), [
    ("networking.istio.io/v1", True), ("networking.istio.io/v1beta1", True), ("networking.istio.io/v1alpha3", True),
    ("gateway.networking.k8s.io/v1", False),  # the Gateway API's Gateway: same kind, not Istio's
    (None, False),
])
def test_only_istio_networking_resources_are_read_as_istio_gateways(api_version, istio) -> None:
    assert G.is_istio({"apiVersion": api_version} if api_version else {}) is istio


@pytest.mark.parametrize(("name", "ref"), [
    ("public", ("shop", "public")),  # a short name: the VirtualService's namespace
    ("./public", ("shop", "public")),
    ("istio-ingress/public", ("istio-ingress", "public")),
    ("public.istio-ingress.svc.cluster.local", ("istio-ingress", "public")),  # the legacy FQDN form
    ("public.istio-ingress", ("istio-ingress", "public")),
    ("mesh", None),  # the sidecars, not a gateway
    ("istio-ingress/public/x", ("istio-ingress", "public/x")),  # split at the first slash, as istiod does
])
def test_a_gateways_entry_names_a_gateway_as_istio_resolves_it(name, ref) -> None:
    assert G.gateway_ref(name, "shop") == ref


def test_a_virtual_service_binds_to_its_gateways_each_once_and_never_to_mesh() -> None:
    vs = {"spec": {"gateways": ["public", "mesh", "shop/public", "istio-ingress/edge"]}}
    assert G.gateway_refs(vs, "shop") == [("shop", "public"), ("istio-ingress", "edge")]
    assert G.gateway_refs({"spec": {"gateways": ["mesh"]}}, "shop") == []
    assert G.gateway_refs({"spec": {}}, "shop") == []  # no gateways: the sidecars only
    assert G.gateway_refs({"spec": {"gateways": [7, None, "edge"]}}, "shop") == [("shop", "edge")]  # names only


@pytest.mark.parametrize(("host", "resolved"), [
    ("web", "web.shop.svc.cluster.local"),
    ("web.shop.svc.cluster.local", "web.shop.svc.cluster.local"),
    ("web.other", "web.other"),  # taken as written (ResolveShortnameToFQDN): no Service's name
    ("*", "*"),
    ("fd00::1", "fd00::1"),  # an address, as istiod leaves it
])
def test_a_destination_host_without_a_dot_is_relative_to_the_virtual_services_namespace(host, resolved) -> None:
    assert M.istio_host(host, "shop") == resolved


def test_routes_list_each_destination_host_once_per_http_route_with_its_timeout() -> None:
    vs = {"spec": {"http": [
        {"timeout": "15s", "route": [{"destination": {"host": "reports"}, "weight": 90},
                                     {"destination": {"host": "reports"}, "weight": 10},
                                     {"destination": {"host": "search.shop.svc.cluster.local"}}]},
        {"route": [{"destination": {"host": "web"}}, {"destination": {"port": {"number": 80}}},
                   {"destination": {"host": 7}}]},
        {"redirect": {"uri": "/v2"}},
    ]}}
    assert G.routes(vs, "shop") == [(0, "reports.shop.svc.cluster.local", "15s"),
                                    (0, "search.shop.svc.cluster.local", "15s"),
                                    (1, "web.shop.svc.cluster.local", None)]
    assert G.routes({}, "shop") == []


@pytest.mark.parametrize(("raw", "seconds"), [
    ("30s", 30), ("1m", 60), ("1m30s", 90), ("1h", 3600), ("2000ms", 2), ("1.0s", 1), (".5m", 30),
    ("3000000us", 3), ("4000000µs", 4), ("5000000000ns", 5), (" 45s ", 45), ("1.50m", 90),
    ("1.0000000001s", 1),  # below a nanosecond is cut, as Go's durations do
])
def test_a_route_timeout_of_whole_seconds_is_read_in_seconds(raw, seconds) -> None:
    value = G.route_timeout(raw, "spec.http[0].timeout")
    assert value == (seconds, "") and type(value[0]) is int


@pytest.mark.parametrize("raw", ["1.5s", "1.25s", "500ms", "1m0.5s", "1000001us", "1000000001ns"])
def test_a_route_timeout_that_is_not_whole_seconds_is_a_note_not_a_guess(raw) -> None:
    assert G.route_timeout(raw, "spec.http[2].timeout") == (
        None, f"spec.http[2].timeout: {raw!r} is not whole seconds: this route's timeout is not judged")


def test_a_route_without_a_timeout_bounds_nothing_and_a_zero_one_turns_it_off() -> None:
    assert G.route_timeout(None, "spec.http[0].timeout") == (None, "")
    assert G.route_timeout("0s", "spec.http[1].timeout") == (None, "spec.http[1].timeout: '0s' disables the route's timeout")


@pytest.mark.parametrize("raw", ["30", "thirty", "s", "30s ago", "-5s", "", "1d", "1.s5"])
def test_a_route_timeout_that_is_no_duration_is_an_error_naming_the_field(raw) -> None:
    with pytest.raises(FieldError) as err:
        G.route_timeout(raw, "spec.http[1].timeout")
    assert str(err.value) == f"spec.http[1].timeout: {raw.strip()!r} is not a duration (such as 30s, 1m or 1m30s)"


def test_the_proxy_configs_are_the_pods_own_then_the_mesh_wide_default() -> None:
    annotations = {"proxy.istio.io/config": "terminationDrainDuration: 30s\nproxyMetadata: {A: b}\n"}
    mesh = {"data": {"mesh": "defaultConfig:\n  terminationDrainDuration: 10s\n"}}
    assert G.proxy_configs(annotations, mesh) == [{"terminationDrainDuration": "30s", "proxyMetadata": {"A": "b"}},
                                                  {"terminationDrainDuration": "10s"}]
    assert G.proxy_configs({}, None) == [None, None]
    assert G.proxy_configs({"proxy.istio.io/config": {"holdApplicationUntilProxyStarts": True}}, {}) == [
        {"holdApplicationUntilProxyStarts": True}, None]  # a Pulumi input: a mapping already


def test_a_proxy_config_that_is_not_yaml_is_an_error_naming_the_annotation_or_key() -> None:
    with pytest.raises(FieldError) as err:
        G.proxy_configs({"proxy.istio.io/config": "a: [b"}, None)
    assert str(err.value) == "metadata.annotations.proxy.istio.io/config: not YAML (while parsing a flow sequence)"
    with pytest.raises(FieldError) as err:
        G.proxy_configs({}, {"data": {"mesh": "defaultConfig: {"}})
    assert str(err.value) == "data.mesh: not YAML (while parsing a flow node)"


@pytest.mark.parametrize(("env", "configs", "exits"), [
    ([], [None, None], False),  # pilot-agent's default: terminationDrainDuration
    ([{"name": "EXIT_ON_ZERO_ACTIVE_CONNECTIONS", "value": "true"}], [None, None], True),
    ([{"name": "EXIT_ON_ZERO_ACTIVE_CONNECTIONS", "value": "1"}], [None, None], True),  # Go's ParseBool
    ([{"name": "EXIT_ON_ZERO_ACTIVE_CONNECTIONS", "value": "yes"}], [None, None], False),
    ([], [{"proxyMetadata": {"EXIT_ON_ZERO_ACTIVE_CONNECTIONS": "true"}}, None], True),
    ([], [None, {"proxyMetadata": {"EXIT_ON_ZERO_ACTIVE_CONNECTIONS": "True"}}], True),
    # the most specific statement wins: the container's env, then the pod's ProxyConfig
    ([{"name": "EXIT_ON_ZERO_ACTIVE_CONNECTIONS", "value": "false"}],
     [{"proxyMetadata": {"EXIT_ON_ZERO_ACTIVE_CONNECTIONS": "true"}}, None], False),
    ([], [{"proxyMetadata": {"EXIT_ON_ZERO_ACTIVE_CONNECTIONS": "false"}},
          {"proxyMetadata": {"EXIT_ON_ZERO_ACTIVE_CONNECTIONS": "true"}}], False),
    ([], [{"proxyMetadata": {"OTHER": "true"}}, None], False),
    ([], [{"proxyMetadata": {"OTHER": "false"}}, {"proxyMetadata": {"EXIT_ON_ZERO_ACTIVE_CONNECTIONS": "true"}}], True),
])
def test_the_gateway_exits_on_zero_connections_only_where_the_most_specific_setting_says_so(env, configs, exits) -> None:
    assert G.exits_on_zero(pod({"name": "istio-proxy", "image": "auto", "env": env}), configs) is exits


@pytest.mark.parametrize(("container", "scoped"), [
    ({"name": "discovery", "image": "docker.io/istio/pilot:1.24.2",
      "env": [{"name": "PILOT_SCOPE_GATEWAY_TO_NAMESPACE", "value": "true"}]}, True),
    ({"name": "discovery", "image": "istio/pilot@sha256:0a", "env": [{"name": "PILOT_SCOPE_GATEWAY_TO_NAMESPACE",
                                                                       "value": "T"}]}, True),
    ({"name": "discovery", "image": "docker.io/istio/pilot:1.24.2",
      "env": [{"name": "PILOT_SCOPE_GATEWAY_TO_NAMESPACE", "value": "false"}]}, False),
    ({"name": "discovery", "image": "docker.io/istio/pilot:1.24.2"}, False),  # istiod's default
    ({"name": "web", "image": "example.com/pilot-tools:1", "env": [{"name": "PILOT_SCOPE_GATEWAY_TO_NAMESPACE",
                                                                     "value": "true"}]}, None),
])
def test_istiod_scopes_gateways_to_their_namespace_only_when_its_env_says_so(container, scoped) -> None:
    assert G.scopes_to_namespace(pod(container)) is scoped


def test_a_gateway_selector_picks_pods_with_all_its_labels_and_none_picks_every_gateway() -> None:
    labels = {"app": "public", "istio": "public"}
    assert G.selects({"istio": "public"}, labels) is True
    assert G.selects({"istio": "public", "app": "edge"}, labels) is False
    assert G.selects({"istio": "ingressgateway"}, labels) is False
    assert G.selects(None, labels) is True
    assert G.selects({}, {}) is True


@pytest.mark.parametrize("selector", [["istio"], "istio=public"])
def test_a_gateway_selector_that_is_no_label_map_is_an_error_naming_it(selector) -> None:
    with pytest.raises(FieldError) as err:
        G.selects(selector, {"istio": "public"})
    assert str(err.value) == f"spec.selector: expected a map of labels, got {selector!r}"
