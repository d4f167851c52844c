"""timing.extract: each translation from a manifest or Pulumi input field to the model.

One claim per test; inputs are spelled as Kubernetes documents and pulumi-aws inputs spell
them, numbers sometimes as floats (protobuf).
"""

from __future__ import annotations

import json
from types import MappingProxyType

import pytest

from lockstep.timing import extract as x
from lockstep.timing import limits as L
from lockstep.timing.heartbeat_config import CONFIGMAP_KEY
from lockstep.timing.model import (
    FailoverTiming,
    Accept, AppFacts, Exec, Grpc, HealthCheck, Hpa, HttpGet, Pdb, Probe, Probes, ReadinessGate, Rollout,
    Shutdown, TcpSocket,
)


def deployment(**spec: object) -> dict:
    pod = {"terminationGracePeriodSeconds": 60,
           "containers": [{"name": "api", "image": "img:1", "ports": [{"name": "http", "containerPort": 8080}],
                           "readinessProbe": {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 5},
                           "lifecycle": {"preStop": {"sleep": {"seconds": 20}}}}]}
    base = {"replicas": 3, "template": {"metadata": {"labels": {"app": "api"}}, "spec": pod}}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "namespace": "web"}, "spec": {**base, **spec}}


# ---- plumbing ------------------------------------------------------------------------------
def test_get_follows_a_path_and_stops_at_missing_or_non_mapping_steps():
    assert x.get({"a": {"b": 1}}, "a", "b") == 1
    assert x.get({"a": {"b": 1}}, "a", "c") is None
    assert x.get({"a": 3}, "a", "b") is None
    assert x.get(None, "a") is None


def test_items_reads_sequences_but_not_strings_or_missing_values():
    assert x.items((1, 2)) == [1, 2]
    assert x.items("ab") == []
    assert x.items(None) == []


def test_number_turns_whole_floats_into_ints_and_keeps_ints_and_none():
    assert x.number(5.0, "f") == 5 and type(x.number(5.0, "f")) is int
    assert x.number(7, "f") == 7
    assert x.number(None, "f") is None


@pytest.mark.parametrize("bad", [5.5, "5", True])
def test_number_rejects_fractions_strings_and_booleans(bad):
    with pytest.raises(x.ExtractError) as err:
        x.number(bad, "spec.f")
    assert str(err.value) == f"spec.f: expected whole seconds/count, got {bad!r}"


def test_digit_strings_are_read_as_numbers_and_names_are_kept():
    assert x.digits("60") == 60
    assert x.digits("http") == "http"
    assert x.digits(60.0) == 60.0


def test_a_number_read_at_a_path_names_the_path_when_it_is_not_whole():
    with pytest.raises(x.ExtractError) as err:
        x.rollout({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1.5}}}})
    assert str(err.value) == "strategy.rollingUpdate.maxSurge: expected whole seconds/count, got 1.5"
    with pytest.raises(x.ExtractError) as err:
        x.target_group({"protocol": "HTTP", "deregistrationDelay": "x"})
    assert str(err.value) == "deregistrationDelay: expected whole seconds/count, got 'x'"
    with pytest.raises(x.ExtractError) as err:
        x.probe({"httpGet": {"port": 1.5}})
    assert str(err.value) == "httpGet.port: expected whole seconds/count, got 1.5"
    with pytest.raises(x.ExtractError) as err:
        x.probe({"grpc": {"port": 1.5}})
    assert str(err.value) == "grpc.port: expected whole seconds/count, got 1.5"


def test_int_or_percent_keeps_percent_strings_and_reads_numbers():
    assert x.int_or_percent("25%", "f") == "25%"
    assert x.int_or_percent(1.0, "f") == 1


def test_bound_is_the_limit_an_out_of_range_number_broke():
    assert x.bound({"ctx": {"ge": 5}}) == 5
    assert x.bound({"ctx": {"le": 300}}) == 300
    assert x.bound({"ctx": {"gt": 0}}) == 1
    assert x.bound({"ctx": {"lt": 10}}) == 9
    assert x.bound({}) is None


def test_build_keeps_an_out_of_range_number_and_validates_the_rest():
    hc = x.build(HealthCheck, {"protocol": "HTTP", "interval_s": 500, "timeout_s": 1,
                               "healthy_threshold": 2, "unhealthy_threshold": 11})
    assert (hc.interval_s, hc.timeout_s, hc.unhealthy_threshold) == (500, 1, 11)


