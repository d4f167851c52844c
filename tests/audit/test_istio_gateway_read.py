"""The Istio ingress gateway read from resources (issue 12, `timing.bind.istio_gateway`): which
VirtualService routes reach the pods, which Gateway and gateway workload serve them, which
route timeout is judged, how long the gateway's own pods keep serving, and what is a note."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
import yaml

from lockstep.timing.bind.link import Subject, link
from lockstep.timing.bind.resource import Origin, Resource

APP = """
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{port: 80, targetPort: 3000}]}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations: {lockstep.dev/keepalive-seconds: "75", lockstep.dev/max-request-seconds: "30"}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: ghcr.io/example/web:1, ports: [{containerPort: 3000}]}]
"""


def gateway_workload(name: str = "public", namespace: str = "istio-ingress", annotations: str = "",
                     prestop: str = "", env: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  selector: {{matchLabels: {{istio: {name}}}}}
  template:
    metadata:
      annotations: {{inject.istio.io/templates: gateway{annotations}}}
      labels: {{istio: {name}, sidecar.istio.io/inject: "true"}}
    spec:
      containers:
      - name: istio-proxy
        image: auto
        ports: [{{containerPort: 8080}}]{prestop}{env}
"""


def gateway(name: str = "public", namespace: str = "istio-ingress", group: str = "networking.istio.io/v1",
            selector: str = "{istio: public}") -> str:
    return f"""
apiVersion: {group}
kind: Gateway
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  selector: {selector}
  servers: [{{port: {{number: 8080, name: http, protocol: HTTP}}, hosts: ["*"]}}]
"""


def virtual_service(name: str = "web", gateways: str = "[istio-ingress/public]", http: str = "[{route: [{destination: {host: web}}]}]",
                    namespace: str = "shop") -> str:
    return f"""
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{hosts: [shop.example.com], gateways: {gateways}, http: {http}}}
"""


def linked(*texts: str) -> Any:
    docs = [d for t in texts for d in yaml.safe_load_all(textwrap.dedent(t)) if d]
    resources = [Resource(d["kind"], d, Origin(f"in#{i}")) for i, d in enumerate(docs)]
    return link(resources)


def subject(result: Any, key: str) -> Subject:
    return next(s for s in result.subjects if s.key == key)


def hop_of(result: Any) -> dict[str, Any]:
    path = subject(result, "shop/Deployment/web").service.path
    assert [h.kind for h in path] == ["istio-gateway"]
    return path[0].model_dump(include={"client_idle_s", "upstream_idle_s", "request_timeout_s", "drain_s"})


def test_a_route_through_a_gateway_gives_the_workload_an_istio_gateway_hop_with_its_kinds_defaults() -> None:
    result = linked(APP, gateway(), gateway_workload(), virtual_service())
    assert hop_of(result) == {"client_idle_s": 3600, "upstream_idle_s": 3600, "request_timeout_s": None, "drain_s": 5}
    assert subject(result, "shop/Deployment/web").service.path[0].defaulted == {"client_idle_s", "upstream_idle_s",
                                                                                "drain_s"}


@pytest.mark.parametrize("gateways", ["[mesh]", "[]"])
def test_a_virtual_service_for_the_sidecars_only_is_no_gateway_hop(gateways) -> None:
    result = linked(APP, gateway(), gateway_workload(), virtual_service(gateways=gateways))
    assert subject(result, "shop/Deployment/web").service.path == ()


def test_the_route_timeout_the_destination_rule_and_the_gateways_drain_set_the_hop() -> None:
    rule = """
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: web, namespace: shop}
spec: {host: web.shop.svc.cluster.local, trafficPolicy: {connectionPool: {http: {idleTimeout: 60s}}}}
"""
    drain = ", proxy.istio.io/config: 'terminationDrainDuration: 40s'"
    result = linked(APP, rule, gateway(), gateway_workload(annotations=drain),
                    virtual_service(http="[{timeout: 45s, route: [{destination: {host: web}}]}]"))
    assert hop_of(result) == {"client_idle_s": 3600, "upstream_idle_s": 60, "request_timeout_s": 45, "drain_s": 40}
    origins = subject(result, "shop/Deployment/web").path_origins
    assert origins["path[0].request_timeout_s"][0].ref == "VirtualService shop/web"
    assert origins["path[0].request_timeout_s"][1] == ("spec", "http", 0, "timeout")
    assert origins["path[0].upstream_idle_s"][0].ref == "DestinationRule shop/web"
    assert origins["path[0].drain_s"][0].ref == "Deployment istio-ingress/public"


def test_a_meshed_app_behind_a_gateway_notes_its_destination_rules_once() -> None:
    """The gateway hop and the pod's sidecar hop both read the Service's DestinationRule; with two
    rules naming the Service, the subject says which one is judged once, not once per hop."""
    rules = "".join(f"""
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {{name: web, namespace: {ns}}}
spec: {{host: web.shop.svc.cluster.local, trafficPolicy: {{connectionPool: {{http: {{idleTimeout: 60s}}}}}}}}
""" for ns in ("shop", "istio-system"))
    meshed = "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop, labels: {istio-injection: enabled}}\n"
    result = linked(APP, meshed, rules, gateway(), gateway_workload(), virtual_service())
    web = subject(result, "shop/Deployment/web")
    assert [h.kind for h in web.service.path] == ["istio-gateway", "istio-sidecar"]
    judged = [n for n in web.notes if n.startswith("2 DestinationRules name these pods' Service")]
    assert judged == ["2 DestinationRules name these pods' Service; judged: DestinationRule shop/web"]


