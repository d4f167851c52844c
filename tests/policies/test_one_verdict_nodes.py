"""One verdict on the node disruption sources (issue 13): `check` on the stack config, `lockstep
audit` on the files `lockstep render` writes (the Karpenter NodePool and its EC2NodeClass among
them) and the served pack on the rendered resources agree, on the example and on configs that
break node-budget-covers-drain and node-shutdown-drains-without-endpoints.

The program refuses to render a broken stack, so a broken config's resources are the valid
render with the node resources replaced by what `infra.nodes` writes for the broken config.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import yaml

from lockstep.timing.config import EXAMPLE, lockstep_values
from tests.policies.test_one_verdict import assert_one_verdict, check_findings
from tests.timing.strategies import UNDRAINED, edit

pytest.importorskip("pulumi")


def example() -> dict:
    return lockstep_values(yaml.safe_load(EXAMPLE.read_text())["config"])


def with_nodes_of(values: dict, recorded: list) -> list:
    """The render with its NodePools and EC2NodeClass as `infra.nodes` writes them for `values`."""
    from lockstep.infra import nodes as infra_nodes
    from lockstep.timing.config import stack_from_config

    nodes = stack_from_config(values).nodes
    assert nodes is not None
    pools = {p.name: p for p in nodes.karpenter}
    out = [replace(r, inputs=copy.deepcopy(r.inputs)) for r in recorded]
    for r in out:
        if r.custom and r.type.endswith(":EC2NodeClass"):
            r.inputs["spec"]["userData"] = infra_nodes.user_data(nodes)
        elif r.custom and r.type.endswith(":NodePool"):
            pool = pools[r.inputs["metadata"]["name"]]
            r.inputs["spec"] = infra_nodes.pool_spec(pool)
            r.inputs["metadata"]["annotations"] = infra_nodes.pool_annotations(pool, nodes)
    return out


# Each breaks one node rule and nothing else the example passes (the key: the rule, then why).
BROKEN = {
    # a NodePool that kills pods before api's drain + finish (50 s) is over
    "node-budget-covers-drain": {"nodes.karpenter.0.termination_grace_period_s": 30},
    # spot capacity nothing drains and a kubelet that does not hold the shutdown for the LB
    "node-shutdown-drains-without-endpoints spot": {"nodes.karpenter.0.interruption_queue": False,
                                                    "nodes.kubelet.shutdown_grace_period_s": 40,
                                                    "nodes.kubelet.shutdown_grace_period_critical_pods_s": 30},
    # nodes that may shut down undrained (the NodePool's lockstep.dev/undrained-shutdowns): the
    # NLB services behind kube-proxy stay in their endpoints until they have exited
    "node-shutdown-drains-without-endpoints undrained": UNDRAINED,
}


def test_the_example_renders_its_node_sources() -> None:
    from lockstep.infra.render import record

    kinds = {r.type.rsplit(":", 1)[-1] for r in record(example()) if r.custom}
    assert {"NodePool", "EC2NodeClass"} <= kinds


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_check_the_audit_and_the_pack_agree_on_node_sources_valid_and_broken(analyzer, tmp_path, case) -> None:
    from lockstep.infra.render import record

    rule = case.split()[0]
    valid = example()
    recorded = record(valid)
    broken = edit(valid, BROKEN[case])
    for name, values, stack in (("valid", valid, recorded), ("broken", broken, with_nodes_of(broken, recorded))):
        assert_one_verdict(analyzer, tmp_path / name, values, stack, name)
    assert any(f[1] == rule and f[0] == "error" for f in check_findings(broken))
    assert not any(f[1] == rule for f in check_findings(valid))