def test_build_rejects_what_is_not_a_range_error_with_the_field_path():
    with pytest.raises(x.ExtractError) as err:
        x.build(HealthCheck, {"protocol": "UDP", "interval_s": 5, "timeout_s": 2,
                              "healthy_threshold": 2, "unhealthy_threshold": 2})
    assert str(err.value) == "HealthCheck: protocol: Input should be 'HTTP', 'HTTPS' or 'TCP'"


def test_build_reports_a_second_problem_left_after_clamping():
    with pytest.raises(x.ExtractError) as err:
        x.build(HealthCheck, {"protocol": "UDP", "interval_s": 500, "timeout_s": 2,
                              "healthy_threshold": 2, "unhealthy_threshold": 2})
    assert str(err.value) == "HealthCheck: protocol: Input should be 'HTTP', 'HTTPS' or 'TCP'"


def test_build_runs_model_validators_even_with_a_number_out_of_range():
    with pytest.raises(x.ExtractError) as err:
        x.build(Hpa, {"min_replicas": 20000, "max_replicas": 5})
    assert str(err.value) == "Hpa: (object): Value error, max_replicas must be >= min_replicas"


def test_every_problem_is_described_with_its_field_path():
    with pytest.raises(x.ExtractError) as err:
        x.build(Probes, {"readiness": {"tcp_socket": {"port": "a"}}, "liveness": 5})
    assert str(err.value) == (
        "Probes: readiness.tcp_socket.port: Input should be a valid integer; "
        "liveness: Input should be a valid dictionary or instance of Probe")


def test_clamped_ignores_errors_nested_below_the_top_level():
    from pydantic import ValidationError
    with pytest.raises(ValidationError) as err:
        Probes.model_validate({"readiness": {"tcp_socket": {"port": 0}}})
    assert x.clamped(err.value) == {}


# ---- annotations ----------------------------------------------------------------------------
def test_app_facts_read_every_annotation_and_leave_the_rest_unknown():
    notes = {"lockstep.dev/warmup-seconds": "10", "lockstep.dev/max-request-seconds": "30",
             "lockstep.dev/max-recovery-seconds": "40", "lockstep.dev/keepalive-seconds": " 75 ",
             "lockstep.dev/catch-up-seconds": "0"}
    assert x.app_facts(notes) == AppFacts(warmup_s=10, max_request_s=30, max_recovery_s=40,
                                          keepalive_s=75, catch_up_s=0)
    assert x.app_facts(None) == AppFacts(warmup_s=None, max_request_s=None, max_recovery_s=None,
                                         keepalive_s=None, catch_up_s=None)


def test_a_seconds_annotation_that_is_not_whole_seconds_is_rejected():
    with pytest.raises(x.ExtractError) as err:
        x.seconds_annotation({"lockstep.dev/warmup-seconds": "10s"}, "warmup-seconds")
    assert str(err.value) == "lockstep.dev/warmup-seconds: expected whole seconds, got '10s'"


def test_accepts_reads_a_comma_separated_id_list():
    assert x.accepts({"lockstep.dev/accept": " pdb-allows-eviction, ,drain-fits-grace"}) == (
        Accept(id="pdb-allows-eviction", reason="lockstep.dev/accept annotation"),
        Accept(id="drain-fits-grace", reason="lockstep.dev/accept annotation"))
    assert x.accepts({}) == ()


# ---- probes ----------------------------------------------------------------------------------
def test_a_probe_without_numbers_takes_kubernetes_defaults():
    assert x.probe({"tcpSocket": {"port": 7000}}) == Probe(
        tcp_socket=TcpSocket(port=7000), initial_delay_s=0, period_s=10, timeout_s=1,
        success_threshold=1, failure_threshold=3)


def test_a_probe_reads_every_number():
    spec = {"exec": {"command": ["check"]}, "initialDelaySeconds": 4, "periodSeconds": 6.0,
            "timeoutSeconds": 2, "successThreshold": 2, "failureThreshold": 5}
    assert x.probe(spec) == Probe(exec=Exec(command=("check",)), initial_delay_s=4, period_s=6,
                                  timeout_s=2, success_threshold=2, failure_threshold=5)


def test_an_http_probe_resolves_a_named_port_and_keeps_path_and_scheme():
    spec = {"httpGet": {"path": "/hc", "port": "http", "scheme": "HTTPS"}}
    assert x.probe(spec, {"http": 8443}).http_get == HttpGet(path="/hc", port=8443, scheme="HTTPS")


