"""A listener rule's routing as the model holds it (`lb.path_patterns`, `lb.rule_priority`):
what tells the audit which workload a Route 53 health check's path reaches."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lockstep.timing import extract as x
from lockstep.timing.config import read_stack_file
from tests.timing.test_extract_roundtrip import render_tg

PATTERN = st.text(st.sampled_from("/abc*?-"), min_size=1, max_size=12)


@given(st.lists(st.lists(PATTERN, min_size=1, max_size=3), min_size=1, max_size=3), st.integers(1, 50000))
def test_every_path_pattern_of_every_condition_and_the_priority_are_read(conditions, priority) -> None:
    rule = {"conditions": [{"pathPattern": {"values": v}} for v in conditions], "priority": priority}
    assert x.rule_routing(rule) == {"path_patterns": tuple(p for v in conditions for p in v), "rule_priority": priority}


@pytest.mark.parametrize(("rule", "expected"), [
    ({}, {}),  # a listener's default action: every path, no priority
    ({"conditions": [{"hostHeader": {"values": ["a.example.com"]}}], "priority": 7}, {"rule_priority": 7}),
    ({"conditions": ["not a mapping", {"pathPattern": {"values": ["/x/*", 3]}}]}, {"path_patterns": ("/x/*",)}),
    ({"priority": True}, {}),  # a boolean is no priority
    ({"priority": "100"}, {}),  # nor a string (an unknown of a preview)
    ({"priority": 100.0}, {"rule_priority": 100}),  # the policy engine passes numbers as floats
    ({"priority": 100.5}, {}),
    ({"conditions": None, "priority": None}, {}),
])
def test_what_is_not_a_path_pattern_or_a_priority_is_left_out(rule, expected) -> None:
    assert x.rule_routing(rule) == expected


def test_a_target_group_takes_its_rules_routing_and_keeps_the_models_defaults_without_one() -> None:
    lb = read_stack_file(None).services[0].lb
    assert lb is not None and (lb.path_patterns, lb.rule_priority) == (("/api/*",), 100)
    routed = x.target_group(render_tg(lb), attach_to_arn=lb.attach_to_arn, idle_timeout_s=60,
                            path_patterns=lb.path_patterns, rule_priority=lb.rule_priority)
    assert (routed.path_patterns, routed.rule_priority) == (("/api/*",), 100)
    plain = x.target_group(render_tg(lb), attach_to_arn=lb.attach_to_arn, idle_timeout_s=60)
    assert (plain.path_patterns, plain.rule_priority) == (("/*",), None)
