"""`lockstep.dev/undrained-shutdowns` on a NodePool (issue 13): the one fact of the platform the
audit and the policy pack read for whether nodes shut down with no drain first. Stated, it is
read (any pool saying "true" wins); unstated, the model's default applies and is reported;
a value that is no boolean is bad input naming the annotation."""

from __future__ import annotations

import pytest

from lockstep.timing import nodes as N
from lockstep.timing.bind.index import Index
from lockstep.timing.bind.nodes import UNDRAINED_ANNOTATION, read_nodes
from lockstep.timing.bind.resource import Origin, Resource
from lockstep.timing.model import Nodes


def pool(name: str, said: str | None = None) -> Resource:
    notes = {} if said is None else {UNDRAINED_ANNOTATION: said}
    obj = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name, "annotations": notes},
           "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}}}
    return Resource("NodePool", obj, Origin(f"nodes.yaml#{name}", "nodes.yaml"))


@pytest.mark.parametrize(("said", "value"), [
    (("false",), False), (("true",), True), (("false", "true"), True), (("true", "false"), True),
    (("false", None), False),
])
def test_a_stated_annotation_decides_and_any_true_wins(said, value) -> None:
    read = read_nodes(Index([pool(f"p{i}", s) for i, s in enumerate(said)]))
    assert read.nodes is not None and read.nodes.undrained_shutdowns is value
    assert not [d for d in read.defaults if d.startswith(N.UNDRAINED)]
    where, path = read.origins[N.UNDRAINED]
    assert path == ("metadata", "annotations", UNDRAINED_ANNOTATION)
    # the origin is a pool that says what was read
    assert where.meta("annotations")[UNDRAINED_ANNOTATION] == str(value).lower()


def test_unstated_it_is_the_models_default_reported_as_applied() -> None:
    read = read_nodes(Index([pool("general")]))
    assert read.nodes is not None and read.nodes.undrained_shutdowns is Nodes().undrained_shutdowns is True
    assert [d for d in read.defaults if d.startswith(N.UNDRAINED)] == [
        f"{N.UNDRAINED} true (no {UNDRAINED_ANNOTATION} on a NodePool: nodes may shut down with no drain first)"]
    assert N.UNDRAINED not in read.origins
    assert any(N.UNDRAINED in line for line in read.report())


def test_a_value_that_is_no_boolean_is_bad_input_naming_the_annotation() -> None:
    read = read_nodes(Index([pool("general", "sometimes"), pool("other", "false")]))
    [(where, message)] = read.unreadable
    assert where.name == "general" and UNDRAINED_ANNOTATION in message
    # the pool that reads is still read, and decides
    assert read.nodes is not None and read.nodes.undrained_shutdowns is False
