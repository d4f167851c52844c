"""ingress-nginx read from its resources (`timing.extract.ingress_nginx`, issue 12): the
controller by its image, its flags with the controller's own defaults, its ConfigMap keys and
units, and the per-Ingress read timeout the controller takes only as whole seconds."""

from __future__ import annotations

import pytest

from lockstep.timing.extract import ingress_nginx as N
from lockstep.timing.extract.nodes import FieldError
from lockstep.timing.extract.values import ExtractError
from lockstep.timing.hopkinds import INGRESS_NGINX


def workload(*containers: dict, grace: object = None) -> dict:
    spec: dict = {"containers": list(containers)}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"spec": {"template": {"spec": spec}}}


CONTROLLER = {"name": "controller", "image": "registry.k8s.io/ingress-nginx/controller:v1.11.2@sha256:abc",
              "args": ["/nginx-ingress-controller", "--configmap=$(POD_NAMESPACE)/ingress-nginx-controller",
                       "--shutdown-grace-period=15", "--enable-metrics", "--ingress-class=edge", "not-a-flag"]}


def test_the_controller_is_found_by_its_image_among_the_pods_containers() -> None:
    assert N.controller_container(workload({"name": "proxy", "image": "envoy"}, CONTROLLER)) is CONTROLLER
    assert N.controller_container(workload({"name": "web", "image": "nginx:1.27"})) is None  # plain nginx is not it
    assert N.controller_container({"spec": {}}) is None
    puller = {"name": "warm", "image": "busybox", "command": ["crane", "pull", CONTROLLER["image"]]}
    assert N.controller_container(workload(puller)) is None  # the image, not any mention of it
    assert N.controller_container(workload({"name": "unnamed"})) is None


def test_flags_are_name_value_pairs_the_last_one_winning() -> None:
    given = N.flags({"args": [*CONTROLLER["args"], "--ingress-class=public"]})
    assert given == {"--configmap": "$(POD_NAMESPACE)/ingress-nginx-controller", "--shutdown-grace-period": "15",
                     "--enable-metrics": "true", "--ingress-class": "public"}
    assert N.flags({}) == {}


@pytest.mark.parametrize(("given", "expected"), [
    ({"--configmap": "$(POD_NAMESPACE)/ingress-nginx-controller"}, ("ingress-nginx", "ingress-nginx-controller")),
    ({"--configmap": "edge/nginx-config"}, ("edge", "nginx-config")),
    ({"--configmap": "nginx-config"}, ("ingress-nginx", "nginx-config")),
    ({"--configmap": ""}, None), ({}, None),
])
def test_the_configmap_flag_names_namespace_and_name(given, expected) -> None:
    assert N.configmap_ref(given, "ingress-nginx") == expected


def test_the_classes_default_to_the_controllers_own() -> None:
    assert N.classes({}) == ("k8s.io/ingress-nginx", "nginx")
    assert N.classes({"--controller-class": "example.com/edge", "--ingress-class": "edge"}) == ("example.com/edge", "edge")


@pytest.mark.parametrize(("args", "watches"), [
    ([], False),  # the flag's default
    (["--watch-ingress-without-class"], True),  # a bare Go bool flag
    *[([f"--watch-ingress-without-class={v}"], True) for v in ("1", "t", "T", "true", "TRUE", "True")],
    *[([f"--watch-ingress-without-class={v}"], False) for v in ("0", "f", "false", "FALSE", "yes", "")],
    (["--watch-ingress-without-class=true", "--watch-ingress-without-class=false"], False),  # the last wins
])
def test_the_controller_serves_ingresses_without_a_class_only_when_its_go_bool_flag_says_so(args, watches) -> None:
    assert N.watches_classless(N.flags({"args": args})) is watches
    assert (N.WATCH_CLASSLESS_FLAG, N.DEFAULT_CLASS_ANNOTATION) == (
        "--watch-ingress-without-class", "ingressclass.kubernetes.io/is-default-class")


def test_the_configmap_keys_are_the_hop_tables_upstream_names() -> None:
    data = {INGRESS_NGINX.upstream[f]: v for f, v in (("client_idle_s", "75"), ("upstream_idle_s", " 60 "),
                                                      ("request_timeout_s", "30"), ("worker_shutdown_s", "4m"))}
    assert N.configmap_values({"data": {**data, "proxy-send-timeout": "9"}}) == {
        "client_idle_s": 75, "upstream_idle_s": 60, "request_timeout_s": 30, "worker_shutdown_s": 240}
    assert N.configmap_values({"data": {"worker-shutdown-timeout": "240"}}) == {"worker_shutdown_s": 240}
    assert N.configmap_values({}) == {}


