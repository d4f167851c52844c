"""Every rendered Kubernetes manifest is a valid object of the stack's declared version.

Validated exactly as written to disk by `lockstep render` (integers, no Pulumi fields), with
kubernetes-validate in strict mode (unknown fields fail); the TargetGroupBinding, a CRD the
bundled schemas do not know, against the shape of the controller's v1beta1 spec.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest

from lockstep.infra.render_cli import manifest
from tests.infra.support import example_values, render

TGB_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "targetgroupbinding-v1beta1.json").read_text())
ROLLOUT_SCHEMA = json.loads((Path(__file__).parent / "schemas" / "rollout-v1alpha1.json").read_text())
# Karpenter's NodePool and EC2NodeClass (issue 13): CRDs, checked against their shape too
# and Istio's DestinationRule of a meshed service (issue 12)
CRD_SCHEMAS = {kind: json.loads((Path(__file__).parent / "schemas" / f"{name}.json").read_text())
               for kind, name in (("NodePool", "nodepool-v1"), ("EC2NodeClass", "ec2nodeclass-v1"),
                                  ("DestinationRule", "destinationrule-v1"))}


def manifests(res):
    return [(r.urn, manifest(r)) for r in res if r.is_kubernetes]


def _validate(urn: str, obj: dict, version: str) -> None:
    if obj["kind"] == "TargetGroupBinding":
        jsonschema.validate(obj, TGB_SCHEMA)
        return
    if obj["kind"] in CRD_SCHEMAS:
        jsonschema.validate(obj, CRD_SCHEMAS[obj["kind"]])
        return
    if obj["kind"] == "Rollout":  # the example's blue-green service: a CRD, as the binding is
        jsonschema.validate(obj, ROLLOUT_SCHEMA)
        return
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as err:
        pytest.fail(f"{urn}: {err.message} at {list(err.path)}")


def test_every_rendered_manifest_validates_against_the_declared_kubernetes_version(recorded):
    version = example_values()["kubernetes_version"]
    found = manifests(recorded)
    assert {o["kind"] for _, o in found} >= {"Namespace", "Deployment", "StatefulSet", "Service",
                                             "PodDisruptionBudget", "HorizontalPodAutoscaler",
                                             "TargetGroupBinding", "Role", "RoleBinding",
                                             "ServiceAccount", "ConfigMap", "Secret", "Ingress",
                                             "DestinationRule"}
    for urn, obj in found:
        _validate(urn, obj, version)


def test_an_older_cluster_gets_an_exec_sleep_its_schema_accepts():
    values = example_values()
    values["kubernetes_version"] = "1.28"  # the native sleep action is unknown to this schema
    for urn, obj in manifests(render(values)):
        _validate(urn, obj, "1.28")
        if obj["kind"] in ("Deployment", "StatefulSet"):
            pre = obj["spec"]["template"]["spec"]["containers"][0].get("lifecycle", {}).get("preStop")
            assert pre is None or "exec" in pre, urn


def test_target_group_binding_schema_rejects_an_unknown_spec_field():
    bad = {"apiVersion": "elbv2.k8s.aws/v1beta1", "kind": "TargetGroupBinding",
           "metadata": {"name": "api", "namespace": "web"},
           "spec": {"serviceRef": {"name": "api", "port": 8080}, "targetGroupARN": "arn:x",
                    "targetType": "ip", "healthCheck": {}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, TGB_SCHEMA)