def test_an_http_probe_without_path_asks_for_the_root():
    assert x.probe({"httpGet": {"port": "8080"}}).http_get == HttpGet(path="/", port=8080)


def test_a_grpc_probe_keeps_its_port():
    assert x.probe({"grpc": {"port": 9090}}).grpc == Grpc(port=9090)


def test_an_undeclared_named_port_is_an_error():
    with pytest.raises(x.ExtractError) as err:
        x.probe({"tcpSocket": {"port": "metrics"}}, {"http": 80})
    assert str(err.value) == "tcpSocket.port: named port 'metrics' not declared by the container"


def test_a_probe_without_a_handler_is_an_error_and_no_probe_is_none():
    with pytest.raises(x.ExtractError, match="exactly one handler"):
        x.probe({"periodSeconds": 5})
    assert x.probe(None) is None


def test_an_out_of_range_probe_period_reaches_the_model():
    assert x.probe({"tcpSocket": {"port": 1}, "periodSeconds": 0}).period_s == 0


def test_probes_read_the_three_kinds_with_the_containers_named_ports():
    container = {"ports": [{"name": "http", "containerPort": 8080}, {"containerPort": 9000}],
                 "startupProbe": {"httpGet": {"path": "/s", "port": "http"}},
                 "readinessProbe": {"httpGet": {"path": "/r", "port": "http"}},
                 "livenessProbe": {"httpGet": {"path": "/l", "port": "http"}}}
    got = x.probes(container)
    assert (got.startup.http_get.path, got.readiness.http_get.path, got.liveness.http_get.path) == ("/s", "/r", "/l")
    assert got.readiness.http_get.port == 8080
    assert x.container_ports(container) == {"http": 8080}
    assert x.probes({"ports": [{"name": "tcp", "containerPort": 7000}],
                     "livenessProbe": {"tcpSocket": {"port": "tcp"}}}).liveness.tcp_socket.port == 7000
    assert x.probes({}) == Probes()


# ---- preStop and shutdown --------------------------------------------------------------------
@pytest.mark.parametrize("command, seconds", [
    (["sleep", "20"], 20), (["/bin/sleep", "15"], 15), (["sh", "-c", "sleep 20 && nginx -s quit"], 20),
    (["sh", "-c", "echo; sleep 2m"], 120), (["sleep", "1h"], 3600), (["sleep", "5s"], 5),
    (["sh", "-c", "(sleep 7)"], 7), (["sh", "-c", "a|sleep 3"], 3), (["sh", "-c", "a&sleep 4"], 4),
    (["nosleep", "5"], None), (["sleep", "1.5"], None), (["sleep", "5x"], None), (["sleepy", "5"], None),
    (["drain"], None),
])
def test_sleep_seconds_reads_the_sleep_a_command_runs(command, seconds):
    assert x.sleep_seconds(command) == seconds


def test_prestop_reads_the_native_sleep_action():
    assert x.prestop({"lifecycle": {"preStop": {"sleep": {"seconds": 20.0}}}}) == ("sleep", 20)


def test_prestop_reads_an_exec_sleep():
    assert x.prestop({"lifecycle": {"preStop": {"exec": {"command": ["sleep", "15"]}}}}) == ("exec", 15)


def test_a_prestop_command_that_is_not_a_sleep_drains_for_an_unknown_time_unless_stated():
    hook = {"lifecycle": {"preStop": {"exec": {"command": ["/wait-shutdown"]}}}}
    assert x.prestop(hook) == ("command", None)
    assert x.prestop(hook, 25) == ("command", 25)


def test_a_workload_states_its_prestop_commands_drain_by_annotation():
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["lifecycle"] = {"preStop": {"exec": {"command": ["nodetool", "drain"]}}}
    assert x.workload(obj).shutdown.drain_s is None
    obj["metadata"]["annotations"] = {"lockstep.dev/drain-seconds": "40"}
    assert (x.workload(obj).shutdown.drain_s, x.workload(obj).shutdown.prestop) == (40, "command")


def test_no_prestop_or_an_http_hook_drains_zero():
    assert x.prestop({}) == ("none", 0)
    assert x.prestop({"lifecycle": {"preStop": {"httpGet": {"port": 80}}}}) == ("none", 0)


