"""The Ingress the stack writes for a service behind ingress-nginx (`infra/nginx_ingress.py`):
under Pulumi's mocks, from the model's routes and the hop's read timeout, valid against the
Kubernetes schema, and read back by the audit as the same hop."""

from __future__ import annotations

import copy
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.infra.render_cli import manifest
from lockstep.timing.config import lockstep_values
from lockstep.timing.extract import ingress_nginx as N
from lockstep.timing.model import Stack
from tests.infra.support import SENTINEL, render

PATH = Path(__file__).resolve().parents[2] / "Pulumi.example.yaml"
WEB = 4  # the path example's service behind ingress-nginx


def path_values() -> dict:
    return copy.deepcopy(lockstep_values(yaml.safe_load(PATH.read_text())["config"]))


def web_ingress(values: dict) -> dict:
    res = render(values, {"rabbitmq_url": SENTINEL})
    return manifest(res.k8s("Ingress", "web", "web"))


def test_the_path_examples_web_gets_an_nginx_ingress_with_its_hops_read_timeout() -> None:
    ing = web_ingress(path_values())
    assert ing["metadata"]["annotations"] == {N.READ_TIMEOUT_ANNOTATION: "60"}  # the kind's default, deployed
    assert ing["spec"] == {"ingressClassName": "nginx", "rules": [{"host": "web.example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"name": "traffic"}}}}]}}]}
    kubernetes_validate.validate(ing, path_values()["kubernetes_version"], strict=True)


@settings(max_examples=8, deadline=None)
@given(st.integers(30, 3600), st.lists(st.tuples(st.sampled_from([None, "a.example.com", "b.example.com"]),
                                                st.sampled_from(["/", "/shop", "/api/v1"]),
                                                st.sampled_from(["Prefix", "Exact", "ImplementationSpecific"])),
                                      min_size=1, max_size=4), st.sampled_from([None, "edge"]))
def test_every_route_and_the_read_timeout_are_written_and_the_ingress_validates(timeout, routes, cls) -> None:
    # (a timeout under web's 30 s request breaks timeouts-shrink-inward, and render refuses it)
    values = path_values()
    hop = values["services"][WEB]["path"][0]
    hop.update(request_timeout_s=timeout, routes=[{"host": h, "path": p, "path_type": t} for h, p, t in routes])
    if cls is not None:
        hop["ingress_class"] = cls
    ing = web_ingress(values)
    assert ing["metadata"]["annotations"] == {N.READ_TIMEOUT_ANNOTATION: str(timeout)}
    assert ing["spec"]["ingressClassName"] == (cls or "nginx")
    written = [(r.get("host"), p["path"], p["pathType"]) for r in ing["spec"]["rules"] for p in r["http"]["paths"]]
    assert sorted(written, key=str) == sorted(routes, key=str)
    assert len(ing["spec"]["rules"]) == len({h for h, _, _ in routes})  # one rule per host
    kubernetes_validate.validate(ing, values["kubernetes_version"], strict=True)


def test_without_routes_the_ingress_is_not_the_stacks_and_none_is_written() -> None:
    values = path_values()
    values["services"][WEB]["path"][0].pop("routes")
    res = render(values, {"rabbitmq_url": SENTINEL})
    assert [r.urn for r in res.of("kubernetes:networking.k8s.io/v1:Ingress")
            if r.inputs["metadata"]["namespace"] == "web"] == []


def test_routes_belong_to_an_ingress_proxy_only() -> None:
    from lockstep.timing.config import stack_from_config
    from lockstep.timing.inputs import ConfigError
    values = path_values()
    values["services"][5]["path"][0]["routes"] = [{"path": "/"}]  # checkout's Istio sidecar
    with pytest.raises(ConfigError, match=r"services\.5\.path\.0: .*routes: istio-sidecar has no such setting"):
        stack_from_config(values)
    assert Stack.model_validate(path_values()).services[WEB].path[0].routes[0].host == "web.example.com"
