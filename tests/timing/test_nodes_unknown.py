"""Node sources an input leaves unstated (issue 13, the audit's side): an unknown kubelet
shutdown or an unknown interruption queue makes the node-shutdown rule skip where the unknown
could decide it, naming the field, and decide where it cannot."""

from __future__ import annotations

from lockstep.timing import nodes as N
from lockstep.timing.context import Scene
from lockstep.timing.invariants import context, walk
from lockstep.timing.invariants.registry import BY_ID
from lockstep.timing.model import Nodes
from tests.timing.strategies import DELETE, UNDRAINED, build

POOL = "nodes.karpenter.0"
RULE = "node-shutdown-drains-without-endpoints"


def unknown(nodes: Nodes, *fields: str) -> Nodes:
    out = nodes.model_copy()
    out._unknown = frozenset(fields)
    return out


def shutdown_findings(stack, nodes: Nodes):
    scene = Scene(services=stack.services, nodes=nodes)
    return [f for f in walk(scene, context(stack), (BY_ID[RULE],)) if f.subject == "api"]


def test_an_unknown_kubelet_is_a_term_at_zero_that_names_itself() -> None:
    nodes = unknown(build().nodes, N.KUBELET)
    t = N.kubelet_budget(nodes)
    assert (t.value, t.unknown, t.fields) == (0, (N.KUBELET,), (N.KUBELET,))
    # the same name as a stated kubelet's budget, and the field it comes from as its source
    assert t.label == N.kubelet_budget(build().nodes).label == "kubelet shutdown"
    assert t.source == N.KUBELET == "nodes.kubelet"


def test_an_unknown_kubelet_skips_the_shutdown_rule_naming_it() -> None:
    stack = build({**UNDRAINED, "nodes.kubelet": DELETE})  # spot drained by the queue: only the kubelet could apply
    assert shutdown_findings(stack, stack.nodes) == []
    # with every node drained first, an unknown kubelet stops nothing either
    drained = build({"nodes.kubelet": DELETE})
    assert shutdown_findings(drained, unknown(drained.nodes, N.KUBELET)) == []
    found = shutdown_findings(stack, unknown(stack.nodes, N.KUBELET))
    [f] = [f for f in found if f.relation == "<="]  # the finish inside the unknown shutdown
    assert (f.status, f.needs) == ("skipped", (N.KUBELET,))
    # the drain outlasting the ALB's check does not depend on the kubelet: decided
    assert [g.status for g in found if g.relation == ">="] == ["ok"]


def test_an_unknown_queue_never_breaks_what_only_it_would_trigger() -> None:
    stack = build({"nodes.kubelet": DELETE, f"{POOL}.interruption_queue": False})
    nodes = unknown(stack.nodes, N.QUEUE)
    assert N.undecided_trigger(nodes) == (N.QUEUE,)
    found = shutdown_findings(stack, nodes)
    [f] = [f for f in found if f.relation == "<="]
    assert f.status == "skipped" and N.QUEUE in f.needs
    assert "error" not in {g.status for g in found}
    # the same stack with the queue known to be off: broken (no kubelet shutdown at all)
    [known] = [f for f in shutdown_findings(stack, stack.nodes) if f.relation == "<="]
    assert known.status == "error" and not known.needs


def test_a_known_kubelet_or_a_missing_handler_is_no_undecided_trigger() -> None:
    stack = build({**UNDRAINED, f"{POOL}.interruption_queue": False})
    # nodes shut down undrained under a stated kubelet: judged on it
    assert N.undecided_trigger(unknown(stack.nodes, N.QUEUE)) == ()
    assert N.undecided_trigger(unknown(stack.nodes, N.QUEUE, N.KUBELET)) == ()
    # every other node drained first: the unstated queue alone decides whether any shuts down undrained
    drained = build({f"{POOL}.interruption_queue": False})
    assert N.undecided_trigger(unknown(drained.nodes, N.QUEUE)) == (N.QUEUE,)
    no_kubelet = build({"nodes.kubelet": DELETE, f"{POOL}.interruption_queue": False, "nodes.asg_spot": True})
    # node-group spot without a handler is certain: the queue's unknown does not undecide it
    assert N.undecided_trigger(unknown(no_kubelet.nodes, N.QUEUE)) == ()
    assert N.undecided_trigger(unknown(no_kubelet.nodes, N.KUBELET)) == ()
    assert N.undecided_trigger(no_kubelet.nodes) == ()


def test_the_shutdown_may_stop_pods_when_configured_unknown_or_undrained() -> None:
    drained = build({**UNDRAINED, "nodes.kubelet": DELETE}).nodes
    assert not N.shutdown_may_stop_pods(drained)  # undrained, but no graceful shutdown: a crash
    assert N.shutdown_may_stop_pods(unknown(drained, N.KUBELET))
    assert N.shutdown_may_stop_pods(build(UNDRAINED).nodes)
    assert not N.shutdown_may_stop_pods(build().nodes)  # the example: every node drained first
    assert not N.shutdown_may_stop_pods(unknown(build({"nodes.kubelet": DELETE}).nodes, N.KUBELET))
    assert N.shutdown_may_stop_pods(build({"nodes.kubelet": DELETE, f"{POOL}.interruption_queue": False}).nodes)