def test_the_serving_container_is_the_one_declaring_the_target_port():
    pod = {"containers": [{"name": "sidecar"}, {"name": "a", "ports": [{"containerPort": 9000}]},
                          {"name": "b", "ports": [{"containerPort": 8080}]}]}
    assert x.serving_container(pod, 8080)["name"] == "b"
    assert x.serving_container(pod, None)["name"] == "a"
    assert x.serving_container({"containers": [{"name": "only"}]}, 80)["name"] == "only"


def test_a_pod_without_containers_is_an_error():
    with pytest.raises(x.ExtractError) as err:
        x.serving_container({"containers": []})
    assert str(err.value) == "pod spec has no containers"


def test_pod_shutdown_reads_drain_and_grace_and_takes_finish_from_the_caller():
    pod = deployment()["spec"]["template"]["spec"]
    assert x.pod_shutdown(pod, 30) == Shutdown(drain_s=20, finish_s=30, grace_s=60, prestop="sleep")


def test_pod_shutdown_defaults_grace_to_30_and_keeps_finish_unknown():
    pod = {"containers": [{"name": "a"}]}
    assert x.pod_shutdown(pod, None) == Shutdown(drain_s=0, finish_s=None, grace_s=30, prestop="none")


def test_pod_shutdown_takes_the_drain_of_the_container_serving_the_port():
    pod = {"containers": [{"name": "a", "ports": [{"containerPort": 1}]},
                          {"name": "b", "ports": [{"containerPort": 2}],
                           "lifecycle": {"preStop": {"sleep": {"seconds": 9}}}}]}
    assert x.pod_shutdown(pod, 0, port=2).drain_s == 9


# ---- rollout, PDB, HPA -----------------------------------------------------------------------
def test_rollout_defaults_are_kubernetes_defaults():
    assert x.rollout({"spec": {}}) == Rollout(max_surge="25%", max_unavailable="25%", min_ready_s=0,
                                             progress_deadline_s=600)


def test_rollout_reads_strategy_and_deadlines():
    obj = {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1.0, "maxUnavailable": "10%"}},
                    "minReadySeconds": 25, "progressDeadlineSeconds": 300}}
    assert x.rollout(obj) == Rollout(max_surge=1, max_unavailable="10%", min_ready_s=25,
                                     progress_deadline_s=300)


def test_a_recreate_strategy_takes_every_pod_down_at_once():
    obj = {"spec": {"strategy": {"type": "Recreate"}}}
    assert x.rollout(obj) == Rollout(max_surge=0, max_unavailable="100%")


def test_pdb_reads_min_available_and_match_labels():
    obj = {"spec": {"minAvailable": 2.0, "selector": {"matchLabels": {"app": "api"}}}}
    assert x.pdb(obj) == Pdb(min_available=2, selector={"app": "api"})


def test_pdb_reads_a_max_unavailable_percentage_without_selector():
    assert x.pdb({"spec": {"maxUnavailable": "50%"}}) == Pdb(max_unavailable="50%")


def test_pdb_with_neither_bound_is_an_error():
    with pytest.raises(x.ExtractError, match="exactly one of min_available or max_unavailable"):
        x.pdb({"spec": {}})


