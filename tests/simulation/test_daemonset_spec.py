"""What the simulation reads of a DaemonSet: its pods roll through the Deployment controller
(one per node), maxUnavailable rounded up as the DaemonSet controller rounds it; an unknown
node count cannot be simulated and is one input error naming the field."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lockstep.timing.inputs import ConfigError
from lockstep.timing.sim.spec import service_spec, stack_specs
from tests.timing.strategies import FOOTBALL, base, build


def daemonset_stack(nodes, rollout):
    values = {**base(), "heartbeat": None, "heartbeat_specs": []}
    values["services"][FOOTBALL].update(kind="DaemonSet", replicas=nodes, hpa=None, rollout=rollout, pdb=None)
    return build(values=values)


@given(nodes=st.integers(1, 30), pct=st.integers(1, 100))
@example(nodes=3, pct=10)  # a Deployment would round 0.3 pods down to 0
def test_a_daemonset_is_simulated_as_a_deployment_with_its_unavailability_rounded_up(nodes, pct):
    stack = daemonset_stack(nodes, {"max_unavailable": f"{pct}%", "max_surge": 0})
    spec = service_spec(stack, stack.services[FOOTBALL])
    assert (spec.kind, spec.replicas) == ("Deployment", nodes)
    assert spec.unavailable == -(-pct * nodes // 100)


def test_an_unknown_node_count_is_one_input_error_naming_the_field():
    stack = daemonset_stack(None, {})
    with pytest.raises(ConfigError) as err:
        stack_specs(stack)
    assert err.value.lines == [f"lockstep:services.{FOOTBALL}.replicas: the simulation needs the pod count "
                               "(a DaemonSet's: the nodes it runs on)"]
