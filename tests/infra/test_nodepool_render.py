"""The stack's Karpenter NodePools and their EC2NodeClass are written out (issue 13) with the
model's numbers, validate against the CRDs' shape, and read back by the audit's readers as the
same `Nodes` the config declares."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from lockstep.infra.render_cli import manifest
from lockstep.timing.config import stack_from_config
from lockstep.timing.extract import nodes as XN
from tests.infra.support import example_values, render

SCHEMAS = Path(__file__).parent / "schemas"
NODEPOOL = json.loads((SCHEMAS / "nodepool-v1.json").read_text())
NODECLASS = json.loads((SCHEMAS / "ec2nodeclass-v1.json").read_text())


def node_manifests(values: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {"NodePool": [], "EC2NodeClass": []}
    for r in render(values):
        if r.is_kubernetes and r.type.rsplit(":", 1)[-1] in out:
            out[r.type.rsplit(":", 1)[-1]].append(manifest(r))
    return out


def test_the_rendered_nodepool_and_nodeclass_validate() -> None:
    found = node_manifests(example_values())
    assert len(found["NodePool"]) == 1 and len(found["EC2NodeClass"]) == 1
    for obj in found["NodePool"]:
        jsonschema.validate(obj, NODEPOOL)
    for obj in found["EC2NodeClass"]:
        jsonschema.validate(obj, NODECLASS)


@pytest.mark.parametrize("bad", [{"terminationGracePeriod": "300"}, {"expireAfter": "720h"}])
def test_the_nodepool_schema_rejects_a_bare_number_and_an_unknown_field(bad) -> None:
    obj = node_manifests(example_values())["NodePool"][0]
    obj["spec"]["template"]["spec"].update(bad)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(obj, NODEPOOL)


def test_the_readers_get_back_the_declared_pools_and_kubelet() -> None:
    values = example_values()
    nodes = stack_from_config(values).nodes
    found = node_manifests(values)
    pools = [XN.nodepool(obj)[0].model_copy(update={"interruption_queue": obj["metadata"]["annotations"][
        "lockstep.dev/interruption-queue"] == "true"}) for obj in found["NodePool"]]
    assert tuple(pools) == nodes.karpenter
    config = XN.nodeconfig_kubelet(found["EC2NodeClass"][0]["spec"]["userData"])
    assert XN.kubelet_shutdown(config, "NodeConfig")[0] == nodes.kubelet
    reaction = {obj["metadata"]["annotations"]["lockstep.dev/spot-reaction-seconds"] for obj in found["NodePool"]}
    assert reaction == {str(nodes.spot_reaction_s)}


def test_no_kubelet_shutdown_is_written_as_off_not_left_unknown() -> None:
    values = example_values()
    del values["nodes"]["kubelet"]
    config = XN.nodeconfig_kubelet(node_manifests(values)["EC2NodeClass"][0]["spec"]["userData"])
    assert config == {"shutdownGracePeriod": "0s", "shutdownGracePeriodCriticalPods": "0s"}


def test_a_stack_without_karpenter_pools_renders_no_node_resources() -> None:
    values = example_values()
    del values["nodes"]
    assert node_manifests(values) == {"NodePool": [], "EC2NodeClass": []}
