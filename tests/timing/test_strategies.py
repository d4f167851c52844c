"""The test helpers' copy of the example: equal to a deep copy, sharing no container with it."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from tests.timing.strategies import base, edit, example_values, tree_copy

YAML_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=20)


def _containers(value: object) -> list[int]:
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _containers(v))]
    return []


@given(YAML_DATA)
def test_a_tree_copy_equals_a_deep_copy_and_shares_no_container(value):
    copied = tree_copy(value)
    assert copied == copy.deepcopy(value)
    assert not set(_containers(copied)) & set(_containers(value))


def test_an_edit_never_changes_the_shared_example():
    before = copy.deepcopy(example_values())
    changed = edit(example_values(), {"services.0.shutdown.drain_s": 1, "services.1.replicas": 9})
    mine = base()
    mine["services"][0]["name"] = "changed"
    assert changed["services"][0]["shutdown"]["drain_s"] == 1
    assert example_values() == before