def test_hpa_reads_replica_bounds_and_cpu_target():
    obj = {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "api"}, "minReplicas": 3,
                    "maxReplicas": 12.0, "metrics": [
                        {"type": "Resource", "resource": {"name": "memory", "target": {"averageUtilization": 90}}},
                        {"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 60}}}]}}
    assert x.hpa(obj) == Hpa(min_replicas=3, max_replicas=12, target_cpu_percent=60)
    assert x.hpa_target(obj) == ("Deployment", "api")


def test_hpa_min_replicas_default_to_one():
    assert x.hpa({"spec": {"maxReplicas": 4}}) == Hpa(min_replicas=1, max_replicas=4)


# ---- selectors ---------------------------------------------------------------------------------
LABELS = {"app": "api", "tier": "web"}


@pytest.mark.parametrize("selector, selected", [
    ({"matchLabels": {"app": "api"}}, True), ({"matchLabels": {"app": "db"}}, False),
    ({}, True), (None, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "x"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["web"]}]}, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False),
    ({"matchLabels": {"app": "api"}, "matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False),
])
def test_selects_follows_label_selector_semantics(selector, selected):
    assert x.selects(selector, LABELS) is selected


def test_an_unknown_selector_operator_is_an_error():
    with pytest.raises(x.ExtractError) as err:
        x.selects({"matchExpressions": [{"key": "a", "operator": "Gt"}]}, LABELS)
    assert str(err.value) == "matchExpressions: unknown operator 'Gt'"


# ---- workloads ----------------------------------------------------------------------------------
def test_workload_reads_a_deployment():
    svc = x.workload(deployment())
    assert (svc.name, svc.namespace, svc.kind, svc.image, svc.container_port, svc.replicas) == (
        "api", "web", "Deployment", "img:1", 8080, 3)
    assert svc.labels == {"app": "api"}
    assert svc.probes.readiness.http_get == HttpGet(path="/ready", port=8080)
    assert svc.shutdown == Shutdown(drain_s=20, finish_s=None, grace_s=60, prestop="sleep")


def test_workload_attaches_the_pieces_it_is_given():
    lb = x.target_group({"protocol": "HTTP", "port": 8080, "targetType": "ip"})
    pdb, hpa, gate = Pdb(min_available=1), Hpa(min_replicas=2, max_replicas=4), ReadinessGate()
    svc = x.workload(deployment(), lb=lb, pdb=pdb, hpa=hpa, readiness_gate=gate)
    assert (svc.lb, svc.pdb, svc.hpa, svc.readiness_gate) == (lb, pdb, hpa, gate)


def test_workload_replicas_default_to_one_or_to_the_hpa():
    obj = deployment()
    del obj["spec"]["replicas"]
    assert x.workload(obj).replicas == 1
    assert x.workload(obj, hpa=Hpa(min_replicas=2, max_replicas=3)).replicas is None
    assert x.workload(deployment(), hpa=Hpa(min_replicas=2, max_replicas=3)).replicas == 3


def test_workload_reads_annotations_of_the_workload_over_the_pod_template():
    obj = deployment()
    obj["metadata"]["annotations"] = {"lockstep.dev/finish-seconds": "30", "lockstep.dev/warmup-seconds": "9"}
    obj["spec"]["template"]["metadata"]["annotations"] = {"lockstep.dev/warmup-seconds": "5",
                                                          "lockstep.dev/accept": "drain-fits-grace"}
    svc = x.workload(obj)
    assert (svc.app.warmup_s, svc.shutdown.finish_s) == (9, 30)
    assert [a.id for a in svc.accept] == ["drain-fits-grace"]


def test_explicit_annotations_replace_the_manifests():
    obj = deployment()
    obj["metadata"]["annotations"] = {"lockstep.dev/warmup-seconds": "9"}
    assert x.workload(obj, annotations={"lockstep.dev/finish-seconds": "4"}).app.warmup_s is None
    assert x.workload(obj, annotations={"lockstep.dev/finish-seconds": "4"}).shutdown.finish_s == 4


def test_workload_namespace_defaults_to_default():
    obj = deployment()
    del obj["metadata"]["namespace"]
    assert x.workload(obj).namespace == "default"


def test_workload_container_port_is_the_ip_target_port():
    obj = deployment()
    obj["spec"]["template"]["spec"]["containers"][0]["ports"].insert(0, {"containerPort": 9100})
    assert x.workload(obj).container_port == 9100
    lb = x.target_group({"protocol": "HTTP", "port": 8080, "targetType": "ip"})
    assert x.workload(obj, lb=lb).container_port == 8080
    nlb = x.target_group({"protocol": "TCP", "port": 30700})
    assert x.workload(obj, lb=nlb).container_port == 9100


def test_a_container_without_ports_serves_the_ip_target_port_then_its_probe_port_then_the_services():
    obj = deployment()
    container = obj["spec"]["template"]["spec"]["containers"][0]
    del container["ports"]
    container["readinessProbe"]["httpGet"]["port"] = 8080
    lb = x.target_group({"protocol": "HTTP", "port": 9090, "targetType": "ip"})
    assert x.workload(obj, lb=lb).container_port == 9090
    assert x.workload(obj, port_hint=7070).container_port == 8080
    for name in ("readinessProbe", "livenessProbe", "startupProbe"):
        container.pop(name, None)
    assert x.workload(obj, port_hint=7070).container_port == 7070
    with pytest.raises(x.ExtractError) as err:
        x.workload(obj)
    assert str(err.value) == "container 'api' declares no port, and no probe or Service names one"


def test_the_probe_port_is_the_readiness_probes_first_then_liveness_then_startup():
    assert x.probe_port({"livenessProbe": {"tcpSocket": {"port": 81}}, "startupProbe": {"grpc": {"port": 82}}}) == 81
    assert x.probe_port({"readinessProbe": {"httpGet": {"port": 80}}, "livenessProbe": {"tcpSocket": {"port": 81}}}) == 80
    assert x.probe_port({"startupProbe": {"grpc": {"port": 82}}}) == 82
    assert x.probe_port({"readinessProbe": {"httpGet": {"port": "http"}}}) is None
    assert x.probe_port({"readinessProbe": {"httpGet": {"port": True}}}) is None


def test_workload_reads_through_read_only_mappings():
    frozen = MappingProxyType({**deployment(), "metadata": MappingProxyType({"name": "api"})})
    assert x.workload(frozen).name == "api"


def test_annotations_of_a_resource_without_any_are_empty():
    assert x.annotations_of({}) == {}


# ---- target groups --------------------------------------------------------------------------------
def test_an_http_target_group_without_settings_takes_the_aws_api_defaults():
    lb = x.target_group({"protocol": "HTTP", "port": 80})
    assert (lb.kind, lb.target_type, lb.removal) == ("alb", "instance", ("endpoints",))
    assert lb.health_check == HealthCheck(protocol="HTTP", path="/", matcher="200", interval_s=30,
                                          timeout_s=5, healthy_threshold=5, unhealthy_threshold=2)
    assert (lb.deregistration_delay_s, lb.slow_start_s, lb.idle_timeout_s) == (300, 0, 60)
    assert (lb.deregistration_propagation_s, lb.registration_propagation_s) == (15, 15)


def test_a_tcp_target_group_is_an_nlb_with_its_defaults():
    lb = x.target_group({"protocol": "TCP", "port": 7000, "targetType": "ip"})
    assert (lb.kind, lb.removal, lb.idle_timeout_s) == ("nlb", ("deregistration",), L.NLB_IDLE_TIMEOUT_DEFAULT)
    assert lb.health_check == HealthCheck(protocol="TCP", interval_s=30, timeout_s=10,
                                          healthy_threshold=5, unhealthy_threshold=2)
    assert (lb.deregistration_propagation_s, lb.registration_propagation_s) == (120, 120)


def test_a_target_group_reads_every_setting():
    props = {"protocol": "HTTPS", "port": 8443.0, "targetType": "ip", "vpcId": "vpc-1",
             "deregistrationDelay": 60, "slowStart": 30,
             "healthCheck": {"protocol": "HTTPS", "path": "/hc", "matcher": "200-299", "port": "8081",
                             "interval": 5, "timeout": 4.0, "healthyThreshold": 3, "unhealthyThreshold": 4}}
    lb = x.target_group(props, attach_to_arn="arn:l", idle_timeout_s=120, deregistration_propagation_s=20,
                        registration_propagation_s=25)
    assert lb.health_check == HealthCheck(protocol="HTTPS", path="/hc", matcher="200-299", port=8081,
                                          interval_s=5, timeout_s=4, healthy_threshold=3, unhealthy_threshold=4)
    assert (lb.protocol, lb.port, lb.vpc_id, lb.attach_to_arn) == ("HTTPS", 8443, "vpc-1", "arn:l")
    assert (lb.deregistration_delay_s, lb.slow_start_s, lb.idle_timeout_s) == (60, 30, 120)
    assert (lb.deregistration_propagation_s, lb.registration_propagation_s) == (20, 25)


def test_a_health_check_on_the_traffic_port_keeps_it():
    lb = x.target_group({"protocol": "TLS", "port": 443, "healthCheck": {"port": "traffic-port"}})
    assert (lb.health_check.port, lb.health_check.protocol, lb.health_check.path) == ("traffic-port", "TCP", None)


def test_a_string_deregistration_delay_is_read():
    assert x.target_group({"protocol": "HTTP", "port": 80, "deregistrationDelay": "0"}).deregistration_delay_s == 0


def test_out_of_range_target_group_numbers_reach_the_model():
    lb = x.target_group({"protocol": "HTTP", "port": 80, "slowStart": 10, "deregistrationDelay": 4000,
                         "healthCheck": {"interval": 400, "timeout": 1}})
    assert (lb.health_check.interval_s, lb.health_check.timeout_s) == (400, 1)
    assert (lb.slow_start_s, lb.deregistration_delay_s) == (10, 4000)


@pytest.mark.parametrize("protocol", ["UDP", "GENEVE", None])
def test_an_unmodelled_protocol_is_an_error(protocol):
    with pytest.raises(x.ExtractError) as err:
        x.target_group({"protocol": protocol, "port": 80})
    assert str(err.value) == f"target group protocol {protocol!r} is not modelled (HTTP, HTTPS, TCP, TLS)"


def test_lb_kind_follows_the_protocol():
    assert [x.lb_kind(p) for p in ("HTTP", "HTTPS", "TCP", "TLS")] == ["alb", "alb", "nlb", "nlb"]


def test_binding_reads_a_target_group_binding():
    obj = {"metadata": {"name": "api", "namespace": "web"},
           "spec": {"targetGroupARN": "arn:tg", "targetType": "ip", "serviceRef": {"name": "api", "port": 80}}}
    assert x.binding(obj) == x.Binding("web", "arn:tg", "ip", "api", 80)
    assert x.binding({"spec": {"serviceRef": {"name": "s"}}}) == x.Binding("default", None, None, "s", None)


# ---- Route 53 ---------------------------------------------------------------------------------------
def test_route53_check_reads_interval_and_threshold_with_api_defaults():
    assert x.route53_check({"requestInterval": 10.0, "failureThreshold": 2}) == (10, 2)
    assert x.route53_check({}) == (30, 3)


def test_failover_from_a_ttl_record_keeps_unstated_facts_unknown():
    fo = x.failover({"requestInterval": 10, "failureThreshold": 3},
                    {"ttl": 60, "failoverRoutingPolicies": [{"type": "PRIMARY"}]}, "api")
    assert (fo.mode, fo.routing, fo.entry_service, fo.check_interval_s, fo.failure_threshold) == (
        "dns", "failover", "api", 10, 3)
    assert (fo.ttl_s, fo.alias, fo.client_reconnect_s, fo.rto_s, fo.failback_checks) == (60, False, None, None, None)
    # the timing a record states, as a validated model: no regions, none invented
    assert type(fo) is FailoverTiming and FailoverTiming.model_validate(fo.model_dump()) == fo


def test_failover_from_an_alias_record_has_no_ttl_and_weighted_routing_is_seen():
    fo = x.failover({}, {"ttl": 30, "aliases": [{"name": "lb"}], "weightedRoutingPolicies": [{"weight": 1}]}, "api")
    assert (fo.alias, fo.ttl_s, fo.routing) == (True, None, "weighted")


# ---- heartbeat ConfigMap ------------------------------------------------------------------------------
RUNTIME = {
    "service": "heartbeat", "replicas": 2, "observe_interval_s": 5, "publish_interval_s": 5,
    "client_timeout_s": 30, "beat_ttl_s": 30, "port": 8080, "namespaces": ["feeds"],
    "lease": {"name": "heartbeat-leader", "namespace": "hb", "duration_s": 15, "renew_deadline_s": 10,
              "retry_period_s": 2},
    "commands_exchange": "c", "beats_exchange": "b", "grace_s": 45,
    "specs": [{"name": "football-live", "workload": {"name": "football-feed", "namespace": "feeds",
                                                     "kind": "Deployment"},
               "loss_time_s": 120, "recovery_time_s": 60, "affected": {"sport_ids": [1]}}],
}


def configmap() -> dict:
    return {"kind": "ConfigMap", "data": {CONFIGMAP_KEY: json.dumps(RUNTIME)}}


def test_heartbeat_config_reads_the_configmap_json():
    assert x.heartbeat_config(configmap()).lease.namespace == "hb"


def test_a_configmap_without_the_key_or_with_bad_json_is_an_error():
    with pytest.raises(x.ExtractError) as err:
        x.heartbeat_config({"data": {}})
    assert str(err.value) == f"ConfigMap has no data key {CONFIGMAP_KEY!r}"
    with pytest.raises(x.ExtractError, match=f"^{CONFIGMAP_KEY}: "):
        x.heartbeat_config({"data": {CONFIGMAP_KEY: "{"}})


def test_heartbeat_specs_watch_their_workload_and_leave_the_outage_budget_unknown():
    (spec,) = x.heartbeat_specs(x.heartbeat_config(configmap()))
    assert (spec.name, spec.service, spec.loss_time_s, spec.recovery_time_s, spec.max_outage_s) == (
        "football-live", "football-feed", 120, 60, None)
    assert spec.affected.sport_ids == (1,)


def test_heartbeat_service_without_its_deployment_takes_the_configmap_numbers():
    hb = x.heartbeat_service(x.heartbeat_config(configmap()))
    assert (hb.name, hb.namespace, hb.replicas, hb.port, hb.image) == ("heartbeat", "hb", 2, 8080, "unknown")
    assert (hb.observe_interval_s, hb.publish_interval_s, hb.client_timeout_s, hb.beat_ttl_s) == (5, 5, 30, 30)
    assert (hb.lease_duration_s, hb.lease_renew_deadline_s, hb.lease_retry_period_s) == (15, 10, 2)
    assert hb.shutdown == Shutdown(drain_s=0, finish_s=None, grace_s=45)
    assert (hb.warmup_s, hb.min_ready_s, hb.probes) == (None, 0, Probes())


def test_heartbeat_service_reads_its_deployment():
    dep = deployment(minReadySeconds=3)
    dep["metadata"]["annotations"] = {"lockstep.dev/warmup-seconds": "5", "lockstep.dev/finish-seconds": "4"}
    hb = x.heartbeat_service(x.heartbeat_config(configmap()), dep)
    assert (hb.image, hb.warmup_s, hb.min_ready_s) == ("img:1", 5, 3)
    assert hb.shutdown == Shutdown(drain_s=20, finish_s=4, grace_s=60, prestop="sleep")
    assert hb.probes.readiness.period_s == 5


def test_workload_and_heartbeat_take_the_container_serving_their_port():
    pod = {"containers": [
        {"name": "metrics", "image": "exporter", "ports": [{"containerPort": 9100}]},
        {"name": "app", "image": "app:2", "ports": [{"containerPort": 8080}],
         "lifecycle": {"preStop": {"sleep": {"seconds": 12}}}}]}
    obj = {"kind": "Deployment", "metadata": {"name": "api"}, "spec": {"template": {"spec": pod}}}
    lb = x.target_group({"protocol": "HTTP", "port": 8080, "targetType": "ip"})
    svc = x.workload(obj, lb=lb)
    assert (svc.image, svc.container_port, svc.shutdown.drain_s) == ("app:2", 8080, 12)
    hb = x.heartbeat_service(x.heartbeat_config(configmap()), obj)
    assert (hb.image, hb.shutdown.drain_s) == ("app:2", 12)


def test_a_port_name_that_is_not_a_string_is_named_not_raised() -> None:
    # Found by the audit fuzzer: `name: [0]` made a dict key of a list (TypeError).
    with pytest.raises(x.ExtractError, match=r"^ports\.name: expected a string, got \[0\]$"):
        x.container_ports({"ports": [{"containerPort": 9090, "name": [0]}]})
    assert x.container_ports({"ports": [{"containerPort": 9090, "name": "metrics"},
                                        {"containerPort": 8080}]}) == {"metrics": 9090}


def test_a_heartbeat_configmap_error_is_one_line_naming_the_field():
    """pydantic's own text spans lines and carries a URL: the reader names each field instead."""
    with pytest.raises(x.ExtractError) as err:
        x.heartbeat_config({"data": {CONFIGMAP_KEY: json.dumps({"schema_version": 1, "specs": "none"})}})
    text = str(err.value)
    assert "\n" not in text and "errors.pydantic.dev" not in text and text.startswith(f"{CONFIGMAP_KEY}: ")
    assert "specs" in text
    with pytest.raises(x.ExtractError, match=rf"^{CONFIGMAP_KEY}: not JSON: Expecting property name enclosed in "
                                              r"double quotes: line 1 column 2 \(char 1\)$"):
        x.heartbeat_config({"data": {CONFIGMAP_KEY: "{"}})


def test_the_heartbeat_from_its_configmap_keeps_its_mode_resync_and_timeouts():
    """What the audit and the pack judge the heartbeat rules on is what the ConfigMap says."""
    from lockstep.timing.heartbeat_config import runtime_config
    from tests.timing.strategies import build

    stack = build({"heartbeat.observe_mode": "watch", "heartbeat.resync_period_s": 7,
                   "heartbeat.confirm_timeout_s": 4, "heartbeat.ack_timeout_s": 6})
    config = x.heartbeat_config({"data": {CONFIGMAP_KEY: runtime_config(stack).model_dump_json()}})
    hb = x.heartbeat_service(config)
    assert (hb.observe_mode, hb.resync_period_s, hb.confirm_timeout_s, hb.ack_timeout_s) == ("watch", 7, 4, 6)