@pytest.mark.parametrize(("key", "value", "message"), [
    ("keep-alive", "75s", "data.keep-alive: expected whole seconds, got '75s'"),
    ("upstream-keepalive-timeout", "-1", "data.upstream-keepalive-timeout: expected whole seconds, got '-1'"),
    ("worker-shutdown-timeout", "soon", "data.worker-shutdown-timeout: 'soon' is not a duration"),
])
def test_a_bad_configmap_value_is_one_line_naming_its_key(key, value, message) -> None:
    with pytest.raises(FieldError) as err:
        N.configmap_values({"data": {key: value}})
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("data", [-1, ["keep-alive"], "keep-alive: 75"])
def test_a_configmap_whose_data_is_not_a_mapping_is_one_line_naming_it(data) -> None:
    with pytest.raises(ExtractError) as err:
        N.configmap_values({"data": data})
    assert str(err.value) == f"data: expected a mapping of strings to strings, got {data!r}"


def test_the_controllers_pod_states_its_shutdown_delay_and_grace() -> None:
    assert N.controller_values(workload(CONTROLLER, grace=300), N.flags(CONTROLLER)) == {
        "shutdown_delay_s": 15, "grace_s": 300}
    assert N.controller_values(workload(CONTROLLER), {}) == {}
    with pytest.raises(FieldError, match=r"^args --shutdown-grace-period: expected whole seconds, got '15s'$"):
        N.controller_values(workload(CONTROLLER), {"--shutdown-grace-period": "15s"})
    with pytest.raises(FieldError, match=r"^spec\.template\.spec\.terminationGracePeriodSeconds: expected whole"):
        N.controller_values(workload(CONTROLLER, grace="x"), {})


@pytest.mark.parametrize(("raw", "expected"), [
    (None, (None, "")), ("20", (20, "")), (" 20 ", (20, "")),
    ("60s", (None, f"{N.READ_TIMEOUT_ANNOTATION}: '60s' is not whole seconds: the controller ignores it "
                   "and uses its ConfigMap's value")),
])
def test_an_ingress_read_timeout_is_whole_seconds_else_ignored_as_the_controller_does(raw, expected) -> None:
    annotations = {} if raw is None else {N.READ_TIMEOUT_ANNOTATION: raw}
    assert N.read_timeout(annotations) == expected


def test_the_names_read_are_the_controllers() -> None:
    assert N.READ_TIMEOUT_ANNOTATION == "nginx.ingress.kubernetes.io/proxy-read-timeout"
    assert N.SHUTDOWN_FLAG == "--shutdown-grace-period"
    assert [INGRESS_NGINX.upstream[f] for f in N.CONFIGMAP_FIELDS] == [
        "keep-alive", "upstream-keepalive-timeout", "proxy-read-timeout", "worker-shutdown-timeout"]


@pytest.mark.parametrize(("hook", "stated", "wait"), [
    (None, None, 0),  # no hook: SIGTERM reaches the controller at once
    ({"exec": {"command": ["/wait-shutdown"]}}, None, 0),  # the chart's: SIGTERM and wait, nothing added
    ({"exec": {"command": ["/usr/bin/wait-shutdown"]}}, None, 0),
    ({"exec": {"command": ["wait-shutdown"]}}, None, 0),  # on the PATH
    ({"exec": {"command": ["sh", "-c", "/wait-shutdown"]}}, None, 0),
    ({"exec": {"command": ["/bin/sh", "-c", "/wait-shutdown"]}}, None, 0),
    ({"exec": {"command": ["sh", "-c", "sleep 120 && /wait-shutdown"]}}, None, 120),
    ({"sleep": {"seconds": 20}}, None, 20),
    ({"exec": {"command": ["sh", "-c", "/drain.sh && /wait-shutdown"]}}, None, None),  # its length: unknown
    ({"exec": {"command": ["/drain.sh"]}}, None, None),
    ({"exec": {"command": ["/drain.sh"]}}, 40, 40),  # lockstep.dev/drain-seconds states it
    ({"exec": {"command": ["sh", "-x", "/wait-shutdown"]}}, None, None),
    ({"exec": {"command": ["/wait-shutdown", "--now"]}}, None, None),
    ({"exec": {"command": ["/wait-shutdowns"]}}, None, None),
])
def test_the_controllers_prestop_wait_counts_a_sleep_and_nothing_for_wait_shutdown(hook, stated, wait) -> None:
    container = {"image": "registry.k8s.io/ingress-nginx/controller:v1.11.2"}
    if hook is not None:
        container["lifecycle"] = {"preStop": hook}
    assert N.prestop_wait(container, stated) == wait
