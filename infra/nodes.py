"""`NodePools`: the Karpenter NodePools the stack declares (`lockstep:nodes.karpenter`) and the
EC2NodeClass they launch from, written so that `lockstep audit` and the policy pack read the
same node disruption sources back (`timing.bind.nodes`).

- Each NodePool (karpenter.sh/v1) carries the model's terminationGracePeriod, capacity-type
  requirement and disruption settings, every number written out even where it is Karpenter's
  default. Three facts of the stack no Karpenter field holds travel as annotations: whether the
  Karpenter controller runs with an interruption queue (the controller is a cluster add-on the
  stack does not own), the spot handler's reaction time, and whether nodes may shut down with
  no drain first.
- The EC2NodeClass (karpenter.k8s.aws/v1, AL2023) carries the kubelet's graceful shutdown in
  its user data: a MIME part of type `application/node.eks.aws` holding a nodeadm NodeConfig
  whose `spec.kubelet.config` sets shutdownGracePeriod and shutdownGracePeriodCriticalPods
  (Karpenter merges user data parts into the NodeConfig it generates; nodeadm merges the
  kubelet config over the AMI's). Stated always, "0s" when the stack declares no shutdown, so
  the audit reads "off" rather than "unknown". The node role and the subnet and security group
  discovery tag follow Karpenter's getting-started convention (`KarpenterNodeRole-<cluster>`,
  `karpenter.sh/discovery: <cluster>`), the cluster named after the Pulumi stack.

Not rendered: the Cluster Autoscaler, aws-node-termination-handler and ASG lifecycle hooks a
config may declare are cluster add-ons outside the stack; a kubelet shutdown declared without
any Karpenter NodePool has no resource of the stack to carry it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from lockstep.infra import kube
from lockstep.timing.bind.nodes import QUEUE_ANNOTATION, REACTION_ANNOTATION, UNDRAINED_ANNOTATION
from lockstep.timing.extract.nodes import CAPACITY_TYPE, NODECONFIG
from lockstep.timing.model import KarpenterNodePool, Nodes

TYPE = "lockstep:infra:NodePools"
NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"
NODECLASS_GROUP = NODECLASS_API.split("/")[0]
NODECLASS_NAME = "lockstep"
AMI_ALIAS = "al2023@latest"  # AL2023: the family whose user data nodeadm reads
BOUNDARY = "LOCKSTEP"


@dataclass(frozen=True)
class NodePoolsArgs:
    nodes: Nodes
    cluster: str


def user_data(nodes: Nodes) -> str:
    """The MIME multi-part user data with the kubelet's shutdown periods."""
    k = nodes.kubelet
    total, critical = (k.shutdown_grace_period_s, k.shutdown_grace_period_critical_pods_s) if k else (0, 0)
    return "\n".join([
        "MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', "",
        f"--{BOUNDARY}", "Content-Type: application/node.eks.aws", "",
        "---", f"apiVersion: {NODECONFIG[0]}", f"kind: {NODECONFIG[1]}", "spec:", "  kubelet:", "    config:",
        f'      shutdownGracePeriod: "{total}s"', f'      shutdownGracePeriodCriticalPods: "{critical}s"', "",
        f"--{BOUNDARY}--", ""])


def nodeclass_spec(nodes: Nodes, cluster: str) -> dict:
    discovery = [{"tags": {"karpenter.sh/discovery": cluster}}]
    return {"amiSelectorTerms": [{"alias": AMI_ALIAS}], "role": f"KarpenterNodeRole-{cluster}",
            "subnetSelectorTerms": discovery, "securityGroupSelectorTerms": discovery,
            "userData": user_data(nodes)}


def pool_annotations(pool: KarpenterNodePool, nodes: Nodes) -> dict[str, str]:
    out = {QUEUE_ANNOTATION: str(pool.interruption_queue).lower(),
           UNDRAINED_ANNOTATION: str(nodes.undrained_shutdowns).lower()}
    if nodes.spot_reaction_s is not None:
        out[REACTION_ANNOTATION] = str(nodes.spot_reaction_s)
    return out


def pool_spec(pool: KarpenterNodePool) -> dict:
    template: dict = {
        "nodeClassRef": {"group": NODECLASS_GROUP, "kind": "EC2NodeClass", "name": NODECLASS_NAME},
        "requirements": [{"key": CAPACITY_TYPE, "operator": "In", "values": list(pool.capacity_types)}],
    }
    if pool.termination_grace_period_s is not None:
        template["terminationGracePeriod"] = f"{pool.termination_grace_period_s}s"
    return {"template": {"spec": template},
            "disruption": {"consolidationPolicy": pool.consolidation_policy,
                           "consolidateAfter": f"{pool.consolidate_after_s}s",
                           "budgets": [{"nodes": str(pool.budget_nodes)}]}}


class NodePools(pulumi.ComponentResource):
    """Outputs: `pools` (NodePool by name) and `node_class`."""

    def __init__(self, name: str, args: NodePoolsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.node_class = k8s.apiextensions.CustomResource(
            f"{name}-nodeclass", api_version=NODECLASS_API, kind="EC2NodeClass",
            metadata=kube.metadata(NODECLASS_NAME, None), spec=nodeclass_spec(args.nodes, args.cluster), opts=child)
        after = pulumi.ResourceOptions(parent=self, depends_on=[self.node_class])
        self.pools = {
            pool.name: k8s.apiextensions.CustomResource(
                f"{name}-{pool.name}", api_version=NODEPOOL_API, kind="NodePool",
                metadata=kube.metadata(pool.name, None, annotations=pool_annotations(pool, args.nodes)),
                spec=pool_spec(pool), opts=after)
            for pool in args.nodes.karpenter}
        self.register_outputs({"pools": sorted(self.pools)})
