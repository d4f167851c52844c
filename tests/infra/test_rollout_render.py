"""A service that is an Argo Rollout renders as one: the Rollout custom resource (validated
against the shape Argo documents; its pod template as a Deployment's), the preview Service it
switches from, the active Service the TargetGroupBinding binds, every number from the model."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest

from lockstep.infra.render_cli import manifest
from tests.infra.support import example_values, render
from lockstep.timing.config import stack_from_config
from lockstep.timing.inputs import ConfigError

ROLLOUT_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "rollout-v1alpha1.json").read_text())
ARGO = {"strategy": "blueGreen", "scale_down_delay_s": 40, "abort_scale_down_delay_s": 0}


def blue_green_api() -> dict:
    values = example_values()
    api = values["services"][0]
    api["argo"] = dict(ARGO)
    api["rollout"] = {**api["rollout"], "max_surge": "100%", "max_unavailable": 0}
    return values


@pytest.fixture(scope="module")
def rendered():
    return render(blue_green_api())


def test_a_blue_green_service_renders_a_rollout_and_no_deployment(rendered):
    rollouts = [r for r in rendered.of("Rollout")]
    assert [r.inputs["metadata"]["name"] for r in rollouts if r.inputs["metadata"]["name"] == "api"] == ["api"]
    assert not [r for r in rendered.of("Deployment") if r.inputs["metadata"]["name"] == "api"]


def test_the_rollouts_numbers_are_the_models(rendered):
    svc = stack_from_config(blue_green_api()).services[0]
    spec = rendered.k8s("Rollout", "web", "api").inputs["spec"]
    bg = spec["strategy"]["blueGreen"]
    assert (bg["scaleDownDelaySeconds"], bg["abortScaleDownDelaySeconds"]) == (
        svc.argo.scale_down_delay_s, svc.argo.abort_scale_down_delay_s)
    assert (bg["activeService"], bg["previewService"]) == ("api", "api-preview")
    assert (spec["minReadySeconds"], spec["progressDeadlineSeconds"]) == (
        svc.rollout.min_ready_s, svc.rollout.progress_deadline_s)
    assert "replicas" not in spec  # the HPA owns them
    pod = spec["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == svc.shutdown.grace_s
    assert pod["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"] == svc.shutdown.drain_s


def test_the_binding_follows_the_active_service_and_the_preview_service_selects_the_same_pods(rendered):
    tgb = rendered.k8s("TargetGroupBinding", "web", "api").inputs["spec"]
    active = rendered.k8s("Service", "web", "api").inputs["spec"]
    preview = rendered.k8s("Service", "web", "api-preview").inputs["spec"]
    assert tgb["serviceRef"]["name"] == "api"
    assert preview["selector"] == active["selector"]
    assert preview["ports"] == [{**active["ports"][0]}]


def test_the_hpa_scales_the_rollout(rendered):
    ref = rendered.k8s("HorizontalPodAutoscaler", "web", "api").inputs["spec"]["scaleTargetRef"]
    assert (ref["apiVersion"], ref["kind"], ref["name"]) == ("argoproj.io/v1alpha1", "Rollout", "api")


def test_the_rendered_rollout_validates_and_its_template_is_a_valid_pod_template(rendered):
    obj = manifest(rendered.k8s("Rollout", "web", "api"))
    jsonschema.validate(obj, ROLLOUT_SCHEMA)
    as_deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
                     "spec": {"selector": obj["spec"]["selector"], "template": obj["spec"]["template"]}}
    kubernetes_validate.validate(as_deployment, example_values()["kubernetes_version"], strict=True)


def test_a_scale_down_delay_the_schema_refuses_is_caught():
    obj = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "x"},
           "spec": {"selector": {"matchLabels": {}}, "template": {"metadata": {}, "spec": {}},
                    "strategy": {"blueGreen": {"activeService": "x", "scaleDownDelaySeconds": -1}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, ROLLOUT_SCHEMA)


def test_the_audit_reads_the_rendered_rollout_back_as_the_same_service(rendered, tmp_path):
    from lockstep.timing import extract as x
    obj = manifest(rendered.k8s("Rollout", "web", "api"))
    argo = x.argo_strategy(obj)
    assert (argo.strategy, argo.scale_down_delay_s, argo.abort_scale_down_delay_s) == ("blueGreen", 40, 0)


def test_a_blue_green_stack_states_its_whole_surge():
    values = blue_green_api()
    values["services"][0]["rollout"]["max_surge"] = 1
    with pytest.raises(ConfigError, match="services.0.rollout: a blue-green Rollout brings the whole new ReplicaSet up"):
        stack_from_config(values)