def test_of_several_route_timeouts_the_shortest_is_judged_and_a_note_says_so() -> None:
    http = "[{timeout: 90s, route: [{destination: {host: web}}]}, {timeout: 1m, route: [{destination: {host: web}}]}]"
    result = linked(APP, gateway(), gateway_workload(), virtual_service(http=http),
                    virtual_service(name="other", http="[{route: [{destination: {host: web}}]}]"))
    assert hop_of(result)["request_timeout_s"] == 60
    assert ("3 Istio gateway routes send to these pods with different timeouts: the shortest, 60s (VirtualService "
            "shop/web spec.http[1]), is judged") in subject(result, "shop/Deployment/web").notes


def test_a_timeout_that_is_not_whole_seconds_is_a_note_and_bounds_nothing() -> None:
    result = linked(APP, gateway(), gateway_workload(),
                    virtual_service(http="[{timeout: 1.5s, route: [{destination: {host: web}}]}]"))
    assert hop_of(result)["request_timeout_s"] is None
    assert ("VirtualService shop/web: spec.http[0].timeout: '1.5s' is not whole seconds: this route's timeout is not "
            "judged") in subject(result, "shop/Deployment/web").notes


def test_a_timeout_that_is_no_duration_makes_the_workload_unreadable_naming_the_virtual_service() -> None:
    result = linked(APP, gateway(), gateway_workload(),
                    virtual_service(http="[{timeout: soon, route: [{destination: {host: web}}]}]"))
    assert [(r.ref, why) for r, why in result.unreadable] == [
        ("Deployment shop/web", "VirtualService shop/web (in#4): spec.http[0].timeout: 'soon' is not a duration "
                                "(such as 30s, 1m or 1m30s)")]


def test_a_gateway_missing_from_the_input_is_a_note_and_the_hop_keeps_istios_defaults() -> None:
    result = linked(APP, virtual_service(gateways="[edge]"))
    assert hop_of(result)["drain_s"] == 5
    assert ("Gateway shop/edge (named by VirtualService shop/web) not in the input: its gateway workload is unknown"
            in subject(result, "shop/Deployment/web").notes)


def test_a_gateway_selects_gateway_pods_in_any_namespace_unless_istiod_scopes_it() -> None:
    drain = ", proxy.istio.io/config: 'terminationDrainDuration: 40s'"
    texts = [APP, gateway(namespace="shop"), gateway_workload(annotations=drain),
             virtual_service(gateways="[public]")]
    assert hop_of(linked(*texts))["drain_s"] == 40
    istiod = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: istiod, namespace: istio-system}
spec:
  selector: {matchLabels: {app: istiod}}
  template:
    metadata: {labels: {app: istiod}}
    spec:
      containers:
      - {name: discovery, image: docker.io/istio/pilot:1.24.2, ports: [{containerPort: 15010}],
         env: [{name: PILOT_SCOPE_GATEWAY_TO_NAMESPACE, value: "true"}]}
"""
    scoped = linked(*texts, istiod)
    assert hop_of(scoped)["drain_s"] == 5
    assert ("Gateway shop/public: selects no gateway workload in the input (spec.selector): the gateway's drain is "
            "Istio's default") in subject(scoped, "shop/Deployment/web").notes


def test_a_gateway_api_gateway_of_the_same_name_is_not_istios() -> None:
    result = linked(APP, gateway(group="gateway.networking.k8s.io/v1"), gateway_workload(), virtual_service())
    assert any("Gateway istio-ingress/public (named by VirtualService shop/web) not in the input" in n
               for n in subject(result, "shop/Deployment/web").notes)


def test_the_gateways_own_pods_serve_their_prestop_wait_plus_the_drain_and_finish_nothing_after() -> None:
    prestop = "\n        lifecycle: {preStop: {sleep: {seconds: 5}}}"
    drain = ", proxy.istio.io/config: 'terminationDrainDuration: 40s'"
    own = subject(linked(gateway_workload(annotations=drain, prestop=prestop)), "istio-ingress/Deployment/public")
    assert (own.service.shutdown.drain_s, own.service.shutdown.finish_s) == (45, 0)
    assert own.service.path == ()  # its injected proxy is the gateway, not a sidecar
    assert own.field_origins["shutdown.drain_s"][1] == ("spec", "template", "metadata", "annotations",
                                                        "proxy.istio.io/config")


def test_the_gateways_drain_falls_back_to_the_mesh_wide_default_then_istios() -> None:
    mesh = """
apiVersion: v1
kind: ConfigMap
metadata: {name: istio, namespace: istio-system}
data: {mesh: "defaultConfig:\\n  terminationDrainDuration: 20s\\n"}
"""
    own = subject(linked(gateway_workload(), mesh), "istio-ingress/Deployment/public")
    assert own.service.shutdown.drain_s == 20
    assert own.field_origins["shutdown.drain_s"][0].ref == "ConfigMap istio-system/istio"
    bare = subject(linked(gateway_workload()), "istio-ingress/Deployment/public")
    assert bare.service.shutdown.drain_s == 5
    assert ("Deployment istio-ingress/public: no ProxyConfig terminationDrainDuration in its proxy.istio.io/config "
            "annotation or the mesh-wide defaultConfig: Istio's default, 5s, applies") in bare.notes


def test_a_gateway_that_exits_when_its_connections_end_has_an_unknown_drain_and_a_note() -> None:
    env = "\n        env: [{name: EXIT_ON_ZERO_ACTIVE_CONNECTIONS, value: 'true'}]"
    own = subject(linked(gateway_workload(env=env)), "istio-ingress/Deployment/public")
    assert own.service.shutdown.drain_s is None
    assert ("Deployment istio-ingress/public: EXIT_ON_ZERO_ACTIVE_CONNECTIONS is on: the gateway stops when its "
            "connections end, not after terminationDrainDuration: its drain is not judged") in own.notes
