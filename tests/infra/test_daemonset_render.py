"""A DaemonSet service renders as an apps/v1 DaemonSet: no replicas field (one pod per node,
the stated node count carried as the lockstep.dev/nodes annotation the pack reads back), its
update strategy from the model, validated against the declared Kubernetes version's schema."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from lockstep.infra.render import Recorder
from lockstep.infra.render_cli import manifest
from lockstep.timing import limits as L
from lockstep.timing.config import ConfigError, stack_from_config
from lockstep.timing.conventions import ANNOTATION, NODES_ANNOTATION
from tests.infra.support import example_values, render

NODES = 4


def with_daemonset(**changes) -> dict:
    """The example stack plus a node agent: the football feed's pod run on every node."""
    values = example_values()
    feed = next(s for s in values["services"] if s["name"] == "football-feed")
    agent = {**copy.deepcopy(feed), "name": "node-agent", "kind": "DaemonSet", "replicas": NODES,
             "rollout": {"min_ready_s": 5}}
    agent.pop("pdb", None)
    agent.pop("hpa", None)
    values["services"].append({**agent, **changes})
    return values


def daemonset(values):
    return next(manifest(r) for r in render(values) if r.is_kubernetes and manifest(r)["kind"] == "DaemonSet")


@pytest.fixture(scope="module")
def rolling():
    values = with_daemonset()
    return values, daemonset(values)


def test_a_daemonset_service_validates_against_the_declared_kubernetes_version(rolling):
    values, obj = rolling
    kubernetes_validate.validate(obj, values["kubernetes_version"], strict=True)


def test_a_daemonset_has_no_replicas_and_carries_the_node_count_it_was_judged_on(rolling):
    _, obj = rolling
    assert "replicas" not in obj["spec"]
    assert obj["metadata"]["annotations"][ANNOTATION + NODES_ANNOTATION] == str(NODES)


def test_the_unstated_rolling_update_is_the_daemonsets_own_default(rolling):
    values, obj = rolling
    svc = next(s for s in stack_from_config(values).services if s.name == "node-agent")
    strategy = obj["spec"]["updateStrategy"]
    assert strategy["type"] == "RollingUpdate"
    assert strategy["rollingUpdate"] == {"maxSurge": L.DAEMONSET_ROLLOUT_DEFAULTS["max_surge"],
                                         "maxUnavailable": L.DAEMONSET_ROLLOUT_DEFAULTS["max_unavailable"]}
    assert (svc.rollout.max_surge, svc.rollout.max_unavailable) == (0, 1)
    assert obj["spec"]["minReadySeconds"] == svc.rollout.min_ready_s
    assert "progressDeadlineSeconds" not in obj["spec"]


def test_an_on_delete_daemonset_renders_no_rolling_update_block_and_validates():
    values = with_daemonset(rollout={"update_strategy": "OnDelete"})
    obj = daemonset(values)
    kubernetes_validate.validate(obj, values["kubernetes_version"], strict=True)
    assert obj["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_a_daemonset_of_unknown_node_count_renders_without_the_annotation():
    values = with_daemonset(replicas=None)
    obj = daemonset(values)
    assert ANNOTATION + NODES_ANNOTATION not in obj["metadata"].get("annotations", {})


def test_an_hpa_on_a_daemonset_is_an_input_error_naming_the_field():
    values = with_daemonset(replicas=None, hpa={"min_replicas": 2, "max_replicas": 4})
    index = len(values["services"]) - 1
    with pytest.raises(ConfigError) as err:
        Recorder().run(values)
    assert err.value.lines == [f"lockstep:services.{index}: hpa: a DaemonSet has no scale subresource (one pod "
                               "per node): remove hpa"]
